"""Many live instances of one strategy: opt-in, minutes (``nox -s instances``).

A population of instances, each called once and kept alive, then a cached
call of its first instance and of a jit created after it (jax issue 39078:
past 8,192 live jitted functions, later jits lose their C++ fast path).
Without ``JITBENCH_INSTANCES=1`` every row is n/a with the reason.
"""

from jitbench.measure import population

from .common import SIZES, STRATEGIES, Track


class Population(Track):
    """One fresh process per population, measured when its row runs and kept for its
    other figures (``setup_cache`` makes the store); see ``jitbench.measure.population``."""

    params = [STRATEGIES, list(population.INSTANCE_COUNTS), ["cpu"]]
    param_names = ["strategy", "instances", "device"]
    timeout = population.TIMEOUT_S * 4

    def setup_cache(self):
        return population.store()

    def setup(self, found, strategy, instances, device):
        self.figures = population.lookup(found, strategy, instances, device, min(SIZES))


def _figure(name, unit):
    def track(self, found, strategy, instances, device):
        return self.figures[name]

    track.__name__, track.unit = f"track_{name}", unit
    return track


for _name in population.FIGURES:
    _unit = population.UNITS.get(_name, "seconds")
    setattr(Population, f"track_{_name}", _figure(_name, _unit))
