import os

from ._fixture import DEVICES, STRATEGIES, check_device

# Strategies whose benchmark raises, to record a real asv failure (stored as null).
FAILING = os.environ.get("JITBENCH_FIXTURE_FAIL", "").split(",")


class Memory:
    params = (STRATEGIES, DEVICES)
    param_names = ["strategy", "device"]

    def setup(self, strategy, device):
        check_device(device)

    def peakmem_build_and_first_call(self, strategy, device):
        if strategy in FAILING:
            raise RuntimeError(f"{strategy} fails on purpose")
        buffer = bytearray(1_000_000 * (1 + STRATEGIES.index(strategy)))
        return len(buffer)
