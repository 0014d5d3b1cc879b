"""The first call of a new instance with every cache cold: trace, lower, compile, run."""

from jitbench import suite

STRATEGIES = suite.strategy_names()
PARAMS = [STRATEGIES, suite.sizes(), list(suite.DEVICES)]
NAMES = ["strategy", "size", "device"]


class ColdCall:
    """One call per sample; ``setup`` clears the caches before each sample."""

    params = PARAMS
    param_names = NAMES
    number = 1
    repeat = (3, 10, 1.0)
    warmup_time = 0.0
    rounds = 1
    timeout = 300

    def setup(self, strategy, size, device):
        self.obj, self.y = suite.cold_instance(strategy, size, device)

    def time_first_call(self, strategy, size, device):
        suite.block(self.obj.calc(self.y))

    time_first_call.version = "1"

    def timeraw_first_call_fresh_process(self, strategy, size, device):
        return suite.fresh_process_code(strategy, size, device)

    timeraw_first_call_fresh_process.version = "1"
    timeraw_first_call_fresh_process.repeat = 2


class Stages:
    """Seconds in each stage of one cold first call, from jax.monitoring events."""

    params = PARAMS
    param_names = NAMES
    unit = "seconds"
    rounds = 1
    timeout = 300
    version = "1"

    def setup(self, strategy, size, device):
        suite.require(strategy, device)

    def track_trace_seconds(self, strategy, size, device):
        return suite.first_call_stages(strategy, size, device)["trace"]

    def track_lower_seconds(self, strategy, size, device):
        return suite.first_call_stages(strategy, size, device)["lower"]

    def track_compile_seconds(self, strategy, size, device):
        return suite.first_call_stages(strategy, size, device)["compile"]
