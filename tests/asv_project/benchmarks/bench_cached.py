import time

from ._fixture import DEVICES, SIZES, SLOW, STRATEGIES, per_call_units, skip_unless_available, spin


class CachedCall:
    # No setup hook, so asv batches many calls per sample, and CPU time rather
    # than wall time: together they keep these microsecond bodies stable enough
    # for significance tests on a busy machine.
    params = (STRATEGIES, SIZES, DEVICES)
    param_names = ["strategy", "size", "device"]
    timer = time.process_time
    warmup_time = 0.02

    def time_cached_call(self, strategy, size, device):
        skip_unless_available(device)
        spin(per_call_units(strategy, size, device) * SLOW)

    def time_cached_call_dispatch(self, strategy, size, device):
        skip_unless_available(device)
        spin(per_call_units(strategy, size, device) / 2)
