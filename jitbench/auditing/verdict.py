"""What a user's object's audit means: its hazards in words, and the built-in strategy it
behaves like, so that the README's tables for that strategy apply to it (see docs/design.md).
"""

from __future__ import annotations

from collections.abc import Iterator

from jitbench.auditing.result import AuditResult, Step
from jitbench.auditing.scenario import RETURNED
from jitbench.strategies.instances import class_flattening, class_kind
from jitbench.targets.declared import REFUSES
from jitbench.targets.fields import EQX_STATIC, IN_PLACE, REBUILT, TREECLASS_AT, named
from jitbench.vocabulary import CHANGES, FED_BACK, Hazard, Outcome, StepName
from jitbench.ways.registry import STRATEGIES, Strategy, get_strategy
from jitbench.ways.subject import LETS_THROUGH

# How a change was made (jitbench.targets.edit), in the verdict's words.
HOW = {
    "setattr": "in place",
    "Variable.set_value": "in its nnx Variable",
    **{how: f"with {how}" for how in (*REBUILT, "._replace", "eqx.tree_at")},
    "item assignment": "by item assignment",
    "a new container": "in a new container",
    EQX_STATIC: "in a new module (eqx.tree_at cannot reach a static field)",
    TREECLASS_AT: "with pytreeclass's .at[...].set",
}
WHAT = {
    StepName.NEW_STATIC: "set to a new value",
    StepName.SEEN_STATIC: "set back to a value seen before",
    StepName.SAME_SHAPE_ARRAY: "given new values of the same shape",
    StepName.NEW_SHAPE_ARRAY: "given an array of a new shape",
}
# The steps said by what they are (StepName.does), not by the field they changed.
INSTANCES = (StepName.EQUAL_INSTANCE, StepName.OTHER_INSTANCE, *FED_BACK)
# A step's hazard in words, by (Step.hazard, step), else (Step.hazard, None): {subject} is
# the change (_subject), {error} the jitted call's.
SAID: dict[tuple[Hazard, StepName | None], str] = {
    (Hazard.STALE, StepName.REPEAT_CALL): "the same call again returns the first call's "
    "result, the call without jit another: the call changes the object, and jit does not see it",
    **{(Hazard.STALE, n): "{subject}: jit returns a result computed for other values"
       for n in INSTANCES},
    (Hazard.STALE, None): "{subject} is not seen: jit keeps returning results for the old values",
    (Hazard.ERROR, StepName.FIRST_CALL): "the first call raises under jit, the call without "
    "jit does not: {error}; no later step could be played",
    (Hazard.ERROR, None): "{subject} makes the jitted call raise, the call without jit does "
    "not: {error}",
    (Hazard.RECOMPILE, StepName.REPEAT_CALL): "the same call again, nothing changed, compiles "
    "again: at every call",
    **{(Hazard.RECOMPILE, n): "{subject} compiles again: nothing compiled before is reused "
       "for it" for n in (StepName.SEEN_STATIC, StepName.EQUAL_INSTANCE)},
}  # fmt: skip


def judged(result: AuditResult) -> bool:
    """Whether any change had an outcome that tells something of jit (Outcome.tells)."""
    return any(s.outcome.tells for s in result.steps if s.name in CHANGES)


# The kinds of object jit takes as a pytree (kinds.object_kind's words); the others' family
# is the plain objects'.
PYTREES = ("pytree", "pytree dataclass", "flax.struct dataclass", "eqx.Module", "nnx.Module")
# The library that makes an object of a kind what it is, where its class has no base of that
# library's (a @flax.struct.dataclass class is a plain dataclass made a pytree by flax).
KIND_LIBRARY = {"flax.struct dataclass": "flax", "eqx.Module": "equinox", "nnx.Module": "flax"}


def _cell(step: Step) -> tuple[bool, bool, str]:
    """What a step's cell says of jit's cache: traced or not, compiled or not, its mark (the
    counts are the computation's: the built-ins compute one operation)."""
    return step.traces > 0, step.compiles > 0, step.outcome.mark


def same_cells(result: AuditResult, builtin: AuditResult) -> bool:
    """Whether every cell of ``result``'s audit is ``builtin``'s at the same step, and their
    leak findings are the same. A step whose call raises without jit too (n/a) says nothing of
    jit and is left out, and so is an other instance of an object that played no array field:
    its new values are in its flags and numbers (Subject.other), a built-in's in its arrays,
    not the same change. A step no built-in plays (a loop's fed_back), a change whose result
    without jit did not change (?) and leaks that could not be checked match none."""
    theirs = {step.name: _cell(step) for step in builtin.steps}
    unlike = set() if _arrays_played(result) else {StepName.OTHER_INSTANCE}
    for step in result.steps:
        if step.outcome is Outcome.NOT_APPLICABLE or step.name in unlike:
            continue
        if theirs.get(step.name) != _cell(step):
            return False
    mine, other = result.leaks, builtin.leaks
    return mine is not None and other is not None and (mine > 0) == (other > 0)


def _arrays_played(result: AuditResult) -> bool:
    """Whether an array field played: one given new values whose value is never set back (a
    flag's and a number's are: seen_static)."""
    changed = {s.field for s in result.steps if s.name == StepName.SAME_SHAPE_ARRAY}
    return bool(changed - {s.field for s in result.steps if s.name == StepName.SEEN_STATIC})


def closest(
    result: AuditResult, kind: str, builtins: dict[str, AuditResult], uses: frozenset[str],
    python: bool | None = None,
) -> str:  # fmt: skip
    """The built-in strategy whose audit has every cell of ``result``'s (:func:`same_cells`),
    "" where none has: where several have, the one whose class jit flattens as it does the
    object (``python``: by Python code or in C++, kinds.flattened_in_python; None: not
    known, or no pytree), then of the object's kind, then of its family (a pytree, a plain
    object), then the first in the catalog. Only an analogy the object shares
    is named: a strategy of a library (equinox, flax) only for an object that uses it
    (``uses``: fields.libraries, and the library that makes its kind); eager, which jits
    nothing, only for a call whose first call JAX explained no miss of (an explained miss is
    a jit of a function of the user's or a library's)."""
    uses = uses | {KIND_LIBRARY[kind]} if kind in KIND_LIBRARY else uses
    explained = bool(result.steps[0].explanations)
    order = list(STRATEGIES)
    matching = [
        n for n in builtins
        if get_strategy(n).libraries <= uses and not (n == "eager" and explained)
        and same_cells(result, builtins[n])
    ]  # fmt: skip
    kinds = {n: class_kind(get_strategy(n)) for n in matching}

    def rank(name: str) -> tuple[bool, bool, bool, int]:
        family = (kinds[name] in PYTREES) != (kind in PYTREES)
        flattened = python is not None and class_flattening(get_strategy(name)) != python
        return flattened, kinds[name] != kind, family, order.index(name)

    return min(matching, key=rank, default="")


def _subject(step: Step) -> str:
    if step.name in INSTANCES:
        return step.name.does
    # A number's new value (its value back is a seen_static step, said as a flag's)
    number = step.role == "traced number" and step.name == StepName.SAME_SHAPE_ARRAY
    what = "given a new value" if number else WHAT[step.name]
    how = step.how.split(" (")[0]  # what was set back before it is the table's to say
    return f"`{step.field}` {what} {HOW.get(how, f'({how})')}"


def _loop(result: AuditResult) -> list[str]:
    """A line where the object the call returns compiles again when fed back, and why."""
    steps = [s for s in result.steps if s.name in FED_BACK and s.hazard is Hazard.RECOMPILE]
    if not steps:
        return []
    every = len(steps) == len(FED_BACK)
    # What differs from the object the call was passed (scenario.drift), else JAX's words,
    # which name the closest key it holds, perhaps another step's.
    why = steps[0].how.removeprefix(RETURNED)
    said = [line.strip().lstrip("* ") for s in steps for m in s.explanations
            for line in m.splitlines() if line.strip().startswith("* ")]  # fmt: skip
    if not why and said:
        why = f" (JAX: {said[-1].split('https://')[0]})"
    if "weak" in why:  # a Python number where the result holds an array (JAX's docs)
        why += "; build it with typed values (jnp.float32(0.0), not 0.0)"
    when = ("at every step: each object it returns differs from the one it was passed" if every
            else "once: what it returns differs from what it was first passed")  # fmt: skip
    return [f"the object the call returns, called in turn as a loop does "
            f"(state = step(state, x)), compiles again {when}{why}"]  # fmt: skip


def _not_applicable(steps: list[Step]) -> Iterator[str]:
    """One line per change and error the call cannot take even without jit, its fields listed:
    the steps of a line raised the very error it quotes (each step's own, as its JSON has it)."""
    groups: dict[tuple[StepName, str], list[Step]] = {}
    for step in steps:
        groups.setdefault((step.name, step.error), []).append(step)
    for (name, error), group in groups.items():
        fields = [f"`{s.field}`" for s in group if s.field]
        where = f" ({named(fields, 3)})" if fields else ""
        body = error.removesuffix(LETS_THROUGH)  # shortened, the plain call's mark kept
        suffix = error[len(body) :]
        body = body if len(body) <= 160 else body[:157] + "..."
        # A value the class's own constructor refuses says so itself (edit.refused).
        why = body if REFUSES in error else f"the call raises without jit too: {body}"
        yield f"not applicable: {name.does}{where}: {why}{suffix}"


# The steps where nothing new was seen, as a call that compiles at every call lists them.
_LATER = {
    StepName.SEEN_STATIC: "a value set back",
    StepName.SAME_SHAPE_ARRAY: "new values of the same shape",
    StepName.EQUAL_INSTANCE: "an equal instance",
    StepName.FED_BACK: "a state fed back",
    StepName.FED_BACK_AGAIN: "a state fed back",
}


def _per_object(result: AuditResult) -> list[Step]:
    """The steps that compiled again where jit had seen every value, where each made on a new
    object did (an equal instance, and a field changed on a new object: eqx.tree_at,
    dataclasses.replace) and the same object called again did not: the program is the
    object's own, not its values'. Empty where any such step reused a program, or no field
    was changed on a new object (an equal instance alone has its own line)."""
    if any(s.name == StepName.REPEAT_CALL and s.compiles for s in result.steps):
        return []
    seen = (StepName.SEEN_STATIC, StepName.SAME_SHAPE_ARRAY, StepName.EQUAL_INSTANCE)
    new = [s for s in result.steps if s.name in seen and s.outcome.tells and (
        s.name == StepName.EQUAL_INSTANCE or s.how.split(" (")[0] not in IN_PLACE)]  # fmt: skip
    if not any(s.field for s in new) or StepName.EQUAL_INSTANCE not in {s.name for s in new}:
        return []
    return new if all(s.hazard is Hazard.RECOMPILE for s in new) else []


def _own_program(steps: list[Step]) -> str:
    """The line of :func:`_per_object`'s steps."""
    kinds = named(list(dict.fromkeys(_LATER[s.name] for s in steps)), 3)
    return (f"every new object compiles again, whatever its values, and the same object "
            f"called again does not ({_count(len(steps), 'step')} where jit had seen every "
            f"value: {kinds}): the compiled program is the object's own (a jit made for each "
            f"object, or the object in jit's key by identity), so a new one, an equal one "
            f"too, always compiles")  # fmt: skip


# The hazards, the most severe first.
BY_SEVERITY = (Hazard.STALE, Hazard.ERROR, Hazard.RECOMPILE, Hazard.LEAK)
# The order of a verdict's lines: its hazards, then what was found besides, then the changes
# that could not be judged.
SEVERITY = (*BY_SEVERITY, "info", Outcome.UNJUDGED)


def hazards(result: AuditResult) -> list[str]:
    """One line per hazard of the audit, in plain words, the most severe first
    (:data:`SEVERITY`); the steps the call cannot take even without jit grouped by change and
    error; the changes whose result without jit did not change counted, last."""
    found = findings(result)
    return [line for kind in SEVERITY for line in found[kind]]


def findings(result: AuditResult) -> dict[str, list[str]]:
    """The verdict's lines by :data:`SEVERITY`."""
    found: dict[str, list[str]] = {kind: [] for kind in SEVERITY}
    unknown: list[Step] = []  # changes the result without jit did not notice
    # A call that compiles at every call compiles at every later step too: said once, counted.
    every = any(s.name == StepName.REPEAT_CALL and s.compiles for s in result.steps)
    later = [s for s in result.steps
             if s.hazard is Hazard.RECOMPILE and s.name != StepName.REPEAT_CALL]  # fmt: skip
    # A call whose every new object compiles again: said once, its steps counted.
    own = [] if every else _per_object(result)
    grouped = {id(s) for s in own}
    for step in result.steps:
        subject = _subject(step) if step.name in (*CHANGES, *FED_BACK) else ""
        unjudged = step.outcome is Outcome.UNJUDGED
        if unjudged and step.error:  # why its result was not compared
            found["info"] += [] if step.error in found["info"] else [step.error]
        elif unjudged and step.name in (StepName.NEW_STATIC, StepName.SAME_SHAPE_ARRAY):
            unknown.append(step)
        if step is (own[0] if own else None):
            found[Hazard.RECOMPILE].append(_own_program(own))
        said = SAID.get((step.hazard, step.name), SAID.get((step.hazard, None)))
        if said and not (every and step in later) and id(step) not in grouped:
            found[step.hazard].append(said.format(subject=subject, error=step.error))
    if every and later:
        kinds = named(list(dict.fromkeys(_LATER[s.name] for s in later)), 4)
        found[Hazard.RECOMPILE][0] += (f", so every later step where nothing new was seen "
                                       f"compiles again too ({_count(len(later), 'step')}: "
                                       f"{kinds})")  # fmt: skip
    found[Hazard.RECOMPILE] += [] if every else _loop(result)
    found[Outcome.UNJUDGED] = _unnoticed(unknown)

    # A call that compiles at every call recompiles for new values too, hashed or not.
    hashed = [f"`{s.field}`" for s in result.steps if s.name == StepName.SAME_SHAPE_ARRAY
              and s.hazard is Hazard.RECOMPILE and id(s) not in grouped]  # fmt: skip
    if hashed and not result.repeat_call_compiles:
        found[Hazard.RECOMPILE].append(f"{named(hashed, 4)} given new values compile again: "
                                       "the call hashes them, a new program for every new "
                                       "value")  # fmt: skip
    leaked, arrays = result.leaked_instances, result.leaked_arrays
    if result.leaks:  # arrays alone where no object stays alive, or none can be referenced
        counts = [(n, what) for n, what in ((leaked, "object"), (arrays, "array")) if n]
        held = " and ".join(_count(n, what) for n, what in counts)
        one = [n for n, _ in counts] == [1]
        stay, them = ("stays", "it") if one else ("stay", "them")
        found[Hazard.LEAK].append(f"{held} the scenario built {stay} alive after it dropped "
                                  f"{them}: jit's cache (or a library) holds {them}, and "
                                  "memory grows with every instance or static value it keys "
                                  "on")  # fmt: skip
    info = found["info"]
    if result.first_held:
        stay = "stays" if result.first_held == 1 else "stay"
        # Where an equal instance compiles again, its key is its own: the first's is no set
        # that equal instances share, and the line must not say it does not grow.
        apart = any(s.name == StepName.EQUAL_INSTANCE and s.hazard is Hazard.RECOMPILE
                    for s in result.steps)  # fmt: skip
        why = (
            "an equal instance compiles again under a key of its own, so each new instance "
            "keeps its own alive too" if apart
            else "equal instances reuse that key, so this does not grow"
        )  # fmt: skip
        info.append(f"{_count(result.first_held, 'object')} inside the first instance {stay} "
                    f"alive, held by the key of its compiled program: {why}")  # fmt: skip
    hazard = any(found[kind] for kind in BY_SEVERITY)
    if result.steps[0].outcome is Outcome.ERROR:
        pass  # the first call's error says why nothing else was judged
    elif not judged(result) and not any(
        s.outcome is Outcome.UNJUDGED and s.error for s in result.steps
    ):
        info.append("no change could be judged: each raises without jit too, or leaves the "
                    "result without jit as it was, so no built-in is matched")  # fmt: skip
    elif not judged(result):
        info.append("no change could be judged, so no built-in is matched")
    elif not hazard:
        seen = "every change judged was seen" if unknown else "every change was seen"
        info.insert(0, f"no hazard: {seen}, every result matched the call without jit"
                    + (", nothing leaked" if leaked == 0 else ""))  # fmt: skip
    numbers = [
        f"`{s.field}`" for s in result.steps
        if s.hashed_number and s.compiles and s.outcome in (Outcome.CORRECT, Outcome.UNJUDGED)
    ]  # fmt: skip
    if numbers and not result.repeat_call_compiles:
        info.append(f"{named(numbers, 4)}: a number the call hashes: each new value compiles "
                    "once, and a value seen before reuses its program (one changed at every "
                    "call, a counter or a schedule, would compile at every call)")  # fmt: skip
    if result.unchecked:
        info.append(f"leaks checked through the arrays only: {result.unchecked}")
    info += _not_applicable([s for s in result.steps if s.outcome is Outcome.NOT_APPLICABLE])
    return found


def _unnoticed(steps: list[Step]) -> list[str]:
    """The changes that left the result without jit as it was, in one line: one said in full,
    more counted with the first two named."""
    if not steps:
        return []
    untraced = [s for s in steps if s.name == StepName.NEW_STATIC and not s.traces]
    stale = "a value that changes the result would be stale"
    if len(steps) == 1:
        (step,) = steps
        return [f"{_subject(step)}: the result without jit is what it was, so whether jit "
                "sees it is not known" + (f"; jit did not trace again, so {stale}" if untraced
                                          else "")]  # fmt: skip
    shown = "; ".join(_subject(s) for s in steps[:2])
    more = f"; and {len(steps) - 2} more" if len(steps) > 2 else ""
    after = (f"; jit did not trace again after {len(untraced)} of them, so {stale}"
             if untraced else "")  # fmt: skip
    return [f"{len(steps)} changes leave the result without jit as it was, so whether jit sees "
            f"them is not known ({shown}{more}){after}"]  # fmt: skip


def judge(
    result: AuditResult, kind: str, builtins: dict[str, AuditResult],
    uses: frozenset[str] = frozenset(), python: bool | None = None,
) -> tuple[tuple[str, ...], str]:  # fmt: skip
    """The hazards in words, and the built-in strategy that behaves the same ("" for none);
    a call that jits nothing is compared with ``eager`` alone; ``uses``: the packages the
    object uses, ``python``: whether jit flattens it by Python code (:func:`closest`)."""
    found = findings(result)
    lines = [line for part in SEVERITY for line in found[part]]
    # The call's kind after its hazards, before the rest of what was found.
    first = sum(len(found[part]) for part in BY_SEVERITY)
    unjitted = ("the call is not jitted: JAX compiles each operation on its own, once per "
                "shape, and dispatches them one by one at every call")  # fmt: skip
    if op_by_op(result) and "eager" in builtins:
        builtins = {"eager": builtins["eager"]}
        lines.insert(first, unjitted)
    if not judged(result):  # compared on nothing, every built-in would match: none does
        return tuple(lines), ""
    name = closest(result, kind, builtins, uses, python)
    if name == "eager" and unjitted not in lines and _unexplained(result):
        lines.insert(first, unjitted)  # one operation: its one program told apart by the match
    if not name:  # an analogy only where every cell is the built-in's: none at all otherwise
        return tuple(lines), ""
    lines.append(_analogy(get_strategy(name), kind, python))
    return tuple(lines), name


# How jit flattens an object at every call (kinds.flattened_in_python), in words.
FLATTENED = {True: "by Python code", False: "in C++"}


def _analogy(strategy: Strategy, kind: str, python: bool | None) -> str:
    """The line naming the built-in the object behaves like: with the strategy's mechanism
    where the object shares it (a pytree of the strategy's kind that jit flattens alike, or
    no pytree, as the strategy's class), else the cells and how jit flattens each, as tried:
    a mechanism is not read off an analogy of cells (a jax_dataclasses class is a frozen
    dataclass flattened by Python code, not register_dataclass's C++)."""
    head = f"behaves like the built-in strategy {strategy.name} ({strategy.summary})"
    theirs = class_flattening(strategy)
    if theirs == python and (python is None or class_kind(strategy) == kind):
        return f"{head}: {strategy.mechanism}"
    if python is None or theirs is None:
        return f"{head} at every step of its audit"
    alike = ("as it flattens that strategy's class" if theirs == python
             else f"where it flattens that strategy's class {FLATTENED[theirs]}")  # fmt: skip
    return (f"{head} at every step of its audit; jit flattens it {FLATTENED[python]} at every "
            f"call, {alike}")  # fmt: skip


def op_by_op(result: AuditResult) -> bool:
    """Whether the call jits nothing: its first call compiled programs, more than one, and
    JAX explained none of those misses (it explains functions defined outside JAX only, and
    an operation dispatched on its own is JAX's), and the same call again compiled none (each
    operation's program is cached by shape). One program is no evidence: a library's jitted
    function compiles one unexplained too (JAX explains none in files a library excludes from
    tracebacks: flax's ``jax.jit(model.apply)``), and so does a jit made at every call."""
    return result.steps[0].compiles > 1 and _unexplained(result)


def _unexplained(result: AuditResult) -> bool:
    """The first call compiled unexplained by JAX, and the same call again compiled nothing."""
    first = result.steps[0]
    return first.compiles > 0 and not first.explanations and not result.repeat_call_compiles


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
