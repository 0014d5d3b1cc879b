"""The call right after a user changes the object: recompile or cache reuse."""

from jitbench import suite


class AfterChange:
    """One call per sample; ``setup`` compiles the original object, then changes it.

    Changes go through each strategy's ``update``: in place for mutable
    classes, a new object for frozen ones.
    """

    params = [suite.strategy_names(), suite.sizes(), list(suite.DEVICES), list(suite.CHANGES)]
    param_names = ["strategy", "size", "device", "change"]
    number = 1
    repeat = (3, 5, 0.5)
    warmup_time = 0.0
    rounds = 1
    timeout = 300
    version = "1"

    def setup(self, strategy, size, device, change):
        self.call = suite.after_change(strategy, size, device, change)

    def time_call_after_change(self, strategy, size, device, change):
        self.call()
