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
    """Trace, lowering and compile seconds of a cold first call (``jax.monitoring``).

    Measured as ``ColdCall`` measures the call, in one process for the whole
    grid (``setup_cache``): per strategy one uncounted cold call, then per
    combination the median of three cold calls.
    """

    params = [STRATEGIES, SIZES, UNSHARDED_DEVICES]
    timeout = 900

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
