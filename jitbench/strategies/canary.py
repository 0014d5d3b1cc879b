"""The ``canary`` strategy: ``helper_function`` made slower by a known fraction.

``jitbench validate`` needs a regression of known size to check that the suite
and ``jitbench compare`` detect one. Importing this module registers the
``canary`` strategy (name it in ``JITBENCH_PLUGINS=jitbench.strategies.canary``; it is
never registered otherwise). Its method is exactly ``helper_function``'s, plus
``k`` units of real host work (a pure-Python loop, no sleeping) before the
dispatch, where ``k`` makes the cached call about ``JITBENCH_CANARY_SLOWDOWN``
(a fraction: 0.10 = 10% slower) slower than ``helper_function``'s on this
machine, for the instance's size and device.

``k`` is calibrated when an instance is built, in the process that uses it,
under that process's load (:func:`calibrate`): the instance's own cached call
without work (which is ``helper_function``'s code), the cost of calling the
work loop with no work, and the cost of one unit are timed there, and
:func:`units_for` does the arithmetic. A slowdown of 0 times nothing and adds
no work, which makes the canary a copy of ``helper_function``.
"""

from __future__ import annotations

import math
import os
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any

from jitbench.errors import JitbenchError
from jitbench.strategies import Strategy, register_strategy
from jitbench.strategies.codegen import Template, arrays_of, shape_of, statics_of
from jitbench.strategies.recipes import HELPER_FUNCTION

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
    """Run ``units`` units of work (steps of a linear congruential generator).

    Returns the final state, so the arithmetic is not idle.
    """
    state = 1
    for _ in range(units):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
    return state


def units_for(
    slowdown: float, call_seconds: float, unit_seconds: float, fixed_seconds: float = 0.0
) -> int:
    """Units of work that add ``slowdown`` x ``call_seconds`` to a call.

    The work costs ``fixed_seconds`` (the loop's own cost) plus
    ``unit_seconds`` per unit. Any slowdown above 0 plants at least one
    unit: the smallest extra work there is.
    """
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
    func: Callable[[], Any],
    repeats: int,
    budget: float,
    pick: Callable[[list[float]], float] = statistics.median,
) -> float:
    """Seconds per call of ``func``: ``pick`` (median) of ``repeats`` loops of about ``budget``.

    Kept short on purpose: the calibration runs inside the cached-call
    benchmark's first call, and asv counts that wall time against the
    benchmark's sampling time (``repeat``'s max_time), so a long calibration
    would leave the canary fewer samples than the strategies it is compared with.
    """
    once = math.inf
    for _ in range(3):
        start = time.perf_counter()
        func()
        once = min(once, time.perf_counter() - start)
    number = max(1, int(budget / max(once, 1e-9)))
    return pick(timeit.Timer(func).repeat(repeat=repeats, number=number)) / number


def spin_costs(repeats: int = UNIT_REPEATS, budget: float = UNIT_BUDGET_S) -> tuple[float, float]:
    """Seconds of calling :func:`spin` with no work, and seconds per unit, here and now.

    The call's own cost matters at small sizes, where the planted work is a
    few units. Both are the fastest loop's: the work is the same every time,
    and a loop another process interrupted would overstate it.
    """
    empty = _seconds(lambda: spin(0), repeats, budget, min)
    batch = _seconds(lambda: spin(UNIT_BATCH), repeats, budget, min)
    return empty, max(batch - empty, batch / 2) / UNIT_BATCH


def calibrate(obj: Any, y: Any, slowdown: float) -> int:
    """The units that slow ``obj.calc(y)`` by ``slowdown``, timed on ``obj`` without work.

    The call is timed as the cached-call benchmark times it: compiled
    first, then loops of calls with the result waited for, the median loop.
    ``obj.units`` is 0 afterwards.
    """
    from jax import block_until_ready

    def call() -> Any:
        return block_until_ready(obj.calc(y))

    obj.units = 0
    call()  # compiles
    seconds = _seconds(call, CALL_REPEATS, CALL_BUDGET_S)
    spin_seconds, unit_seconds = spin_costs()
    return units_for(slowdown, seconds, unit_seconds, spin_seconds)


_units: dict[tuple[Any, ...], int] = {}


def reset_calibration() -> None:
    """Forget this process's calibrations (the next instance is calibrated again)."""
    _units.clear()


def planned_units(obj: Any) -> int:
    """The units of work ``obj.calc`` adds, from this process's calibration.

    Calibrated once per process, slowdown and field layout (shapes, dtypes,
    placement, statics, program size), with the instance's first array as
    ``y``; a slowdown of 0 times nothing.
    """
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


def _render(t: Template) -> str:
    return t.render(CANARY_SOURCE)


CANARY = Strategy(
    NAME,
    f"helper_function plus extra host work per call, sized by {SLOWDOWN_ENV}",
    "a known regression: validates that the suite and jitbench compare detect one",
    _render,
)


def register() -> Strategy:
    """Add (or re-add) ``canary`` to the registry; importing this module does it once."""
    return register_strategy(CANARY, replace=True)


register()
