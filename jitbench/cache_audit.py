"""The cache audit: one scripted user scenario, and what jit's cache did at each step.

One runner (:func:`run_scenario`) plays every scenario, the built-in
strategies' and a user's object's (:mod:`jitbench.object_audit`): one compile
counter, one explanation of misses, one leak check. A :class:`Scenario` says
what to change before each step, what to call, and its oracle.

The scenario is what a user of a class does over its life
(:data:`jitbench.changes.SCENARIO`): call it, call again, flip a flag and
back, swap an array for a new one of the same and of another shape, build an
equal instance and a different one, then drop them all. Per step the audit
records the traces and backend compiles it caused and the outcome: the result
matches :func:`jitbench.reference_calc` (correct), does not (stale), or the
call raised (error, with the exception's first line); a user's object can
also be "n/a" (its own call raises without jit too). In total, it counts the
objects still alive after everything was dropped and collected.
"""

from __future__ import annotations

import dataclasses
import gc
import weakref
from collections.abc import Callable, Generator
from typing import Any, Literal, Protocol

import numpy as np

from jitbench import changes
from jitbench.codegen import PROBES, Probe, Shape, arrays_of, statics_of
from jitbench.computation import reference_calc
from jitbench.devices import Placement
from jitbench.instances import check_size
from jitbench.measure import block, clear_caches, count_compiles, explain_misses
from jitbench.strategies import Strategy

DEFAULT_SIZE = 64
# float32 results against a float64 NumPy reference; stale results are off by
# at least |y| (a flag change) or a whole array, far beyond this tolerance.
RTOL = 1e-4
ATOL = 1e-4
Outcome = Literal["correct", "stale", "error", "n/a"]
TOTALS = (
    "compiles",
    "traces",
    "stale_results",
    "errors",
    "leaked_instances",
    "repeat_call_compiles",
)


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of the scenario: its traces/compiles, its outcome, and JAX's reasons.

    ``explanations`` are JAX's own words for each tracing-cache miss of the
    step (``jax_explain_cache_misses``); ``body_runs`` counts how often the
    method's body ran, from a probe in the generated source (audits with
    ``probe=True`` only): under jit that is once per trace, independently of
    ``jax.monitoring``.
    """

    name: str
    traces: int
    compiles: int
    outcome: Outcome
    error: str = ""
    explanations: tuple[str, ...] = ()
    body_runs: int | None = None

    @property
    def correct(self) -> bool:
        return self.outcome == "correct"

    @property
    def cell(self) -> str:
        """``traces/compiles``, with ``!`` for a stale result, ``E`` for an error, ``n/a`` for a
        step whose call raises without jit too."""
        mark = {"correct": "", "stale": "!", "error": " E", "n/a": " n/a"}[self.outcome]
        return f"{self.traces}/{self.compiles}{mark}"


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """Every step of one strategy's scenario, and the totals a dashboard tracks.

    ``leaked_instances`` is None where the instances cannot be weakly referenced
    (not checked). A user's object (:func:`jitbench.audit_object`) also gets, per
    step, the field changed and how (``changed``), the parts left out
    (``skipped``), the hazards in words (``verdict``) and the built-in strategy
    whose audit it matches (``matches``); a built-in strategy's audit has none.
    """

    strategy: str
    device: str
    size: int
    steps: tuple[Step, ...]
    leaked_instances: int | None
    changed: tuple[tuple[str, str], ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()
    verdict: tuple[str, ...] = ()
    matches: str = ""

    @property
    def compiles(self) -> int:
        return sum(step.compiles for step in self.steps)

    @property
    def traces(self) -> int:
        return sum(step.traces for step in self.steps)

    @property
    def stale_results(self) -> int:
        return sum(step.outcome == "stale" for step in self.steps)

    @property
    def errors(self) -> int:
        return sum(step.outcome == "error" for step in self.steps)

    @property
    def not_applicable(self) -> int:
        return sum(step.outcome == "n/a" for step in self.steps)

    @property
    def repeat_call_compiles(self) -> int:
        """Compiles caused by calling an unchanged object again (>0: recompiles every call)."""
        return self.step("repeat_call").compiles

    def step(self, name: str) -> Step:
        return next(step for step in self.steps if step.name == name)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "strategy": self.strategy,
            "device": self.device,
            "size": self.size,
            "steps": [dataclasses.asdict(step) for step in self.steps],
            **{total: getattr(self, total) for total in TOTALS},
        }
        if self.changed:
            for step, (field, how) in zip(data["steps"], self.changed, strict=True):
                step.update(field=field, how=how)
            data.update(
                not_applicable=self.not_applicable,
                skipped=[{"field": f, "reason": r} for f, r in self.skipped],
                verdict=list(self.verdict),
                matches=self.matches,
            )
        return data


class Scenario(Protocol):
    """What :func:`run_scenario` plays: changes, a call, and the oracle of its result.

    ``play`` makes each step's change, then yields the step's name and is sent
    the :class:`Step` recorded (a later change may depend on an earlier outcome);
    ``obj`` is the instance as it is now (for the leak check). ``outcome`` judges
    the call's result, or the one-line error it raised ("" when it did not), and
    returns the error to record with it.
    """

    obj: Any

    def play(self) -> Generator[str, Step, None]: ...

    def call(self) -> Any: ...

    def outcome(self, result: Any, error: str) -> tuple[Outcome, str]: ...


def _call(scenario: Scenario, name: str, probe: Probe | None) -> Step:
    runs_before = probe.runs if probe else 0
    with count_compiles() as stats, explain_misses() as messages:
        result, error = _result(scenario)
    if error:
        # Measured again without explanations: in JAX 0.6-0.8 the explainer itself
        # can fail an assertion (seen with a mutated static self), which is not the
        # step's outcome. A call that raises on its own raises again.
        failed = error
        runs_before = probe.runs if probe else 0
        with count_compiles() as stats:
            result, error = _result(scenario)
        messages = [] if error else [f"JAX's cache-miss explainer raised {failed}"]
    outcome, error = scenario.outcome(result, error)
    runs = probe.runs - runs_before if probe else None
    return Step(name, stats.traces, stats.compiles, outcome, error, tuple(messages), runs)


def error_text(exc: BaseException) -> str:
    """An exception as one line: its type and its message, whitespace folded, cut at 300."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}"


def _result(scenario: Scenario) -> tuple[Any, str]:
    """The call's result, or the error it raised (an AOT executable's TypeError)."""
    try:
        return block(scenario.call()), ""
    except Exception as exc:
        return None, error_text(exc)


class _Instances:
    """Weak references to every instance a scenario built (None: one could not be referenced)."""

    def __init__(self) -> None:
        self.refs: list[weakref.ref[Any]] = []
        self.unreferenceable = False

    def track(self, obj: Any) -> None:
        if any(ref() is obj for ref in self.refs):
            return
        try:
            self.refs.append(weakref.ref(obj))
        except TypeError:
            self.unreferenceable = True

    def alive(self) -> int | None:
        return None if self.unreferenceable else sum(ref() is not None for ref in self.refs)


def _run(build: Callable[[], Scenario], instances: _Instances, probe: Probe | None) -> list[Step]:
    # A function of its own so that every local reference to an instance is
    # gone when it returns; only what JAX (or a cycle) holds stays alive.
    scenario = build()
    steps: list[Step] = []
    plan = scenario.play()
    try:
        name = next(plan)
        while True:
            instances.track(scenario.obj)
            steps.append(_call(scenario, name, probe))
            name = plan.send(steps[-1])
    except StopIteration:
        pass
    return steps


def run_scenario(
    build: Callable[[], Scenario], probe: Probe | None = None
) -> tuple[tuple[Step, ...], int | None]:
    """Play the scenario ``build`` returns from cold caches: its steps, and the instances
    still alive once it is dropped and the collector ran (None: not weakly referenceable).

    Caches are cleared before and after, so one audit never sees another's
    compiled programs and leaves nothing of its own behind.
    """
    instances = _Instances()
    clear_caches()
    steps = _run(build, instances, probe)
    gc.collect()
    leaked = instances.alive()
    clear_caches()
    return tuple(steps), leaked


@dataclasses.dataclass
class _Generated:
    """A generated instance's scenario: jitbench.changes, judged by reference_calc."""

    subject: changes.Subject

    @property
    def obj(self) -> Any:
        return self.subject.obj

    def play(self) -> Generator[str, Step, None]:
        for name in changes.SCENARIO:
            if name in changes.CHANGES:
                changes.apply(self.subject, name)
            yield name

    def call(self) -> Any:
        return self.subject.call()

    def outcome(self, result: Any, error: str) -> tuple[Outcome, str]:
        if error:
            return "error", error
        obj, subject = self.subject.obj, self.subject
        expected = reference_calc(arrays_of(obj), statics_of(obj), subject.y, subject.shape.n_ops)
        got = np.asarray(result)
        same = got.shape == expected.shape and np.allclose(got, expected, rtol=RTOL, atol=ATOL)
        return ("correct" if same else "stale"), ""


def audit(
    strategy: Strategy,
    placement: Placement,
    *,
    size: int = DEFAULT_SIZE,
    n_ops: int = 1,
    probe: bool = False,
) -> AuditResult:
    """Run the scenario for ``strategy`` from cold caches and report every step.

    Played by :func:`run_scenario`, from cold caches. ``probe=True``
    audits the probed twin of the generated class (see :class:`Step`).
    """
    strategy.check_available()
    size = check_size(size)
    shape = Shape(n_ops=n_ops)
    counter = PROBES[strategy.make_class(shape, probe=True)] if probe else None

    def build() -> _Generated:
        return _Generated(changes.Subject.build(strategy, size, placement, shape, probe=probe))

    steps, leaked = run_scenario(build, counter)
    return AuditResult(strategy.name, placement.spec, size, steps, leaked)
