"""The first call of a new instance with every cache cold: trace, lower, compile, run."""

from jitbench import newprocess, suite
from jitbench.measure import block

from .common import EDGE_SIZES, SIZES, STRATEGIES, UNSHARDED_DEVICES, OneCall, Track


class ColdCall(OneCall):
    """One call per sample; ``setup`` builds a new instance and clears the caches."""

    def setup(self, strategy, size, device):
        self.obj, self.y = suite.Case.of(strategy, size, device).cold_instance()

    def time_first_call(self, strategy, size, device):
        block(self.obj.calc(self.y))


class FreshProcess(OneCall):
    """The first call in a fresh interpreter, at the smallest and largest size."""

    params = [STRATEGIES, EDGE_SIZES, UNSHARDED_DEVICES]
    repeat = 2

    def timeraw_first_call_fresh_process(self, strategy, size, device):
        return newprocess.code(strategy, size, device)


class Stages(Track):
    """Trace, lowering and compile seconds of a cold first call (``jax.monitoring``).

    Measured as ``ColdCall`` measures the call: after one cold call that pays
    the process's one-time costs, the median over three cold calls.
    """

    params = [STRATEGIES, SIZES, UNSHARDED_DEVICES]

    def setup(self, strategy, size, device):
        self.case = suite.Case.of(strategy, size, device)

    def track_trace_seconds(self, strategy, size, device):
        return suite.typical_stages(self.case).trace

    def track_lower_seconds(self, strategy, size, device):
        return suite.typical_stages(self.case).lower

    def track_compile_seconds(self, strategy, size, device):
        return suite.typical_stages(self.case).compile
