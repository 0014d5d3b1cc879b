"""How each way of :mod:`jitbench.ways.catalog` is built from the user's object: a way's
``build(obj, raw)`` returns ``bind``, and ``bind(obj)`` a :data:`Bound`; ``*_applies`` say
why a way cannot be built for an object (None where it can); whether a way is the very jit
the call is written with (:func:`as_written`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import inspect
import operator
import types
import weakref
from collections.abc import Callable

from jitbench.errors import JitbenchError
from jitbench.targets import Target, edit, kinds
from jitbench.targets import fields as fieldlib
from jitbench.ways.calls import HeldCall, Raw, attributes, split_attributes, written

# A built way: the function to call and the arguments it takes before the call's inputs.
Bound = tuple[Callable[..., object], tuple[object, ...]]
# A way's bind: each instance's Bound; its build: the bind, from the object and its raw call.
Bind = Callable[[object], Bound]
Build = Callable[[object, Raw], Bind]
# Why a way cannot be built for an object (None: it can).
Applies = Callable[[object], str | None]
# A way's convert: from the object, what makes each new instance the object the way calls.
Convert = Callable[[object], Callable[[object], object]]


def as_written(target: Target, bind: Bind) -> bool:
    """Whether a way calls the object through the very jit the call is written with: the same
    wrapper type (``jax.jit``, ``nnx.jit``, ``eqx.filter_jit``) with equal options around the
    same function. A wrapper whose options do not compare equal is never taken for it."""
    mine = written(target)
    function = getattr(bind, "jitted", None)  # a way calling the object as its argument
    if function is None or type(function) is not type(mine):
        return False
    if isinstance(function, types.FunctionType):  # a wrapper written in Python (pz.variable_jit)
        wrapped = getattr(function, "__wrapped__", None)
        return function.__code__ is mine.__code__ and wrapped is getattr(mine, "__wrapped__", 0)

    def options(wrapper: object) -> dict[str, object]:
        found = getattr(wrapper, "__dict__", {})
        # A named tuple by its fields: jax.jit's options compare by identity otherwise.
        return {
            k: tuple(v) if isinstance(v, tuple) else v
            for k, v in found.items() if not k.startswith("__") and not callable(v)
        }  # fmt: skip

    try:
        return bool(options(function) == options(mine))
    except (TypeError, ValueError):  # an option without an equality of its own (an array)
        return False


def _getter(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """A function reading these attributes as a tuple (what a method writes: self.x)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        (name,) = names
        return lambda obj: (getattr(obj, name),)
    return operator.attrgetter(*names)


# --- Per-object state a way builds once (a partial, a split) --------------------------------


class PerObject:
    """A way's bind whose :data:`Bound` is built once per object (``make(obj)``), forgotten
    when the object goes."""

    def __init__(self, make: Bind) -> None:
        self.make, self.built = make, dict[int, Bound]()

    def __call__(self, obj: object) -> Bound:
        key = id(obj)
        if key not in self.built:
            self.built[key] = self.make(obj)
            # No weak reference (a NamedTuple): what was built holds the object anyway.
            with contextlib.suppress(TypeError):
                weakref.finalize(obj, self.built.pop, key, None)
        return self.built[key]


@dataclasses.dataclass(frozen=True, eq=False, slots=True)
class _ValueKey:
    """The object as a static argument hashed and compared by its values, as the value hash's
    code (``catalog.STATIC_SELF_VALUE_HASH``) hashes it; ``fields``: the walk's, for an object
    without attributes of its own."""

    obj: object
    fields: list[fieldlib.Field]

    def key(self) -> tuple[object, ...]:
        """The object's own attributes (:func:`attributes`) flattened, the structure written out
        and arrays by their shape, dtype and bytes; without attributes, its fields' values."""
        import jax

        def value(leaf: object) -> object:
            if kinds.is_array(leaf):
                return leaf.shape, str(leaf.dtype), kinds.on_host(leaf).tobytes()
            return leaf

        own = attributes(self.obj)
        if own is None:
            return type(self.obj), tuple(value(edit.get_field(self.obj, f)) for f in self.fields)
        leaves, structure = jax.tree_util.tree_flatten(dict(own))
        return type(self.obj), str(structure), tuple(value(leaf) for leaf in leaves)

    def __hash__(self) -> int:
        return hash(self.key())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ValueKey) and self.key() == other.key()


@dataclasses.dataclass(frozen=True)
class _TakingObject:
    """The bind of a way that calls its jitted function with the object as its argument."""

    jitted: Callable[..., object]

    def __call__(self, obj: object) -> Bound:
        return self.jitted, (obj,)


def taking_object(wrapper: str, **options: object) -> Build:
    """The build of a way that calls ``wrapper(raw, **options)`` with the object as its
    argument; ``wrapper`` is ``module:function`` (``jax:jit``), imported when it is built."""
    module, _, name = wrapper.partition(":")

    def build(obj: object, raw: Raw) -> Bind:
        return _TakingObject(getattr(importlib.import_module(module), name)(raw, **options))

    return build


@dataclasses.dataclass(frozen=True)
class _FrozenObject:
    """The bind of a way that calls its jitted function on a frozen copy of the object, made
    at every call: penzai's Variables replaced by their values (``pz.freeze_variables``)."""

    jitted: Callable[..., object]

    def __call__(self, obj: object) -> Bound:
        from penzai import pz

        jitted = self.jitted
        return lambda *args, **kwargs: jitted(pz.freeze_variables(obj), *args, **kwargs), ()


def frozen_variables(obj: object, raw: Raw) -> Bind:
    """``jax.jit(raw)`` called on ``pz.freeze_variables(obj)``: each Variable's value, frozen
    at the call, a pytree jit flattens (penzai's docs: frozen variables are safe to pass
    through JAX transformations)."""
    import jax

    return _FrozenObject(jax.jit(raw))


def penzai_applies(obj: object) -> str | None:
    """Why the object cannot be frozen for jit: it holds no penzai Variable."""
    from penzai import pz

    _, found = pz.unbind_variables(obj)
    return None if found else "it holds no penzai Variable: jax.jit takes it as it is"


def jit_held_call(obj: object, raw: Raw) -> Bind:
    """``jax.jit`` of the function the object holds, made once per function (haiku's
    ``apply = jax.jit(forward.apply)``): the object is no argument, only what it holds is
    called; a new function (a new instance's) is a new jit."""
    import jax

    assert isinstance(raw, HeldCall)
    held = getattr(obj, raw.name)
    if kinds.is_jitted(held):
        raise JitbenchError(f"the call as written already jits: {raw.name} is a jitted function")
    try:
        weakref.ref(held)
    except TypeError:
        raise JitbenchError(
            f"{raw.name} holds a {type(held).__name__}, which takes no weak reference: its jit "
            "could not be let go with it"
        ) from None

    def jit(
        function: Callable[..., object],
    ) -> Bound:  # through a weak reference: the jit lets the function go
        ref = weakref.ref(function)

        def call(*args: object, **kwargs: object) -> object:
            return ref()(*args, **kwargs)

        call.__name__ = getattr(function, "__name__", "call")
        return jax.jit(call), ()

    jits = PerObject(jit)

    # The function stays alive while its call does: the call holds the object (WaySubject).
    return lambda o: jits(getattr(o, raw.name))


def value_hash(obj: object, raw: Raw) -> Bind:
    import jax

    jitted = jax.jit(lambda key, *args, **kwargs: raw(key.obj, *args, **kwargs), static_argnums=0)
    walked = fieldlib.walk(obj)[0]
    return lambda o: (jitted, (_ValueKey(o, walked),))


def value_hash_applies(obj: object) -> str | None:
    import jax

    own = attributes(obj)
    if own is None:
        found = [(f.path, edit.get_field(obj, f)) for f in fieldlib.walk(obj)[0]]
    else:
        flat = jax.tree_util.tree_flatten_with_path(dict(own))[0]
        # the attribute's name, then the path inside it: layers[0].weight
        found = [(f"{p[0].key}{jax.tree_util.keystr(p[1:])}", leaf) for p, leaf in flat]
    for path, value in found:
        if not kinds.is_array(value):
            try:
                hash(value)
            except TypeError:
                return f"its field {path!r} holds a {type(value).__name__}: unhashable"
    return None


def leaves_traceable(obj: object) -> str | None:
    """Why ``jax.jit`` cannot take the object as an argument: a leaf it cannot trace."""
    import jax

    leaves = jax.tree_util.tree_flatten_with_path(obj)[0]
    bad = [
        jax.tree_util.keystr(path) for path, leaf in leaves
        if not (kinds.is_array(leaf) or kinds.is_number(leaf))
    ]  # fmt: skip
    if not bad:
        return None
    return (
        f"leaves {fieldlib.named(bad, 3)} are neither arrays nor numbers: jax.jit cannot "
        "take them as arguments (a static field, or a filter, keeps them out)"
    )


def nnx_pytree_applies(obj: object) -> str | None:
    """Why ``jax.jit`` cannot take an nnx.Module as an argument: no pytree before flax 0.12,
    or a leaf it cannot trace."""
    import jax

    leaves = jax.tree_util.tree_leaves(obj)
    if len(leaves) == 1 and leaves[0] is obj:
        import flax

        return (
            f"flax {flax.__version__}'s nnx.Module is no pytree: jax.jit cannot take it as an "
            "argument (flax 0.12 makes it one)"
        )
    return leaves_traceable(obj)


def plain_applies(obj: object) -> str | None:
    """Why a plain object cannot be split into its arrays (traced) and the rest (static data in
    jit's key): no attributes of its own, or one that cannot be hashed. An object whose every
    attribute is static (gymnax's environments) is split too: its arrays are none."""
    if attributes(obj) is None:
        return f"a {type(obj).__name__} has no attributes of its own to split"
    if kinds.is_linen_module(obj):
        return (
            "a linen module is built by its constructor or .clone(), never rebuilt from its "
            "attributes (its __post_init__ binds it): jit its apply with the variables as "
            "arguments"
        )
    _, aux = split_attributes(obj)
    for name in aux:
        value = getattr(obj, name)
        try:
            hash(value)
        except TypeError:
            return f"its attribute {name!r} holds a {type(value).__name__}, which is unhashable"
    return None


def plain_pytree(obj: object) -> Callable[[object], object]:
    """A new instance as one of a subclass registered as a pytree (its class stays as it is)."""
    import jax

    children, aux = split_attributes(obj)
    cls, names = type(obj), (*children, *aux)
    sub = type(cls.__name__, (cls,), {"__slots__": (), "__module__": cls.__module__})
    get_children, get_aux = _getter(children), _getter(aux)
    jax.tree_util.register_pytree_node(
        sub,
        lambda o: (get_children(o), get_aux(o)),
        lambda values, leaves: edit.without_init(sub, names, (*leaves, *values)),
    )
    return lambda o: edit.without_init(sub, names, tuple(getattr(o, n) for n in names))


def helper_function(obj: object, raw: Raw) -> Bind:
    import jax

    children, aux = split_attributes(obj)
    cls, names = type(obj), (*children, *aux)

    @functools.partial(jax.jit, static_argnums=0)
    def helper(
        statics: tuple[object, ...], arrays: tuple[object, ...], *args: object, **kwargs: object
    ) -> object:
        return raw(edit.without_init(cls, names, (*arrays, *statics)), *args, **kwargs)

    get_children, get_aux = _getter(children), _getter(aux)

    def bind(o: object) -> Bound:
        def method(
            *args: object, **kwargs: object
        ) -> object:  # the method's body: self.x, self.mul
            return helper(get_aux(o), get_children(o), *args, **kwargs)

        return method, ()

    return bind


def hoisted(obj: object, raw: Raw) -> Bind:
    """``jax.jit(partial(raw, obj))`` made once per object, as a user's loop makes it, the
    object read through a weak reference so that jitbench's store keeps none alive (one with
    no weak reference is held, as the user's closure holds it)."""
    import jax

    def make(o: object) -> Bound:
        try:
            ref = weakref.ref(o)
        except TypeError:
            return jax.jit(functools.partial(raw, o)), ()
        return jax.jit(lambda *args, **kwargs: raw(ref(), *args, **kwargs)), ()

    return PerObject(make)


def partition_once(obj: object, raw: Raw) -> Bind:
    import equinox as eqx
    import jax

    @functools.partial(jax.jit, static_argnums=1)
    def step(params: object, static: object, *args: object, **kwargs: object) -> object:
        return raw(eqx.combine(params, static), *args, **kwargs)

    return PerObject(lambda o: (step, eqx.partition(o, eqx.is_array)))


def partition_applies(obj: object) -> str | None:
    """Why ``jax.jit`` cannot hash the module's static part: a list, dict or set in it (a
    container eqx.partition keeps as it is, its arrays replaced by None)."""
    import equinox as eqx
    import jax

    _, static = eqx.partition(obj, eqx.is_array)
    with contextlib.suppress(TypeError):
        hash(static)
        return None
    unhashable = (list, dict, set)
    leaves = jax.tree_util.tree_flatten_with_path(
        static, is_leaf=lambda x: isinstance(x, unhashable)
    )[0]
    found = [
        f"a {type(leaf).__name__} at {jax.tree_util.keystr(path)}"
        for path, leaf in leaves if isinstance(leaf, unhashable)
    ]  # fmt: skip
    if not found:
        return "its static part (the module without its arrays) is unhashable"
    more = f" and {len(found) - 2} more" if len(found) > 2 else ""
    return (
        f"its static part (the module without its arrays) holds {' and '.join(found[:2])}"
        f"{more}, which jax.jit cannot hash as a static argument"
    )


def tree_mode_applies(obj: object) -> str | None:
    from flax import nnx

    if "graph" in inspect.signature(nnx.jit).parameters:
        return None
    import flax

    return f"flax {flax.__version__}'s nnx.jit has no graph=False (tree mode): a newer flax has"


def jit_partial(obj: object, raw: Raw) -> Bind:
    from flax import nnx

    return PerObject(lambda o: (nnx.jit_partial(raw, o, graph=False), ()))


def cached_partial(obj: object, raw: Raw) -> Bind:
    from flax import nnx

    jitted = nnx.jit(raw)
    return PerObject(lambda o: (nnx.cached_partial(jitted, o), ()))


def split_merge(obj: object, raw: Raw) -> Bind:
    import jax
    from flax import nnx

    @jax.jit
    def step(graphdef: object, state: object, *args: object, **kwargs: object) -> object:
        model = nnx.merge(graphdef, state)
        out = raw(model, *args, **kwargs)
        return out, nnx.state(model)

    def split(o: object) -> Bound:
        graphdef, first = nnx.split(o)
        held = [first]

        def call(*args: object, **kwargs: object) -> object:  # the user's loop: the state fed back
            out, held[0] = step(graphdef, held[0], *args, **kwargs)
            return out

        return call, ()

    return PerObject(split)


def split_output(obj: object, raw: Raw) -> Bind:
    import jax
    from flax import nnx

    def split(o: object) -> Bound:
        graphdef, state = nnx.split(o)

        @jax.jit
        def step(state: object, *args: object, **kwargs: object) -> object:
            return raw(nnx.merge(graphdef, state), *args, **kwargs)

        return step, (state,)

    return PerObject(split)
