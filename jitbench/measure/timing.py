"""``jitbench time``: any subject's call timed: the cold first call (and a restarted script's,
in fresh processes with JAX's persistent compilation cache filled), the dispatch, the
synchronous (cached) call and the loop per call as the device rows measure them, and the call
right after each change of the scenario, in seconds per call (see docs/benchmarks.md,
docs/advise.md).
"""

from __future__ import annotations

import dataclasses
import time
import timeit
from collections.abc import Callable

from jitbench.auditing.scenario import Play, attempt, replay
from jitbench.compiles import (
    as_the_user_runs,
    block,
    clear_caches,
    clear_memory_caches,
    count_compiles,
    read_back,
    use_persistent_cache,
)  # fmt: skip
from jitbench.errors import JitbenchError, NoFigure, error_text
from jitbench.measure import diskcache, sampling
from jitbench.measure.case import Prepared, Row, cold_call
from jitbench.measure.sampling import CALL, DISPATCH, LOOP, Spread
from jitbench.options import REPEAT
from jitbench.targets import Call, as_target
from jitbench.targets import fields as fieldlib
from jitbench.ways.subject import Subject, subject_of

COLD_CALLS = 5
AFTER_RUNS = 3


@dataclasses.dataclass(frozen=True)
class AfterChange:
    """The call right after one step of the scenario: its field and how it was changed,
    its seconds, and its outcome (``error``: why it is stale, n/a or raised)."""

    step: str
    field: str
    how: str
    seconds: Spread
    outcome: str = "correct"
    error: str = ""


@dataclasses.dataclass(frozen=True)
class Timings:
    """What one subject's call costs: the cold first call (``cold_filled``: a fresh process's,
    with JAX's persistent compilation cache filled by this one, a restarted script's; None
    where not measured, ``restarts`` saying why), the synchronous (``cached``) call, the
    dispatch and the loop per call (as the device rows measure them), and the call right
    after each change."""

    target: str
    device: str
    cold: Spread
    cold_on: str
    cached: Spread
    dispatch: Spread
    after_change: tuple[AfterChange, ...]
    loop: Spread | None = None
    cold_filled: Spread | None = None
    restarts: str = ""

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def sample(call: Callable[[], object], repeat: int, number: int | None) -> Spread:
    """``repeat`` timeit loops of ``number`` calls (None: timeit's autorange picks it)."""
    timer = timeit.Timer(call)
    if number is None:
        number, _ = timer.autorange()
    return Spread.of([seconds / number for seconds in timer.repeat(repeat, number)], number)


def cold_spread(subject: Subject, calls: int) -> tuple[Spread, str]:
    """``calls`` cold first calls (an uncounted one first), and what each was made on."""
    seconds = []
    for _ in range(calls + 1):  # the first pays the process's one-time costs: not counted
        call = cold_call(subject)
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    return Spread.of(seconds[1:]), cold_on(subject)


def cold_on(subject: Subject) -> str:
    """What a cold first call of ``subject`` is made on."""
    fresh = getattr(subject.target, "factory", None) is not None
    return "a new instance from the factory" if fresh else "a copy of the object, caches cleared"


def first_call(call: Callable[[], object], folder: str | None) -> tuple[float, int, int]:
    """Seconds of ``call`` (a new instance's, bound) with every in-memory cache cleared and
    JAX's persistent cache at ``folder`` (None: off); its hits and misses of that cache."""
    use_persistent_cache(folder)
    clear_memory_caches()
    with count_compiles() as stats:
        start = time.perf_counter()
        block(call())
        seconds = time.perf_counter() - start
    return seconds, stats.persistent_cache_hits, stats.persistent_cache_misses


# Why a first call with the persistent cache filled is not measured, where no fresh process
# can rebuild the subject, or open its device.
HANDED_OVER = "not measured: a fresh process rebuilds a target from its spec, not an object"
HELD = (
    "not measured: a TPU takes one process at a time and this one holds it (jitbench "
    "advise measures each way's in fresh processes, its own measuring in a process apart)"
)


def restarted(row: Row | None, calls: int, folder: str) -> tuple[Spread | None, str]:
    """``calls`` first calls of ``row``, each in a fresh process with JAX's persistent
    compilation cache filled at ``folder``, and why there are none ("" where measured)."""
    if row is None:
        return None, HANDED_OVER
    if row.device.startswith("tpu"):
        return None, HELD
    found = diskcache.restarted([row] * calls, folder)
    missing = [f for f in found if isinstance(f, NoFigure)]
    if missing:
        return None, f"not measured: {missing[0].reason}"
    return Spread.of([f.median for f in found if isinstance(f, Spread)]), ""


def after_changes(
    subject: Subject, runs: int, played: list[fieldlib.Field]
) -> tuple[AfterChange, ...]:
    """Every step's call timed, the scenario played ``runs`` times from cold caches."""
    steps: list[tuple[str, str, str, str, str]] = []
    seconds: list[list[float]] = []
    for _ in range(runs):
        clear_caches()
        play = Play(subject, played)
        done: list[float] = []

        def visit(name: str, play: Play = play, done: list[float] = done) -> str:
            play.keep()
            with count_compiles() as stats:  # its listeners run at every compile, counted or not
                result, error, seconds = attempt(play)  # the call alone is timed, not its oracle
            outcome, error = play.judge(result, error, stats.traces > 0, stats.compiles > 0)
            done.append(seconds)
            if len(steps) < len(done):
                steps.append((name, *play.changed[-1], outcome, error))
            return outcome

        replay(play, visit)
        seconds.append(done)
    clear_caches()
    return tuple(
        AfterChange(name, field, how, Spread.of(list(times)), outcome, error)
        for (name, field, how, outcome, error), *times in zip(steps, *seconds, strict=True)
    )


def time_subject(
    subject: Subject,
    *,
    repeat: int = REPEAT,
    number: int | None = None,
    cold_calls: int = COLD_CALLS,
    after_runs: int = AFTER_RUNS,
    fields: str | None = None,
    arrays: int = fieldlib.DEFAULT_ARRAYS,
    row: Row | None = None,
) -> Timings:
    """Time ``subject``'s call: cold (the median of ``cold_calls`` first calls, caches cleared;
    as many in fresh processes with JAX's persistent compilation cache filled, where ``row``
    names the subject for a fresh process to build), the dispatch, synchronous call and loop
    per call (:func:`~jitbench.measure.sampling.call_figures`: ``repeat`` samples each, more
    until each median is known, :func:`~jitbench.measure.sampling.sample`), and right after
    each change of the audit's scenario (the median of ``after_runs`` plays from cold
    caches).

    ``number`` calls per sample (None: as many as last
    :data:`~jitbench.measure.sampling.SAMPLE_S`); ``fields``/``arrays`` choose the changes as
    :func:`jitbench.audit_object` does. A first call that raises is a JitbenchError naming the
    subject.
    """
    with read_back() as folder:  # its programs written there, for the fresh processes
        try:
            prepared = Prepared(subject)
        except Exception as exc:
            raise JitbenchError(
                f"the first call of target {subject.name!r} raises: {error_text(exc)}"
            ) from None
        with as_the_user_runs():  # what is timed compiles as in the user's own process
            return _timed(subject, prepared, repeat, number, cold_calls, after_runs, fields,
                          arrays, row, folder)  # fmt: skip


def _timed(
    subject: Subject, prepared: Prepared, repeat: int, number: int | None, cold_calls: int,
    after_runs: int, fields: str | None, arrays: int, row: Row | None, folder: str,
) -> Timings:  # fmt: skip
    figures = sampling.call_figures(prepared, number)
    sampling.sample(list(figures.values()), repeat)
    spreads = {name: figure.spread() for name, figure in figures.items()}
    prepared.call()
    chosen, _ = fieldlib.choose(subject.fields(prepared.obj)[0], fields, arrays)
    played, _ = subject.playable(prepared.obj, chosen)
    del prepared
    cold, on = cold_spread(subject, cold_calls)
    after = after_changes(subject, after_runs, played)
    filled, why = restarted(row, cold_calls, folder)
    return Timings(subject.name, subject.device, cold, on, spreads[CALL], spreads[DISPATCH],
                   after, spreads[LOOP], filled, why)  # fmt: skip


def time_object(
    target: object, *, call: Call | None = None, inputs: object = None, **kwargs: object
) -> Timings:
    """Time a user's object's call as the suite times it (imports JAX; see :func:`time_subject`
    for ``kwargs``); ``target``, ``call`` and ``inputs`` in any form
    :func:`jitbench.targets.as_target` takes."""
    return time_subject(subject_of(as_target(target, call=call, inputs=inputs)), **kwargs)
