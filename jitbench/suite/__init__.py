"""The asv glue: grids (``grid``), the benchmark families (``families``), every benchmark's
name (``catalog``), asv run from code (``asvrun``), asv's private parts behind one guard
(``asvcompat``), and ``jitbench init`` (``scaffold``, ``install``)."""
