"""The call right after a user changes the object: recompile or cache reuse."""

from jitbench.auditing.scenario import TIMED_CHANGES
from jitbench.suite import families

from .common import EDGE_SIZES, STRATEGIES, UNSHARDED_DEVICES, Benchmark


class AfterChange(families.AfterChange, Benchmark):
    """One call per sample, right after the change in the audit's scenario."""

    # The smallest and largest size, one device each: five changes make this the
    # suite's widest grid, and sharding shows in the cold call already.
    params = [STRATEGIES, EDGE_SIZES, UNSHARDED_DEVICES, list(TIMED_CHANGES)]
    param_names = [*Benchmark.param_names, "change"]
