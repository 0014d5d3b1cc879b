"""The scenario: what a user does to an object over its life, step by step
(:class:`jitbench.vocabulary.StepName`),
played on any subject (:class:`Play`, :func:`replay`), and the call right after a change
(:func:`call_after`); see docs/design.md.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING

import numpy as np

from jitbench.compiles import block, clear_caches, count_compiles, quiet_callback_errors
from jitbench.devices import default_platform
from jitbench.errors import JitbenchError, error_text, origin
from jitbench.targets import kinds, values
from jitbench.vocabulary import FED_BACK, TIMED_CHANGES, Outcome, StepName
from jitbench.vocabulary import SCENARIO as SCENARIO  # the steps every subject plays
from jitbench.ways.subject import Judging

if TYPE_CHECKING:
    from jitbench.targets.fields import Field
    from jitbench.ways.subject import Subject

# How a fed-back step changes the object, before what drifted (drift).
RETURNED = "the object the call returned"
# Past this many played fields, on the CPU, the programs a static field's pair of steps
# compiled are released after it: memory stays bounded (docs/design.md).
RELEASE_ABOVE = 24
# How a first call's error reads where it raises with jit and without, differently: both said.
WITHOUT_JIT_TOO = "; without jit too: "
# How an array field played before is set back, by whether its new values were rejected.
_BACK = {False: "back to its shape", True: "back to its values: the call cannot take new ones"}


class Play:
    """One run of the scenario on ``subject``: the object as it is now, and what changed
    (``changed``: (field, how) per step so far, "" where no field changed)."""

    def __init__(self, subject: Subject, played: list[Field]) -> None:
        self.subject = subject
        self.played = played
        self.roles = {f.path: f.role for f in played}
        self.kinds = {f.path: f.kind for f in played}
        self.obj = subject.new()
        self.changed: list[tuple[str, str]] = []
        self.rng = np.random.default_rng(1)
        # What the oracle needs of the object as it was before the last call (Subject.before).
        self.before: object = None
        self.judging = Judging()
        # The step being played, the last one's outcome.
        self.step: StepName | None = None
        self.outcome: Outcome | None = None
        self.passed: list[object] = []  # the arrays the first call was passed
        self.returned: object = None  # what a loop calls next of the last result (see fed)
        self.raised_in = ""  # where the last call raised, outside JAX (errors.origin)
        # Why the step's new value is no valid one: its class's constructor refuses it (the
        # step is n/a with it, whatever jit did: edit.refused).
        self.refusal = ""

    def call(self) -> object:
        """The subject's call on the object as it is now."""
        return self.subject.call(self.obj)()

    def keep(self) -> None:
        """Keep what the oracle needs of the object before a call (outside any count: the
        copy is built in Python)."""
        self.before = self.subject.before(self.obj)
        if self.step is StepName.FIRST_CALL:  # what it passes, to tell a call that donates it
            import jax

            target = self.subject.target
            leaves = jax.tree_util.tree_leaves((self.obj, target.inputs, target.kwargs))
            self.passed = [leaf for leaf in leaves if kinds.is_array(leaf)]

    def judge(
        self, result: object, error: str, traced: bool, compiled: bool | None = None
    ) -> tuple[Outcome, str]:
        """The outcome of this step's call, which jit ``traced`` or not and ``compiled`` (a
        new program: it saw every value) or not (default: as traced) (see
        :meth:`Subject.judge`)."""
        if self.step is StepName.FIRST_CALL and not error:  # one that raised may leave the object
            self._refuse_donation()  # half updated (nnx under an outer jit): its error says
            self._refuse_leaked_tracers()
        reused = bool(self.changed[-1][0]) and not traced
        # A flag's old value: its program was seen where the new value's was.
        if self.step is StepName.SEEN_STATIC:
            reused = reused and self.outcome is Outcome.UNJUDGED
        # A trace that compiled nothing may still reuse an old program (a value hash's
        # equal key): only a compile shows that jit saw the new values.
        self.judging.reused = reused
        self.judging.compiled = traced if compiled is None else compiled
        raised = error
        # One rule: raised under jit and not without it is an error, wherever the raise comes
        # from (the object's own flatten or unflatten); n/a only where the call without jit
        # raises too (under disable_jit, or as written where disable_jit skips a check).
        self.outcome, error = self.subject.judge(self.before, result, error, self.judging)
        if self.refusal:
            self.outcome, error = Outcome.NOT_APPLICABLE, self.refusal
        rejected = self.outcome is Outcome.NOT_APPLICABLE
        if self.step is StepName.FIRST_CALL and raised and rejected and error != raised:
            # The audit stops on it: the jitted call's own error first, then the oracle's.
            error = raised + WITHOUT_JIT_TOO + error
        if self.outcome is Outcome.ERROR and self.raised_in:
            error += f" (raised at {self.raised_in})"
        return self.outcome, error

    def _refuse_donation(self) -> None:
        """JitbenchError where the first call deleted (donated) arrays it was passed."""
        if any(getattr(leaf, "is_deleted", bool)() for leaf in self.passed):
            raise JitbenchError(
                f"the call of {self.subject.name!r} donates its arguments (donate_argnums): "
                "their arrays are deleted by the first call, and every step calls on them "
                "again; audit it without donation, which changes no cache key"
            )

    def _refuse_leaked_tracers(self) -> None:
        """JitbenchError where the first call left tracers of jit's trace in the object."""
        import jax

        def traced(value: object) -> bool:
            return any(isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves(value))

        held = [f.path for f in self.played if traced(self.subject.get(self.obj, f))]
        # Fields the audit does not play (a library's own state) count too.
        if held or traced(self.obj) or traced(getattr(self.obj, "__dict__", None)):
            where = f" (`{'`, `'.join(held[:3])}`{' and more' if len(held) > 3 else ''})"
            raise JitbenchError(
                f"the call of {self.subject.name!r} leaves tracers of jit's trace in the "
                f"object{where if held else ''}: something it calls writes into the object "
                "while jit traces it (a state written back, as penzai's pz.variable_jit "
                "writes its Variables), so every later call reads values of a finished trace; "
                "the object cannot be a static argument of that jit"
            )

    def fed(self, result: object) -> object:
        """What a loop calls next of ``result``: ``result`` itself, or its first item, of the
        object's type (``state, loss = step(state, x)``); None where neither is. A built-in
        container must also have the object's structure (optax's ``(updates, state)`` is not
        its state). Nor is an object whose static data and array shapes both differ from the
        object's: another value of its type, the output of an operation (e3nn's
        ``tensor_square`` returns an IrrepsArray of other irreps and 10 values for one of 4),
        whose compile is jit's first sight of a new type, not a loop's. A state may drift in
        one of them, a hazard of its loop: a history that grows, a static counter."""
        import jax

        cls, structure = type(self.obj), jax.tree_util.tree_structure
        for found in (result, *(result if isinstance(result, tuple | list) else ())):
            if type(found) is not cls or found is self.obj:
                continue
            if cls in (tuple, list, dict) and structure(found) != structure(self.obj):
                continue
            if structure(found) != structure(self.obj) and _reshaped(self.obj, found):
                continue
            return found
        return None

    def _set(self, field: Field, value: object, how: str | None = None) -> None:
        """Set ``field`` to ``value``; with ``how``, recorded as the next step's change."""
        self.obj = self.subject.set(self.obj, field, value)
        if how is not None:
            self.changed.append((field.path, how))

    def plan(self) -> Generator[StepName, Outcome, None]:
        """Make each step's change, yield its name, and be sent its call's outcome."""
        get = self.subject.get
        self.changed.append(("", ""))
        yield StepName.FIRST_CALL
        self.changed.append(("", ""))
        yield StepName.REPEAT_CALL
        release = len(self.played) > RELEASE_ABOVE and default_platform() == "cpu"
        rejected: set[str] = set()  # the fields whose new value the call cannot take
        # Every flag, then every number: a new value (a number's of its 0-d shape, as for an
        # array), then its own back: a number the call hashes compiles for the first, and
        # must reuse for the second.
        by_kind = sorted(self.played, key=lambda f: f.kind == "number")
        for field in (f for f in by_kind if f.kind != "array"):
            before, static = get(self.obj, field), field.kind == "static"
            self._set(field, values.played(before, field.choices, field.pick),
                      field.how + field.played)  # fmt: skip
            step = StepName.NEW_STATIC if static else StepName.SAME_SHAPE_ARRAY
            self.refusal = field.refusal
            if (yield step).rejected:
                rejected.add(field.path)
            self.refusal = ""
            self._set(field, before, field.how)
            yield StepName.SEEN_STATIC
            if release and static:  # the field's programs go; the object's own is compiled again
                clear_caches()
                block(self.call())
        # The array field played before, set back as the next step begins: to its shape, or to
        # its own values where the call cannot take new ones (rejected: with jit or without).
        restore: tuple[Field, object, bool] | None = None
        last = None
        for field in (f for f in self.played if f.kind == "array"):
            how = field.how
            if restore is not None:
                self._set(*restore[:2])
                how += f" ({restore[0].path} {_BACK[restore[2]]})"
            before = get(self.obj, field)
            same = values.new_array(before, self.rng)
            self._set(field, same, how)
            if (yield StepName.SAME_SHAPE_ARRAY).rejected:
                rejected.add(field.path)
            restore = (field, before, True) if field.path in rejected else None
            if field.fixed_shape:  # its class refuses a new shape (edit.refused)
                continue
            self._set(field, values.new_array(same, self.rng, values.new_shape(same)), field.how)
            last = yield StepName.NEW_SHAPE_ARRAY
            restore = restore or (field, same, False)
        how = self.subject.equal_how
        if restore is not None and (restore[2] or (last is not None and last.rejected)):
            self._set(*restore[:2])
            back = _BACK[True] if restore[2] else "back to its shape: the call cannot take it"
            how += f" ({restore[0].path} {back})"
        self.obj = self.subject.equal(self.obj)
        self.changed.append(("", how))
        yield StepName.EQUAL_INSTANCE
        # Other values in the fields the call took: a value it rejected was its field's outcome.
        taken = [f for f in self.played if f.path not in rejected] or self.played
        self.obj, how = self.subject.other(self.obj, taken, self.rng)
        self.changed.append(("", how))
        yield StepName.OTHER_INSTANCE
        for name in FED_BACK:  # a loop: state = step(state, x)
            if self.returned is None:
                return
            passed, self.obj, self.returned = self.obj, self.returned, None
            self.changed.append(("", RETURNED + drift(passed, self.obj)))
            yield name


def _reshaped(passed: object, returned: object) -> bool:
    """Whether an array of ``returned`` has another shape than the array at the same path of
    ``passed`` (paths in one alone aside: a state's ``None`` filled in at its first step)."""
    import jax

    def shapes(obj: object) -> dict[str, tuple[int, ...]]:
        leaves = jax.tree_util.tree_flatten_with_path(obj)[0]
        return {jax.tree_util.keystr(p): v.shape for p, v in leaves if kinds.is_array(v)}

    before, now = shapes(passed), shapes(returned)
    return any(now[path] != shape for path, shape in before.items() if path in now)


def drift(passed: object, returned: object) -> str:
    """How the types jit keys on differ from ``passed`` to ``returned`` (" (`t`: float32[]
    weak-typed → float32[])", at most two leaves), or "" where they do not. JAX's own words
    name the closest key it holds, which may be another step's."""
    import jax

    def types(obj: object) -> tuple[jax.tree_util.PyTreeDef, dict[str, str]]:
        leaves, tree = jax.tree_util.tree_flatten_with_path(obj)
        numeric = {jax.tree_util.keystr(p): v for p, v in leaves if kinds.is_array(v) or
                   kinds.is_number(v)}  # fmt: skip
        shapes = jax.eval_shape(lambda values: values, numeric)
        weak = {p: " weak-typed" if getattr(s, "weak_type", 0) else "" for p, s in shapes.items()}
        return tree, {p: f"{s.dtype}{list(s.shape)}{weak[p]}" for p, s in shapes.items()}

    try:
        (tree, before), (tree_now, now) = types(passed), types(returned)
    except Exception:  # a leaf eval_shape cannot take: nothing said, JAX's words remain
        return ""
    if tree != tree_now:
        return " (its pytree structure differs)"
    moved = [f"`{p.lstrip('.')}`: {before[p]} → {now[p]}" for p in before if before[p] != now[p]]
    return f" ({'; '.join(moved[:2])})" if moved else ""


def replay(play: Play, visit: Callable[[StepName], Outcome | None]) -> None:
    """Play every step: ``visit(name)`` makes the step's call and returns its outcome,
    or None to stop there."""
    plan = play.plan()
    with contextlib.suppress(StopIteration):
        play.step = next(plan)
        while (outcome := visit(play.step)) is not None:
            play.step = plan.send(outcome)


def attempt(play: Play) -> tuple[object, str, float]:
    """The step's call made and waited for: its result (None where it raised), the error in
    one line ("" where it did not), and its seconds."""
    with quiet_callback_errors():
        start = time.perf_counter()
        play.raised_in = ""
        try:
            result, error = block(play.call()), ""
        except Exception as exc:
            result, error = None, error_text(exc)
            play.raised_in = origin(exc)
        seconds = time.perf_counter() - start
    play.returned = play.fed(result)
    return result, error, seconds


def call_after(subject: Subject, change: str, played: list[Field]) -> Callable[[], object]:
    """The call right after the first ``change`` of the scenario, played from cold caches;
    NotImplementedError (asv: n/a) where the subject plays none, raises on it by design, or
    its audit finds that the call cannot take the change (n/a or error, with the reason)."""
    if change not in TIMED_CHANGES:
        raise JitbenchError(f"unknown change {change!r}; valid: {', '.join(TIMED_CHANGES)}")
    if change in subject.raises_on:
        raise NotImplementedError(f"{subject.name} raises on {change} by design (see its audit)")
    key = (subject.name, change, tuple(f.path for f in played))
    if key not in _judged:  # once per process: asv calls setup before every sample
        _judged[key] = _played_to(subject, change, played, judged=True)[1]
    outcome, error = _judged[key]
    if outcome.rejected:
        cause = "the call raises under jit alone" if outcome is Outcome.ERROR else "not applicable"
        raise NotImplementedError(f"{subject.name} at {change}: {cause}: {error}")
    play, _ = _played_to(subject, change, played, judged=False)
    import jax

    wait = jax.block_until_ready  # bound once: the timed call imports nothing
    return lambda: wait(play.call())


# (subject, change, played fields) -> the outcome and error of that change's call, as the
# audit judges it (call_after).
_judged: dict[tuple[str, str, tuple[str, ...]], tuple[Outcome, str]] = {}


def _played_to(
    subject: Subject, change: str, played: list[Field], judged: bool
) -> tuple[Play, tuple[Outcome, str]]:
    """The scenario played from cold caches up to the first ``change``: the play, and with
    ``judged`` that change's call made and judged (its outcome and error; else unjudged)."""
    clear_caches()
    play = Play(subject, played)
    reached: tuple[Outcome, str] | None = None

    def visit(name: StepName) -> Outcome | None:
        nonlocal reached
        play.keep()
        if name == change:
            reached = (Outcome.UNJUDGED, "")
            if judged:  # judged as the audit judges it
                with count_compiles() as stats:
                    result, error, _ = attempt(play)
                reached = play.judge(result, error, stats.traces > 0, stats.compiles > 0)
            return None
        return play.judge(*attempt(play)[:2], traced=True)[0]  # only to go on

    replay(play, visit)
    if reached is None:
        raise NotImplementedError(f"{subject.name} has no {change} change: its audit plays none")
    return play, reached
