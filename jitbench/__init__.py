"""jitbench: what it costs to jit a method in JAX, strategy by strategy.

``import jitbench`` is light: its names load on first use, the heavy packages when a function
needs them (why: docs/design.md).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# Type checkers read the lazy names here (F401 is off for this file: __all__ is built at run
# time, out of a linter's sight); tests/test_import.py holds these imports to _LAZY.
if TYPE_CHECKING:
    from jitbench.advise import advise_object
    from jitbench.auditing.audit import audit, audit_object
    from jitbench.devices import DEVICE_SPECS, Placement, host_devices, resolve
    from jitbench.errors import DeviceUnavailable, JitbenchError, StrategyUnavailable
    from jitbench.measure.timing import time_object
    from jitbench.strategies.codegen import Shape, Template, arrays_of, shape_of, statics_of
    from jitbench.strategies.computation import compute, reference_calc, render_body
    from jitbench.strategies.instances import make_instance
    from jitbench.targets import Inputs, Target, load_target
    from jitbench.ways.registry import (
        STRATEGIES,
        Strategy,
        get_strategy,
        load_plugins,
        register_strategy,
    )

# Each public name and the module that defines it, imported when the name is first read.
_LAZY = {
    "jitbench.advise": ("advise_object",),
    "jitbench.auditing.audit": ("audit", "audit_object"),
    "jitbench.devices": ("DEVICE_SPECS", "Placement", "host_devices", "resolve"),
    "jitbench.errors": ("DeviceUnavailable", "JitbenchError", "StrategyUnavailable"),
    "jitbench.measure.timing": ("time_object",),
    "jitbench.strategies.codegen": ("Shape", "Template", "arrays_of", "shape_of", "statics_of"),
    "jitbench.strategies.computation": ("compute", "reference_calc", "render_body"),
    "jitbench.strategies.instances": ("make_instance",),
    "jitbench.targets": ("Inputs", "Target", "load_target"),
    "jitbench.ways.registry": (
        "STRATEGIES",
        "Strategy",
        "get_strategy",
        "load_plugins",
        "register_strategy",
    ),
}
_HOME = {name: module for module, names in _LAZY.items() for name in names}

__all__ = list(_HOME)


def __getattr__(name: str) -> object:
    """A public name, imported from its module on first use; else a submodule of jitbench."""
    home = _HOME.get(name)
    if home is not None:
        value = getattr(importlib.import_module(home), name)
        globals()[name] = value
        return value
    if not name.startswith("__"):
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
