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
from jitbench.targets import Target, load_target

if TYPE_CHECKING:
    from jitbench.cache_audit import AuditResult
    from jitbench.timing import Timings

__all__ = [
    "DEVICE_SPECS",
    "STRATEGIES",
    "DeviceUnavailable",
    "JitbenchError",
    "Placement",
    "Shape",
    "Strategy",
    "StrategyUnavailable",
    "Target",
    "Template",
    "arrays_of",
    "audit",
    "audit_object",
    "compute",
    "get_strategy",
    "host_devices",
    "load_plugins",
    "load_target",
    "make_instance",
    "reference_calc",
    "register_strategy",
    "render_body",
    "resolve",
    "shape_of",
    "statics_of",
    "time_object",
]


def audit(strategy: Strategy, placement: Placement, **kwargs: Any) -> AuditResult:
    """Run the cache audit scenario (imports JAX); see :func:`jitbench.cache_audit.audit`."""
    from jitbench.cache_audit import audit as run_audit

    return run_audit(strategy, placement, **kwargs)


def audit_object(target: Target, **kwargs: Any) -> AuditResult:
    """The cache audit of a user's object (imports JAX); see :mod:`jitbench.object_audit`."""
    from jitbench.object_audit import audit_object as run_audit

    return run_audit(target, **kwargs)


def time_object(target: Target, **kwargs: Any) -> Timings:
    """Time a user's object's call (imports JAX); see :func:`jitbench.timing.time_object`."""
    from jitbench.timing import time_object as run_timing

    return run_timing(target, **kwargs)
