"""Peak memory of building an instance at the largest size and calling it once."""

from jitbench import suite


class Memory:
    """Static-self strategies bake the arrays into the program as constants."""

    params = [suite.strategy_names(), list(suite.DEVICES)]
    param_names = ["strategy", "device"]
    rounds = 1
    timeout = 300
    version = "1"

    def setup(self, strategy, device):
        suite.require(strategy, device)

    def peakmem_build_and_first_call(self, strategy, device):
        obj, y = suite.cold_instance(strategy, max(suite.sizes()), device)
        suite.block(obj.calc(y))
