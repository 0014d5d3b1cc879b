"""Timing any target's call the way the suite times the built-in strategies.

One function, :func:`time_object`, for a user's object and for a built-in
strategy's generated instance (:func:`jitbench.targets.builtin_target`), with
the suite's clock (:func:`jitbench.suite.clock`) and its disciplines:

* **cold**: every sample is one first call after :func:`jitbench.measure.clear_caches`,
  on a new instance from the factory where there is one (else on the same
  object, which then recompiles); one uncounted cold call first pays the
  process's one-time costs, as :func:`jitbench.suite.typical_stages` does;
* **cached**: ``timeit`` loops of ``number`` blocking calls on a called
  instance (:meth:`jitbench.suite.Prepared.call`), ``repeat`` samples;
* **dispatch**: the same loops without waiting for the result
  (:meth:`jitbench.suite.Prepared.dispatch`);
* **after each change**: the call right after each change of the audit's
  scenario (:class:`jitbench.object_audit.TargetScenario`, the same changes
  in the same order), from cold caches, the median of ``after_runs`` runs.

Figures are seconds per call: the median and the quartiles of the samples.
"""

from __future__ import annotations

import dataclasses
import statistics
import timeit
from collections.abc import Callable
from typing import Any

from jitbench import fields as fieldlib
from jitbench.cache_audit import Step, error_text
from jitbench.errors import JitbenchError
from jitbench.measure import block, clear_caches
from jitbench.object_audit import TargetScenario, first_instance
from jitbench.suite import clock
from jitbench.targets import Target, check_call

REPEAT = 7
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
    """The call right after one change of the scenario (``error``: what it raised)."""

    step: str
    field: str
    how: str
    seconds: Spread
    error: str = ""


@dataclasses.dataclass(frozen=True)
class Timings:
    """What one target's call costs: cold, cached, dispatch, and right after each change."""

    target: str
    device: str
    cold: Spread
    cold_on: str
    cached: Spread
    dispatch: Spread
    after_change: tuple[AfterChange, ...]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _sample(call: Callable[[], Any], repeat: int, number: int | None) -> Spread:
    timer = timeit.Timer(call, timer=clock)
    if number is None:
        number, _ = timer.autorange()
    return Spread.of([seconds / number for seconds in timer.repeat(repeat, number)], number)


def _cold(target: Target, calls: int) -> tuple[Spread, str]:
    fresh = target.factory is not None
    seconds = []
    for _ in range(calls + 1):  # the first pays the process's one-time costs: not counted
        call = target.function_of(target.new_instance() if fresh else target.obj)
        clear_caches()
        start = clock()
        block(call())
        seconds.append(clock() - start)
    on = "a new instance from the factory" if fresh else "the same object, caches cleared"
    return Spread.of(seconds[1:]), on


def _after_changes(target: Target, runs: int, walk: list[fieldlib.Field],
                   played: list[fieldlib.Field]) -> tuple[AfterChange, ...]:  # fmt: skip
    per_step: list[list[float]] = []
    changed: list[tuple[str, str]] = []
    names: list[str] = []
    errors: list[str] = []
    for run in range(runs):
        changed.clear()
        clear_caches()
        scenario = TargetScenario.start(target, walk, played, changed)
        plan = scenario.play()
        index = 0
        try:
            name = next(plan)
            while True:
                start = clock()
                try:
                    result, error = block(scenario.call()), ""
                except Exception as exc:
                    result, error = None, error_text(exc)
                seconds = clock() - start
                outcome, error = scenario.outcome(result, error)
                if run == 0:
                    names.append(name)
                    errors.append(error)
                    per_step.append([])
                per_step[index].append(seconds)
                index += 1
                name = plan.send(Step(name, 0, 0, outcome, error))
        except StopIteration:
            pass
    clear_caches()
    return tuple(
        AfterChange(name, field, how, Spread.of(seconds), error)
        for name, (field, how), seconds, error in zip(names, changed, per_step, errors, strict=True)
    )


def time_object(
    target: Target,
    *,
    repeat: int = REPEAT,
    number: int | None = None,
    cold_calls: int = COLD_CALLS,
    after_runs: int = AFTER_RUNS,
    fields: str | None = None,
    arrays: int = fieldlib.DEFAULT_ARRAYS,
) -> Timings:
    """Time ``target``'s call: cold, cached, dispatch and after each change (see module).

    ``number`` calls per cached sample (None: timeit's autorange picks it);
    ``fields``/``arrays`` choose the changes as :func:`jitbench.audit_object` does.
    A first call that raises is a JitbenchError naming the target.
    """
    check_call(target)
    cached, dispatch, device, walk = _steady(target, repeat, number)
    played, _ = fieldlib.choose(walk, fields, arrays)
    cold, cold_on = _cold(target, cold_calls)
    after = _after_changes(target, after_runs, walk, played)
    return Timings(target.name, device, cold, cold_on, cached, dispatch, after)


def _steady(
    target: Target, repeat: int, number: int | None
) -> tuple[Spread, Spread, str, list[fieldlib.Field]]:
    """Cached and dispatch samples on one called instance, its device and its fields."""
    import jax

    obj = first_instance(target)
    call = target.function_of(obj)
    try:
        block(call())
    except Exception as exc:
        raise JitbenchError(
            f"the first call of target {target.name!r} raises: {error_text(exc)}"
        ) from None
    cached = _sample(lambda: block(call()), repeat, number)
    dispatch = _sample(call, repeat, number)
    block(call())
    leaves = [leaf for leaf in jax.tree_util.tree_leaves(obj) if fieldlib.is_array(leaf)]
    devices = getattr(leaves[0], "devices", None) if leaves else None
    device = next(iter(devices())).platform if devices else jax.default_backend()
    return cached, dispatch, device, fieldlib.walk(obj)[0]
