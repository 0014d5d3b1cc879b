"""The first call in a fresh interpreter with JAX's on-disk compilation cache cold or warm.

What users of short-lived jobs and notebooks see: a warm disk cache skips
the backend compile but not the tracing and lowering that compute its key.
"""

from jitbench import suite


class PersistentCache:
    """Fresh interpreters timing one first call; cache directories are temporary."""

    # Only the smallest and largest size: every sample starts an interpreter.
    params = [suite.strategy_names(), suite.edge_sizes(), list(suite.DEVICES)]
    param_names = ["strategy", "size", "device"]
    repeat = 2
    warmup_time = 0.0
    rounds = 1
    timeout = 300
    version = "1"
    cache_dir = None

    def setup(self, strategy, size, device):
        suite.require(strategy, device)

    def teardown(self, strategy, size, device):
        suite.remove_disk_cache(self.cache_dir)

    def timeraw_first_call_disk_cache_cold(self, strategy, size, device):
        # A new, empty cache directory in the timed interpreter: compile and write.
        return suite.fresh_process_code(strategy, size, device, disk_cache="empty")

    def timeraw_first_call_disk_cache_warm(self, strategy, size, device):
        if self.cache_dir is None:
            self.cache_dir = suite.fill_disk_cache(strategy, size, device)
        return suite.fresh_process_code(strategy, size, device, disk_cache=self.cache_dir)

    def track_persistent_cache_hits(self, strategy, size, device):
        self.cache_dir = suite.fill_disk_cache(strategy, size, device)
        return suite.disk_cache_hits(strategy, size, device, self.cache_dir)

    track_persistent_cache_hits.unit = "hits"
