"""How a subject is measured: ``case`` (the runtime every measurement goes through),
``timing`` (``jitbench time``), ``diskcache``, ``population``, ``counting/`` (Valgrind).
Map of the folder: README.md in this folder."""
