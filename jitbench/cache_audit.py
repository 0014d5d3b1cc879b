"""The cache audit: one scripted user scenario, and what jit's cache did at each step.

The scenario is what a user of a class does over its life
(:data:`jitbench.changes.SCENARIO`): call it, call again, flip a flag and
back, swap an array for a new one of the same and of another shape, build an
equal instance and a different one, then drop them all. Per step the audit
records the traces and backend compiles it caused and the outcome: the result
matches :func:`jitbench.reference_calc` (correct), does not (stale), or the
call raised (error, with the exception's first line). In total, it counts the
objects still alive after everything was dropped and collected.
"""

from __future__ import annotations

import dataclasses
import gc
import weakref
from typing import Any, Literal

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
Outcome = Literal["correct", "stale", "error"]
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
        """``traces/compiles``, with ``!`` for a stale result and ``E`` for an error."""
        mark = {"correct": "", "stale": "!", "error": " E"}[self.outcome]
        return f"{self.traces}/{self.compiles}{mark}"


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """Every step of one strategy's scenario, and the totals a dashboard tracks."""

    strategy: str
    device: str
    size: int
    steps: tuple[Step, ...]
    leaked_instances: int

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
    def repeat_call_compiles(self) -> int:
        """Compiles caused by calling an unchanged object again (>0: recompiles every call)."""
        return self.step("repeat_call").compiles

    def step(self, name: str) -> Step:
        return next(step for step in self.steps if step.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "device": self.device,
            "size": self.size,
            "steps": [dataclasses.asdict(step) for step in self.steps],
            **{total: getattr(self, total) for total in TOTALS},
        }


def _outcome(obj: Any, y: Any, result: Any, n_ops: int) -> Outcome:
    expected = reference_calc(arrays_of(obj), statics_of(obj), y, n_ops)
    got = np.asarray(result)
    same = got.shape == expected.shape and np.allclose(got, expected, rtol=RTOL, atol=ATOL)
    return "correct" if same else "stale"


def _call(subject: changes.Subject, name: str, probe: Probe | None) -> Step:
    runs_before = probe.runs if probe else 0
    with count_compiles() as stats, explain_misses() as messages:
        result, error = _result(subject)
    if error:
        # Measured again without explanations: in JAX 0.6-0.8 the explainer itself
        # can fail an assertion (seen with a mutated static self), which is not the
        # step's outcome. A call that raises on its own raises again.
        failed = error
        runs_before = probe.runs if probe else 0
        with count_compiles() as stats:
            result, error = _result(subject)
        messages = [] if error else [f"JAX's cache-miss explainer raised {failed}"]
    outcome = "error" if error else _outcome(subject.obj, subject.y, result, subject.shape.n_ops)
    runs = probe.runs - runs_before if probe else None
    return Step(name, stats.traces, stats.compiles, outcome, error, tuple(messages), runs)


def _result(subject: changes.Subject) -> tuple[Any, str]:
    """The call's result, or the error it raised (an AOT executable's TypeError)."""
    try:
        return block(subject.call()), ""
    except Exception as exc:
        text = " ".join(str(exc).split())
        return None, f"{type(exc).__name__}: {text[:300]}"


def _run(subject: changes.Subject, refs: list[weakref.ref[Any]], probe: Probe | None) -> list[Step]:
    # A function of its own so that every local reference to an instance is
    # gone when it returns; only what JAX (or a cycle) holds stays alive.
    steps = []
    for name in changes.SCENARIO:
        if name in changes.CHANGES:
            changes.apply(subject, name)
        if not any(ref() is subject.obj for ref in refs):
            refs.append(weakref.ref(subject.obj))
        steps.append(_call(subject, name, probe))
    return steps


def audit(
    strategy: Strategy,
    placement: Placement,
    *,
    size: int = DEFAULT_SIZE,
    n_ops: int = 1,
    probe: bool = False,
) -> AuditResult:
    """Run the scenario for ``strategy`` from cold caches and report every step.

    Caches are cleared before and after, so one audit never sees another's
    compiled programs and leaves nothing of its own behind. ``probe=True``
    audits the probed twin of the generated class (see :class:`Step`).
    """
    strategy.check_available()
    size = check_size(size)
    shape = Shape(n_ops=n_ops)
    refs: list[weakref.ref[Any]] = []
    clear_caches()
    subject = changes.Subject.build(strategy, size, placement, shape, probe=probe)
    counter = PROBES[strategy.make_class(shape, probe=True)] if probe else None
    steps = _run(subject, refs, counter)
    del subject
    gc.collect()
    leaked = sum(ref() is not None for ref in refs)
    clear_caches()
    return AuditResult(strategy.name, placement.spec, size, tuple(steps), leaked)
