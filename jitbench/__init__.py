"""jitbench: what it costs to jit a method in JAX, strategy by strategy.

Importing this package is cheap on purpose (asv imports it in every benchmark
process): it loads NumPy and the strategy registry, not JAX, pandas,
matplotlib, equinox or flax. Those load when a function needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jitbench.codegen import Shape, Template, arrays_of, shape_of, statics_of
from jitbench.computation import compute, reference_calc, render_body
from jitbench.devices import DEVICE_SPECS, Placement, host_devices, resolve
from jitbench.errors import DeviceUnavailable, JitbenchError, StrategyUnavailable
from jitbench.instances import make_instance
from jitbench.strategies import (
    STRATEGIES,
    Strategy,
    get_strategy,
    load_plugins,
    register_strategy,
)

if TYPE_CHECKING:
    from jitbench.cache_audit import AuditResult

__all__ = [
    "DEVICE_SPECS",
    "STRATEGIES",
    "DeviceUnavailable",
    "JitbenchError",
    "Placement",
    "Shape",
    "Strategy",
    "StrategyUnavailable",
    "Template",
    "arrays_of",
    "audit",
    "compute",
    "get_strategy",
    "host_devices",
    "load_plugins",
    "make_instance",
    "reference_calc",
    "register_strategy",
    "render_body",
    "resolve",
    "shape_of",
    "statics_of",
]


def audit(strategy: Strategy, placement: Placement, **kwargs: Any) -> AuditResult:
    """Run the cache audit scenario (imports JAX); see :func:`jitbench.cache_audit.audit`."""
    from jitbench.cache_audit import audit as run_audit

    return run_audit(strategy, placement, **kwargs)
