from ._fixture import (
    CHANGES,
    COMPILE,
    DEVICES,
    SIZES,
    STRATEGIES,
    check_device,
    per_call_units,
    spin,
)

# Changes that force a retrace for every jitted strategy.
RETRACING = {"new_static", "new_shape_array"}


class AfterChange:
    params = (STRATEGIES, SIZES, DEVICES, CHANGES)
    param_names = ["strategy", "size", "device", "change"]

    def setup(self, strategy, size, device, change):
        check_device(device)

    def time_call_after_change(self, strategy, size, device, change):
        compile_units = COMPILE[strategy] if change in RETRACING else 0
        spin(compile_units + per_call_units(strategy, size, device))
