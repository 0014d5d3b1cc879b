import time

from ._fixture import CHANGES, UNSHARDED_DEVICES, check_device, skip_unless_available, spin

# A target in the place of a user's own object: its spec is the row's parameter.
# Targets are measured unsharded, as jitbench.target_benchmarks measures them.
TARGETS = ["fixture_models:make_model"]
PARAMS = (TARGETS, UNSHARDED_DEVICES)
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


class TargetAfterChange:
    params = (*PARAMS, CHANGES)
    param_names = [*NAMES, "change"]

    def setup(self, target, device, change):
        check_device(device)

    def time_call_after_change(self, target, device, change):
        spin(PER_CALL + (COMPILE if change in ("new_static", "new_shape_array") else 0))


class TargetHazards:
    params, param_names = PARAMS, NAMES

    def setup(self, target, device):
        check_device(device)

    def track_compiles(self, target, device):
        return 3

    track_compiles.unit = "compiles"

    def track_traces(self, target, device):
        return 3

    track_traces.unit = "traces"

    def track_stale_results(self, target, device):
        return 0

    track_stale_results.unit = "stale results"

    def track_errors(self, target, device):
        return 0

    track_errors.unit = "errors"

    def track_leaked_instances(self, target, device):
        return 1

    track_leaked_instances.unit = "instances"

    def track_recompiles(self, target, device):
        return 0

    track_recompiles.unit = "compiles"

    def track_repeat_call_compiles(self, target, device):
        return 0

    track_repeat_call_compiles.unit = "compiles"


class TargetInstructions:
    params, param_names = (TARGETS, ["cpu"]), NAMES
    unit = "instructions"

    def setup(self, target, device):
        check_device(device)

    def track_cached_call_instructions(self, target, device):
        return PER_CALL * 1000

    def track_dispatch_instructions(self, target, device):
        return PER_CALL * 500
