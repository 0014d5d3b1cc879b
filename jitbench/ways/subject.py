"""What is measured: a subject, the one model of a built-in strategy (:class:`Generated`) and
of a user's object (:class:`Walked`): how it is built, called and changed, and its oracle
(see docs/design.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from jitbench.compiles import block, without_jit
from jitbench.devices import Placement, resolve
from jitbench.errors import JitbenchError, error_text
from jitbench.options import DEFAULT_SIZE
from jitbench.strategies.codegen import (
    DEFAULT_SHAPE,
    Shape,
    arrays_of,
    fields_of,
    generated,
    statics_of,
)  # fmt: skip
from jitbench.strategies.computation import reference_calc
from jitbench.strategies.instances import DEFAULT_STATIC, check_size, make_instance
from jitbench.targets import Target, check_call, edit, values
from jitbench.targets import fields as fieldlib
from jitbench.targets.snapshot import snapshot
from jitbench.vocabulary import Outcome
from jitbench.ways import calls
from jitbench.ways.agreement import leaves_off
from jitbench.ways.builders import as_written
from jitbench.ways.catalog import WRITTEN, way_of
from jitbench.ways.record import Way
from jitbench.ways.registry import Strategy, get_strategy

if TYPE_CHECKING:
    import jax

# How an error of the plain call ends where jax.disable_jit() let the call through.
LETS_THROUGH = " (outside jax.disable_jit(), which lets it through)"
# A built-in's float32 results against its float64 NumPy reference (why: docs/design.md).
RTOL = ATOL = 1e-4


# The fields the scenario may change, and those it leaves out (why).
Fields = tuple[list[fieldlib.Field], list[fieldlib.Skipped]]
# What a user's call starts from, copied before it (:meth:`Walked.before`): the object, the
# call's positional arguments, its keyword arguments.
Before = tuple[object, tuple[object, ...], dict[str, object]]


@dataclasses.dataclass
class Judging:
    """The oracle's memory over one run (docs/own-objects.md): the leaves its first call
    differs on, by how much (None: not judged yet); its last result; whether the step changed
    a field and jit reused a program for it (traced nothing)."""

    noise: dict[str, float] | None = None
    last: object = None
    reused: bool = False
    previous: object = None  # the jitted call's last result
    compiled: bool = False  # whether jit compiled for this step's call (it saw every value)
    # Why no result can be compared (the first call differs on every leaf), once known.
    unjudgeable: str = ""


def call_args(target: Target) -> list[str]:
    """The call's arguments as :meth:`Subject.code` names them: ``x0, key=k0``."""
    args = [f"x{i}" for i in range(len(target.inputs))]
    return args + [f"{key}=k{i}" for i, key in enumerate(target.kwargs)]


class Subject(Protocol):
    """What the audit, the timings and advise measure: a target (object, call, inputs,
    factory), its device and size, how a new, an equal and an other instance are made, and how
    a call's result is judged. :class:`Generated` and :class:`Walked` inherit the methods
    given here; ``new``, ``equal``, ``other`` and ``judge`` each defines."""

    target: Target
    name: str
    device: str
    size: int
    raises_on: tuple[str, ...] = ()
    equal_how = "the constructor, given the current field values"
    filtered = False  # the call hashes every non-array leaf (eqx.filter_jit)

    def new(self, seed: int = 0) -> object:
        """A new instance, as its user builds one (``seed``: other values, where the subject
        makes its own; a user's factory builds what it builds)."""
        ...

    def call(self, obj: object) -> Callable[[], object]:
        """The subject's call on ``obj``, as a function of no arguments."""
        return self.target.function_of(obj)

    def code(self, obj: object) -> tuple[str, dict[str, object]]:
        """The call on ``obj`` as one expression and the names it reads, as a user writes it
        (``obj.calc(x0)``, ``function(obj, x0, key=k0)``)."""
        target = self.target
        names: dict[str, object] = {
            "obj": obj,
            **{f"x{i}": value for i, value in enumerate(target.inputs)},
        }
        names.update({f"k{i}": value for i, value in enumerate(target.kwargs.values())})
        args = call_args(target)
        if isinstance(target.call, str):
            return f"obj.{target.call}({', '.join(args)})", names
        return f"function({', '.join(['obj', *args])})", {**names, "function": target.call}

    def fields(self, obj: object) -> Fields:
        """The fields of ``obj`` the scenario may change, and what it leaves out (why): the
        walk of the object as its call sees it (:func:`jitbench.targets.fields.walk`)."""
        return fieldlib.walk(obj, self.filtered)

    def playable(self, obj: object, chosen: list[fieldlib.Field]) -> Fields:
        """The ``chosen`` fields whose changes ``obj``'s class takes, and the others (why)."""
        return chosen, []

    def get(self, obj: object, field: fieldlib.Field) -> object:
        return edit.get_field(obj, field)

    def set(self, obj: object, field: fieldlib.Field, value: object) -> object:
        """``obj`` with ``field`` set to ``value`` as its users set it (a new root, or ``obj``)."""
        return edit.set_field(obj, field, value)

    def equal(self, obj: object) -> object:
        """A new instance with ``obj``'s field values."""
        ...

    def other(
        self, obj: object, played: list[fieldlib.Field], rng: np.random.Generator
    ) -> tuple[object, str]:
        """A new instance with other values, and how it was made."""
        ...

    def before(self, obj: object) -> object:
        """What :meth:`judge` needs of ``obj`` as it is before a call: ``obj`` itself, for a
        call that changes nothing of it."""
        return obj

    def judge(
        self, before: object, result: object, error: str, judging: Judging
    ) -> tuple[Outcome, str]:
        """The outcome of a call that returned ``result`` or raised ``error``, on what
        :meth:`before` kept, over the run so far (:class:`Judging`)."""
        ...


class Generated(Subject):
    """A built-in strategy's generated class, judged against the NumPy reference."""

    def __init__(
        self, strategy: Strategy, placement: Placement, size: int = DEFAULT_SIZE,
        shape: Shape | None = None, *, probe: bool = False,
    ) -> None:  # fmt: skip
        strategy.check_available()
        self.strategy, self.placement, self.probe = strategy, placement, probe
        self.size, self.shape = check_size(size), shape or DEFAULT_SHAPE
        self.name, self.device, self.raises_on = strategy.name, placement.spec, strategy.raises_on
        obj, y = self.instance()
        if strategy.function:
            free_arguments(strategy, obj)  # NotImplementedError (n/a) on a nested object
        call = functools.partial(_free_call, strategy) if strategy.function else "calc"
        self.target = Target(obj, (y,), call=call, name=strategy.name, factory=self.new)
        self.filtered = filters(self.target)

    def instance(self, seed: int = 0, statics: int = DEFAULT_STATIC) -> tuple[object, jax.Array]:
        """A generated instance and its ``y`` (see :mod:`jitbench.strategies.instances`)."""
        return make_instance(
            self.strategy,
            self.size,
            self.placement,
            self.shape,
            probe=self.probe,
            seed=seed,
            statics=statics,
        )

    def new(self, seed: int = 0) -> object:
        return self.instance(seed=seed)[0]

    def fields(self, obj: object) -> Fields:
        """The strategy's own fields (``s0``, ``a0``...), walked and changed as a user's
        object is: the same paths, roles and changes a target of this class gets."""
        owner = f"{self.strategy.holder}." if self.strategy.holder else ""
        declared = {owner + name for name in self.shape.static_fields + self.shape.array_fields}
        return [f for f in super().fields(obj)[0] if f.path in declared], []

    def equal(self, obj: object) -> object:
        return type(obj)(**fields_of(obj))

    def other(
        self, obj: object, played: list[fieldlib.Field], rng: np.random.Generator
    ) -> tuple[object, str]:
        flag = values.new_value(DEFAULT_STATIC)
        other = self.instance(seed=2, statics=flag)[0]
        return other, f"the constructor, given new arrays and every flag {flag}"

    def judge(
        self, obj: object, result: object, error: str, judging: Judging
    ) -> tuple[Outcome, str]:
        if error:
            return Outcome.ERROR, error
        (y,) = self.target.inputs
        expected = reference_calc(arrays_of(obj), statics_of(obj), y, self.shape.n_ops)
        got = np.asarray(result)
        same = got.shape == expected.shape and np.allclose(got, expected, rtol=RTOL, atol=ATOL)
        return (Outcome.CORRECT if same else Outcome.STALE), ""


def filters(target: Target) -> bool:
    """Whether the target's call is ``eqx.filter_jit``'s wrapper, which hashes every non-array
    leaf of its arguments as static (plain ``jax.jit`` traces Python numbers as leaves)."""
    call = target.call
    if isinstance(call, str):
        call = inspect.getattr_static(type(target.obj), call, None)
    while isinstance(call, functools.partial | types.MethodType):
        call = call.func if isinstance(call, functools.partial) else call.__func__
    kind = type(call)
    return kind.__module__.startswith("equinox") and "Jit" in kind.__name__


def free_arguments(
    strategy: Strategy, obj: object
) -> tuple[Callable[..., object], dict[str, object]]:
    """A function strategy's function (``strategy.function`` of ``obj``'s module) and the
    fields of ``obj`` it takes, by its parameters' names, the last (``y``) left out."""
    function = getattr(sys.modules[type(obj).__module__], strategy.function)
    names = list(inspect.signature(function).parameters)[:-1]
    missing = [name for name in names if not hasattr(obj, name)]
    if missing:
        raise NotImplementedError(
            f"{strategy.name} calls {strategy.function}({', '.join(names)}, y) on a flat "
            f"object's fields; {type(obj).__name__} has no {', '.join(missing)}"
        )
    return function, {name: getattr(obj, name) for name in names}


def _free_call(strategy: Strategy, obj: object, *inputs: object) -> object:
    """The call of a function strategy: its function on ``obj``'s fields and the inputs."""
    function, fields = free_arguments(strategy, obj)
    return function(*fields.values(), *inputs)


class Walked(Subject):
    """A user's object: its factory, its walked fields, the ``disable_jit`` oracle."""

    def __init__(self, target: Target) -> None:
        check_call(target)
        self.target, self.name = target, target.name
        self.pristine = None if target.factory is not None else self._copy(target.obj)
        # Where a new instance comes from, in the steps' words.
        self.origin = "the factory's" if target.factory is not None else "a copy's"
        self.equal_how = f"{self.origin}, traced values copied"
        self.filtered = filters(target)
        self.device, self.size = device_and_size(target.obj, self.fields(target.obj)[0])

    def _copy(self, obj: object) -> object:
        """A deep copy sharing the object's functions (a copied one would be a new static)."""
        try:
            return snapshot(obj)
        except Exception as exc:
            raise JitbenchError(
                f"target {self.name!r} has no factory and cannot be copied "
                f"({error_text(exc)}); give a factory that builds it"
            ) from None

    def new(self, seed: int = 0) -> object:
        """The factory's new object, else a copy of the object as handed over (which stays)."""
        if self.target.factory is not None:
            return self.target.new_instance()
        return self._copy(self.pristine)

    def playable(self, obj: object, chosen: list[fieldlib.Field]) -> Fields:
        # Tried on the chosen fields only: each try builds a new value (memory, on a deep model).
        return edit.refused(obj, chosen, self.differs)

    def differs(self, obj: object) -> edit.Differs:
        """Whether the oracle on a changed object returns other than on ``obj`` as it is now
        (None: it raises on the changed one); raises where it raises on ``obj``."""
        base = self.oracle(self.before(obj))

        def differs(changed: object) -> bool | None:
            try:
                return bool(leaves_off(self.oracle(self.before(changed)), base))
            except Exception:
                return None

        return differs

    def oracle(self, before: Before) -> object:
        """What :meth:`judge` compares a result with: the call without jit on what
        :meth:`before` kept (raises where it raises)."""
        import jax

        with jax.disable_jit():
            return block(self.unjitted(*before))

    def equal(self, obj: object) -> object:
        """The factory's new object with ``obj``'s traced values (its statics the factory's)."""
        equal = self.new()
        for field in self.fields(obj)[0]:
            if field.kind != "static":
                equal = edit.set_field(equal, field, edit.get_field(obj, field))
        return equal

    def other(
        self, obj: object, played: list[fieldlib.Field], rng: np.random.Generator
    ) -> tuple[object, str]:
        """The factory's new object with new values in its played array fields; without any,
        every played field given a value the scenario has not set (a bool: its other one);
        with no field played, the factory's object as it builds it, and the step says so."""
        other = self.new()
        arrays = [f for f in played if f.kind == "array"]
        changed = arrays or played
        if not changed:
            return other, f"{self.origin}, as built: no field is played, so no value differs"
        for field in changed:
            like = edit.get_field(other, field)
            new = (values.new_array(like, rng) if arrays
                   else values.unseen(like, field.choices, field.pick))  # fmt: skip
            other = edit.set_field(other, field, new)
        paths = ", ".join(f.path for f in changed) if len(changed) < 3 else f"{len(changed)} fields"
        return other, f"{self.origin}, new values in {paths}"

    def before(self, obj: object) -> Before:
        """The object and the call's arguments, copied together: a call that changes them (a
        training step's weights and optimizer, a dropout's key) leaves the oracle the state
        the call started from. Uncopied where they cannot be copied."""
        target = self.target
        try:
            return snapshot((obj, target.inputs, target.kwargs))
        except Exception:
            return obj, target.inputs, target.kwargs

    def unjitted(
        self, obj: object, inputs: tuple[object, ...], kwargs: dict[str, object]
    ) -> object:
        """The call's result, made under ``jax.disable_jit()`` by :meth:`judge`."""
        return dataclasses.replace(self.target, obj=obj, inputs=inputs, kwargs=kwargs).function()()

    def raises_plain(self, before: Before) -> str:
        """What the plain call raises, run as it is outside ``jax.disable_jit()``, or "" where
        it runs: under ``disable_jit`` lax's conds and loops run as Python and skip the checks
        their tracing makes, which the call makes with or without the user's jit (a cond's
        branch a new shape no longer matches; dynamax's own jitted filter refusing a scan
        carry of a new shape). The plain call is the call as written with the user's jit
        taken off: its jit wrapper where one comes off (the raw call, a library's jits inside
        it kept); where none does (a jit made inside the call, ``jax.jit(env.step)(state,
        action)``, or a call that jits nothing), the call as written with every jit called as
        Python and lax's control flow traced (:func:`jitbench.compiles.without_jit`); "" where
        JAX's control flow cannot be reached."""
        try:
            raw = calls.unjitted(self.target)
            inside = raw is calls.written(self.target)  # no jit wrapper comes off
            with without_jit() if inside else contextlib.nullcontext(True) as plain:
                if not plain:
                    return ""
                block(raw(before[0], *before[1], **before[2]))
        except JitbenchError:
            return ""
        except Exception as exc:
            return error_text(exc) + LETS_THROUGH
        return ""

    def judge(
        self, before: Before, result: object, error: str, judging: Judging
    ) -> tuple[Outcome, str]:
        """Against the call without jit on the state the call started from (it raises: n/a),
        beyond the noise its first call sets, by the rules of docs/own-objects.md: stale only
        where jit reused a program and returned the result from before the change."""
        import jax

        try:
            expected = self.oracle(before)
        except Exception as exc:
            return Outcome.NOT_APPLICABLE, error_text(exc)
        if error:
            plain = self.raises_plain(before)
            return (Outcome.NOT_APPLICABLE, plain) if plain else (Outcome.ERROR, error)
        off = leaves_off(result, expected)
        last, judging.last = judging.last, expected
        previous, judging.previous = judging.previous, result
        if judging.noise is None:  # the first call, where nothing can be stale yet
            if isinstance(off, str):
                return Outcome.STALE, off
            everywhere = len(off) == len(jax.tree_util.tree_leaves(expected))
            judging.noise = off
            if off and everywhere:  # in words: the first three
                shown = ", ".join(f"{k} by up to {v:.3g}" for k, v in list(off.items())[:3])
                judging.unjudgeable = (
                    "no result is compared: at the first call, under jit and without it, it "
                    f"differs on every leaf ({shown}{', ...' if len(off) > 3 else ''}): a call "
                    "that samples, or computes another result under jit; compiles, reuse and "
                    "leaks are judged"
                )
            return Outcome.CORRECT, ""
        if judging.unjudgeable:
            return Outcome.UNJUDGED, judging.unjudgeable
        beyond = off if isinstance(off, str) else off.keys() - judging.noise.keys()
        # Compiled afresh: what differs is rounding, not an old value.
        if beyond and judging.compiled:
            return Outcome.CORRECT, ""
        if beyond:
            if _matches(result, previous, judging.noise) or _matches(result, last, judging.noise):
                return Outcome.STALE, off if isinstance(off, str) else ""
            return Outcome.UNJUDGED, (
                "jit reused a program and its result differs from the call without jit, yet "
                "is not the result from before the change either (a call that samples, or "
                "rounds apart): not judged"
            )
        unchanged = judging.reused and last is not None and leaves_off(expected, last) == {}
        return (Outcome.UNJUDGED if unchanged else Outcome.CORRECT), ""


def _matches(result: object, before: object, noise: dict[str, float]) -> bool:
    """Whether ``result`` is ``before`` (a result from before the change), up to the noise."""
    if before is None:
        return False
    off = leaves_off(result, before)
    return not isinstance(off, str) and not off.keys() - noise.keys()


def device_and_size(obj: object, found: list[fieldlib.Field]) -> tuple[str, int]:
    """The platform and element count of the object's first array field (else JAX's default)."""
    import jax

    for field in found:
        if field.kind == "array":
            leaf = edit.get_field(obj, field)
            devices = getattr(leaf, "devices", None)
            platform = next(iter(devices())).platform if devices else "cpu"
            return platform, int(np.prod(leaf.shape))
    return jax.default_backend(), 0


def subject_of(target: Target) -> Subject:
    """The subject of ``target``: the strategy of a generated instance called as the suite
    calls it (``calc(y)``), else the object walked."""
    made = generated(target.obj)
    if made is None or target.call != "calc" or len(target.inputs) != 1:
        return Walked(target)
    name, shape = made
    (y,) = target.inputs
    device = next(iter(y.devices())).platform
    spec = f"{device}-sharded" if len(y.devices()) > 1 else device
    subject = Generated(get_strategy(name), resolve(spec), int(y.shape[-1]), shape)
    subject.name = target.name
    return subject


class WaySubject(Walked):
    """The target's object called the way ``way`` jits it, judged against the raw method under
    ``jax.disable_jit()``; JitbenchError where the way cannot be built for the object.
    ``checked`` False: built without the check that calls the object (whether the call writes
    into it), in a process rebuilding a way already built elsewhere, whose first call must be
    the first the object gets."""

    def __init__(self, target: Target, way: Way, *, checked: bool = True) -> None:
        self.way, self.raw = way, calls.unjitted(target)
        if (reason := way.applies(target.obj)) is not None:  # the call as written always does
            raise JitbenchError(reason)
        self._convert = way.convert(target.obj) if way.convert else None
        self._bind = way.build(target.obj, self.raw) if way.build else None
        if self._bind is not None and as_written(target, self._bind):
            raise JitbenchError(f"the call as written already jits with {way.label}")
        if checked and way.copies and (written := calls.writes(target, self.raw)):
            raise JitbenchError(
                f"the call writes into the object without jit ({written}): {way.label} calls "
                "a copy of it (flattened and rebuilt), so what the call writes is lost"
            )
        super().__init__(target)
        self.name = f"{target.name} ({way.label})"
        # Each way sees the fields as its own call does (docs/design.md, advise's ways).
        if way is not WRITTEN:
            self.filtered = way.filters

    def new(self, seed: int = 0) -> object:
        return self.converted(super().new(seed))

    def converted(self, made: object) -> object:
        """``made``, a new object of the target's, as this way calls it."""
        return made if self._convert is None else self._convert(made)

    def call(self, obj: object) -> Callable[[], object]:
        if self._bind is None:
            return super().call(obj)
        function, lead = self._bind(obj)
        inputs, kwargs = self.target.inputs, self.target.kwargs
        # The call holds the object, as the user's code does (a hoisted jit reads it weakly).
        return lambda _held=obj: function(*lead, *inputs, **kwargs)

    def code(self, obj: object) -> tuple[str, dict[str, object]]:
        if self._bind is None:
            return super().code(obj)
        function, lead = self._bind(obj)
        _, names = super().code(obj)  # obj among them: held, as above
        names.update({f"a{i}": value for i, value in enumerate(lead)}, function=function)
        args = [f"a{i}" for i in range(len(lead))] + call_args(self.target)
        return f"function({', '.join(args)})", names

    def unjitted(
        self, obj: object, inputs: tuple[object, ...], kwargs: dict[str, object]
    ) -> object:
        """The raw method's result (the oracle's call)."""
        return self.raw(obj, *inputs, **kwargs)


def way_subject(target: Target, name: str, *, checked: bool = True) -> WaySubject:
    """The subject of the way called ``name`` on ``target`` (:func:`way_of`; ``checked``: as
    :class:`WaySubject` takes it)."""
    return WaySubject(target, way_of(target, name), checked=checked)
