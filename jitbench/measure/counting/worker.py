"""The counting process: every row of a plan, counted under callgrind. The driver's
module-level code counts each stretch, the row's ``loop`` makes the calls: every counted
call is made from the same :data:`CALL_FRAMES` frames (see docs/counting.md).
"""

from __future__ import annotations

import dataclasses
import gc
import inspect
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

from jitbench.child import Json
from jitbench.compiles import count_compiles
from jitbench.errors import NoFigure
from jitbench.measure.case import Prepared, Row, call_code, compiled
from jitbench.measure.counting import callgrind
from jitbench.measure.counting.instructions import (
    BUDGET,
    COMPILES_REASON,
    CPU_ENV,
    DRY_RUN_ENV,
    KINDS,
    LONG,
    SHORT,
    WARM_UP,
    _per_call,
)  # fmt: skip
from jitbench.strategies.canary import UNIT_BATCH, units_for
from jitbench.strategies.codegen import arrays_of, statics_of
from jitbench.strategies.twins import twin
from jitbench.ways.registry import load_plugins

# Frames on the stack where a counted call is made: the driver's module and the loop.
CALL_FRAMES = 2
Stretch = tuple[str, Callable[[int], None], int]


def calls_for(per_call: float) -> tuple[int, tuple[int, int]]:
    """The warm-up's calls and the two counted stretches' for a call of ``per_call`` instructions:
    ``WARM_UP`` and (``SHORT``, ``LONG``), fewer where they would pass ``BUDGET`` (at least 3
    warm-up calls, stretches of 1 and 2)."""
    fit = int(BUDGET // max(per_call, 1.0))
    warm = min(WARM_UP, max(3, fit))
    if per_call * LONG <= BUDGET:
        return warm, (SHORT, LONG)
    many = max(2, fit)
    return warm, (max(1, many // 3), many)


def tracebacks(enabled: bool) -> bool:
    """Turn JAX's capture of a Python traceback at each dispatch on or off (jaxlib's private
    switch; NotImplementedError without it); returns the setting it replaces."""
    try:
        from jaxlib import _jax

        previous = bool(_jax.tracebacks_enabled())
        _jax.set_tracebacks_enabled(enabled)
    except (ImportError, AttributeError):
        raise NotImplementedError(
            "this jaxlib has no _jax.set_tracebacks_enabled: tracebacks cannot be turned off"
        ) from None
    return previous


def _prepare(row: Row) -> Prepared:
    """The row's object, built and called once (compiled), as the timed benchmarks build it;
    a ``twin`` row: the strategy's hand-written twin on the generated instance's arrays."""
    subject = row.load()
    if not row.twin:
        return Prepared(subject)
    obj = subject.new()
    (x,), (mul,) = arrays_of(obj), statics_of(obj)
    return Prepared(subject, obj=twin(row.subject)(x, mul))


# The loop each stretch runs, compiled anew for every row and kind of call (see _loop).
# A slowdown's planted work is that many additions written out in the loop: no call and
# no loop of its own. ``{hook}`` is a dry run's record of the stack at the call.
_LOOP = (
    "def loop(calls):\n    n = 0\n    for _ in range(calls):\n{hook}        {call}\n"
    "        {work}\n"
)
_HOOK = "        frames_seen.add(len(stack(0)))\n"
_UNIT = "n += 1"


def _loop(
    prepared: Prepared | None, kind: str, units: int = 0, hook: set[int] | None = None
) -> Callable[[int], None]:
    """``loop(n)``: the row's call made ``n`` times (``units`` of work planted), in a code object
    of its own, unspecialised (``prepared`` None: the planted work alone). ``hook`` (a dry
    run) collects the frames on the stack at each call."""
    import jax

    call, names = ("pass", {}) if prepared is None else call_code(prepared.subject, prepared.obj)
    source = _LOOP.format(
        call=f"block_until_ready({call})" if kind == "call" and prepared is not None else call,
        work="\n        ".join([_UNIT] * units) if units else "pass",
        hook="" if hook is None else _HOOK,
    )
    names = {**names, "block_until_ready": jax.block_until_ready}
    if hook is not None:
        names.update(frames_seen=hook, stack=inspect.stack)
    return compiled(source, names, "loop")


def _deeper(loop: Callable[[int], None], frames: int) -> Callable[[int], None]:
    """``loop`` called through ``frames`` functions of its own, each calling the next."""
    if not frames:
        return loop
    source = "".join(
        f"def f{i}(calls):\n    return {f'f{i + 1}' if i + 1 < frames else 'loop'}(calls)\n"
        for i in range(frames)
    )
    return compiled(source, {"loop": loop}, "f0")


@dataclasses.dataclass
class Worker:
    """The counting process's plan, outcomes and counter; the driver runs its
    :meth:`stretches`. With ``JITBENCH_COUNT_DRY_RUN=1`` (no Valgrind) nothing is counted:
    each row's outcome is the frames on the stack at its calls (``frames``)."""

    plan: Path
    out: Path

    def __post_init__(self) -> None:
        # On one CPU, XLA runs every kernel on the calling thread, the one counted (why:
        # docs/counting.md). The CPU is the one _run gives it, so that processes counting at
        # once run on CPUs of their own.
        if hasattr(os, "sched_setaffinity"):
            cpu = os.environ.get(CPU_ENV)
            os.sched_setaffinity(0, {int(cpu) if cpu else min(os.sched_getaffinity(0))})
        import jax

        self.plan, self.out = Path(self.plan), Path(self.out)
        load_plugins()  # JITBENCH_PLUGINS' strategies (the canary) are rows too
        jax.config.update("jax_cpu_enable_async_dispatch", False)  # see .instructions
        self.dry = os.environ.get(DRY_RUN_ENV) == "1"
        # A dry run's counter counts nothing.
        dry_counter = SimpleNamespace(start=lambda: None, stop=lambda label: None)
        self.counter = dry_counter if self.dry else callgrind.Counter()
        self.folder = self.plan.parent
        self.outcomes: list[Json] = []
        # A dry run's frames at the calls of the last counted stretch, and of the row's.
        self.seen: set[int] = set()
        self.frames: set[int] = set()

    def stretches(self) -> Iterator[Stretch]:
        """Every stretch to count, row by row, as (label, loop, calls); rows of the same call
        (subject, size, depth and twin) share one object. The rows of advise's ways (each
        with its ``way``), compared with each other alone, are all built and compiled before
        the first stretch: callgrind discards the code it translated each time it starts or
        stops counting, and a compile after that translates the compiler anew (seconds under
        Valgrind), where compiles in a row reuse its translation. (The suite's rows keep each
        row's build just before its stretches: building them all first moves their counts
        by up to 0.7%, which their history would show.)"""
        plan = json.loads(self.plan.read_text())
        together = bool(plan) and all(fields.get("way") is not None for fields in plan)
        prepared: dict[Row, Prepared] = {}
        rows: dict[int, Row] = {}
        outcomes: dict[int, Json] = {}

        def prepare(index: int) -> None:
            try:
                row = Row.from_json(plan[index])
                if row.built not in prepared:
                    prepared[row.built] = _prepare(row)
                rows[index] = row
            except Exception as exc:  # one row's failure is its own, not the whole run's
                outcomes[index] = NoFigure.of(exc).to_json()

        if together:
            for index in range(len(plan)):
                prepare(index)
            gc.collect()
            gc.freeze()  # what exists now is never collected again: each stretch's is short
        for index in range(len(plan)):
            if not together:
                prepare(index)
            if index not in rows:
                continue
            row = rows[index]
            try:
                outcomes[index] = yield from self._row(index, row, prepared[row.built])
            except Exception as exc:
                outcomes[index] = NoFigure.of(exc).to_json()
        self.outcomes.extend(outcomes[index] for index in range(len(plan)))

    def finish(self) -> None:
        self.out.write_text(json.dumps(self.outcomes))

    def _row(self, index: int, row: Row, prepared: Prepared) -> Iterator[Stretch]:
        """Count the row's stretches of each kind of call; returns their numbers of calls."""
        previous = None if row.tracebacks else tracebacks(False)
        try:
            units = 0
            if row.slowdown or row.calibrated:
                units = yield from self._calibrate(index, prepared, row.slowdown)
            found: dict[str, Json] = {}
            self.frames.clear()
            for kind in KINDS:
                hook = self.seen if self.dry else None
                loop = _deeper(_loop(prepared, kind, units, hook), row.frames)
                label = f"{index}:{kind}"
                found[kind] = yield from self._pair(label, loop, prepared.call)
            if self.dry:
                found["frames"] = sorted(self.frames)
            return found
        finally:
            if previous is not None:
                tracebacks(previous)

    def _probe(self, label: str, loop: Callable[[int], None]) -> Iterator[Stretch]:
        """The calling thread's instructions of one counted call of ``loop``."""
        probe = f"{label}:probe:1"
        yield probe, loop, 1
        if self.dry:
            return BUDGET  # the fewest calls
        return callgrind.calling_thread(callgrind.read_dumps(self.folder, probe), probe)

    def _pair(
        self, label: str, loop: Callable[[int], None], after: Callable[[], object]
    ) -> Iterator[Stretch]:
        """Warm ``loop`` up, then count its two stretches under ``label``, sized by a counted
        probe call (:func:`calls_for`); returns their calls."""
        loop(1)  # the first call of this kind may still do one-time work
        with count_compiles() as compiled:
            loop(1)
        if compiled.compiles:
            raise NotImplementedError(COMPILES_REASON)
        warm, used = calls_for((yield from self._probe(label, loop)))
        loop(warm)
        after()
        gc.collect()
        gc.disable()
        try:
            for calls in used:
                self.seen.clear()
                yield f"{label}:{calls}", loop, calls
                self.frames.update(self.seen)
                after()
        finally:
            gc.enable()
        return used

    def _per_call(self, label: str, used: tuple[int, int]) -> float:
        """The calling thread's count per call of a :meth:`_pair` already counted."""
        if self.dry:
            return 1.0
        dumps = [d for n in used for d in callgrind.read_dumps(self.folder, f"{label}:{n}")]
        return _per_call(dumps, label, used)

    def _calibrate(self, index: int, prepared: Prepared, slowdown: float) -> Iterator[Stretch]:
        """The units of planted work that add ``slowdown`` of the row's call count: the call,
        an empty loop and ``UNIT_BATCH`` units counted, then the canary's own arithmetic."""
        loops = {
            "call": _loop(prepared, "call"),
            "empty": _loop(None, "call"),
            "work": _loop(None, "call", UNIT_BATCH),
        }
        per_call = {}
        for name, loop in loops.items():
            label = f"{index}:calibrate:{name}"
            used = yield from self._pair(label, loop, lambda: None)
            per_call[name] = self._per_call(label, used)
        unit = (per_call["work"] - per_call["empty"]) / UNIT_BATCH
        return units_for(slowdown, per_call["call"], unit)
