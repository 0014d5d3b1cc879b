"""The ``canary`` strategy: ``helper_function`` made slower by a known fraction.

``jitbench validate`` needs a regression of known size to check that the suite
and ``jitbench compare`` detect one. Importing this module registers the
``canary`` strategy (name it in ``JITBENCH_PLUGINS=jitbench.canary``; it is
never registered otherwise). Its method is exactly ``helper_function``'s, plus
``k`` units of real host work (a pure-Python loop, no sleeping) before the
dispatch, where ``k`` makes the cached call about ``JITBENCH_CANARY_SLOWDOWN``
(a fraction: 0.10 = 10% slower) slower than ``helper_function``'s on this
machine, for the instance's size and device.

``k`` is calibrated when an instance is built, in the process that uses it:
the cached call of a ``helper_function`` instance with the same fields and the
cost of one unit are timed there, under that process's load, and
:func:`units_for` does the arithmetic. A slowdown of 0 times nothing and adds
no work, which makes the canary a copy of ``helper_function``.
"""

from __future__ import annotations

import functools
import math
import os
import statistics
import time
import timeit
from collections.abc import Callable, Sequence
from typing import Any

from jitbench.codegen import Shape, Template, arrays_of, shape_of, statics_of
from jitbench.errors import JitbenchError
from jitbench.recipes import HELPER_FUNCTION
from jitbench.strategies import Strategy, get_strategy, register_strategy

NAME = "canary"
SLOWDOWN_ENV = "JITBENCH_CANARY_SLOWDOWN"
# Units per timing loop when the unit cost is measured: long enough that the
# loop's own call overhead is a small part of each unit.
UNIT_BATCH = 1000
CALL_REPEATS = 5
CALL_BUDGET_S = 0.04
UNIT_REPEATS = 3
UNIT_BUDGET_S = 0.01


def work_unit(state: int) -> int:
    """One unit of work: a step of a linear congruential generator (real arithmetic)."""
    return (state * 1103515245 + 12345) & 0x7FFFFFFF


def spin(units: int, step: Callable[[int], int] = work_unit) -> int:
    """Run ``units`` units of work; returns the final state so the work is not idle."""
    state = 1
    for _ in range(units):
        state = step(state)
    return state


def units_for(slowdown: float, call_seconds: float, unit_seconds: float) -> int:
    """Units of work that add ``slowdown`` x ``call_seconds`` to a call, given one unit's cost."""
    if not (math.isfinite(slowdown) and slowdown >= 0):
        raise JitbenchError(f"canary slowdown must be a finite fraction >= 0, got {slowdown!r}")
    for name, value in (("call_seconds", call_seconds), ("unit_seconds", unit_seconds)):
        if not (math.isfinite(value) and value > 0):
            raise JitbenchError(f"canary {name} must be a positive number, got {value!r}")
    return round(slowdown * call_seconds / unit_seconds)


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


def _median_seconds(func: Callable[[], Any], repeats: int, budget: float) -> float:
    """Median seconds per call of ``func`` over ``repeats`` loops of about ``budget`` seconds.

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
    timer = timeit.Timer(func)
    return statistics.median(timer.repeat(repeat=repeats, number=number)) / number


def unit_seconds(repeats: int = UNIT_REPEATS, budget: float = UNIT_BUDGET_S) -> float:
    """Seconds per unit of work on this machine now (median of ``repeats`` timed loops)."""
    return _median_seconds(lambda: spin(UNIT_BATCH), repeats, budget) / UNIT_BATCH


def call_seconds(
    arrays: Sequence[Any],
    statics: Sequence[int],
    n_ops: int = 1,
    repeats: int = CALL_REPEATS,
    budget: float = CALL_BUDGET_S,
) -> float:
    """Seconds of ``helper_function``'s cached call on these fields, result waited for.

    The instance is built from the same arrays (so the same size, dtype and
    device) and called once to compile before it is timed, as the cached-call
    benchmark does.
    """
    from jitbench.measure import block

    helper = get_strategy("helper_function")
    cls = helper.make_class(Shape(len(arrays), len(statics), n_ops))
    obj = cls(*arrays, *statics)
    y = arrays[0]
    block(obj.calc(y))
    return _median_seconds(lambda: block(obj.calc(y)), repeats, budget)


@functools.cache
def _unit_seconds_once() -> float:
    return unit_seconds()


_calls: dict[tuple[Any, ...], float] = {}


def reset_calibration() -> None:
    """Forget this process's measurements (the next instance is calibrated again)."""
    _calls.clear()
    _unit_seconds_once.cache_clear()


def planned_units(obj: Any) -> int:
    """The units of work ``obj.calc`` adds, from this process's calibration.

    Timed once per process and field layout (shapes, dtypes, placement,
    statics, program size); a slowdown of 0 times nothing.
    """
    slowdown = slowdown_from_env()
    if slowdown == 0:
        return 0
    arrays, statics = arrays_of(obj), tuple(statics_of(obj))
    n_ops = shape_of(obj).n_ops
    layout = tuple((a.shape, str(a.dtype), repr(getattr(a, "sharding", None))) for a in arrays)
    key = (layout, statics, n_ops)
    if key not in _calls:
        _calls[key] = call_seconds(arrays, statics, n_ops)
    return units_for(slowdown, _calls[key], _unit_seconds_once())


# helper_function's source, plus the calibrated work before the dispatch.
CANARY_SOURCE = (
    HELPER_FUNCTION.replace(
        "import jax.numpy as jnp\n",
        "import jax.numpy as jnp\n\nfrom jitbench.canary import planned_units, spin\n",
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
