"""jitbench: what it costs to jit a method in JAX, strategy by strategy.

Importing this package is cheap on purpose (asv imports it in every benchmark
process): it loads NumPy and the strategy registry, not JAX, pandas,
matplotlib, equinox or flax. Those load when a function needs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jitbench.devices import DEVICE_SPECS, Placement, host_devices, resolve
from jitbench.errors import DeviceUnavailable, JitbenchError, StrategyUnavailable
from jitbench.strategies import (
    STRATEGIES,
    Strategy,
    get_strategy,
    load_plugins,
    register_strategy,
)
from jitbench.strategies.codegen import Shape, Template, arrays_of, shape_of, statics_of
from jitbench.strategies.computation import compute, reference_calc, render_body
from jitbench.strategies.instances import make_instance
from jitbench.targets import Inputs, Target, load_target

if TYPE_CHECKING:
    from jitbench.measure.timing import Timings
    from jitbench.subjects.result import AuditResult

__all__ = [
    "DEVICE_SPECS",
    "STRATEGIES",
    "DeviceUnavailable",
    "Inputs",
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
    """The cache audit of a built-in strategy (imports JAX); see
    :func:`jitbench.subjects.audit.audit`."""
    from jitbench.subjects.audit import audit as run_audit

    return run_audit(strategy, placement, **kwargs)


def audit_object(target: Target, **kwargs: Any) -> AuditResult:
    """The cache audit of a user's object (imports JAX); see
    :func:`jitbench.subjects.audit.audit_object`."""
    from jitbench.subjects.audit import audit_object as run_audit

    return run_audit(target, **kwargs)


def time_object(target: Target, **kwargs: Any) -> Timings:
    """Time a user's object's call as the suite times it (imports JAX); see
    :func:`jitbench.measure.timing.time_subject`."""
    from jitbench.measure.timing import time_subject
    from jitbench.subjects.subject import subject_of

    return time_subject(subject_of(target), **kwargs)
