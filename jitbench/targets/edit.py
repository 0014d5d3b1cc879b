"""A field read and set the way its object's users do it (``setattr``, ``set_value``,
``.replace``, ``eqx.tree_at``...): a change to a frozen object returns a new root, an in-place
one the same object (see docs/design.md).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import weakref
from collections.abc import Callable, Mapping, MutableMapping, MutableSequence

import numpy as np

from jitbench.errors import error_text
from jitbench.targets import declared, kinds, values
from jitbench.targets.fields import EQX_STATIC, IN_PLACE, TREECLASS_AT, Field, Key, Skipped, how


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
    if kinds.is_treeclass(node):
        # What .at[name].set(value) returns for a leaf, built as pytreeclass unflattens an
        # instance (its attributes, no __init__): .at[name].set would put a tuple or another
        # subtree into each of the field's leaves.
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
        set_field(obj, field, value)
    except Exception as exc:
        return error_text(exc)
    _undo(obj, field, before)
    return ""


def _undo(obj: object, field: Field, before: object) -> None:
    """``field`` of ``obj`` set back to ``before`` where a change left it otherwise: one made
    in place, at the root or inside an object the change rebuilt around it."""
    if get_field(obj, field) is not before:
        set_field(obj, field, before)


# Whether the call without jit on a changed object returns other than on the object as it was
# (None: it raises on the changed one), made for that object: the oracle the subject gives.
Differs = Callable[[object], bool | None]


def refused(
    obj: object, found: list[Field], oracle: Callable[[object], Differs] | None = None
) -> tuple[list[Field], list[Skipped]]:
    """``found`` with the new value each field plays (:func:`picked`), less the fields whose
    every new value ``obj``'s class refuses as it is changed (e3nn's IrrepsArray checks its
    irreps against its array's shape when it is built), and why each is left out; an array
    field whose new shape alone is refused stays, marked ``fixed_shape``. ``oracle(obj)``:
    the call without jit on ``obj`` as it is, to tell which values change its result."""
    rng, kept, skipped = np.random.default_rng(0), [], []
    made: list[Differs | None] = []  # the oracle on obj as it is, made once it is needed
    built: dict[int, bool] = {}  # whether each owner's constructor takes it as it is
    known = _chosen(obj)

    def differs() -> Differs | None:
        if not made:
            try:
                made.append(oracle(obj) if oracle is not None else None)
            except Exception:  # the call without jit raises: the first step says so
                made.append(None)
        return made[0]

    for field in found:
        now = get_field(obj, field)
        if field.kind != "array":
            if field.path not in known:  # what it plays, the same on every way of jitting obj
                chosen = picked(obj, field, differs, built)
                known[field.path] = chosen if isinstance(chosen, str) else {
                    "pick": chosen.pick, "played": chosen.played, "refusal": chosen.refusal
                }  # fmt: skip
            chosen = known[field.path]
            if isinstance(chosen, str):
                skipped.append(Skipped(field.path, f"{_short(now)}: a new value is refused: "
                                       f"{chosen}"))  # fmt: skip
            else:
                kept.append(dataclasses.replace(field, **chosen))
            continue
        if why := _refusal(obj, field, values.new_array(now, rng)):
            skipped.append(Skipped(field.path, f"{_short(now)}: a new value is refused: {why}"))
            continue
        new = values.new_array(now, rng, values.new_shape(now))
        if why := _refusal(obj, field, new):
            skipped.append(Skipped(field.path, f"an array of a new shape is refused: {why}"))
            field = dataclasses.replace(field, fixed_shape=True)
        kept.append(field)
    return kept, skipped


# The value each field of an object plays, or why none does (picked), by the object's id while it
# is alive: advise audits one object once for each way of jitting it, and the values are the
# object's, whichever way (the calls without jit they cost are made once).
Chosen = dict[str, dict[str, int | str] | str]  # by path: picked's fields, or why none plays
_CHOSEN: dict[int, tuple[weakref.ref[object], Chosen]] = {}


def _chosen(obj: object) -> Chosen:
    """What was chosen for ``obj``'s fields so far ({} for an object no weak reference
    reaches: nothing is kept for it)."""
    entry = _CHOSEN.get(id(obj))
    if entry is not None and entry[0]() is obj:
        return entry[1]
    key = id(obj)
    try:
        ref = weakref.ref(obj, lambda _: _CHOSEN.pop(key, None))
    except TypeError:
        return {}
    _CHOSEN[key] = (ref, {})
    return _CHOSEN[key][1]


# The changes that build no new instance through ``__init__``: what its constructor would refuse
# is asked of it (declared.refusal).
UNCHECKED = ("setattr", "eqx.tree_at", EQX_STATIC, TREECLASS_AT)


def picked(
    obj: object, field: Field, differs: Callable[[], Differs | None], built: dict[int, bool]
) -> Field | str:
    """``field`` with the value it plays (why: docs/design.md): the first of its candidates
    (:func:`jitbench.targets.values.candidates`) that ``obj`` takes as it is changed, that
    changes the call's result without jit (``differs()``, asked where there is more than one
    value to try, whatever the role: every way of jitting the object plays the same value),
    and that its class's constructor would take too where the change bypasses it (its own
    checks read from its source, then a try of it: :mod:`jitbench.targets.declared`;
    ``built``, the tries' memory); else the first taken; else, where the constructor refuses
    them, the first with its refusal (its step is n/a); else why ``obj`` refuses every one,
    a string (the field is left out)."""
    now = get_field(obj, field)
    options = values.candidates(now, field.choices)
    kind, name = field.keys[-1]
    owner = functools.reduce(_get, field.keys[:-1], obj)
    checked = field.how in UNCHECKED and kind == "attr"
    fates: dict[int, str] = {}  # what each value tried met: a key of _FATES
    refusals: dict[int, str] = {}

    def refuses(index: int, tried: bool) -> bool:
        """Whether the value is refused (recorded): as it is set, by the constructor's own
        checks, and (``tried``: a value about to play) by a try of the constructor."""
        new = options[index]
        why = _refusal(obj, field, new) or (declared.refusal(owner, name, new) if checked else "")
        why = why or (declared.tried(owner, name, new, built) if checked and tried else "")
        if why:
            fates[index], refusals[index] = "refused", why
        return bool(why)

    found = None
    for index, new in enumerate(options):
        if refuses(index, tried=False):
            continue
        oracle = differs() if len(options) > 1 else None
        result: bool | None = True  # nothing to tell apart: the value plays
        if oracle is not None:
            result = oracle(set_field(obj, field, new))
            _undo(obj, field, now)
        if result and not refuses(index, tried=True):
            found = index
            break
        if index not in fates:
            fates[index] = "same" if result is False else "raises"
    if found is None:  # none changes the result: the first the constructor takes
        left = [i for i in fates if fates[i] != "refused"]
        found = next((i for i in left if not refuses(i, tried=True)), None)
    if found is not None:
        return dataclasses.replace(field, pick=found, played=_played(options, found, fates))
    if not refusals:
        return "no new value known"
    index, why = next(iter(refusals.items()))
    if declared.REFUSES in why:  # the constructor's own refusal: its step says it
        return dataclasses.replace(field, pick=index, refusal=why)
    return why


# What a value tried met, in words (one value, several).
_FATES = {
    "same": ("{} changes nothing without jit", "{} change nothing without jit"),
    "raises": ("the call without jit raises on {}", "the call without jit raises on {}"),
    "refused": ("{} is refused", "{} are refused"),
}  # fmt: skip


def _played(options: list[object], pick: int, fates: dict[int, str]) -> str:
    """Which value played and what the others tried met, for the step's change
    (" (1 played; 8000 and 2000 change nothing without jit)"); "" where it was
    the only one tried."""
    if not any(i != pick for i in fates):
        return ""
    groups: dict[str, list[str]] = {}
    for index, fate in fates.items():
        groups.setdefault(fate, []).append(declared.shown(options[index]))
    said = "; ".join(_FATES[fate][len(shown) > 1].format(_listed(shown))
                     for fate, shown in groups.items())  # fmt: skip
    return f" ({declared.shown(options[pick])} played; {said})"


def _listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _short(value: object) -> str:
    text = "an array" if kinds.is_array(value) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
