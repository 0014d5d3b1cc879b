"""The fields of any object, found by walking it (:func:`walk`) and classified the way jit sees
each one (``array``, ``number``, ``static``), and which of them play (:func:`choose`); see
docs/design.md.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import enum
import fnmatch
import re
from collections.abc import (
    Hashable,
    Iterator,
    Mapping,
    MutableMapping,
    MutableSequence,
    Sequence,
)
from typing import Literal

from jitbench.options import DEFAULT_ARRAYS, DEFAULT_VALUES
from jitbench.targets import declared, kinds, values

Kind = Literal["array", "number", "static"]
Key = tuple[Literal["attr", "item"], Hashable]
MAX_DEPTH = 12
EQX_STATIC = "a new module, built as equinox unflattens one"
TREECLASS_AT = ".at[...].set"
ROLES = {
    "traced": "traced",
    "number": "traced number",
    "hashed": "static (hashed leaf)",
    "valued": "static (hashed by value)",  # an array a static self's value hash reads
    "aux": "static",
    "plain": "attribute",
}


@dataclasses.dataclass(frozen=True)
class Field:
    """One value of an object: where it is, how jit sees it, and how a user changes it.

    ``role`` is how jit sees the value (a key of :data:`ROLES`), ``choices`` the values
    its class declares (:func:`jitbench.targets.declared.choices`). Which new value plays is
    chosen once the field is chosen (:func:`jitbench.targets.edit.refused`): ``pick``, its
    index among :func:`jitbench.targets.values.candidates`, and ``played``, why that one in
    words (the step's change says it); ``refusal``, where the class's constructor refuses
    every value tried, its error (the step is then n/a with it).
    """

    path: str
    keys: tuple[Key, ...]
    kind: Kind
    how: str
    role: str = ""
    private: bool = False
    choices: tuple[object, ...] = ()
    fixed_shape: bool = False  # its class refuses a new shape (edit.refused)
    pick: int = 0
    played: str = ""
    refusal: str = ""

    @property
    def group(self) -> str:
        """The path with every list index a ``*``: the same field across a list's items."""
        return re.sub(r"\[\d+\]", "[*]", self.path)


@dataclasses.dataclass(frozen=True)
class Skipped:
    """A part of the object the scenario does not change, and why."""

    path: str
    reason: str


def named(paths: Sequence[str], shown: int) -> str:
    """The first ``shown`` paths, and how many more (``a, b, c and 2 more``)."""
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more


def children(value: object) -> list[tuple[Key, str, object]] | None:
    """(key, path suffix, child) of a node, or None for a leaf with no fields to walk."""
    if kinds.is_named_tuple(value):
        return [(("attr", n), f".{n}", getattr(value, n)) for n in type(value)._fields]
    if kinds.is_penzai_variable(value):  # by its public value, as penzai's users set it
        return [(("attr", "value"), ".value", value.value)]
    # A dataclass by its fields (chex's is a Mapping too); nnx.List, a dataclass without
    # fields, by its items.
    names = [f.name for f in dataclasses.fields(value)] if dataclasses.is_dataclass(value) else []
    if names and not isinstance(value, type):
        return [(("attr", n), f".{n}", getattr(value, n)) for n in names if hasattr(value, n)]
    if isinstance(value, Mapping):
        return [(("item", k), f"[{k!r}]", v) for k, v in value.items()]
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [(("item", i), f"[{i}]", v) for i, v in enumerate(value)]
    if isinstance(value, type) or kinds.is_function(value):
        return None
    if hasattr(value, "__dict__"):
        return [(("attr", n), f".{n}", v) for n, v in vars(value).items()]
    # A class may name its one slot as a string: __slots__ = "x".
    slotted = (getattr(c, "__slots__", ()) for c in type(value).__mro__)
    slots = [n for names in slotted for n in ((names,) if isinstance(names, str) else names)]
    if slots and type(value).__module__.split(".")[0] not in kinds.LIBRARY_PACKAGES:
        names = [n for n in slots if n != "__weakref__" and hasattr(value, n)]
        return [(("attr", n), f".{n}", getattr(value, n)) for n in names]
    return None


def _traced(node: object) -> tuple[set[Key], list[object]] | None:
    """The keys of ``node``'s pytree children and the children without one; None for a leaf."""
    found = kinds.pytree_children(node)
    if found is None:
        return None
    keyed: set[Key] = set()
    unkeyed: list[object] = []
    for path, child in found:
        entry = path[0] if path else None
        name = getattr(entry, "name", None)
        if name is not None:
            keyed.add(("attr", name))
        elif hasattr(entry, "key") and type(entry).__name__ == "DictKey":
            keyed.add(("item", entry.key))
        elif hasattr(entry, "idx"):
            keyed.add(("item", entry.idx))
        else:
            unkeyed.append(child)
    return keyed, unkeyed


def _role(
    children: tuple[set[Key], list[object]] | None,
    node: object,
    key: Key,
    child: object,
    filtered: bool,
) -> str:
    if children is None:
        return "plain"
    keyed, unkeyed = children
    # An item that jit keys as an attribute (nnx.Dict's) is the same child.
    leaf = key in keyed or ("attr", str(key[1])) in keyed
    if not leaf and unkeyed and _among(child, unkeyed):
        leaf = _unkeyed_child(node, key)
    if not leaf:
        return "plain" if _dropped(node, key) else "aux"
    if kinds.is_array(child) or kinds.is_variable(child):
        return "traced"
    # jit traces a number leaf; a leaf jit cannot trace (a function) only a filter hashes.
    return "number" if kinds.is_number(child) and not filtered else "hashed"


def _among(child: object, unkeyed: list[object]) -> bool:
    """Whether ``child``, or an array leaf of it, is one of ``unkeyed`` (distrax's Transformed)."""
    import jax

    ids = {id(c) for c in unkeyed}
    if id(child) in ids:
        return True
    try:
        inner = jax.tree_util.tree_leaves(child)
    except Exception:  # a value that cannot flatten holds no leaf of the node's
        return False
    return any(id(leaf) in ids for leaf in inner if kinds.is_array(leaf))


def _unkeyed_child(node: object, key: Key) -> bool:
    """Whether the attribute ``key`` is a child of a node flattening without keys (jax_dataclasses,
    numpyro, distrax), told by flattening a copy holding a new object there (not by identity: a
    ``True`` or ``1.0`` may be another leaf's): a copy of its arrays (a class routing leaves by
    type keeps it where it keeps the array), else a marker."""
    import jax

    if key[0] != "attr":
        return True
    try:
        value = getattr(node, key[1])
        copies = jax.tree_util.tree_map(lambda x: x.copy() if kinds.is_array(x) else x, value)
        fresh = {id(x) for x in jax.tree_util.tree_leaves(copies) if kinds.is_array(x)}
        marker = copies if fresh else object()
        with _holding(node, key[1], marker) as probe:
            found = jax.tree_util.tree_leaves(probe, is_leaf=lambda x: x is not probe)
    except Exception:  # a class that cannot be copied so: identity decides
        return True
    return any(leaf is marker or id(leaf) in fresh for leaf in found)


def _dropped(node: object, key: Key) -> bool:
    """Whether ``node`` flattens without the attribute ``key``, in its auxiliary data too
    (numpyro's cached ``covariance_matrix``): jit never sees it. Told by a copy holding a new
    object there, whose structure one level down is the node's."""
    import jax

    def level(x: object) -> object:
        return jax.tree_util.tree_structure(x, is_leaf=lambda y: y is not x)

    if key[0] != "attr":
        return False
    try:
        with _holding(node, key[1], object()) as probe:
            return level(probe) == level(node)
    except Exception:  # aux data that cannot be compared (arrays) holds it
        return False


@contextlib.contextmanager
def _holding(node: object, name: str, value: object) -> Iterator[object]:
    """A shallow copy of ``node`` holding ``value`` as ``name``, released from equinox after."""
    probe = copy.copy(node)
    try:
        object.__setattr__(probe, name, value)
        yield probe
    finally:
        kinds.release_equinox_modules([probe])


def _skip_reason(value: object) -> str | None:
    if kinds.is_rng_state(value):
        return "random-number state: the calls change it themselves"
    if kinds.is_dtype(value):  # a computation's dtype: a value a user sets
        return None
    if isinstance(value, type):
        return f"a type ({getattr(value, '__name__', value)}): not a value to change"
    if kinds.is_variable(value):
        return None
    if kinds.is_jitted(value):
        return "a jitted function or a library's callable: jit's own object, not a field"
    if kinds.is_library_internal(value):
        return f"{type(value).__module__}.{type(value).__name__}: the library's own bookkeeping"
    return None


def how(owner: object, leaf: object, key: Key, rebuilt: bool = False) -> str:
    """How a user of ``owner``'s kind sets its field ``key``; ``rebuilt``: inside an object
    rebuilt for a change (a NamedTuple state), where a dict or list is rebuilt too."""
    if kinds.is_variable(leaf):
        return "Variable.set_value"
    if kinds.is_named_tuple(owner):
        return "._replace"
    if key[0] == "item":
        mutable = isinstance(owner, MutableSequence | MutableMapping) and not rebuilt
        return "item assignment" if mutable else "a new container"
    if kinds.is_eqx_module(owner):
        static = any(
            f.name == key[1] and f.metadata.get("static") for f in dataclasses.fields(owner)
        )
        return EQX_STATIC if static else "eqx.tree_at"
    if kinds.is_treeclass(owner):
        return TREECLASS_AT
    if kinds.has_replace(owner):
        return ".replace"
    if kinds.is_linen_module(owner):
        return ".clone"
    if kinds.is_frozen_dataclass(owner):
        return "dataclasses.replace"
    if kinds.is_frozen_attrs(owner):
        return "attrs.evolve"
    return "setattr"


# The changes made in place; any other builds a new object.
IN_PLACE = ("setattr", "item assignment", "Variable.set_value")
# The changes that build a new instance through ``__init__``: a field it does not take is
# computed from the others (``field(init=False)``) and cannot be given.
REBUILT = (".replace", ".clone", "dataclasses.replace", "attrs.evolve")


def _derived(owner: object, key: Key) -> bool:
    """Whether ``owner``'s ``__init__`` does not take the field ``key``."""
    if key[0] != "attr":
        return False
    if dataclasses.is_dataclass(owner):
        return any(f.name == key[1] and not f.init for f in dataclasses.fields(owner))
    return any(a.name == key[1] and not a.init for a in getattr(type(owner), "__attrs_attrs__", ()))


def _kind(value: object, role: str) -> tuple[Kind | None, str | None]:
    """The field's kind, or why it has none a user changes."""
    if kinds.is_array(value):
        numeric = kinds.is_key(value) or value.dtype.kind in "iufc" or "float" in str(value.dtype)
        return ("array", None) if numeric else (None, f"an array of {value.dtype}: no new values")
    # A number is played alike traced or hashed, a bool as a flag (why: docs/design.md).
    if kinds.is_number(value) and role in ("number", "hashed") and not isinstance(value, bool):
        return "number", None
    # A set of hashable items (lineax's tags) too: hashed as a whole where jit keys on it (a
    # static field, a leaf eqx.filter_jit hashes), compared by its items.
    static = bool | int | float | enum.Enum | str | frozenset | set
    if kinds.is_function(value) or isinstance(value, static) or value is None:
        return "static", None
    if kinds.is_dtype(value):  # a computation's dtype (linen's Dense(dtype=jnp.bfloat16))
        return "static", None
    if isinstance(value, tuple) and value and all(kinds.is_number(v) for v in value):
        return None, f"{value!r}: a tuple of numbers, often a shape the arrays must match"
    return None, None


# A path's rank (lower is better): outside jit's key, then private. An object reachable by
# several paths is walked by its best, the first found among equals.
Rank = tuple[bool, bool]


def walk(obj: object, filtered: bool = False) -> tuple[list[Field], list[Skipped]]:
    """Every value of ``obj`` a user changes, by path and classified (see docs/design.md), and
    what was skipped (depth first). ``filtered``: the call hashes non-array leaves
    (``eqx.filter_jit``). An object or array reachable by several paths is reached by its best
    (:data:`Rank`: one in jit's key, then a public one), and every other path to it is skipped
    naming the path used (TFP's GaussianProcess holds its kernel in ``_parameters``, which
    jit never reads, and in ``_kernel``, which it flattens)."""
    fields: list[Field] = []
    skipped: list[Skipped] = []
    best: dict[int, tuple[Rank, str]] = {}  # id of a node, array or Variable -> its best path
    traced_of: dict[int, tuple[set[Key], list[object]] | None] = {}
    roles: dict[tuple[int, Key], str] = {}
    kept: list[object] = []  # what the ids above name, alive while the walk runs

    def children_of(node: object, within: str) -> Iterator[tuple[Key, str, object, str, bool]]:
        """(key, suffix, child, role, shared: tracked by identity) of each of ``node``'s
        children, its role as the node is to jit; a child with a skip reason has role ""."""
        if id(node) not in traced_of:
            kept.append(node)
            traced_of[id(node)] = None if within == "aux" else _traced(node)
        traced = None if within == "aux" else traced_of[id(node)]
        for key, suffix, child in children(node) or []:
            shared = kinds.is_variable(child) or kinds.is_array(child)
            if _skip_reason(child):
                yield key, suffix, child, "", shared
                continue
            if kinds.is_variable(child) or kinds.is_penzai_variable(node):
                role = "traced"  # a Variable's value: what nnx.jit or pz.variable_jit traces
            elif (id(node), key) in roles:
                role = roles[id(node), key]
            else:
                role = roles[id(node), key] = _role(traced, node, key, child, filtered)
            yield key, suffix, child, within if within in ("aux", "plain") else role, shared

    def rank(node_rank: Rank, key: Key, role: str) -> Rank:
        private = key[0] == "attr" and str(key[1]).startswith("_")
        return node_rank[0] or role == "plain", node_rank[1] or private

    def survey(
        node: object, path: str, node_rank: Rank, within: str, depth: int, old: str | None = None
    ) -> None:
        """Every path to every node, array and Variable, its best kept in ``best``; ``old``:
        the path ``node`` was surveyed at before this better one, whose descendants' paths
        through it move here."""
        if depth > MAX_DEPTH:
            return
        for key, suffix, child, role, shared in children_of(node, within):
            if not role:
                continue
            where, mine = (path + suffix).lstrip("."), rank(node_rank, key, role)
            found = best.get(id(child))
            moved = found is not None and old is not None and found[1] == (old + suffix).lstrip(".")
            if found is not None and found[0] <= mine and not moved:
                continue
            if shared or (children(child) and _kind(_value(child), role)[0] is None):
                kept.append(child)
                best[id(child)] = (mine, where)
                if not shared:
                    survey(child, where, mine, role, depth + 1, found[1] if found else None)

    def visit(
        node: object, keys: tuple[Key, ...], path: str, private: bool, within: str, rebuilt: bool
    ) -> None:
        if len(keys) > MAX_DEPTH:
            return
        for key, suffix, child, role, _ in children_of(node, within):
            where = (path + suffix).lstrip(".")
            hidden = private or (key[0] == "attr" and str(key[1]).startswith("_"))
            reason = _skip_reason(child)
            changed = how(node, child, key, rebuilt)
            if not reason and _derived(node, key) and changed in REBUILT:
                reason = "computed from the other fields (init=False): a new instance recomputes it"
            used = best.get(id(child), (None, where))[1]
            if not reason and used != where:
                reason = f"the same object as {used or 'the object itself'}"
            if reason:
                skipped.append(Skipped(where, reason))
                continue
            value = _value(child)
            kind, why = _kind(value, role)
            choices = declared.choices(node, key[1] if key[0] == "attr" else None, value)
            if kind == "static" and values.new_value(value, choices) is None:
                why = f"{declared.shown(value)}: no other valid value known" + (
                    " (no Literal, Enum or check of its constructor declares its choices)"
                    if isinstance(value, str) else ""
                )  # fmt: skip
                kind = None
            if kind is not None:
                fields.append(Field(where, (*keys, key), kind, changed, role, hidden, choices))
            elif why is None and children(child) is not None:
                before = len(fields) + len(skipped)
                visit(child, (*keys, key), where, hidden, role, rebuilt or changed not in IN_PLACE)
                container = isinstance(child, Mapping | Sequence)
                if len(fields) + len(skipped) == before and role != "plain" and not container:
                    skipped.append(Skipped(where, _nothing_inside(child, role)))
            else:
                reason = why or f"a {type(child).__name__}: neither array nor value"
                skipped.append(Skipped(where, reason))

    best[id(obj)] = ((False, False), "")
    survey(obj, "", (False, False), "", 0)
    visit(obj, (), "", False, "", False)
    # The nested functions reference each other (a cycle the collector frees later): what
    # they hold of the object goes now, so that the audit's leak count starts without it.
    kept.clear()
    traced_of.clear()
    return fields, skipped


def libraries(obj: object, depth: int = 3, most: int = 2_000) -> frozenset[str]:
    """The packages whose classes ``obj`` is or holds (its fields, ``depth`` levels down, at
    most ``most`` nodes): the libraries it uses (a plain class holding nnx modules uses flax)."""
    found: set[str] = set()
    stack, seen = [(obj, 0)], set()
    while stack and len(seen) < most:
        node, level = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        found |= {cls.__module__.split(".")[0] for cls in type(node).__mro__}
        if level < depth:
            stack += [(child, level + 1) for _, _, child in children(node) or ()]
    return frozenset(found)


def _value(child: object) -> object:
    return kinds.variable_value(child) if kinds.is_variable(child) else child


def _nothing_inside(child: object, role: str) -> str:
    """Why a node in jit's key with no field to change is not played."""
    identity = type(child).__eq__ is object.__eq__
    compared = "by identity" if identity else "by its __eq__"
    where = "a leaf the call hashes" if role == "hashed" else "static data in jit's key"
    name = type(child).__name__
    article = "an" if (name.lstrip("_") or "x")[0] in "AEIOUaeiou" else "a"
    return f"{article} {name} with no field to change, {where} (compared {compared}): not played"


def choose(
    fields: Sequence[Field], pattern: str | None = None, arrays: int = DEFAULT_ARRAYS
) -> tuple[list[Field], list[Skipped]]:
    """The fields to play, in the walk's order, and the others as skipped (why).

    With ``pattern``: every field whose path starts with it (``layers[0].``), matches it
    as a glob (``*.weight``) or as a regular expression searched in it (``^(depth|scan)$``),
    private ones included. By default (:data:`~jitbench.options.DEFAULT_FIELDS` says it in
    words): every field in jit's key, private ones included, then the public attributes jit
    never sees (private ones only where the object has no other field), one field of each
    group (the same field across a list's items), at most :data:`DEFAULT_VALUES` statics and
    numbers and ``arrays`` arrays, in that order of precedence.
    """
    if pattern is not None:
        try:
            regex: re.Pattern[str] | None = re.compile(pattern)
        except re.error:
            regex = None
        chosen, left = [], []
        for f in fields:
            hit = f.path.startswith(pattern) or fnmatch.fnmatchcase(f.path, pattern)
            (chosen if hit or (regex and regex.search(f.path)) else left).append(f)
        return chosen, [
            Skipped(f.path, f"not matched by the fields pattern {pattern!r}") for f in left
        ]
    hidden = [f for f in fields if f.private and f.role == "plain"]
    others = len(hidden) < len(fields)

    def precedence(f: Field) -> int:  # in jit's key, public first; then public attributes
        return 2 * (f.role == "plain") + f.private

    chosen, skipped = [], []
    firsts: dict[str, str] = {}
    counts = {"array": 0, "value": 0}
    for f in sorted(fields, key=precedence):
        budget = "array" if f.kind == "array" else "value"
        limit = arrays if budget == "array" else DEFAULT_VALUES
        if f.private and f.role == "plain" and others:
            skipped.append(Skipped(f.path, "a private attribute jit never sees (a fields "
                                   "pattern plays it)"))  # fmt: skip
        elif f.group in firsts:
            skipped.append(Skipped(f.path, f"the same field as {firsts[f.group]} (plays once)"))
        elif counts[budget] >= limit:
            skipped.append(Skipped(f.path, f"past the first {limit} {budget} fields played"))
        else:
            firsts[f.group] = f.path
            counts[budget] += 1
            chosen.append(f)
    order = {f.path: n for n, f in enumerate(fields)}
    return sorted(chosen, key=lambda f: order[f.path]), sorted(skipped, key=lambda s: order[s.path])
