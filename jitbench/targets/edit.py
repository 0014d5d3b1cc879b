"""A field read and set the way its object's users do it (``setattr``, ``set_value``,
``.replace``, ``eqx.tree_at``...): a change to a frozen object returns a new root, an in-place
one the same object (see README.md).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, MutableMapping, MutableSequence
from typing import Any

from jitbench.targets import kinds
from jitbench.targets.fields import IN_PLACE, Field, Key, how


def _get(node: Any, key: Key) -> Any:
    return getattr(node, key[1]) if key[0] == "attr" else node[key[1]]


def get_field(obj: Any, field: Field) -> Any:
    """The field's current value (the array inside a Variable)."""
    node = obj
    for key in field.keys:
        node = _get(node, key)
    return kinds.variable_value(node) if kinds.is_variable(node) else node


def _put(node: Any, key: Key, value: Any) -> Any:
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
            # would keep the copy alive for good: README.md).
            new = object.__new__(type(node))
            for attr, item in vars(node).items():
                object.__setattr__(new, attr, item)
            object.__setattr__(new, name, value)
            return new
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


def set_field(obj: Any, field: Field, value: Any) -> Any:
    """Set the field to ``value`` as the object's users do; returns the (possibly new) root."""

    def set_in(node: Any, keys: tuple[Key, ...], rebuilt: bool) -> Any:
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
