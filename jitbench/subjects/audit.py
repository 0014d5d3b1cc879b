"""The cache audit: the scenario played on a subject, and what jit's cache did at each step.

The entry points: :func:`audit_subject`, :func:`audit` (a built-in strategy) and
:func:`audit_object` (a user's object).

One runner for every subject (:func:`run`): one compile counter, one explanation
of misses, one leak check. Per step it records the traces and backend compiles
the step's call caused, JAX's reason for each tracing-cache miss, and the
outcome the subject's oracle gives: correct, stale (the result differs), error
(the call raised under jit), or n/a (a user's own call raises without jit too).
In total, it counts the instances still alive once the scenario dropped them
and the collector ran. Caches are cleared before and after, so one audit never
sees another's compiled programs.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import weakref
from typing import TYPE_CHECKING, Any

from jitbench.compiles import block, clear_caches, count_compiles, explain_misses
from jitbench.devices import DEVICE_SPECS
from jitbench.errors import JitbenchError
from jitbench.options import DEFAULT_SIZE
from jitbench.subjects.result import AuditResult, Step
from jitbench.subjects.scenario import Play, replay
from jitbench.subjects.subject import Generated, Outcome, Subject, error_text, subject_of
from jitbench.targets import fields as fieldlib

if TYPE_CHECKING:
    from jitbench.devices import Placement
    from jitbench.strategies import Strategy
    from jitbench.targets import Target


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


def _result(play: Play) -> tuple[Any, str]:
    try:
        return block(play.call()), ""
    except Exception as exc:
        return None, error_text(exc)


def _step(play: Play, name: str, probe: Any) -> Step:
    """One step's call, counted and explained; a call that raises keeps its counts.

    A raising call is made once more without explanations: in JAX 0.6-0.8 the
    explainer itself can fail an assertion (seen with a mutated static self), which
    is not the step's outcome; then the second call's result and counts stand.
    """
    runs = probe.runs if probe else 0
    with count_compiles() as stats, explain_misses() as messages:
        result, error = _result(play)
    if error:
        with count_compiles() as again:
            result, retried = _result(play)
        if not retried:  # the explainer's failure, not the call's
            stats, messages = again, [f"JAX's cache-miss explainer raised {error}"]
        error = retried
    outcome, error = play.judge(result, error)
    field, how = play.changed[-1]
    runs = probe.runs - runs if probe else None
    return Step(name, stats.traces, stats.compiles, outcome, error, tuple(messages), runs,
                field, how)  # fmt: skip


def _steps(
    subject: Subject, played: list[fieldlib.Field], instances: _Instances, probe: Any
) -> list[Step]:
    # A function of its own so that every local reference to an instance is gone when
    # it returns; only what JAX (or a cycle) holds stays alive.
    play = Play(subject, played)
    steps: list[Step] = []

    def visit(name: str) -> Outcome:
        instances.track(play.obj)
        steps.append(_step(play, name, probe))
        return steps[-1].outcome

    replay(play, visit)
    return steps


def run(
    subject: Subject, played: list[fieldlib.Field], probe: Any = None
) -> tuple[tuple[Step, ...], int | None]:
    """Play the scenario on ``subject`` from cold caches: its steps, and the instances
    still alive once it is dropped and the collector ran (None: not weakly referenceable)."""
    instances = _Instances()
    clear_caches()
    steps = _steps(subject, played, instances, probe)
    gc.collect()
    leaked = instances.alive()
    clear_caches()
    return tuple(steps), leaked


def audit_subject(
    subject: Subject,
    *,
    fields: str | None = None,
    arrays: int = fieldlib.DEFAULT_ARRAYS,
    verdict: bool = False,
) -> AuditResult:
    """The scenario on ``subject`` from cold caches: every step, the fields changed and how,
    what was left out, and (``verdict``) the hazards in words and the built-in it matches.

    ``fields``: a glob or regular expression over field paths (``layers[0].*``); by
    default every static field and the first ``arrays`` array fields play. A first call
    that does not return the oracle's result is a JitbenchError.
    """
    probe = subject.new()
    walked, skipped = subject.fields(probe)
    played, left = fieldlib.choose(walked, fields, arrays)
    if fields is not None and not played:
        paths = ", ".join(f.path for f in walked) or "none"
        raise JitbenchError(f"--fields {fields!r} matches no field; the fields: {paths}")
    kind = fieldlib.object_kind(probe)
    del probe
    counter = None
    if isinstance(subject, Generated) and subject.probe:
        from jitbench.strategies.codegen import PROBES

        counter = PROBES[subject.strategy.make_class(subject.shape, probe=True)]
    steps, leaked = run(subject, played, counter)
    first = steps[0]
    if first.outcome != "correct":
        kind = "strategy" if isinstance(subject, Generated) else "target"
        raise JitbenchError(f"the first call of {kind} {subject.name!r}: {_first_failure(first)}")
    result = AuditResult(
        subject.name, subject.device, subject.size, steps, leaked,
        skipped=tuple((s.path, s.reason) for s in [*skipped, *left]),
        builtin=isinstance(subject, Generated) and subject.name == subject.strategy.name,
    )  # fmt: skip
    if not verdict:
        return result
    from jitbench.subjects.verdict import judge

    spec = result.device if result.device in DEVICE_SPECS else "cpu"
    lines, match = judge(result, kind, builtin_audits(spec))
    return dataclasses.replace(result, verdict=lines, matches=match)


@functools.cache
def builtin_audits(spec: str) -> dict[str, AuditResult]:
    """Every available built-in strategy's audit on ``spec`` (run once per process): what a
    user's object's audit is matched against."""
    from jitbench.devices import resolve
    from jitbench.strategies import STRATEGIES

    placement = resolve(spec)
    return {name: audit(s, placement) for name, s in STRATEGIES.items() if s.available}


def _first_failure(step: Step) -> str:
    if step.outcome == "n/a":
        return f"the call without jit (the oracle) raises: {step.error}"
    if step.outcome == "error":
        return f"it raises under jit: {step.error}"
    return "its result under jit differs from the call without jit"


def audit(
    strategy: Strategy, placement: Placement, *, size: int = DEFAULT_SIZE, n_ops: int = 1,
    probe: bool = False,
) -> AuditResult:  # fmt: skip
    """The audit of a built-in strategy's generated class (``probe``: its probed twin,
    whose body counts its runs; see :class:`jitbench.subjects.audit.Step`)."""
    from jitbench.strategies.codegen import Shape

    return audit_subject(Generated(strategy, placement, size, Shape(n_ops=n_ops), probe=probe))


def audit_object(
    target: Target, *, fields: str | None = None, arrays: int = fieldlib.DEFAULT_ARRAYS,
    verdict: bool = True,
) -> AuditResult:  # fmt: skip
    """The audit of a user's object (see :func:`audit_subject`), with its verdict."""
    return audit_subject(subject_of(target), fields=fields, arrays=arrays, verdict=verdict)
