from ._fixture import (
    COMPILE,
    DEVICES,
    DISK_HITS,
    SIZES,
    STRATEGIES,
    check_device,
    per_call_units,
)

# Share of the compile a disk-cache hit leaves: tracing and lowering still run.
AFTER_HIT = 0.25


class PersistentCache:
    params = (STRATEGIES, SIZES, DEVICES)
    param_names = ["strategy", "size", "device"]

    def setup(self, strategy, size, device):
        check_device(device)

    def timeraw_first_call_disk_cache_cold(self, strategy, size, device):
        units = COMPILE[strategy] + per_call_units(strategy, size, device)
        return f"sum(range({int(units * 200)}))"

    def timeraw_first_call_disk_cache_warm(self, strategy, size, device):
        hit = DISK_HITS.get(strategy, 1) > 0
        units = COMPILE[strategy] * (AFTER_HIT if hit else 1)
        units += per_call_units(strategy, size, device)
        return f"sum(range({int(units * 200)}))"

    def track_persistent_cache_hits(self, strategy, size, device):
        return DISK_HITS.get(strategy, 1)

    track_persistent_cache_hits.unit = "hits"
