"""Instructions per cached call and per dispatch, counted by Valgrind, one process per subject:
the rows, the table asv reads, and the processes that count them (see docs/counting.md).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import os
import queue
import re
import statistics
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from jitbench import child
from jitbench.child import Json
from jitbench.errors import JitbenchError, NoFigure, opted_in
from jitbench.measure.case import Row
from jitbench.measure.counting import callgrind
from jitbench.strategies import canary
from jitbench.strategies.codegen import Shape
from jitbench.targets import child_environment

OPT_IN_ENV = "JITBENCH_INSTRUCTIONS"
# The unit of the counts in asv's results: jitbench compare judges these without samples.
COUNT_UNIT = "instructions"
KINDS = ("call", "dispatch")
WARM_UP = 200
SHORT = 100
LONG = 300
# Instructions (of the calling thread) that the warm-up or the longer stretch may take at
# most: a minute under Valgrind; a call dearer than 1/LONG of it gets fewer calls.
BUDGET = 1_000_000_000
# A call that compiles (jit_per_call) has no cached call to count (why: docs/counting.md).
COMPILES_REASON = "it compiles on every call: a count would be a compile's (see the compile rows)"
# Seconds one counting process may take (JAX's import alone is ~20 s under Valgrind).
TIMEOUT_S = 1800
# Counting processes run at once: Valgrind runs one thread at a time, one core each.
PROCESSES = 2
# The CPU a counting process runs on, one each (see worker.Worker): set by _run.
CPU_ENV = "JITBENCH_COUNT_CPU"
# Set in a dry run of the worker (no Valgrind): nothing counted, the call's stack recorded.
DRY_RUN_ENV = "JITBENCH_COUNT_DRY_RUN"
# The counting process's program (python -c DRIVER PLAN OUT, child.work's worker): each
# stretch counted at module level, its calls made by the loop alone (worker.CALL_FRAMES).
DRIVER = """\
import sys
from jitbench.measure.counting.worker import Worker
worker = Worker(sys.argv[1], sys.argv[2])
start, stop = worker.counter.start, worker.counter.stop
for label, loop, calls in worker.stretches():
    start()
    loop(calls)
    stop(label)
worker.finish()
"""


@dataclasses.dataclass(frozen=True)
class Counts:
    """Instructions per call of one row, of the calling thread: the whole call (``call``,
    ``dispatch``: the program's run included, as much of it as XLA runs on that thread) and
    the host's share (``host_call``, ``host_dispatch``: all but the program's run, None where
    the thread ran no program through :data:`callgrind.PROGRAM_RUN`). docs/counting.md."""

    call: float
    dispatch: float
    host_call: float | None = None
    host_dispatch: float | None = None


def opt_in_reason() -> str:
    return (
        f"instruction counts are opt-in (Valgrind, minutes): nox -s instructions, "
        f"or {OPT_IN_ENV}=1 asv run -b Instructions"
    )


def asked_in(env_name: str) -> bool:
    """Whether asv's environment of this name sets ``JITBENCH_INSTRUCTIONS=1`` (asv names an
    environment after its variables: ``...-JITBENCH_INSTRUCTIONS1``)."""
    return re.search(rf"(^|-){OPT_IN_ENV}1(-|$)", env_name) is not None


def off_note(asked: bool) -> str:
    """What a report says of a run whose count rows are all n/a: counts are off, why where this
    machine can tell, and how to turn them on (``asked``: its environment asks for counts)."""
    if asked:
        reason = callgrind.machine_reason()
        here = f"; on this machine: {reason}" if reason else ""
        return (
            "Instruction counts are off in this run: every count row is n/a, though its "
            f"environment asks for them ({OPT_IN_ENV}=1). `asv run -e` prints each row's "
            f"reason{here}."
        )
    return (
        "Instruction counts are off: this run's environment does not ask for them. To count, "
        f"install Valgrind and tcmalloc (Debian/Ubuntu: apt-get install valgrind "
        f"{callgrind.ALLOCATOR_PACKAGE}), then set {OPT_IN_ENV}=1 with {callgrind.HOOKS_PACKAGE} "
        "in asv's environment (the matrix of asv.conf.json, which jitbench init writes where "
        "it finds both; jitbench's own suite: nox -s instructions)."
    )


def counted(row: Row) -> Row:
    """What to count of an asv row: its subject at its size and depth; the canary (a plugin)
    gets this process's ``JITBENCH_CANARY_SLOWDOWN``, which the counting process sizes by
    counts."""
    slowdown = canary.slowdown_from_env() if row.subject == canary.NAME else 0.0
    shape = Shape(depth=row.shape.depth)
    return Row(row.subject, row.device, row.size, shape, slowdown=slowdown)


Table = dict[Row, Counts | NoFigure] | NoFigure


def table(rows: Sequence[Row]) -> Table:
    """The counts of ``rows`` for an asv ``setup_cache``, or the one reason none are counted
    (not opted in, or counting cannot run here), which each row's ``setup`` raises: asv
    shows it with ``asv run -e`` (a setup_cache's own output, never)."""
    if not opted_in(OPT_IN_ENV):
        return NoFigure(opt_in_reason())
    try:
        return dict(zip(rows, count_rows(rows), strict=True))
    except NotImplementedError as exc:
        return NoFigure(str(exc))


def lookup(counted: Table, row: Row) -> Counts:
    """One row's counts from :func:`table`; NotImplementedError (asv: n/a) with the reason."""
    missing = NoFigure(f"{row.subject} on {row.device} was not counted")
    entry = counted if isinstance(counted, NoFigure) else counted.get(row, missing)
    if isinstance(entry, NoFigure):
        entry.throw()
    return entry


def count_rows(
    rows: Sequence[Row], *, timeout: float = TIMEOUT_S, env: Mapping[str, str] | None = None
) -> list[Counts | NoFigure]:
    """For each row (in order) its :class:`Counts`, or why it has none (n/a here, or its error).

    One Valgrind process per subject (strategy or target), :data:`PROCESSES` at a
    time. Raises NotImplementedError with the reason where counting cannot run here
    (no Valgrind, no hooks), and JitbenchError when a process fails. ``env`` adds
    to this process's environment (e.g. ``JITBENCH_PLUGINS`` for a plugin's rows).
    """
    reason = callgrind.unavailable_reason()
    if reason is not None:
        raise NotImplementedError(reason)
    environ = callgrind.environment({**os.environ, **_imports(rows), **(env or {})})
    # The canary's slowdown is the rows' (sized by counts), not a timed calibration's.
    for name in (OPT_IN_ENV, canary.SLOWDOWN_ENV, DRY_RUN_ENV):
        environ.pop(name, None)

    def count(group: list[Row]) -> list[Counts | NoFigure]:
        with tempfile.TemporaryDirectory(prefix="jitbench-callgrind-") as tmp:
            folder = Path(tmp)
            outcomes = _run(group, folder, lambda argv: callgrind.command(folder, argv), environ,
                            timeout)  # fmt: skip
            dumps = list(callgrind.read_dumps(folder, programs=True))
        return [_counts(i, outcomes[i], dumps) for i in range(len(group))]

    return _by_subject(rows, count)


def call_frames(
    rows: Sequence[Row], *, env: Mapping[str, str] | None = None
) -> list[list[int] | NoFigure]:
    """A dry run of the counting process, without Valgrind: for each row, the numbers of
    frames on the stack at its counted calls, or why none."""
    environ = {**os.environ, **_imports(rows), **(env or {}), DRY_RUN_ENV: "1"}
    environ.pop(OPT_IN_ENV, None)

    def run(group: list[Row]) -> list[list[int] | NoFigure]:
        with tempfile.TemporaryDirectory(prefix="jitbench-dry-run-") as tmp:
            outcomes = _run(group, Path(tmp), list, environ, TIMEOUT_S)
        return [NoFigure.from_json(o) or o["frames"] for o in outcomes]

    return _by_subject(rows, run)


def _imports(rows: Sequence[Row]) -> dict[str, str]:
    """The counting process imports what this one imports for the rows' targets (asv's suite
    folder included, which asv imports through a finder of its own)."""
    return child_environment(spec for row in rows for spec in row.specs)


Found = TypeVar("Found")


def _by_subject(rows: Sequence[Row], run: Callable[[list[Row]], list[Found]]) -> list[Found]:
    """``run`` over the rows of each subject, :data:`PROCESSES` at a time; results in order."""
    groups: dict[str, list[int]] = {}
    for index, row in enumerate(rows):
        groups.setdefault(row.subject, []).append(index)
    found: dict[int, Found] = {}
    with concurrent.futures.ThreadPoolExecutor(PROCESSES) as pool:
        done = pool.map(lambda ids: run([rows[i] for i in ids]), groups.values())
        for ids, results in zip(groups.values(), done, strict=True):
            found.update(zip(ids, results, strict=True))
    return [found[i] for i in range(len(rows))]


def cpus() -> list[int]:
    """The CPUs this process may run on."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [0]


@functools.cache
def _cpus() -> queue.Queue[int]:
    """The CPUs the counting processes take, :data:`PROCESSES` of this process's (repeated
    where it has fewer)."""
    mine = cpus()
    free: queue.Queue[int] = queue.Queue()
    for i in range(PROCESSES):
        free.put(mine[i % len(mine)])
    return free


def _run(
    rows: Sequence[Row], folder: Path, wrap: Callable[[list[str]], list[str]],
    env: Mapping[str, str], timeout: float,
) -> list[Json]:  # fmt: skip
    """The worker's outcomes for ``rows``: ``python -c DRIVER`` (``wrap``: under callgrind),
    on a CPU of its own while it runs."""
    what = f"counting {rows[0].subject if len(rows) == 1 else f'{len(rows)} rows'}"
    plan: Json = [row.to_json() for row in rows]
    cpu = _cpus().get()
    try:
        outcomes = child.work(
            ["-c", DRIVER], plan, folder, what=what, timeout=timeout,
            env={**env, CPU_ENV: str(cpu)}, wrap=wrap, explain=callgrind.undecoded,
        )  # fmt: skip
    finally:
        _cpus().put(cpu)
    return outcomes  # one per row


def stop() -> None:
    """End the counting processes this process started that still run (a caller that no
    longer needs their counts: every child process it runs then is one); each
    :func:`count_rows` waiting on one raises JitbenchError."""
    child.stop()


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """The least-squares line through the points: (slope, intercept). The slope of counts
    against frames or layers is the count per frame or per layer."""
    if len(set(xs)) < 2:
        raise ValueError(f"a line needs two distinct x values, got {list(xs)}")
    return statistics.linear_regression(xs, ys)


def _per_call(dumps: list[callgrind.Dump], label: str, used: tuple[int, int]) -> float:
    """The calling thread's instructions per call from the two stretches counted under
    ``label``."""
    few, many = (callgrind.calling_thread(dumps, f"{label}:{calls}") for calls in used)
    return (many - few) / (used[1] - used[0])


def _host_per_call(dumps: list[callgrind.Dump], label: str, used: tuple[int, int]) -> float | None:
    """The calling thread's instructions per call outside its program runs, from the same two
    stretches; None where a stretch ran no program there."""
    stretches = [
        [d for d in dumps if d.thread == callgrind.CALLING_THREAD and d.label == f"{label}:{n}"]
        for n in used
    ]
    if not all(sum(d.runs for d in found) for found in stretches):
        return None
    few, many = (sum(d.instructions - d.program for d in found) for found in stretches)
    return (many - few) / (used[1] - used[0])


def _counts(index: int, outcome: Json, dumps: list[callgrind.Dump]) -> Counts | NoFigure:
    """A row's counts per call from its dumps; ``outcome`` is the worker's (calls or why not)."""
    missing = NoFigure.from_json(outcome)
    if missing is not None:
        return missing
    whole, host = {}, {}
    for kind in KINDS:
        label = f"{index}:{kind}"
        stretches = {f"{label}:{n}" for n in outcome[kind]}
        if not any(d.label in stretches and d.thread == callgrind.CALLING_THREAD for d in dumps):
            raise JitbenchError(f"callgrind wrote no count of row {index} ({kind})")
        whole[kind] = _per_call(dumps, label, outcome[kind])
        host[kind] = _host_per_call(dumps, label, outcome[kind])
    return Counts(whole["call"], whole["dispatch"], host["call"], host["dispatch"])
