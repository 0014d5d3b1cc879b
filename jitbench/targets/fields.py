"""The fields of any object, found by walking it, and changed the way its users change them.

A user's model keeps its state in attributes (``vars``), dataclass fields
(``eqx.Module`` and ``flax.struct`` are dataclasses), ``nnx.Variable``\\ s,
and containers of sub-objects (``layers[0].weight``). :func:`walk` names every
leaf by its path and classifies it: an *array* (a jax or NumPy array, or the
array an ``nnx.Variable`` holds) or a *static* value (bool, int, float, str,
an enum, or a tuple of those), the two kinds jit's cache treats differently.
What is neither (functions, dtypes, random-number state, private attributes)
is listed as skipped, with the reason.

:func:`set_field` makes a change the way the object's kind is changed: in
place with ``setattr`` (plain objects, ``nnx.Module``), ``set_value`` on an
``nnx.Variable``, ``dataclasses.replace`` for a frozen dataclass, ``.replace``
for a ``flax.struct`` dataclass, ``eqx.tree_at`` for an ``eqx.Module`` (and,
for an equinox static field, which ``tree_at`` cannot reach and whose
module's own ``__init__`` rules out ``dataclasses.replace``, a new module
with the field set, built the way equinox's own unflatten builds one). A
change to a frozen object returns a new root; an in-place one returns the
same object.
"""

from __future__ import annotations

import dataclasses
import enum
import fnmatch
import re
from collections.abc import Mapping, MutableMapping, MutableSequence, Sequence
from typing import Any, Literal

import numpy as np

from jitbench.targets import values

Kind = Literal["array", "static"]
Key = tuple[Literal["attr", "item"], Any]
MAX_DEPTH = 12
DEFAULT_ARRAYS = 3
EQX_STATIC = "a new module, built as equinox unflattens one"
# Callables of these packages are functions to skip, not sub-objects to walk into.
LIBRARY_PACKAGES = ("jax", "jaxlib", "equinox", "flax", "functools", "builtins")
STATIC_TYPES = (bool, int, float, str, enum.Enum, type(None))


@dataclasses.dataclass(frozen=True)
class Field:
    """One leaf of an object: where it is, what kind, and how a user changes it."""

    path: str
    keys: tuple[Key, ...]
    kind: Kind
    how: str


@dataclasses.dataclass(frozen=True)
class Skipped:
    """A part of the object the scenario does not change, and why."""

    path: str
    reason: str


@dataclasses.dataclass(frozen=True)
class Walk:
    """Every field found, those chosen to play, and what was left out (with why)."""

    fields: tuple[Field, ...]
    played: tuple[Field, ...]
    skipped: tuple[Skipped, ...]


def _is_variable(value: Any) -> bool:
    return any(
        c.__module__.startswith("flax.nnx") and c.__name__ == "Variable"
        for c in type(value).__mro__
    )


def _is_rng_state(value: Any) -> bool:
    return type(value).__module__.startswith("flax.nnx.rnglib") or type(value).__name__ in (
        "RngState",
        "RngKey",
        "RngCount",
    )


def _is_eqx_module(value: Any) -> bool:
    return any(
        c.__module__.startswith("equinox") and c.__name__ == "Module" for c in type(value).__mro__
    )


def _is_nnx_module(value: Any) -> bool:
    return any(
        c.__module__.startswith("flax.nnx") and c.__name__ == "Module" for c in type(value).__mro__
    )


def _is_flax_struct(value: Any) -> bool:
    return bool(getattr(type(value), "_flax_dataclass", False))


def _is_frozen_dataclass(value: Any) -> bool:
    params = getattr(type(value), "__dataclass_params__", None)
    return (
        dataclasses.is_dataclass(value)
        and not isinstance(value, type)
        and bool(params and params.frozen)
    )


def is_array(value: Any) -> bool:
    """A jax or NumPy array (what jit traces by shape and dtype)."""
    if isinstance(value, np.ndarray):
        return True
    return (
        type(value).__module__.startswith(("jax", "jaxlib"))
        and hasattr(value, "shape")
        and hasattr(value, "dtype")
    )


def is_static(value: Any) -> bool:
    """A value jit can only take as static: bool, number, str, enum, None, or a tuple of them."""
    if isinstance(value, STATIC_TYPES):
        return True
    return isinstance(value, tuple) and bool(value) and all(is_static(v) for v in value)


def object_kind(obj: Any) -> str:
    """What kind of object this is, in the words of its library (used to break ties)."""
    if _is_eqx_module(obj):
        return "eqx.Module"
    if any(
        c.__module__.startswith("flax.nnx") and c.__name__ == "Module" for c in type(obj).__mro__
    ):
        return "nnx.Module"
    if _is_flax_struct(obj):
        return "flax.struct dataclass"
    import jax

    registered = jax.tree_util.tree_leaves(obj, is_leaf=lambda x: x is not obj and not is_array(x))
    pytree = not (len(registered) == 1 and registered[0] is obj)
    if dataclasses.is_dataclass(obj):
        return "pytree dataclass" if pytree else "dataclass"
    return "pytree" if pytree else "plain object"


def _children(value: Any) -> list[tuple[Key, str, Any]] | None:
    """(key, path suffix, child) of a node, or None for a leaf with no fields to walk."""
    if isinstance(value, Mapping):
        return [(("item", k), f"[{k!r}]", v) for k, v in value.items()]
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [(("item", i), f"[{i}]", v) for i, v in enumerate(value)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        names = [f.name for f in dataclasses.fields(value)]
        return [(("attr", n), f".{n}", getattr(value, n)) for n in names if hasattr(value, n)]
    if isinstance(value, type):
        return None
    if hasattr(value, "__dict__"):
        return [(("attr", n), f".{n}", v) for n, v in vars(value).items()]
    slots = [n for c in type(value).__mro__ for n in getattr(c, "__slots__", ())]
    if slots and type(value).__module__.split(".")[0] not in LIBRARY_PACKAGES:
        names = [n for n in slots if n != "__weakref__" and hasattr(value, n)]
        return [(("attr", n), f".{n}", getattr(value, n)) for n in names]
    return None


def _skip_reason(name: str, value: Any) -> str | None:
    if name.startswith("_"):
        return "private attribute"
    if _is_rng_state(value):
        return "random-number state: the calls change it themselves"
    if isinstance(value, type) or type(value).__name__ == "dtype":
        return f"a type ({getattr(value, '__name__', value)}): not a value to change"
    # Modules and Variables are callable and walked into; functions (jitted ones too) are not.
    if _is_variable(value):
        return None
    if _is_function(value) or (callable(value) and _children(value) is None):
        return "a function: jit treats it as static; not a value a user changes between calls"
    if _is_library_internal(value):
        return f"{type(value).__module__}.{type(value).__name__}: the library's own bookkeeping"
    return None


def _is_library_internal(value: Any) -> bool:
    """An object of JAX's or a library's own that is no model part (nnx's GraphDef, State)."""
    package = type(value).__module__.split(".")[0]
    if package not in LIBRARY_PACKAGES or package in ("builtins", "functools"):
        return False
    part = _is_eqx_module(value) or _is_nnx_module(value) or _is_variable(value)
    return not (part or is_array(value))


def _is_function(value: Any) -> bool:
    """A function, or a callable of JAX's or a library's own (jit wrappers, custom_jvp)."""
    import functools
    import types

    kinds = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)
    if isinstance(value, kinds):
        return True
    package = type(value).__module__.split(".")[0]
    module = _is_eqx_module(value) or _is_nnx_module(value)
    return callable(value) and not module and package in LIBRARY_PACKAGES


def _numeric(dtype: Any) -> bool:
    import jax.numpy as jnp

    return bool(jnp.issubdtype(dtype, jnp.number))


def _how(owner: Any, kind: Kind, leaf: Any, key: Key) -> str:
    if _is_variable(leaf):
        return "Variable.set_value"
    if key[0] == "item":
        return (
            "item assignment"
            if isinstance(owner, MutableSequence | MutableMapping)
            else "a new tuple"
        )
    if _is_eqx_module(owner):
        static = any(
            f.name == key[1] and f.metadata.get("static") for f in dataclasses.fields(owner)
        )
        return EQX_STATIC if static else "eqx.tree_at"
    if _is_flax_struct(owner):
        return ".replace"
    if _is_frozen_dataclass(owner):
        return "dataclasses.replace"
    return "setattr"


def walk(obj: Any) -> tuple[list[Field], list[Skipped]]:
    """Every array and static leaf of ``obj`` by path, and what was skipped (depth first)."""
    fields: list[Field] = []
    skipped: list[Skipped] = []
    seen: set[int] = set()
    leaves: dict[int, str] = {}  # id of a Variable or array -> the path it was found at

    def visit(node: Any, keys: tuple[Key, ...], path: str) -> None:
        if id(node) in seen or len(keys) > MAX_DEPTH:
            return
        seen.add(id(node))
        for key, suffix, child in _children(node) or []:
            where = (path + suffix).lstrip(".")
            reason = _skip_reason(str(key[1]) if key[0] == "attr" else "", child)
            if reason:
                skipped.append(Skipped(where, reason))
                continue
            if (_is_variable(child) or is_array(child)) and id(child) in leaves:
                skipped.append(Skipped(where, f"the same object as {leaves[id(child)]}"))
                continue
            leaves[id(child)] = where
            leaf = (
                child.get_value() if _is_variable(child) and hasattr(child, "get_value") else child
            )
            if _is_variable(child) and not hasattr(child, "get_value"):
                leaf = child.value
            kind: Kind | None = "array" if is_array(leaf) else "static" if is_static(leaf) else None
            if kind is not None:
                if kind == "array" and not _numeric(leaf.dtype):
                    skipped.append(
                        Skipped(where, f"an array of {leaf.dtype}: no new values to make")
                    )
                elif kind == "static" and values.new_value(leaf) is None:
                    skipped.append(Skipped(where, f"{leaf!r}: no other value of its type to try"))
                else:
                    fields.append(Field(where, (*keys, key), kind, _how(node, kind, child, key)))
            elif _children(child) is not None:
                visit(child, (*keys, key), where)
            else:
                skipped.append(
                    Skipped(where, f"a {type(child).__name__}: neither array nor static")
                )

    visit(obj, (), "")
    return fields, skipped


def choose(
    fields: Sequence[Field], pattern: str | None = None, arrays: int = DEFAULT_ARRAYS
) -> tuple[list[Field], list[Skipped]]:
    """The fields to play, and the others as skipped.

    With ``pattern``: every field whose path starts with it (``layers[0].``), matches it
    as a glob (``*.weight``) or as a regular expression searched in it (``^(depth|scan)$``);
    by default every static field and the first ``arrays`` array fields.
    """
    chosen, left = [], []
    if pattern is not None:
        try:
            regex: re.Pattern[str] | None = re.compile(pattern)
        except re.error:
            regex = None
        for f in fields:
            hit = f.path.startswith(pattern) or fnmatch.fnmatchcase(f.path, pattern)
            hit = hit or bool(regex and regex.search(f.path))
            (chosen if hit else left).append(f)
        return chosen, [Skipped(f.path, f"not matched by --fields {pattern!r}") for f in left]
    n = 0
    for f in fields:
        if f.kind == "array":
            n += 1
            if n > arrays:
                left.append(f)
                continue
        chosen.append(f)
    reason = f"past the first {arrays} array fields (--fields PATTERN plays others)"
    return chosen, [Skipped(f.path, reason) for f in left]


def _get(node: Any, key: Key) -> Any:
    return getattr(node, key[1]) if key[0] == "attr" else node[key[1]]


def get_field(obj: Any, field: Field) -> Any:
    """The field's current value (the array inside a Variable)."""
    node = obj
    for key in field.keys:
        node = _get(node, key)
    if _is_variable(node):
        return node.get_value() if hasattr(node, "get_value") else node.value
    return node


def _put(node: Any, key: Key, value: Any) -> Any:
    """``node`` with ``key`` set to ``value``: the same node changed in place, or a new one."""
    kind, name = key
    if kind == "item":
        if isinstance(node, MutableSequence | MutableMapping):
            node[name] = value
            return node
        items = list(node)
        items[name] = value
        if hasattr(node, "_fields"):  # a named tuple
            return type(node)(*items)
        return tuple(items) if isinstance(node, tuple) else type(node)(items)
    if _is_eqx_module(node):
        import equinox as eqx

        try:
            return eqx.tree_at(lambda n: getattr(n, name), node, value)
        except (TypeError, ValueError):
            # A static field: built as equinox's own unflatten builds a module. copy.copy
            # would go through Module.__new__, which records the copy as initialising
            # in a set that then keeps it alive for good.
            new = object.__new__(type(node))
            for key, item in vars(node).items():
                object.__setattr__(new, key, item)
            object.__setattr__(new, name, value)
            return new
    if _is_flax_struct(node):
        return node.replace(**{name: value})
    if _is_frozen_dataclass(node):
        return dataclasses.replace(node, **{name: value})
    setattr(node, name, value)
    return node


def set_field(obj: Any, field: Field, value: Any) -> Any:
    """Set the field to ``value`` as the object's users do; returns the (possibly new) root."""

    def set_in(node: Any, keys: tuple[Key, ...]) -> Any:
        child = _get(node, keys[0])
        if len(keys) == 1:
            if _is_variable(child):
                if hasattr(child, "set_value"):
                    child.set_value(value)
                else:
                    child.value = value
                return node
            return _put(node, keys[0], value)
        new_child = set_in(child, keys[1:])
        return node if new_child is child else _put(node, keys[0], new_child)

    return set_in(obj, field.keys)
