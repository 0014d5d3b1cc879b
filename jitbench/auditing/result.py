"""What an audit records: each step of the scenario, and the audit's totals."""

from __future__ import annotations

import dataclasses

from jitbench.hazards import TOTALS
from jitbench.targets.fields import ROLES
from jitbench.vocabulary import SEEN, Hazard, Outcome, StepName


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of the scenario: the field it changed and how, its traces/compiles, its
    outcome, JAX's words for each tracing-cache miss (``explanations``) and, in probed
    audits, how often the method's body ran (``body_runs``)."""

    name: StepName
    traces: int
    compiles: int
    outcome: Outcome
    error: str = ""
    explanations: tuple[str, ...] = ()
    body_runs: int | None = None
    field: str = ""
    how: str = ""
    role: str = ""

    @property
    def correct(self) -> bool:
        return self.outcome is Outcome.CORRECT

    @property
    def hashed_number(self) -> bool:
        """A number the call hashes, given a new value: its compile is expected (as a new
        flag's), and a recompile only where its value back compiles again."""
        return self.name == StepName.SAME_SHAPE_ARRAY and self.role == ROLES["hashed"]

    @property
    def hazard(self) -> Hazard | None:
        """The step's hazard (None for none): a stale result, an error under jit, or a compile
        where nothing new was seen (:data:`jitbench.vocabulary.SEEN`) by a call that does not
        raise without jit."""
        if self.outcome.hazard:
            return self.outcome.hazard
        seen = self.name in SEEN and not self.hashed_number
        if self.compiles and seen and self.outcome is not Outcome.NOT_APPLICABLE:
            return Hazard.RECOMPILE
        return None

    @property
    def cell(self) -> str:
        """``traces/compiles``, with ``!`` for a stale result, ``E`` for an error, ``n/a`` for a
        step whose call raises without jit too, ``?`` for a change it does not notice either."""
        return f"{self.traces}/{self.compiles}{self.outcome.mark}"


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """Every step of one subject's scenario, and the totals a dashboard tracks.

    ``leaked_instances`` counts the objects the scenario built still alive once dropped,
    that grow with every instance (None where none could be weakly referenced);
    ``leaked_arrays`` the arrays it built still alive; ``first_held`` the first instance's
    inner objects its compiled program's cache key keeps. ``skipped`` lists the parts left
    out (why); ``verdict`` the hazards in words and ``matches`` the built-in strategy the
    subject behaves like ("" for none); ``unreferenced``, where no object could be checked,
    the classes of the objects called whose weak reference ``weakref.ref`` refused.
    """

    subject: str
    device: str
    size: int
    steps: tuple[Step, ...]
    leaked_instances: int | None
    leaked_arrays: int = 0
    first_held: int = 0
    skipped: tuple[tuple[str, str], ...] = ()
    verdict: tuple[str, ...] = ()
    matches: str = ""
    builtin: bool = True
    unreferenced: tuple[str, ...] = ()

    @property
    def compiles(self) -> int:
        return sum(step.compiles for step in self.steps)

    @property
    def traces(self) -> int:
        return sum(step.traces for step in self.steps)

    @property
    def stale_results(self) -> int:
        return self.count(Hazard.STALE)

    @property
    def errors(self) -> int:
        return self.count(Hazard.ERROR)

    @property
    def not_applicable(self) -> int:
        """The steps whose call raises without jit too."""
        return sum(step.outcome is Outcome.NOT_APPLICABLE for step in self.steps)

    @property
    def recompiles(self) -> int:
        """The steps that compiled where nothing new was seen (:attr:`Step.hazard`)."""
        return self.count(Hazard.RECOMPILE)

    @property
    def repeat_call_compiles(self) -> int:
        """Compiles caused by calling an unchanged object again (>0: recompiles every call)."""
        return self.step(StepName.REPEAT_CALL).compiles

    @property
    def leaks(self) -> int | None:
        """The ``leak`` hazard's count, the one every place that counts it reads: the objects
        left alive; where none is (or none can be weakly referenced, a NamedTuple), the arrays
        left alive (a closure jit's cache keeps holds one of every instance: TFP's
        GaussianProcess); None where neither tells (no object checked, no array alive)."""
        if self.leaked_instances:
            return self.leaked_instances
        return self.leaked_arrays or self.leaked_instances

    @property
    def unchecked(self) -> str:
        """Why no object's leak could be checked ("" where one was), from what was tried: the
        classes ``weakref.ref`` refused, else that the call's object holds arrays alone."""
        if self.leaked_instances is not None or self.step(StepName.FIRST_CALL).outcome.rejected:
            return ""
        if not self.unreferenced:
            return "no object but arrays to follow"
        names = " and ".join(f"a {name}" for name in self.unreferenced)
        take = "takes" if len(self.unreferenced) == 1 else "take"
        return f"{names} {take} no weak reference (weakref.ref raised TypeError)"

    def count(self, hazard: Hazard) -> int:
        """How often ``hazard`` occurs: the steps that show it (:attr:`Step.hazard`); for a
        leak, :attr:`leaks`."""
        if hazard is Hazard.LEAK:
            return self.leaks or 0
        return sum(step.hazard is hazard for step in self.steps)

    def hazards(self) -> dict[Hazard, int]:
        """How often each hazard occurs, the absent left out."""
        return {hazard: n for hazard in Hazard if (n := self.count(hazard))}

    def per_instance(self) -> tuple[Hazard, ...]:
        """The hazards found at a new instance equal to one already called and at no other
        step (a compile each new instance pays once; a loop over one instance never does)."""
        return tuple(
            hazard for hazard in self.hazards() if hazard is not Hazard.LEAK and {
                step.name for step in self.steps if step.hazard is hazard
            } == {StepName.EQUAL_INSTANCE}
        )  # fmt: skip

    def step(self, name: StepName) -> Step:
        return next(step for step in self.steps if step.name == name)

    def totals(self) -> dict[str, int | None]:
        return {total: getattr(self, total) for total in TOTALS}

    def to_dict(self) -> dict[str, object]:
        """The audit as JSON: a built-in's under ``strategy``, a target's under ``target``."""
        data: dict[str, object] = {
            "strategy" if self.builtin else "target": self.subject,
            "device": self.device,
            "size": self.size,
            "steps": [dataclasses.asdict(step) for step in self.steps],
            **self.totals(),
        }
        if not self.builtin:
            data.update(
                leaked_arrays=self.leaked_arrays,
                first_held=self.first_held,
                not_applicable=self.not_applicable,
                skipped=[{"field": f, "reason": r} for f, r in self.skipped],
                verdict=list(self.verdict),
                matches=self.matches,
                unreferenced=list(self.unreferenced),
            )
        return data
