"""A field read and set the way its object's users do it (``setattr``, ``set_value``,
``.replace``, ``eqx.tree_at``...): a change to a frozen object returns a new root, an in-place
one the same object (see docs/design.md).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
from collections.abc import Mapping, MutableMapping, MutableSequence

import numpy as np

from jitbench.errors import error_text
from jitbench.targets import kinds, values
from jitbench.targets.fields import IN_PLACE, Field, Key, Skipped, how


def _get(node: object, key: Key) -> object:
    return getattr(node, key[1]) if key[0] == "attr" else node[key[1]]


def get_field(obj: object, field: Field) -> object:
    """The field's current value (the array inside a Variable)."""
    node = functools.reduce(_get, field.keys, obj)
    return kinds.variable_value(node) if kinds.is_variable(node) else node


def _put(node: object, key: Key, value: object) -> object:
    """``node`` with ``key`` set to ``value``: the same node changed in place, or a new one."""
    kind, name = key
    if kinds.is_named_tuple(node):
        field = name if kind == "attr" else type(node)._fields[name]
        return node._replace(**{field: value})
    if kind == "item":
        if isinstance(node, MutableSequence | MutableMapping):
            node[name] = value
            return node
        if isinstance(node, Mapping):
            return type(node)({**node, name: value})
        items = list(node)
        items[name] = value
        return tuple(items) if isinstance(node, tuple) else type(node)(items)
    if kinds.is_eqx_module(node):
        import equinox as eqx

        try:
            return eqx.tree_at(lambda n: getattr(n, name), node, value)
        except (TypeError, ValueError):
            # A static field: built as equinox's own unflatten builds a module (copy.copy
            # would keep the copy alive for good: docs/design.md).
            fields = {**vars(node), name: value}
            return without_init(type(node), tuple(fields), tuple(fields.values()))
    if kinds.has_replace(node):
        return node.replace(**{name: value})
    if kinds.is_linen_module(node):
        return node.clone(**{name: value})
    if kinds.is_frozen_dataclass(node):
        return dataclasses.replace(node, **{name: value})
    if kinds.is_frozen_attrs(node):
        import attrs

        return attrs.evolve(node, **{name: value})
    setattr(node, name, value)
    return node


def without_init(cls: type, names: tuple[str, ...], values: tuple[object, ...]) -> object:
    """An instance of ``cls`` with these attribute values, its ``__init__`` not run."""
    obj = object.__new__(cls)
    for name, value in zip(names, values, strict=True):
        object.__setattr__(obj, name, value)
    return obj


def set_field(obj: object, field: Field, value: object) -> object:
    """Set the field to ``value`` as the object's users do; returns the (possibly new) root."""

    def set_in(node: object, keys: tuple[Key, ...], rebuilt: bool) -> object:
        if rebuilt and isinstance(node, MutableSequence | MutableMapping):
            node = copy.copy(node)  # inside a rebuilt object: the user's own stays as it was
        child = _get(node, keys[0])
        if len(keys) == 1:
            if kinds.is_variable(child):
                if hasattr(child, "set_value"):
                    child.set_value(value)
                else:  # flax before 0.11
                    child.value = value
                return node
            return _put(node, keys[0], value)
        below = rebuilt or how(node, child, keys[0]) not in IN_PLACE
        new_child = set_in(child, keys[1:], below)
        return node if new_child is child else _put(node, keys[0], new_child)

    return set_in(obj, field.keys, False)


def _refusal(obj: object, field: Field, value: object) -> str:
    """Why ``obj`` refuses ``value`` in ``field``, or "" (a change made in place undone)."""
    before = get_field(obj, field)
    try:
        changed = set_field(obj, field, value)
    except Exception as exc:
        return error_text(exc)
    if changed is obj:
        set_field(obj, field, before)
    return ""


def refused(obj: object, found: list[Field]) -> tuple[list[Field], list[Skipped]]:
    """``found`` less the fields whose new value ``obj``'s class refuses (e3nn's IrrepsArray
    checks its irreps against its array's shape when it is built), and why each is left out;
    an array field whose new shape alone is refused stays, marked ``fixed_shape``."""
    rng, kept, skipped = np.random.default_rng(0), [], []
    for field in found:
        now = get_field(obj, field)
        if field.kind == "static":
            new = values.new_value(now, field.choices)
        elif field.kind == "number":
            new = values.new_number(now)
        else:
            new = values.new_array(now, rng)
        if why := _refusal(obj, field, new):
            skipped.append(Skipped(field.path, f"{_short(now)}: a new value is refused: {why}"))
            continue
        if field.kind == "array":
            new = values.new_array(now, rng, values.new_shape(now))
            if why := _refusal(obj, field, new):
                skipped.append(Skipped(field.path, f"an array of a new shape is refused: {why}"))
                field = dataclasses.replace(field, fixed_shape=True)
        kept.append(field)
    return kept, skipped


def _short(value: object) -> str:
    text = "an array" if kinds.is_array(value) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
