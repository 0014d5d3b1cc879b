"""The ``canary`` strategy's class: ``helper_function`` made slower by a known fraction
(``JITBENCH_CANARY_SLOWDOWN``), calibrated in the process that uses it. The strategy
registers where :mod:`jitbench.ways.canary` is imported
(``JITBENCH_PLUGINS=jitbench.ways.canary``); how the work is sized: docs/design.md.
"""

from __future__ import annotations

import math
import os
import statistics
import timeit
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from jitbench.errors import JitbenchError
from jitbench.strategies.codegen import arrays_of, shape_of, statics_of
from jitbench.strategies.recipes import HELPER_FUNCTION

if TYPE_CHECKING:
    import jax


class Slowed(Protocol):
    """A canary instance: its call, and the units of work it adds to it."""

    units: int

    def calc(self, y: jax.Array) -> jax.Array: ...


NAME = "canary"
SLOWDOWN_ENV = "JITBENCH_CANARY_SLOWDOWN"
# The unit's cost: spin(UNIT_BATCH) calls (enough units that the call's own cost is
# a small part of each), the fastest of UNIT_REPEATS loops of about UNIT_BUDGET_S.
UNIT_BATCH = 1000
UNIT_REPEATS = 10
UNIT_BUDGET_S = 0.002
# The call without work: median of CALL_REPEATS loops of CALL_BUDGET_S each.
CALL_REPEATS = 5
CALL_BUDGET_S = 0.04


def spin(units: int) -> int:
    """Run ``units`` steps of a linear congruential generator; the final state is returned
    so that the arithmetic is not idle."""
    state = 1
    for _ in range(units):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
    return state


def units_for(
    slowdown: float, call_seconds: float, unit_seconds: float, fixed_seconds: float = 0.0
) -> int:
    """Units of work that add ``slowdown`` x ``call_seconds`` to a call, the work costing
    ``fixed_seconds`` plus ``unit_seconds`` per unit; at least one for any slowdown above 0."""
    if not (math.isfinite(slowdown) and slowdown >= 0):
        raise JitbenchError(f"canary slowdown must be a finite fraction >= 0, got {slowdown!r}")
    for name, value in (("call_seconds", call_seconds), ("unit_seconds", unit_seconds)):
        if not (math.isfinite(value) and value > 0):
            raise JitbenchError(f"canary {name} must be a positive number, got {value!r}")
    if not (math.isfinite(fixed_seconds) and fixed_seconds >= 0):
        raise JitbenchError(f"canary fixed_seconds must be a number >= 0, got {fixed_seconds!r}")
    if slowdown == 0:
        return 0
    return max(1, round((slowdown * call_seconds - fixed_seconds) / unit_seconds))


def slowdown_from_env() -> float:
    """``JITBENCH_CANARY_SLOWDOWN`` as a fraction; unset or empty means 0 (no extra work)."""
    text = os.environ.get(SLOWDOWN_ENV, "").strip()
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise JitbenchError(
            f"{SLOWDOWN_ENV} is {text!r}; expected a fraction >= 0 such as 0.10 (10% slower)"
        )
    return value


def _seconds(
    func: Callable[[], object],
    repeats: int,
    budget: float,
    pick: Callable[[list[float]], float] = statistics.median,
) -> float:
    """Seconds per call of ``func``: ``pick`` (median) of ``repeats`` loops of about ``budget``
    (kept short on purpose: see docs/design.md)."""
    timer = timeit.Timer(func)
    once = min(timer.repeat(repeat=3, number=1))
    number = max(1, int(budget / max(once, 1e-9)))
    return pick(timer.repeat(repeat=repeats, number=number)) / number


def spin_costs(repeats: int = UNIT_REPEATS, budget: float = UNIT_BUDGET_S) -> tuple[float, float]:
    """Seconds of calling :func:`spin` with no work, and seconds per unit, here and now (the
    fastest loop's: why in docs/design.md)."""
    empty = _seconds(lambda: spin(0), repeats, budget, min)
    batch = _seconds(lambda: spin(UNIT_BATCH), repeats, budget, min)
    return empty, max(batch - empty, batch / 2) / UNIT_BATCH


def calibrate(obj: Slowed, y: jax.Array, slowdown: float) -> int:
    """The units that slow ``obj.calc(y)`` by ``slowdown``, timed on ``obj`` without work as
    the cached-call benchmark times it; ``obj.units`` is 0 afterwards."""
    from jax import block_until_ready

    def call() -> object:
        return block_until_ready(obj.calc(y))

    obj.units = 0
    call()  # compiles
    seconds = _seconds(call, CALL_REPEATS, CALL_BUDGET_S)
    spin_seconds, unit_seconds = spin_costs()
    return units_for(slowdown, seconds, unit_seconds, spin_seconds)


_units: dict[tuple[object, ...], int] = {}


def reset_calibration() -> None:
    """Forget this process's calibrations (the next instance is calibrated again)."""
    _units.clear()


def planned_units(obj: object) -> int:
    """The units of work ``obj.calc`` adds: calibrated once per process, slowdown and field
    layout (shapes, dtypes, placement, statics, program size), with the first array as
    ``y``; a slowdown of 0 times nothing."""
    slowdown = slowdown_from_env()
    if slowdown == 0:
        return 0
    arrays, statics = arrays_of(obj), tuple(statics_of(obj))
    layout = tuple((a.shape, str(a.dtype), repr(getattr(a, "sharding", None))) for a in arrays)
    key = (slowdown, layout, statics, shape_of(obj).n_ops)
    if key not in _units:
        _units[key] = calibrate(obj, arrays[0], slowdown)
    return _units[key]


# helper_function's source, plus the calibrated work before the dispatch.
CANARY_SOURCE = (
    HELPER_FUNCTION.replace(
        "import jax.numpy as jnp\n",
        "import jax.numpy as jnp\n\nfrom jitbench.strategies.canary import planned_units, spin\n",
    )
    .replace("class HelperFunction:", "class Canary:")
    .replace(
        "        {init}\n",
        "        {init}\n        self.units = planned_units(self)\n",
    )
    .replace(
        "    def calc(self, y):\n",
        "    def calc(self, y):\n        if self.units:\n            spin(self.units)\n",
    )
)
