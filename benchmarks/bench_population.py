"""Many live instances of one strategy: opt-in, minutes (``nox -s instances``).

A population of instances, each called once and kept alive, then a cached
call of its first instance and of a jit created after it (jax issue 39078:
past 8,192 live jitted functions, later jits lose their C++ fast path).
Without ``JITBENCH_INSTANCES=1`` every row is n/a with the reason.
"""

from jitbench import population

from .common import SIZES, STRATEGIES, Track


class Population(Track):
    """One fresh process per population, measured when its row runs and kept for its
    other figures (``setup_cache`` makes the store); see ``jitbench.population``."""

    params = [STRATEGIES, list(population.INSTANCE_COUNTS), ["cpu"]]
    param_names = ["strategy", "instances", "device"]
    timeout = population.TIMEOUT_S * 4

    def setup_cache(self):
        return population.store()

    def setup(self, found, strategy, instances, device):
        self.figures = population.lookup(found, strategy, instances, device, min(SIZES))

    def track_first_call(self, found, strategy, instances, device):
        return self.figures["first_call"]

    def track_first_call_dispatch(self, found, strategy, instances, device):
        return self.figures["first_call_dispatch"]

    def track_after_jit_call(self, found, strategy, instances, device):
        return self.figures["after_jit_call"]

    def track_after_jit_dispatch(self, found, strategy, instances, device):
        return self.figures["after_jit_dispatch"]

    def track_after_jit_python_calls(self, found, strategy, instances, device):
        return self.figures["after_jit_python_calls"]

    track_after_jit_python_calls.unit = "calls"

    def track_build_seconds(self, found, strategy, instances, device):
        return self.figures["build_seconds"]

    def track_peak_rss(self, found, strategy, instances, device):
        return self.figures["peak_rss"]

    track_peak_rss.unit = "bytes"

    def track_kept_alive(self, found, strategy, instances, device):
        return self.figures["kept_alive"]

    track_kept_alive.unit = "instances"
