"""What a user's object's audit means: its hazards in words, and the built-in strategy it
behaves like (so that the README's tables for that strategy apply to it).

The match compares, per kind of change (repeat call, new static, seen static,
same-shape array, new-shape array, equal instance, other instance) whether the
step compiled and its outcome, and whether instances leaked, with the built-in
strategies' audits on the same device, run here. A kind the object lacks (no
static field), a step that is "n/a" and a leak check that could not run match
anything. Where a kind has several fields, the worst step stands for it
(stale, then error, then correct). Ties go to a strategy whose generated class
is the same kind of object (an ``eqx.Module``, an ``nnx.Module``, a registered
dataclass...), then to the registry's order.
"""

from __future__ import annotations

import functools

from jitbench.devices import resolve
from jitbench.strategies import STRATEGIES, get_strategy
from jitbench.subjects.result import AuditResult, Step
from jitbench.subjects.scenario import CHANGES, STEPS
from jitbench.targets.fields import EQX_STATIC

# The steps whose (compiled?, outcome) a signature compares.
SIGNED = ("repeat_call", *CHANGES)
_WORST = {"stale": 3, "error": 2, "correct": 1}
# How a change was made (jitbench.targets.fields), in the verdict's words.
HOW = {
    "setattr": "in place",
    "Variable.set_value": "in its nnx Variable",
    "dataclasses.replace": "with dataclasses.replace",
    ".replace": "with .replace",
    "eqx.tree_at": "with eqx.tree_at",
    EQX_STATIC: "in a new module (eqx.tree_at cannot reach a static field)",
}
Signature = dict[str, tuple[bool, str] | bool | None]


def signature(result: AuditResult) -> Signature:
    """Per kind of change (compiled?, outcome) of its worst step, and whether any leaked."""
    found: Signature = {}
    for kind in SIGNED:
        steps = [s for s in result.steps if s.name == kind and s.outcome != "n/a"]
        worst = max(steps, key=lambda s: (_WORST[s.outcome], s.compiles > 0), default=None)
        found[kind] = None if worst is None else (worst.compiles > 0, worst.outcome)
    leaked = result.leaked_instances
    found["leak"] = None if leaked is None else leaked > 0
    return found


def distance(a: Signature, b: Signature) -> int:
    """How many of the two signatures' entries differ (an unknown entry differs from none)."""
    total = 0
    for key, mine in a.items():
        theirs = b.get(key)
        if mine is None or theirs is None:
            continue
        if isinstance(mine, tuple) and isinstance(theirs, tuple):
            total += (mine[0] != theirs[0]) + (mine[1] != theirs[1])
        else:
            total += mine != theirs
    return total


@functools.cache
def strategy_kind(name: str) -> str:
    """The kind of object a strategy's generated class is (see fields.object_kind)."""
    from jitbench.strategies.instances import make_instance
    from jitbench.targets.fields import object_kind

    obj, _ = make_instance(get_strategy(name), 4, resolve("cpu"))
    return object_kind(obj)


def closest(result: AuditResult, kind: str, builtins: dict[str, AuditResult]) -> str:
    """The built-in strategy whose audit (of ``builtins``) is nearest ``result``'s (ties: the
    same kind of object)."""
    mine = signature(result)
    order = list(STRATEGIES)
    ranked = sorted(
        builtins.items(),
        key=lambda item: (
            distance(mine, signature(item[1])),
            strategy_kind(item[0]) != kind,
            order.index(item[0]),
        ),
    )
    return ranked[0][0]


def _subject(step: Step, field: str, how: str) -> str:
    if step.name in ("equal_instance", "other_instance"):
        return STEPS[step.name]
    what = {
        "new_static": "set to a new value",
        "seen_static": "set back to a value seen before",
        "same_shape_array": "given new values of the same shape",
        "new_shape_array": "given an array of a new shape",
    }[step.name]
    return f"`{field}` {what} {HOW.get(how, f'({how})')}"


def hazards(result: AuditResult) -> list[str]:
    """One line per hazard of the audit, in plain words."""
    lines = []
    for step in result.steps:
        subject = _subject(step, step.field, step.how) if step.name in CHANGES else ""
        if step.outcome == "stale" and step.name.endswith("_instance"):
            lines.append(f"{subject}: jit returns a result computed for other values")
        elif step.outcome == "stale":
            lines.append(f"{subject} is not seen: jit keeps returning results for the old values")
        elif step.outcome == "error":
            lines.append(f"{subject} makes the jitted call raise, the call without jit does not: "
                         f"{step.error}")  # fmt: skip
        elif step.outcome == "n/a":
            lines.append(
                f"not applicable: {subject}: the call raises without jit too: {step.error}"
            )
        if step.name == "repeat_call" and step.compiles:
            lines.append("the same call again, nothing changed, compiles again: at every call")
        if step.name in ("seen_static", "equal_instance") and step.compiles and step.correct:
            lines.append(f"{subject} compiles again: nothing compiled before is reused for it")
    if result.leaked_instances:
        lines.append(
            f"{result.leaked_instances} instances stay alive after the scenario dropped them: "
            "jit's cache holds them, and memory grows with every instance"
        )
    if not any(not line.startswith("not applicable") for line in lines):
        lines.append(
            "no hazard: every change was seen, every result matched the call without jit"
            + (", nothing leaked" if result.leaked_instances == 0 else "")
        )
    if result.leaked_instances is None:
        lines.append("leaks not checked: the object cannot be weakly referenced")
    return lines


def judge(
    result: AuditResult, kind: str, builtins: dict[str, AuditResult]
) -> tuple[tuple[str, ...], str]:
    """The hazards in words and the matching built-in strategy's name."""
    match = closest(result, kind, builtins)
    lines = hazards(result)
    strategy = get_strategy(match)
    lines.append(
        f"behaves like the built-in strategy {match} ({strategy.summary}): {strategy.mechanism}"
    )
    return tuple(lines), match
