"""Your own objects in the grid: the targets named in ``JITBENCH_TARGETS``.

``JITBENCH_TARGETS=package.module:factory[,...]`` adds, per target and
device, its cold first call, first call in a fresh process, cached call and
dispatch, call after each kind of change its audit finds, hazard counts and
peak memory (``jitbench.target_benchmarks``). Unset, this module adds nothing.
"""

from jitbench.target_benchmarks import benchmark_classes

globals().update(benchmark_classes())
