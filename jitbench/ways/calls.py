"""The user's call and object as the ways read them: the call as written, its raw function
under its jit wrappers (:func:`unjitted`), whether it jits anew at every call and what it
writes into the object; the object's own attributes, arrays (traced) and the rest (static).
"""

from __future__ import annotations

import dataclasses
import inspect
import types
from collections.abc import Callable

from jitbench.compiles import block, count_compiles
from jitbench.errors import JitbenchError
from jitbench.targets import Target, kinds
from jitbench.targets import fields as fieldlib
from jitbench.targets.snapshot import snapshot

# A user's call without jit, taking the object first (a method, or a function of the object).
Raw = Callable[..., object]


@dataclasses.dataclass(frozen=True)
class HeldCall:
    """A call the object holds in a field (a NamedTuple's function, as haiku's
    ``Transformed.apply``; an instance attribute): ``obj.name(*inputs)``, the object itself
    not passed. ``unjitted``: the held function's jit wrapper taken off, as :func:`unjitted`
    takes a method's."""

    name: str
    unjitted: bool = False

    def __call__(self, obj: object, *args: object, **kwargs: object) -> object:
        function = getattr(obj, self.name)
        return (_unwrapped(function) if self.unjitted else function)(*args, **kwargs)


def written(target: Target) -> Raw:
    """The target's call as written, taking the object first: the method as its class holds
    it (its jit wrapper included), a function the object holds in a field (:class:`HeldCall`),
    or the function called as ``call(obj, *inputs)``."""
    call = target.call
    if not isinstance(call, str):
        return call
    found = inspect.getattr_static(type(target.obj), call, None)
    if isinstance(found, staticmethod | classmethod):
        raise JitbenchError(
            f"call {call!r} of target {target.name!r} is no method of its class "
            f"{type(target.obj).__name__}: give --call a function taking the object"
        )
    if found is None or not callable(found):  # a field's getter (a NamedTuple's), or none
        return HeldCall(call)
    return found


def held(target: Target) -> bool:
    """Whether the target's raw call is a function its object holds (:class:`HeldCall`), not
    one of its own methods."""
    try:
        return isinstance(unjitted(target), HeldCall)
    except JitbenchError:
        return False


def held_method(target: Target, raw: Raw) -> bool:
    """Whether ``raw`` (:func:`unjitted`) is the object's own method under a jit the object
    holds in a field of another name (``self.jitted = jax.jit(self.calc)``)."""
    try:
        return isinstance(written(target), HeldCall) and not isinstance(raw, HeldCall)
    except JitbenchError:
        return False


def unjitted(target: Target) -> Raw:
    """The raw function under the target's call: :func:`written` with its jit wrappers taken
    off, outermost first (each keeps what it jits as ``__wrapped__``). A wrapper that is no
    jit stays, with what it wraps: it is part of what the call computes (quax's ``quaxify``,
    numpyro's ``@validate_sample``, a user's own decorator)."""
    call = written(target)
    if not isinstance(call, HeldCall):
        return _unwrapped(call)
    inner = _unwrapped(getattr(target.obj, call.name))
    if isinstance(inner, types.MethodType) and inner.__self__ is target.obj:
        return inner.__func__  # its own method, jitted in __init__: self.f = jax.jit(self.calc)
    return dataclasses.replace(call, unjitted=True)  # what the object holds, read at every call


def jit_layers(call: Raw) -> int:
    """How many jit wrappers :func:`unjitted` takes off ``call``: the ``.__wrapped__`` that
    reach its raw function from it."""
    layers = 0
    while is_jit(call):
        call, layers = call.__wrapped__, layers + 1
    return layers


def _unwrapped(call: Raw) -> Raw:
    while is_jit(call):
        call = call.__wrapped__
    return call


# The jit wrappers written in Python, by where their wrapping function's code lives (its
# file's end, its qualified name): functools.wraps gives it the user's function's names.
PYTHON_JITS = (("penzai/core/variables.py", "variable_jit.<locals>.outer_fun"),)


def is_jit(call: object) -> bool:
    """Whether ``call`` (or the function of a bound method) is a jit's wrapper around the
    function it keeps as ``__wrapped__``: one that lowers it ahead of time (``jax.jit``,
    ``eqx.filter_jit``, ``nnx.jit``: each has ``.lower``) or a jit written in Python
    (:data:`PYTHON_JITS`)."""
    function = call.__func__ if isinstance(call, types.MethodType) else call
    if getattr(function, "__wrapped__", None) is None:
        return False
    if not isinstance(function, types.FunctionType):
        return callable(getattr(function, "lower", None))
    code = function.__code__
    where = (code.co_filename.replace("\\", "/"), getattr(code, "co_qualname", ""))
    return any(where[0].endswith(file) and where[1] == name for file, name in PYTHON_JITS)


# --- A plain object's attributes: arrays as children, the rest as auxiliary data -------------


def attributes(obj: object) -> list[tuple[str, object]] | None:
    """The object's own attributes (``__dict__`` or slots), or None for no class instance."""
    found = fieldlib.children(obj)
    if found is None or not all(key[0] == "attr" for key, _, _ in found):
        return None
    return [(key[1], value) for key, _, value in found]


def _holds_array(value: object) -> bool:
    import jax

    return any(kinds.is_array(leaf) for leaf in jax.tree_util.tree_leaves(value))


def split_attributes(obj: object) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The attributes holding arrays (traced: a pytree's children) and the rest (static), a
    jit of the object's own method left out (the way replaces it: docs/design.md)."""
    found = [(n, v) for n, v in attributes(obj) or [] if not _own_jit(obj, v)]
    children = tuple(n for n, v in found if _holds_array(v))
    return children, tuple(n for n, _ in found if n not in children)


def _own_jit(obj: object, value: object) -> bool:
    wrapped = getattr(value, "__wrapped__", None)
    return kinds.is_jitted(value) and getattr(wrapped, "__self__", None) is obj


def jits_at_every_call(target: Target) -> bool:
    """Whether the call as written compiles again when nothing changed: a jit made inside it
    (``jax.jit(env.step)(state, action)``), a new program at every call."""
    call = target.function()
    try:
        block(call())
        with count_compiles() as again:
            block(call())
    except Exception:  # the audit of the call as written says why
        return False
    return again.compiles > 0


def writes(target: Target, raw: Raw) -> str:
    """What the raw call writes into the object, called without jit on a copy: the pytree
    leaves and attributes it replaces, named (``count``, ``bn.mean`` and 3 more), or ""
    (it writes nothing, or the copy or the call fails: the audit says why)."""
    import jax

    def state(obj: object) -> dict[str, object]:
        found = {}
        for path, leaf in jax.tree_util.tree_flatten_with_path(obj)[0]:
            name = jax.tree_util.keystr(path).lstrip(".").removesuffix(".value")
            if kinds.is_penzai_variable(leaf):  # no pytree: its value is set in place
                for inner, value in jax.tree_util.tree_flatten_with_path(leaf.value)[0]:
                    found[f"{name}.value{jax.tree_util.keystr(inner)}"] = value
            elif leaf is not obj:
                found[name] = leaf
        for name, value in attributes(obj) or []:
            if not kinds.is_library_internal(value):
                found.setdefault(name, value)
        return found

    try:
        copy = snapshot(target.obj)
        before = state(copy)
        with jax.disable_jit():
            block(raw(copy, *target.inputs, **target.kwargs))
        after = state(copy)
    except Exception:
        return ""
    changed = [f"`{p}`" for p, value in after.items() if before.get(p, value) is not value]
    changed += [f"`{p}`" for p in after if p not in before]
    return fieldlib.named(changed, 2)
