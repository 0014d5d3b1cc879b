"""Your own objects in the grid: the targets named in ``JITBENCH_TARGETS``.

``JITBENCH_TARGETS=package.module:factory[,...]`` adds, per target and
device, the rows of every family a target shares with the built-in strategies
(``jitbench.suite.families``). Unset, this module adds nothing.
"""

from jitbench.suite.families import benchmark_classes

globals().update(benchmark_classes())
