"""How a subject is measured: the case runtime, its timing, disk cache, populations, counts.

``case`` (one subject built and called for every measurement), ``timing``
(``jitbench time``), ``diskcache`` (JAX's on-disk cache from a new process),
``population`` (many live instances), ``counting/`` (instructions under Valgrind).
"""
