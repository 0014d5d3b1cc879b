"""How a subject is measured: ``case`` (the runtime every measurement goes through),
``timing`` (``jitbench time``), ``diskcache``, ``population``, ``counting/`` (Valgrind).
Design notes: README.md in this folder."""
