"""The call right after a user changes the object: recompile or cache reuse."""

from jitbench import changes, suite

from .common import EDGE_SIZES, STRATEGIES, UNSHARDED_DEVICES, OneCall


class AfterChange(OneCall):
    """One call per sample; ``setup`` compiles the original object, then changes it.

    Changes are those of ``jitbench.changes``: through the strategy's own
    update (in place, or a new object for frozen styles), or the constructor
    for ``equal_instance``.
    """

    # The smallest and largest size, one device each: five changes make this the
    # suite's widest grid, and sharding shows in the cold call already.
    params = [STRATEGIES, EDGE_SIZES, UNSHARDED_DEVICES, list(changes.TIMED_CHANGES)]
    param_names = [*OneCall.param_names, "change"]
    repeat = (3, 5, 0.5)

    def setup(self, strategy, size, device, change):
        self.call = suite.after_change(suite.Case.of(strategy, size, device), change)

    def time_call_after_change(self, strategy, size, device, change):
        self.call()
