"""The steady-state call of an instance whose program is already compiled."""

from jitbench.suite import families

from .common import Benchmark


class CachedCall(families.CachedCall, Benchmark):
    """Many calls per sample; the first call of the body builds and compiles."""
