"""``jitbench time``: any subject's call timed the way the suite times it (cold, cached,
dispatch, right after each change of the scenario), in seconds per call (see docs/benchmarks.md).
"""

from __future__ import annotations

import dataclasses
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any

from jitbench.auditing.scenario import Play, attempt, replay
from jitbench.auditing.subject import Subject, subject_of
from jitbench.compiles import clear_caches, count_compiles
from jitbench.errors import JitbenchError
from jitbench.measure.case import Prepared, cold_call
from jitbench.options import REPEAT
from jitbench.targets import as_target
from jitbench.targets import fields as fieldlib

COLD_CALLS = 5
AFTER_RUNS = 3


@dataclasses.dataclass(frozen=True)
class Spread:
    """Seconds per call over the samples: median and quartiles."""

    median: float
    q1: float
    q3: float
    samples: int
    number: int = 1

    @classmethod
    def of(cls, per_call: list[float], number: int = 1) -> Spread:
        if len(per_call) == 1:
            (only,) = per_call
            return cls(only, only, only, 1, number)
        q1, median, q3 = statistics.quantiles(per_call, n=4, method="inclusive")
        return cls(median, q1, q3, len(per_call), number)


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
    """What one subject's call costs: cold, cached, dispatch, and right after each change."""

    target: str
    device: str
    cold: Spread
    cold_on: str
    cached: Spread
    dispatch: Spread
    after_change: tuple[AfterChange, ...]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def sample(call: Callable[[], Any], repeat: int, number: int | None) -> Spread:
    """``repeat`` timeit loops of ``number`` calls (None: timeit's autorange picks it)."""
    timer = timeit.Timer(call)
    if number is None:
        number, _ = timer.autorange()
    return Spread.of([seconds / number for seconds in timer.repeat(repeat, number)], number)


def sample_dispatch(prepared: Prepared, repeat: int, number: int) -> Spread:
    """``repeat`` samples of ``number`` calls back to back in runs that never fill the queue
    (``Prepared.dispatch_loop``: the suite's dispatch row)."""
    return Spread.of([prepared.dispatch_loop(number) / number for _ in range(repeat)], number)


def cold_spread(subject: Subject, calls: int) -> tuple[Spread, str]:
    """``calls`` cold first calls (an uncounted one first), and what each was made on."""
    seconds = []
    for _ in range(calls + 1):  # the first pays the process's one-time costs: not counted
        call = cold_call(subject)
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
    fresh = getattr(subject.target, "factory", None) is not None
    on = "a new instance from the factory" if fresh else "a copy of the object, caches cleared"
    return Spread.of(seconds[1:]), on


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
) -> Timings:
    """Time ``subject``'s call: cold (the median of ``cold_calls`` first calls, caches cleared),
    cached (``repeat`` timeit loops) and dispatch (``repeat`` samples of calls back to back,
    in runs that never fill the queue), and right after each change of the audit's scenario
    (the median of ``after_runs`` plays from cold caches).

    ``number`` calls per cached and dispatch sample (None: timeit's autorange picks it for
    the cached call); ``fields``/``arrays`` choose the changes as
    :func:`jitbench.audit_object` does.
    A first call that raises is a JitbenchError naming the subject.
    """
    from jitbench.errors import error_text

    try:
        prepared = Prepared(subject)
    except Exception as exc:
        raise JitbenchError(
            f"the first call of target {subject.name!r} raises: {error_text(exc)}"
        ) from None
    cached = sample(prepared.call, repeat, number)
    dispatch = sample_dispatch(prepared, repeat, cached.number)  # each call about a cached one
    chosen, _ = fieldlib.choose(subject.fields(prepared.obj)[0], fields, arrays)
    played, _ = subject.playable(prepared.obj, chosen)
    del prepared
    cold, cold_on = cold_spread(subject, cold_calls)
    after = after_changes(subject, after_runs, played)
    return Timings(subject.name, subject.device, cold, cold_on, cached, dispatch, after)


def time_object(target: Any, *, call: Any = None, inputs: Any = None, **kwargs: Any) -> Timings:
    """Time a user's object's call as the suite times it (imports JAX; see :func:`time_subject`
    for ``kwargs``); ``target``, ``call`` and ``inputs`` in any form
    :func:`jitbench.targets.as_target` takes."""
    return time_subject(subject_of(as_target(target, call=call, inputs=inputs)), **kwargs)
