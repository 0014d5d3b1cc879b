"""The ``canary`` strategy (:mod:`jitbench.strategies.canary`'s class, a known regression),
registered on import only: ``JITBENCH_PLUGINS=jitbench.ways.canary``."""

from __future__ import annotations

from jitbench.strategies.canary import CANARY_SOURCE, NAME, SLOWDOWN_ENV
from jitbench.ways.registry import Strategy, register_strategy

CANARY = Strategy(
    NAME,
    f"helper_function plus extra host work per call, sized by {SLOWDOWN_ENV}",
    "a known regression: validates that the suite and jitbench compare detect one",
    lambda t: t.render(CANARY_SOURCE),
)


def register() -> Strategy:
    """Add (or re-add) ``canary`` to the registry; importing this module does it once."""
    return register_strategy(CANARY, replace=True)


register()
