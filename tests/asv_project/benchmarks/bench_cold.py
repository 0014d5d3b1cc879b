from ._fixture import (
    COMPILE,
    DEVICES,
    EDGE_SIZES,
    SIZES,
    STRATEGIES,
    UNSHARDED_DEVICES,
    check_device,
    per_call_units,
    spin,
)


class ColdCall:
    params = (STRATEGIES, SIZES, DEVICES)
    param_names = ["strategy", "size", "device"]

    def setup(self, strategy, size, device):
        check_device(device)

    def time_first_call(self, strategy, size, device):
        spin(COMPILE[strategy] + per_call_units(strategy, size, device))


class FreshProcess:
    params = (STRATEGIES, EDGE_SIZES, UNSHARDED_DEVICES)
    param_names = ["strategy", "size", "device"]

    def setup(self, strategy, size, device):
        check_device(device)

    def timeraw_first_call_fresh_process(self, strategy, size, device):
        units = COMPILE[strategy] + per_call_units(strategy, size, device)
        return f"sum(range({int(units * 200)}))"


class Stages:
    params = (STRATEGIES, SIZES, UNSHARDED_DEVICES)
    param_names = ["strategy", "size", "device"]
    unit = "seconds"

    def setup(self, strategy, size, device):
        check_device(device)
        self.scale = 0 if strategy == "eager" else 1 + size / 1000

    def track_trace_seconds(self, strategy, size, device):
        return 1e-3 * self.scale

    def track_lower_seconds(self, strategy, size, device):
        return 5e-4 * self.scale

    def track_compile_seconds(self, strategy, size, device):
        return 4e-3 * self.scale

    def track_call_seconds(self, strategy, size, device):
        return 6e-3 * self.scale + 1e-4
