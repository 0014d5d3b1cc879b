from ._fixture import CHANGES, PER_CALL, SIZES, STRATEGIES, UNSHARDED_DEVICES, check_device

# Seconds, as the suite's device rows record them; the fixture's accelerator is absent.
UNIT = 1e-6


class DeviceCalls:
    params = (STRATEGIES, SIZES, UNSHARDED_DEVICES)
    param_names = ["strategy", "size", "device"]
    unit = "seconds"

    def setup(self, strategy, size, device):
        check_device(device)

    def track_dispatch_seconds(self, strategy, size, device):
        return PER_CALL[strategy] * UNIT

    def track_call_seconds(self, strategy, size, device):
        return PER_CALL[strategy] * UNIT * 2

    def track_loop_seconds(self, strategy, size, device):
        return PER_CALL[strategy] * UNIT


class DeviceFirstCall:
    params = (STRATEGIES, SIZES, UNSHARDED_DEVICES)
    param_names = ["strategy", "size", "device"]
    unit = "seconds"

    def setup(self, strategy, size, device):
        check_device(device)

    def track_first_call_seconds(self, strategy, size, device):
        return 0.03


class DeviceAfterChange:
    params = (STRATEGIES, SIZES, UNSHARDED_DEVICES, CHANGES)
    param_names = ["strategy", "size", "device", "change"]
    unit = "seconds"

    def setup(self, strategy, size, device, change):
        check_device(device)

    def track_call_after_change_seconds(self, strategy, size, device, change):
        return 0.03 if change in ("new_static", "new_shape_array") else PER_CALL[strategy] * UNIT
