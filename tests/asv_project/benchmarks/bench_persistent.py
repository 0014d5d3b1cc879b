from ._fixture import (
    COMPILE,
    DISK_HITS,
    EDGE_SIZES,
    STRATEGIES,
    UNSHARDED_DEVICES,
    check_device,
    per_call_units,
    spin,
)

# Share of the compile a disk-cache hit leaves: tracing and lowering still run.
AFTER_HIT = 0.25


class NewProcess:
    params = (STRATEGIES, EDGE_SIZES, UNSHARDED_DEVICES)
    param_names = ["strategy", "size", "device"]
    number = 1
    repeat = 1

    def setup(self, strategy, size, device):
        check_device(device)


class ColdDiskCache(NewProcess):
    def time_first_call(self, strategy, size, device):
        spin(COMPILE[strategy] + per_call_units(strategy, size, device))


class WarmDiskCache(NewProcess):
    def time_first_call(self, strategy, size, device):
        hit = DISK_HITS.get(strategy, 1) > 0
        units = COMPILE[strategy] * (AFTER_HIT if hit else 1)
        spin(units + per_call_units(strategy, size, device))

    def track_persistent_cache_hits(self, strategy, size, device):
        return DISK_HITS.get(strategy, 1)

    track_persistent_cache_hits.unit = "hits"
