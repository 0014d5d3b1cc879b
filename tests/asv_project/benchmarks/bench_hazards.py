from ._fixture import (
    DEVICES,
    ERRORS,
    LEAKED,
    RECOMPILES,
    REPEAT_COMPILES,
    STALE,
    STRATEGIES,
    check_device,
)


class Hazards:
    params = (STRATEGIES, DEVICES)
    param_names = ["strategy", "device"]

    def setup(self, strategy, device):
        check_device(device)

    def track_compiles(self, strategy, device):
        return 0 if strategy == "eager" else 2 + REPEAT_COMPILES.get(strategy, 0)

    track_compiles.unit = "compiles"

    def track_traces(self, strategy, device):
        return 0 if strategy == "eager" else 2

    track_traces.unit = "traces"

    def track_stale_results(self, strategy, device):
        return STALE.get(strategy, 0)

    track_stale_results.unit = "stale results"

    def track_errors(self, strategy, device):
        return ERRORS.get(strategy, 0)

    track_errors.unit = "errors"

    def track_leaked_instances(self, strategy, device):
        return LEAKED.get(strategy, 0)

    track_leaked_instances.unit = "instances"

    def track_recompiles(self, strategy, device):
        return RECOMPILES.get(strategy, 0)

    track_recompiles.unit = "compiles"

    def track_repeat_call_compiles(self, strategy, device):
        return REPEAT_COMPILES.get(strategy, 0)

    track_repeat_call_compiles.unit = "compiles"
