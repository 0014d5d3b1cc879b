"""The first call of a new instance with every cache cold: trace, lower, compile, run."""

from jitbench.measure import case
from jitbench.suite import families

from .common import SIZES, STRATEGIES, UNSHARDED_DEVICES, Benchmark, Track


class ColdCall(families.ColdCall, Benchmark):
    """One call per sample; ``setup`` builds a new instance and clears the caches."""


class FreshProcess(families.FreshProcess, Benchmark):
    """The first call in a fresh interpreter, at the smallest size (each sample starts an
    interpreter, about 0.7 s; what it adds does not grow with the arrays)."""

    params = [STRATEGIES, [min(SIZES)], UNSHARDED_DEVICES]


class Stages(Track):
    """One cold first call and its trace, lowering and compile seconds (``jax.monitoring``).

    All four tracks come from the same call, so the stages are parts of the
    call they sum under; what is left is dispatch, argument handling and
    running the program. One process measures the grid (``setup_cache``): per
    strategy one uncounted cold call, then per combination the median of five
    cold calls, cleared as ``ColdCall`` clears them. ``ColdCall``'s own figure
    comes from other processes and differs from ``track_call_seconds`` by the
    process-to-process spread of a compile.
    """

    params = [STRATEGIES, SIZES, UNSHARDED_DEVICES]
    timeout = 900
    # 3: the stages of one (the median) call, no longer per-stage medians of three.
    version = "3"

    def setup_cache(self):
        return case.stage_table(STRATEGIES, SIZES, UNSHARDED_DEVICES)

    def setup(self, table, strategy, size, device):
        self.stages = table.get((strategy, size, device, 1))
        if self.stages is None:
            raise NotImplementedError(f"{strategy} on {device} is not available here")

    def track_trace_seconds(self, table, strategy, size, device):
        return self.stages.trace

    def track_lower_seconds(self, table, strategy, size, device):
        return self.stages.lower

    def track_compile_seconds(self, table, strategy, size, device):
        return self.stages.compile

    def track_call_seconds(self, table, strategy, size, device):
        return self.stages.call
