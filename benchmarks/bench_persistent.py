"""The first call of a new process with JAX's on-disk compilation cache cold or warm.

What users of short-lived jobs and notebooks see: a warm disk cache skips
the backend compile but not the tracing and lowering that compute its key.
Each process times one first call (``jitbench.measure.diskcache``); two rounds give
two processes per combination.
"""

import tempfile

from jitbench.measure import diskcache

from .common import EDGE_SIZES, STRATEGIES, UNSHARDED_DEVICES, Benchmark


class NewProcess(Benchmark):
    params = [STRATEGIES, EDGE_SIZES, UNSHARDED_DEVICES]
    number = 1
    repeat = 1
    warmup_time = 0.0
    rounds = 2


class ColdDiskCache(NewProcess):
    """A new, empty cache directory: the first call compiles and writes it."""

    def setup(self, strategy, size, device):
        subject = self.row(strategy, size, device).load()
        self.first_call = diskcache.first_call(subject, tempfile.mkdtemp(dir="."))

    def time_first_call(self, strategy, size, device):
        self.first_call()


class WarmDiskCache(NewProcess):
    """A cache directory filled by another process (``setup_cache``; asv removes it)."""

    def setup_cache(self):
        return diskcache.fill_all(STRATEGIES, EDGE_SIZES, UNSHARDED_DEVICES)

    def setup(self, filled, strategy, size, device):
        self.subject = self.row(strategy, size, device).load()
        self.path = filled[strategy, size, device]
        self.first_call = diskcache.first_call(self.subject, self.path)

    def time_first_call(self, filled, strategy, size, device):
        self.first_call()

    def track_persistent_cache_hits(self, filled, strategy, size, device):
        return diskcache.hits(self.subject, self.path)

    track_persistent_cache_hits.unit = "hits"
    track_persistent_cache_hits.rounds = 1
