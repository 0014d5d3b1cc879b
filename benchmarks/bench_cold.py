"""The first call of a new instance with every cache cold: trace, lower, compile, run."""

from jitbench import newprocess, suite
from jitbench.measure import block

from .common import SIZES, STRATEGIES, UNSHARDED_DEVICES, OneCall, Track


class ColdCall(OneCall):
    """One call per sample; ``setup`` builds a new instance and clears the caches."""

    def setup(self, strategy, size, device):
        self.obj, self.y = suite.Case.of(strategy, size, device).cold_instance()

    def time_first_call(self, strategy, size, device):
        block(self.obj.calc(self.y))


class FreshProcess(OneCall):
    """The first call in a fresh interpreter, at the smallest size.

    What a new process adds to the cold call is its one-time costs, which do
    not grow with the arrays; each sample starts an interpreter (about 0.7 s).
    """

    params = [STRATEGIES, [min(SIZES)], UNSHARDED_DEVICES]
    repeat = 2

    def timeraw_first_call_fresh_process(self, strategy, size, device):
        return newprocess.code(strategy, size, device)


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
        return suite.stage_table(STRATEGIES, SIZES, UNSHARDED_DEVICES)

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
