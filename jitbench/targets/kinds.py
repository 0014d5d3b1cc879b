"""What kind of thing a value is, in the words of the library it comes from, read from its
class's module and name without importing the library.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import types
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from jax.tree_util import KeyPath

# Callables of these packages are functions to skip, not sub-objects to walk into.
LIBRARY_PACKAGES = ("jax", "jaxlib", "equinox", "flax", "functools", "builtins")


def _has_base(value: object, package: str, name: str) -> bool:
    return any(c.__module__.startswith(package) and c.__name__ == name for c in type(value).__mro__)


def is_linen_module(value: object) -> bool:
    return _has_base(value, "flax.linen", "Module")


def is_variable(value: object) -> bool:
    return _has_base(value, "flax.nnx", "Variable")


def is_penzai_variable(value: object) -> bool:
    """A penzai ``Parameter`` or ``StateVariable``: no pytree, read through ``.value``, which
    ``pz.variable_jit`` passes to ``jax.jit`` as an argument (traced)."""
    return _has_base(value, "penzai.core.variables", "AbstractVariable")


def holds_penzai_variables(value: object) -> bool:
    """A pytree with penzai Variables among its leaves (a penzai model)."""
    import jax

    leaves = jax.tree_util.tree_leaves(value) if _has_base(value, "penzai", "Struct") else ()
    return any(is_penzai_variable(leaf) for leaf in leaves)


def is_nnx_state(value: object) -> bool:
    """What ``nnx.split`` returns beside the graph: Variables by path."""
    return _has_base(value, "flax.nnx", "State")


def variable_value(variable: object) -> object:
    """The value an ``nnx.Variable`` holds (``.value`` before flax 0.11)."""
    return variable.get_value() if hasattr(variable, "get_value") else variable.value


def is_eqx_module(value: object) -> bool:
    return _has_base(value, "equinox", "Module")


def is_nnx_module(value: object) -> bool:
    return _has_base(value, "flax.nnx", "Module")


def is_nnx_graph(value: object) -> bool:
    """An nnx module or another object nnx splits (an optimizer): flax's Pytree, Object before."""
    return _has_base(value, "flax.nnx", "Pytree") or _has_base(value, "flax.nnx", "Object")


def is_flax_struct(value: object) -> bool:
    return bool(getattr(type(value), "_flax_dataclass", False))


def has_replace(value: object) -> bool:
    """A dataclass with a ``.replace`` method of its own: ``flax.struct``, ``chex``."""
    return is_flax_struct(value) or (dataclasses.is_dataclass(value) and hasattr(value, "replace"))


def is_treeclass(value: object) -> bool:
    """A pytreeclass (or sepes, its successor) ``TreeClass``: frozen once built, changed with
    ``.at[name].set(value)``, which returns a new instance."""
    return _has_base(value, "pytreeclass", "TreeClass") or _has_base(value, "sepes", "TreeClass")


def is_named_tuple(value: object) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def is_frozen_dataclass(value: object) -> bool:
    """An instance of a frozen dataclass (not the class: its type, ``type``, has no params)."""
    params = getattr(type(value), "__dataclass_params__", None)
    return bool(params and params.frozen)


def is_frozen_attrs(value: object) -> bool:
    """An instance of an ``@attrs.frozen`` class: its users change it with ``attrs.evolve``."""
    cls = type(value)
    if not hasattr(cls, "__attrs_attrs__"):
        return False
    props = getattr(cls, "__attrs_props__", None)  # attrs 25.4 and later
    if props is not None:
        return bool(props.is_frozen)
    return getattr(cls.__setattr__, "__name__", "") == "_frozen_setattrs"


def is_rng_state(value: object) -> bool:
    return type(value).__module__.startswith("flax.nnx.rnglib") or type(value).__name__ in (
        "RngState", "RngKey", "RngCount",
    )  # fmt: skip


def is_committed(array: object) -> bool:
    """Whether a jax array was placed on a device by hand (``jax.device_put``): jit keys a
    committed argument apart. JAX 0.4.30 has only the private ``_committed``."""
    return bool(getattr(array, "committed", getattr(array, "_committed", False)))


def is_array(value: object) -> bool:
    """A jax or NumPy array (what jit traces by shape and dtype): a leaf of jax.tree_util's
    with a shape and a dtype, not a class registered as a pytree node that has them too (a
    sparse ``BCOO`` matrix, whose children are its arrays)."""
    if isinstance(value, np.ndarray):
        return True
    of_jax = type(value).__module__.startswith("jax")  # jaxlib's too
    if not (of_jax and hasattr(value, "shape") and hasattr(value, "dtype")):
        return False
    import jax

    return jax.tree_util.all_leaves([value])


def is_key(value: object) -> bool:
    """A typed PRNG key array (``jax.random.key``): dtype ``key<impl>``, its data uint32."""
    return is_array(value) and str(value.dtype).startswith("key<")


def on_host(value: object) -> np.ndarray:
    """An array as NumPy reads it; a typed PRNG key, which NumPy cannot read, as its key data."""
    if is_key(value):
        import jax

        value = jax.random.key_data(value)
    return np.asarray(value)


def is_dtype(value: object) -> bool:
    """A dtype as a user writes one: ``jnp.float32`` (a scalar type), ``np.float32`` or a
    ``np.dtype`` (``jnp.dtype("bfloat16")``); not Python's ``float``."""
    if isinstance(value, np.dtype):
        return True
    if not isinstance(value, type):
        return False
    return issubclass(value, np.generic) or isinstance(getattr(value, "dtype", None), np.dtype)


def is_number(value: object) -> bool:
    """A Python bool, int or float (what a pytree may hold as a leaf that jit traces)."""
    return isinstance(value, bool | int | float) and not isinstance(value, np.generic)


def is_function(value: object) -> bool:
    """A user's function (def, lambda, partial, bound method) that a field may hold."""
    return isinstance(value, types.FunctionType | types.MethodType | functools.partial)


def _is_model_part(value: object) -> bool:
    return is_eqx_module(value) or is_nnx_module(value) or is_variable(value)


def is_jitted(value: object) -> bool:
    """A jitted function or a library's callable (jit wrappers, custom_jvp): JAX's object."""
    package = type(value).__module__.split(".")[0]
    plain = not _is_model_part(value) and not is_function(value)
    return callable(value) and plain and package in LIBRARY_PACKAGES


def is_library_internal(value: object) -> bool:
    """An object of JAX's or a library's own that is no model part (nnx's GraphDef, State);
    a flax.struct dataclass (a TrainState) and a linen module are users' objects."""
    package = type(value).__module__.split(".")[0]
    if package not in LIBRARY_PACKAGES or package in ("builtins", "functools"):
        return False
    user = is_flax_struct(value) or is_linen_module(value)
    return not (_is_model_part(value) or is_array(value) or user)


def release_equinox_modules(objects: list[object]) -> None:
    """Let equinox forget ``objects`` as modules under ``__init__``: one made by ``deepcopy``
    (a stand-in for a new instance) or whose ``__init__`` raised stays in its private set for
    good. Equinox's private state, read here alone; an equinox without it is left alone."""
    module = sys.modules.get("equinox._module._module")
    pending = getattr(getattr(module, "_currently_initialising", None), "_dict", None)
    if isinstance(pending, dict):
        for obj in objects:
            pending.pop(id(obj), None)


def pytree_children(node: object) -> list[tuple[KeyPath, object]] | None:
    """(key path, child) of each of ``node``'s pytree children, one level down; None for a
    leaf, or for a node that cannot flatten (no pytree jit could take)."""
    import jax

    try:
        found, _ = jax.tree_util.tree_flatten_with_path(node, is_leaf=lambda x: x is not node)
    except Exception:
        return None
    return None if len(found) == 1 and found[0][1] is node else found


def object_kind(obj: object) -> str:
    """What kind of object this is, in the words of its library (used to break ties)."""
    if is_eqx_module(obj):
        return "eqx.Module"
    if is_nnx_module(obj):
        return "nnx.Module"
    if is_flax_struct(obj):
        return "flax.struct dataclass"
    pytree = pytree_children(obj) is not None
    if dataclasses.is_dataclass(obj):
        return "pytree dataclass" if pytree else "dataclass"
    return "pytree" if pytree else "plain object"


def flattened_in_python(obj: object) -> bool | None:
    """Whether flattening ``obj`` one level (as jit does at every call) runs Python code: a
    class registered with Python callbacks (``register_pytree_node``, an eqx.Module), rather
    than one JAX flattens in C++ (``register_dataclass``, a dict, a tuple). Tried: the Python
    functions called while ``jax.tree_util`` flattens it are counted. None for a leaf."""
    import jax

    if pytree_children(obj) is None:
        return None

    def below(node: object) -> bool:  # one level: its children are leaves
        return node is not obj

    own = (jax.tree_util.tree_flatten.__code__, below.__code__)
    called: list[types.CodeType] = []

    def profile(frame: types.FrameType, event: str, _: object) -> None:
        if event == "call" and frame.f_code not in own:
            called.append(frame.f_code)

    before = sys.getprofile()
    sys.setprofile(profile)
    try:
        jax.tree_util.tree_flatten(obj, is_leaf=below)
    finally:
        sys.setprofile(before)
    return bool(called)
