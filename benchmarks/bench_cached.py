"""The steady-state call of an instance whose program is already compiled."""

from jitbench import suite


class CachedCall(suite.Cached):
    """Many calls per sample; the first call of the body builds and compiles.

    ``time_cached_call`` waits for the result; ``time_cached_call_dispatch``
    does not, and so measures the Python and C++ dispatch path alone (at large
    sizes the device queue fills and it approaches the compute time).
    """

    params = [suite.strategy_names(), suite.sizes(), list(suite.DEVICES)]
    param_names = ["strategy", "size", "device"]
    # 30 calls a sample and up to 20 samples: at small sizes a few samples a run
    # are hit by the other core's work, and asv's rank test needs enough
    # samples a side to see a 10% shift through them (see jitbench validate).
    number = 30
    repeat = (3, 20, 1.0)
    warmup_time = 0.05
    rounds = 1
    timeout = 300
    version = "1"

    def time_cached_call(self, strategy, size, device):
        self.cached(strategy, size, device).call()

    def time_cached_call_dispatch(self, strategy, size, device):
        self.cached(strategy, size, device).dispatch()
