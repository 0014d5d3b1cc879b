import time

from ._fixture import DEVICES, check_device, skip_unless_available, spin

# A target in the place of a user's own object: its spec is the row's parameter.
TARGETS = ["fixture_models:make_model"]
PARAMS = (TARGETS, DEVICES)
NAMES = ["target", "device"]
COMPILE, PER_CALL = 40, 4


class TargetColdCall:
    params, param_names = PARAMS, NAMES

    def setup(self, target, device):
        check_device(device)

    def time_first_call(self, target, device):
        spin(COMPILE + PER_CALL)


class TargetFreshProcess:
    params, param_names = PARAMS, NAMES

    def setup(self, target, device):
        check_device(device)

    def timeraw_first_call_fresh_process(self, target, device):
        return f"sum(range({(COMPILE + PER_CALL) * 200}))"


class TargetCachedCall:
    params, param_names = PARAMS, NAMES
    timer = time.process_time
    warmup_time = 0.02

    def time_cached_call(self, target, device):
        skip_unless_available(device)
        spin(PER_CALL)

    def time_cached_call_dispatch(self, target, device):
        skip_unless_available(device)
        spin(PER_CALL / 2)


class TargetMemory:
    params, param_names = PARAMS, NAMES

    def setup(self, target, device):
        check_device(device)

    def peakmem_build_and_first_call(self, target, device):
        return len(bytearray(3_000_000))
