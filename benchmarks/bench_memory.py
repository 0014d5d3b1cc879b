"""Peak memory of building an instance at the largest size and calling it once."""

from jitbench import suite
from jitbench.measure import block

from .common import DEVICES, STRATEGIES, Benchmark


class Memory(Benchmark):
    """Strategies that close over their arrays bake them into the program as constants."""

    params = [STRATEGIES, DEVICES]
    param_names = ["strategy", "device"]

    def setup(self, strategy, device):
        self.case = suite.Case.of(strategy, max(suite.sizes()), device)

    def peakmem_build_and_first_call(self, strategy, device):
        obj, y = self.case.cold_instance()
        block(obj.calc(y))
