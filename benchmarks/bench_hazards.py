"""Correctness hazards from the cache audit scenario, as tracked counts."""

from jitbench.suite import families

from .common import PerDevice


class Hazards(families.Hazards, PerDevice):
    """Totals of the cache audit per strategy and device (see ``jitbench audit``)."""

    def setup_cache(self):
        return self.totals()
