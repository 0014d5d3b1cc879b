"""Instructions per cached call and per dispatch, counted in one Valgrind process for many rows.

A row is a built-in strategy (or plugin) at a size and device, or a target
(``package.module:factory``) on a device: the objects the timed benchmarks
build (:class:`jitbench.suite.Prepared`, :class:`jitbench.target_suite.
PreparedTarget`), called the same two ways, ``call()`` (waits for the result)
and ``dispatch()`` (does not). :func:`count_rows` starts one Python under
callgrind (:mod:`jitbench.callgrind`) that runs this module's worker over
every row: the interpreter's start and JAX's import under Valgrind are most
of a run's cost, so they are paid once.

Per row and kind of call, uncounted calls come first (compile, then enough
calls that CPython's adaptive interpreter has specialised the loop), then
two counted stretches of ``SHORT`` and ``LONG`` calls (fewer for a dear
call); the count per call is their difference over the difference of calls,
so what starting and stopping a stretch costs cancels out. How many calls
each takes is decided by counts too, from one counted probe call
(:func:`calls_for`), never by a clock: a busy machine gives a row the same
calls, and so the same count, as a quiet one. A row whose calls compile
(``jit_per_call``) is n/a: it has no cached call to count. The calling
thread is counted (Python and JAX's C++ dispatch); XLA's worker threads are
counted apart (``other_threads``).
Python's cyclic garbage collector is off inside a stretch: what a collection
costs depends on everything else the process holds, not on the call.

JAX's asynchronous CPU dispatch is off in the counting process
(``jax_cpu_enable_async_dispatch``). Under Valgrind one thread runs at a
time, and with it on, whether the calling thread finds XLA's worker done
and runs a program itself depends on Valgrind's scheduler: the same
dispatch counted up to 10% apart in two processes. With it off the calling
thread runs every program itself, the same way each time; what is counted
is the dispatch path plus the program's own run on that thread (small at
the sizes counted), and ``dispatch`` differs from ``call`` by the wait.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from jitbench import callgrind
from jitbench.callgrind import Counter
from jitbench.errors import JitbenchError

OPT_IN_ENV = "JITBENCH_INSTRUCTIONS"
# The unit of the counts in asv's results: jitbench compare judges these without samples.
COUNT_UNIT = "instructions"
# The change of a count that jitbench compare calls a change: above the run-to-run
# spread of counts that validation measures, below the 2% it must catch.
COUNT_TOLERANCE = 0.01
KINDS = ("call", "dispatch")
WARM_UP = 200
SHORT = 100
LONG = 300
# Instructions (of the calling thread) that the warm-up or the longer stretch may take at
# most: a minute under Valgrind. The suite's cached calls are under 1/LONG of it (a million
# instructions at most); a dearer call gets fewer calls.
BUDGET = 1_000_000_000
# A call that compiles (every call, for jit_per_call) has no cached call to count: its count
# would be a compile's, which moves by several percent from one compile to the next.
COMPILES_REASON = "it compiles on every call: a count would be a compile's (see the compile rows)"
# Seconds one counting process may take (JAX's import alone is ~20 s under Valgrind).
TIMEOUT_S = 1800
NOT_AVAILABLE = "n/a: "


@dataclasses.dataclass(frozen=True)
class Row:
    """What to count: a strategy at a size, or a target (``size`` None), on a device.

    ``slowdown`` (a fraction) plants work in each call, sized by counts in the
    counting process so that the call's count grows by that fraction
    (:func:`_calibrate`): the canary of counts, a regression of known size. The
    ``canary`` strategy gets ``JITBENCH_CANARY_SLOWDOWN`` this way. ``twin``
    counts the strategy's hand-written twin (:mod:`jitbench.twins`) on the
    generated instance's own arrays, as ``jitbench validate``'s fidelity does.
    ``calibrated`` runs a slowed row's calibration first and plants nothing:
    the unslowed row a slowed one is judged against, with the same calls
    before its count (a count moves a little with what its process ran before).
    """

    subject: str
    device: str = "cpu"
    size: int | None = None
    slowdown: float = 0.0
    twin: bool = False
    calibrated: bool = False

    @property
    def is_target(self) -> bool:
        return ":" in self.subject


@dataclasses.dataclass(frozen=True)
class Counts:
    """Instructions per call of one row: the calling thread's, and the other threads'."""

    call: float
    dispatch: float
    other_threads: dict[str, float]


def opted_in() -> bool:
    """Whether ``JITBENCH_INSTRUCTIONS=1``: the asv family counts only when asked (minutes)."""
    return os.environ.get(OPT_IN_ENV, "").strip() == "1"


def opt_in_reason() -> str:
    return (
        f"instruction counts are opt-in (Valgrind, minutes): nox -s instructions, "
        f"or {OPT_IN_ENV}=1 asv run -b Instructions"
    )


def strategy_row(strategy: str, size: int, device: str) -> Row:
    """The built-in family's row of one strategy, size and device.

    The canary (``JITBENCH_PLUGINS=jitbench.canary``) gets this process's
    ``JITBENCH_CANARY_SLOWDOWN``, which the counting process sizes by counts.
    """
    canary = sys.modules.get("jitbench.canary")  # imported only where it is registered
    if canary is None or strategy != canary.NAME:
        return Row(strategy, device, size)
    return Row(strategy, device, size, slowdown=canary.slowdown_from_env())


def strategy_rows(
    strategies: Sequence[str], sizes: Sequence[int], devices: Sequence[str]
) -> list[Row]:
    """Every strategy x size x device row (the built-in family's grid), by :func:`strategy_row`."""
    return [strategy_row(s, z, d) for s in strategies for z in sizes for d in devices]


Table = dict[Row, Counts | str] | str


def table(rows: Sequence[Row]) -> Table:
    """The counts of ``rows`` for an asv ``setup_cache``, or the one reason none are counted.

    Counting only when opted in (:func:`opted_in`); where it cannot run here
    the reason is printed once, as one line, and each row is n/a with it.
    """
    if not opted_in():
        return opt_in_reason()
    try:
        return dict(zip(rows, count_rows(rows), strict=True))
    except NotImplementedError as exc:
        print(f"jitbench: {exc}", file=sys.stderr, flush=True)
        return str(exc)


def lookup(counted: Table, row: Row) -> Counts:
    """One row's counts from :func:`table`; NotImplementedError (asv: n/a) with the reason."""
    if isinstance(counted, str):
        raise NotImplementedError(counted)
    entry = counted.get(row)
    if entry is None:
        raise NotImplementedError(f"{row.subject} on {row.device} was not counted")
    if isinstance(entry, str):
        if entry.startswith(NOT_AVAILABLE):
            raise NotImplementedError(entry.removeprefix(NOT_AVAILABLE))
        raise JitbenchError(entry)
    return entry


def count_rows(
    rows: Sequence[Row], *, timeout: float = TIMEOUT_S, env: Mapping[str, str] | None = None
) -> list[Counts | str]:
    """For each row (in order) its :class:`Counts`, or why it has none (n/a here, or its error).

    One Valgrind process counts every row. Raises NotImplementedError with the
    reason where counting cannot run here (no Valgrind, no hooks), and
    JitbenchError when the process fails. ``env`` adds to this process's
    environment (e.g. ``JITBENCH_PLUGINS`` for a plugin's rows).
    """
    reason = callgrind.unavailable_reason()
    if reason is not None:
        raise NotImplementedError(reason)
    with tempfile.TemporaryDirectory(prefix="jitbench-callgrind-") as tmp:
        folder = Path(tmp)
        plan = folder / "plan.json"
        plan.write_text(json.dumps([dataclasses.asdict(r) for r in rows]))
        argv = [sys.executable, "-m", "jitbench.instructions", str(plan), str(folder / "out.json")]
        env = callgrind.environment({**os.environ, **(env or {})})
        # The canary's slowdown is the rows' (sized by counts), not a timed calibration's.
        for name in (OPT_IN_ENV, "JITBENCH_CANARY_SLOWDOWN"):
            env.pop(name, None)
        try:
            done = subprocess.run(
                callgrind.command(folder, argv), env=env, capture_output=True, text=True,
                timeout=timeout, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise JitbenchError(
                f"counting {len(rows)} rows under Valgrind took over {timeout} s"
            ) from None
        if done.returncode != 0:
            # The process's own last lines, not Valgrind's summary (lines "==PID== ...").
            own = [line for line in done.stderr.splitlines() if not line.startswith("==")]
            tail = " | ".join(line.strip() for line in own[-3:] if line.strip())
            raise JitbenchError(f"the counting process exited {done.returncode}: {tail}")
        outcomes = json.loads((folder / "out.json").read_text())
        dumps = list(callgrind.read_dumps(folder))
    return [_counts(i, outcomes[i], dumps) for i in range(len(rows))]


def _per_call(dumps: list[callgrind.Dump], label: str, used: tuple[int, int], thread: int) -> float:
    """One thread's instructions per call from the two stretches counted under ``label``.

    A thread that ran in one stretch only (an XLA worker) counted 0 in the other.
    """
    few, many = (
        sum(d.instructions for d in dumps if d.thread == thread and d.label == f"{label}:{calls}")
        for calls in used
    )
    return (many - few) / (used[1] - used[0])


def _counts(index: int, outcome: Any, dumps: list[callgrind.Dump]) -> Counts | str:
    """A row's counts per call from its dumps; ``outcome`` is the worker's (calls or why not)."""
    if isinstance(outcome, str):
        return outcome
    main, others = {}, {}
    for kind in KINDS:
        label = f"{index}:{kind}"
        stretches = {f"{label}:{n}" for n in outcome[kind]}
        threads = {d.thread for d in dumps if d.label in stretches}
        if callgrind.CALLING_THREAD not in threads:
            raise JitbenchError(f"callgrind wrote no count of row {index} ({kind})")
        main[kind] = _per_call(dumps, label, outcome[kind], callgrind.CALLING_THREAD)
        others[kind] = sum(
            _per_call(dumps, label, outcome[kind], t) for t in threads - {callgrind.CALLING_THREAD}
        )
    return Counts(main["call"], main["dispatch"], others)


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
    """The row's object, built and called once (compiled), as the timed benchmarks build it."""
    if row.is_target:
        from jitbench.target_suite import PreparedTarget, TargetCase

        return PreparedTarget(TargetCase.of(row.subject, row.device))
    from jitbench.suite import Case, Prepared

    prepared = Prepared(Case.of(row.subject, row.size or 0, row.device))
    if row.twin:
        from jitbench.codegen import arrays_of, statics_of
        from jitbench.twins import twin

        (x,), (mul,) = arrays_of(prepared.obj), statics_of(prepared.obj)
        return Prepared.around(twin(row.subject)(x, mul), prepared.y)
    return prepared


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

    CPython specialises each bytecode to the types it meets; a loop shared by
    every row would carry the previous row's specialisations into the next,
    and a row's count would depend on the rows before it. A fresh code object
    per row and kind starts unspecialised, as the row's own code would.
    ``prepared`` None: no call, the planted work alone.
    """
    from jitbench.measure import block

    if prepared is None:
        call, names = "pass", {}
    elif hasattr(prepared, "function"):  # a target: its call, arguments bound
        call, names = "function()", {"function": prepared.function}
    else:
        call, names = "obj.calc(y)", {"obj": prepared.obj, "y": prepared.y}
    namespace = {**names, "block": block}
    source = _LOOP.format(
        call=f"block({call})" if kind == "call" and prepared is not None else call,
        work="\n        ".join([_UNIT] * units) if units else "pass",
    )
    exec(compile(source, f"<jitbench {kind} loop>", "exec"), namespace)
    return namespace["loop"]


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
        from jitbench.measure import count_compiles

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
    here; :func:`jitbench.canary.units_for` does the canary's own arithmetic
    with instructions in place of seconds.
    """
    from jitbench.canary import units_for

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
    from jitbench.measure import block

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
        except NotImplementedError as exc:
            outcomes.append(f"{NOT_AVAILABLE}{exc}")
        except Exception as exc:  # one row's failure is its own, not the whole run's
            outcomes.append(f"error: {type(exc).__name__}: {exc}")
    out.write_text(json.dumps(outcomes))


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m jitbench.instructions")
    parser.add_argument("plan", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    work(args.plan, args.out)


if __name__ == "__main__":
    main()
