"""jitbench: what it costs to jit a method in JAX, strategy by strategy.

Importing this package is cheap on purpose (asv imports it in every benchmark
process): it loads NumPy and the strategy registry, not JAX, pandas,
matplotlib, equinox or flax. Those load when a function needs them.
"""

from __future__ import annotations

from typing import Any

from jitbench.computation import compute, reference_calc
from jitbench.devices import DEVICE_SPECS, available_devices
from jitbench.errors import DeviceUnavailable, JitbenchError, StrategyUnavailable
from jitbench.factory import make_class, make_instance
from jitbench.strategies import (
    STRATEGIES,
    Shape,
    Strategy,
    arrays_of,
    get_strategy,
    register_strategy,
    statics_of,
)

__all__ = [
    "DEVICE_SPECS",
    "STRATEGIES",
    "DeviceUnavailable",
    "JitbenchError",
    "Shape",
    "Strategy",
    "StrategyUnavailable",
    "arrays_of",
    "audit",
    "available_devices",
    "compute",
    "get_strategy",
    "make_class",
    "make_instance",
    "reference_calc",
    "register_strategy",
    "statics_of",
]


def audit(strategy: str | Strategy, **kwargs: Any) -> Any:
    """Run the cache audit scenario (imports JAX); see :func:`jitbench.audit.audit`."""
    from jitbench.audit import audit as _audit

    return _audit(strategy, **kwargs)
