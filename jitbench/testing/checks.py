"""The checks that play the audit or count compiles: :func:`assert_jit_safe`,
:func:`compiles` and its :class:`CompileCount`. Imported on first use of one of them by
:mod:`jitbench.testing` (the pytest plugin loads that package in every pytest run: it
imports no JAX and no audit)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
from collections.abc import Iterable, Iterator

from jitbench.auditing.audit import audit_subject, with_verdict
from jitbench.auditing.result import AuditResult
from jitbench.cli import render
from jitbench.compiles import count_compiles, explain_misses
from jitbench.errors import JitbenchError
from jitbench.hazards import FOUND as HAZARDS
from jitbench.targets import Call, as_target
from jitbench.vocabulary import Hazard, Outcome
from jitbench.ways.subject import subject_of


def _check_allow(allow: str | Iterable[str]) -> frozenset[Hazard]:
    """The hazards ``allow=`` names (a name of :data:`HAZARDS`, or several), checked."""
    chosen = [allow] if isinstance(allow, str) else list(allow)
    for name in chosen:
        if name not in HAZARDS:
            raise JitbenchError(
                f"allow= names an unknown hazard {name!r}; the hazards: {', '.join(HAZARDS)}"
            )
    return frozenset(Hazard(name) for name in chosen)


# The steps a failure shows (the rest: explain=True, or jitbench audit TARGET --explain).
SHOWN_STEPS = 12


def _failure_text(result: AuditResult, title: str, explain: bool) -> str:
    """With ``explain``, the audit as ``jitbench audit TARGET --explain`` prints it; else the
    verdict, then the steps with a hazard, as ``jitbench audit`` prints them."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        if explain:
            render.object_audit(result, title, explain=True)
        else:
            print("verdict:", *(f"  - {line}" for line in result.verdict), sep="\n")
            hazardous = [s for s in result.steps if s.hazard]
            if hazardous:
                marks = render.MARKS
                print(f"\nthe steps with a hazard (cell: traces/compiles, {marks[Outcome.STALE]} "
                      f"a stale result, {marks[Outcome.ERROR]} an error under jit):")  # fmt: skip
                render.step_table(hazardous[:SHOWN_STEPS])
            if len(hazardous) > SHOWN_STEPS:
                print(f"... and {len(hazardous) - SHOWN_STEPS} more")
            print("\nevery step and JAX's reason for each recompile: explain=True, or "
                  "jitbench audit TARGET --explain")  # fmt: skip
    return out.getvalue().rstrip()


def assert_jit_safe(
    target_or_object: object,
    *,
    call: Call | None = None,
    inputs: object = None,
    fields: str | None = None,
    allow: str | Iterable[str] = (),
    explain: bool = False,
) -> AuditResult:
    """Play the audit's scenario on an object; AssertionError with its verdict on a hazard.

    ``target_or_object`` is the object (``call`` names its method, default
    ``__call__``, or is a function called as ``call(obj, *inputs)``, or a
    ``package.module:function`` spec as ``jitbench audit --call`` takes; ``inputs``
    are the call's arguments: a tuple, an :class:`jitbench.Inputs`, one value, or a
    ``package.module:function`` spec returning them, as ``--inputs``), a factory
    function that builds it (a new instance is then built the way the project builds
    one), a :class:`jitbench.Target`, or a ``package.module:factory`` spec. ``fields`` picks
    the fields the scenario changes (a glob or regular expression over their paths,
    as ``jitbench audit --fields``). The scenario: call, call again, set each flag to a
    new value and back, give each array new values and a new shape, build an equal and
    an other instance, drop everything; each result is compared with the same call
    under ``jax.disable_jit()``.

    Fails (AssertionError) on any hazard of :data:`HAZARDS` not named in ``allow``:
    the message names the hazards, then the verdict in words with the built-in
    strategy it behaves like, and the steps with a hazard (the field, the change,
    traces/compiles, ``!`` for a stale result); with ``explain``, the whole audit as
    ``jitbench audit --explain`` prints it (every step, and JAX's reason for each
    recompile). The scenario is played once. Returns the
    :class:`~jitbench.auditing.result.AuditResult`.
    Bad input (an unknown hazard, a method the object lacks) is a JitbenchError naming
    the value and the valid choices.
    """
    allowed = _check_allow(allow)
    target = as_target(target_or_object, call=call, inputs=inputs)
    subject = subject_of(target)
    result = audit_subject(subject, fields=fields)
    found = result.hazards()
    failing = {name: n for name, n in found.items() if name not in allowed}
    if not failing:
        return result
    # The verdict's match, only for a failure's message (why: docs/design.md).
    result = with_verdict(result, subject)
    title = f"{target.name} (call {target.call_name})"
    named = ", ".join(f"{name} ({n})" for name, n in failing.items())
    accepted = ", ".join(sorted(allowed & found.keys())) or "none"
    details = _failure_text(result, title, explain)
    raise AssertionError(
        f"{title} is not jit-safe: {named}; allowed: {accepted} "
        f"(allow= accepts {', '.join(HAZARDS)})\n\n{details}"
    )


@dataclasses.dataclass
class CompileCount:
    """The traces and backend compiles inside a :func:`compiles` block, and JAX's
    explanation of each tracing-cache miss (filled in when the block ends)."""

    traces: int = 0
    compiles: int = 0
    explanations: list[str] = dataclasses.field(default_factory=list)

    def check(self, *, max: int | None = None, exactly: int | None = None) -> None:
        """AssertionError unless both counts are at most ``max`` / exactly ``exactly``."""
        __tracebackhide__ = True
        bound, word = _bound(max, exactly)
        if bound is None:
            return
        if all((n <= bound) if word == "at most" else (n == bound) for n in self.counts):
            return
        lines = render.explanation(self).splitlines()
        raise AssertionError(
            f"{self.traces} traces and {self.compiles} backend compiles inside the block, "
            f"expected {word} {bound}; JAX's explanation of each miss:\n"
            + "\n".join(f"  {line}" for line in lines)
        )

    @property
    def counts(self) -> tuple[int, int]:
        return self.traces, self.compiles


def _bound(max: int | None, exactly: int | None) -> tuple[int | None, str]:
    """The bound given and its words (``at most``, ``exactly``), checked."""
    if max is not None and exactly is not None:
        raise JitbenchError(f"give max= or exactly=, not both (max={max}, exactly={exactly})")
    bound, word = (max, "at most") if exactly is None else (exactly, "exactly")
    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 0):
        name = "max" if exactly is None else "exactly"
        raise JitbenchError(f"{name}={bound!r} must be a whole number of compiles, 0 or more")
    return bound, word


@contextlib.contextmanager
def compiles(*, max: int | None = None, exactly: int | None = None) -> Iterator[CompileCount]:
    """Count JAX's traces and backend compiles inside the block; with ``max`` or
    ``exactly``, assert that both counts meet the bound when the block ends.

    ``with compiles(max=0): model(x)`` fails when the call misses jit's cache, with JAX's
    own explanation of each miss (``jax_explain_cache_misses``, as ``jitbench audit
    --explain`` prints it) in the message; ``with compiles() as seen:`` only counts
    (``seen.traces``, ``seen.compiles``, ``seen.check(max=1)``). Every trace and compile
    of the process counts while the block is open, other threads' too. A block that
    raises is not checked: its exception propagates.
    """
    __tracebackhide__ = True
    _bound(max, exactly)
    seen = CompileCount()
    with count_compiles() as stats, explain_misses() as messages:
        yield seen
    seen.traces, seen.compiles, seen.explanations = stats.traces, stats.compiles, messages
    seen.check(max=max, exactly=exactly)
