"""The counting process: every row of a plan, counted under callgrind (see :mod:`.instructions`).

``python -m jitbench.measure.counting.worker PLAN OUT`` runs under Valgrind
(:func:`jitbench.measure.counting.instructions.count_rows` starts it): per row and
kind of call, uncounted calls first, then two counted stretches whose difference
is the count per call.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from jitbench.errors import NoFigure
from jitbench.measure.counting import callgrind
from jitbench.measure.counting.callgrind import Counter
from jitbench.measure.counting.instructions import (
    BUDGET,
    COMPILES_REASON,
    KINDS,
    LONG,
    SHORT,
    WARM_UP,
    Row,
    _per_call,
)  # fmt: skip


def calls_for(per_call: float) -> tuple[int, tuple[int, int]]:
    """The warm-up's calls and the two counted stretches' for a call of ``per_call`` instructions.

    ``WARM_UP`` and (``SHORT``, ``LONG``), fewer where they would pass ``BUDGET``
    (at least 3 warm-up calls, stretches of 1 and 2): the count per call does
    not depend on them, a run's minutes do.
    """
    fit = int(BUDGET // max(per_call, 1.0))
    warm = min(WARM_UP, max(3, fit))
    if per_call * LONG <= BUDGET:
        return warm, (SHORT, LONG)
    many = max(2, fit)
    return warm, (max(1, many // 3), many)


def _prepare(row: Row) -> Any:
    """The row's object, built and called once (compiled), as the timed benchmarks build it;
    a ``twin`` row: the strategy's hand-written twin on the generated instance's arrays."""
    from jitbench.measure.case import Prepared

    subject = row.case.load()
    if not row.twin:
        return Prepared(subject)
    from jitbench.strategies.codegen import arrays_of, statics_of
    from jitbench.strategies.twins import twin

    obj = subject.new()
    (x,), (mul,) = arrays_of(obj), statics_of(obj)
    return Prepared(subject, obj=twin(row.subject)(x, mul))


# The loop each stretch runs, compiled anew for every row and kind of call (see _loop).
# A slowdown's planted work is that many additions written out in the loop: no call and
# no loop of its own, so it costs nothing but its units (tens of instructions each), and
# a slowdown of 2% of a call of 50,000 instructions is met to within one unit.
_LOOP = "def loop(calls):\n    n = 0\n    for _ in range(calls):\n        {call}\n        {work}\n"
_UNIT = "n += 1"
# The units of work whose count gives the count of one unit.
UNIT_BATCH = 1000


def _loop(prepared: Any, kind: str, units: int = 0) -> Callable[[int], None]:
    """``loop(n)``: the row's call made ``n`` times (``units`` of work planted), in code of its own.

    CPython specialises each bytecode to the types it meets; a loop shared by every
    row would carry the previous row's specialisations into the next, and a row's
    count would depend on the rows before it. A fresh code object per row and kind
    starts unspecialised, as the row's own code would. ``prepared`` None: no call,
    the planted work alone.
    """
    from jitbench.compiles import block
    from jitbench.measure.case import call_code, compiled

    call, names = ("pass", {}) if prepared is None else call_code(prepared.subject, prepared.obj)
    source = _LOOP.format(
        call=f"block({call})" if kind == "call" and prepared is not None else call,
        work="\n        ".join([_UNIT] * units) if units else "pass",
    )
    return compiled(source, {**names, "block": block}, "loop")


@dataclasses.dataclass(frozen=True)
class _Stretches:
    """The counting process's counter and the folder its dumps go to (it reads its probes)."""

    counter: Counter
    folder: Path

    def count(self, label: str, loop: Callable[[int], None], calls: int) -> None:
        """``loop(calls)``, counted and dumped under ``label:calls``."""
        self.counter.start()
        loop(calls)
        self.counter.stop(f"{label}:{calls}")

    def probe(self, label: str, loop: Callable[[int], None]) -> int:
        """The calling thread's instructions of one counted call of ``loop``."""
        self.count(f"{label}:probe", loop, 1)
        dumps = callgrind.read_dumps(self.folder, f"{label}:probe:1")
        return sum(d.instructions for d in dumps if d.thread == callgrind.CALLING_THREAD)

    def pair(
        self, label: str, loop: Callable[[int], None], after: Callable[[], Any]
    ) -> tuple[int, int]:
        """Warm ``loop`` up, then count its two stretches under ``label``; returns their calls.

        The calls of each are sized by a counted probe call (:func:`calls_for`).
        """
        from jitbench.compiles import count_compiles

        loop(1)  # the first call of this kind may still do one-time work
        with count_compiles() as compiled:
            loop(1)
            if not compiled.compiles:
                warm, used = calls_for(self.probe(label, loop))
                loop(warm)
        if compiled.compiles:
            raise NotImplementedError(COMPILES_REASON)
        after()
        gc.collect()
        gc.disable()
        try:
            for calls in used:
                self.count(label, loop, calls)
                after()
        finally:
            gc.enable()
        return used

    def per_call(self, label: str, used: tuple[int, int]) -> float:
        """The calling thread's count per call of a :meth:`pair` already counted."""
        dumps = [d for n in used for d in callgrind.read_dumps(self.folder, f"{label}:{n}")]
        return _per_call(dumps, label, used, callgrind.CALLING_THREAD)


def _calibrate(stretches: _Stretches, index: int, prepared: Any, slowdown: float) -> int:
    """The units of planted work that add ``slowdown`` of the row's call count, by counts.

    The call without work, an empty loop and ``UNIT_BATCH`` units are counted
    here; :func:`jitbench.strategies.canary.units_for` does the canary's own arithmetic
    with instructions in place of seconds.
    """
    from jitbench.strategies.canary import units_for

    loops = {
        "call": _loop(prepared, "call"),
        "empty": _loop(None, "call"),
        "work": _loop(None, "call", UNIT_BATCH),
    }
    per_call = {}
    for name, loop in loops.items():
        label = f"{index}:calibrate:{name}"
        per_call[name] = stretches.per_call(label, stretches.pair(label, loop, lambda: None))
    unit = (per_call["work"] - per_call["empty"]) / UNIT_BATCH
    return units_for(slowdown, per_call["call"], unit)


def _count(
    stretches: _Stretches, index: int, row: Row, prepared: Any
) -> dict[str, tuple[int, int]]:
    """Count the row's stretches of each kind of call; returns their numbers of calls."""
    from jitbench.compiles import block

    calibrated = row.slowdown or row.calibrated
    units = _calibrate(stretches, index, prepared, row.slowdown) if calibrated else 0
    return {
        kind: stretches.pair(
            f"{index}:{kind}", _loop(prepared, kind, units), lambda: block(prepared.call())
        )
        for kind in KINDS
    }


def work(plan: Path, out: Path) -> None:
    """The worker, under callgrind: count every row of ``plan``, outcomes to ``out``.

    Callgrind writes its dumps beside ``plan`` (the canary's calibration reads them).
    Per row its stretches' numbers of calls per kind, or why it has none.
    """
    import jax

    from jitbench.strategies import load_plugins

    load_plugins()  # JITBENCH_PLUGINS' strategies (the canary) are rows too
    jax.config.update("jax_cpu_enable_async_dispatch", False)  # see the module docstring
    stretches = _Stretches(Counter(), plan.parent)
    outcomes: list[Any] = []
    for index, fields in enumerate(json.loads(plan.read_text())):
        row = Row(**fields)
        try:
            outcomes.append(_count(stretches, index, row, _prepare(row)))
        except Exception as exc:  # one row's failure is its own, not the whole run's
            outcomes.append(NoFigure.of(exc).to_json())
    out.write_text(json.dumps(outcomes))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jitbench.measure.counting.instructions")
    parser.add_argument("plan", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    work(args.plan, args.out)


if __name__ == "__main__":
    main()
