"""Where projects set up by an older ``jitbench init`` import their benchmark classes from.

Their ``benchmarks/bench_targets.py`` runs ``from jitbench.target_benchmarks import
benchmark_classes``; the classes are :mod:`jitbench.suite.families`'.
"""

from jitbench.suite.families import benchmark_classes

__all__ = ["benchmark_classes"]
