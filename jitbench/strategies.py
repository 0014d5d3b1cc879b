"""The strategies for jitting a method, and the registry the suite reads.

Each strategy is a recipe that turns a :class:`Shape` (how many array fields,
static fields and elementwise stages) into a class with a ``calc(y)`` method.
All recipes share :func:`jitbench.computation.compute`, so they differ only in
how the method meets ``jax.jit``'s cache, which is what the suite measures.

JAX is imported inside the recipes, never at module import: ``import jitbench``
runs in every asv process, and the registry must be readable without starting
(or even importing) JAX.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import importlib.util
from collections.abc import Callable
from typing import Any

import numpy as np

from jitbench.computation import compute
from jitbench.errors import JitbenchError, StrategyUnavailable


@dataclasses.dataclass(frozen=True)
class Shape:
    """The knobs of a generated class.

    ``n_arrays`` scales the pytree width (leaves per call), ``n_static`` the
    static part of the cache key, ``n_ops`` the size of the traced program.
    """

    n_arrays: int = 1
    n_static: int = 1
    n_ops: int = 1

    def __post_init__(self) -> None:
        for name in ("n_arrays", "n_static", "n_ops"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise JitbenchError(f"{name} must be a positive integer, got {value!r}")

    @property
    def array_fields(self) -> tuple[str, ...]:
        return tuple(f"a{i}" for i in range(self.n_arrays))

    @property
    def static_fields(self) -> tuple[str, ...]:
        return tuple(f"s{i}" for i in range(self.n_static))


def arrays_of(obj: Any) -> list[Any]:
    """The array fields of a generated instance, in field order."""
    return [getattr(obj, name) for name in obj._jb_shape.array_fields]


def statics_of(obj: Any) -> list[int]:
    """The static fields of a generated instance, in field order."""
    return [getattr(obj, name) for name in obj._jb_shape.static_fields]


def raw_calc(self: Any, y: Any) -> Any:
    """The unjitted method body shared by every generated class."""
    import jax.numpy as jnp

    return compute(jnp, arrays_of(self), statics_of(self), y, self._jb_shape.n_ops)


def _setattr_update(obj: Any, changes: dict[str, Any]) -> Any:
    for name, value in changes.items():
        setattr(obj, name, value)
    return obj


def _dataclass_update(obj: Any, changes: dict[str, Any]) -> Any:
    return dataclasses.replace(obj, **changes)


def _method_update(obj: Any, changes: dict[str, Any]) -> Any:
    return obj.replace(**changes)


@dataclasses.dataclass(frozen=True)
class Strategy:
    """One way of putting ``jax.jit`` on a method.

    ``frozen`` strategies are changed by building a new object (``update``
    returns it); the others are changed in place. ``requires`` lists the
    importable packages the recipe needs and ``extra`` the pip extra that
    installs them.
    """

    name: str
    summary: str
    mechanism: str
    build: Callable[[Shape], type]
    requires: tuple[str, ...] = ()
    extra: str | None = None
    frozen: bool = False
    jitted: bool = True
    replace: Callable[[Any, dict[str, Any]], Any] = _setattr_update

    @property
    def unavailable_reason(self) -> str | None:
        """Why the strategy cannot run here, or None when it can."""
        for package in self.requires:
            if importlib.util.find_spec(package) is None:
                hint = f" (pip install 'jitbench[{self.extra}]')" if self.extra else ""
                return f"strategy {self.name!r} needs package {package!r}{hint}"
        return None

    @property
    def available(self) -> bool:
        return self.unavailable_reason is None

    def check_available(self) -> None:
        """Raise :class:`StrategyUnavailable` (asv shows n/a) when a package is missing."""
        reason = self.unavailable_reason
        if reason is not None:
            raise StrategyUnavailable(reason)

    def make_class(self, *, n_arrays: int = 1, n_static: int = 1, n_ops: int = 1) -> type:
        """The generated class for this strategy and shape (one class per shape)."""
        self.check_available()
        return _build_class(self, Shape(n_arrays, n_static, n_ops))

    def update(self, obj: Any, **changes: Any) -> Any:
        """Change fields the way a user of this style does; returns the changed object."""
        shape = obj._jb_shape
        unknown = sorted(set(changes) - set(shape.array_fields + shape.static_fields))
        if unknown:
            raise JitbenchError(f"unknown field(s) {unknown} for {type(obj).__name__}")
        return self.replace(obj, changes)


@functools.cache
def _build_class(strategy: Strategy, shape: Shape) -> type:
    # One class per (strategy, shape): jit's cache is keyed on function identity,
    # so reusing the class is what lets a second instance hit the cache.
    cls = strategy.build(shape)
    cls._jb_shape = shape
    cls._jb_strategy = strategy.name
    return cls


def _class_name(prefix: str, shape: Shape) -> str:
    return f"{prefix}_{shape.n_arrays}a_{shape.n_static}s_{shape.n_ops}ops"


def _plain_init(self: Any, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(self, name, value)


def _plain_repr(self: Any) -> str:
    return f"<{type(self).__name__} statics={statics_of(self)} at {id(self):#x}>"


def _plain_class(prefix: str, shape: Shape, namespace: dict[str, Any]) -> type:
    body = {"__init__": _plain_init, "__repr__": _plain_repr, **namespace}
    return type(_class_name(prefix, shape), (), body)


# --- the recipes -------------------------------------------------------------


def _build_eager(shape: Shape) -> type:
    return _plain_class("Eager", shape, {"calc": raw_calc})


def _build_bound_method_jit(shape: Shape) -> type:
    import jax

    def __init__(self: Any, **fields: Any) -> None:
        _plain_init(self, **fields)
        # jax.jit(obj.calc), wrapped once per instance and reused: the cache key
        # holds no attribute of self, hence the stale results after a change.
        self.calc = jax.jit(self._calc)

    return _plain_class("BoundMethodJit", shape, {"__init__": __init__, "_calc": raw_calc})


def _helper(arrays: tuple[Any, ...], y: Any, statics: tuple[int, ...], n_ops: int) -> Any:
    import jax.numpy as jnp

    return compute(jnp, arrays, statics, y, n_ops)


@functools.cache
def helper_jit() -> Callable[..., Any]:
    """The module-level jitted helper of the ``helper_function`` strategy."""
    import jax

    return jax.jit(_helper, static_argnames=("statics", "n_ops"))


def _build_helper_function(shape: Shape) -> type:
    def calc(self: Any, y: Any) -> Any:
        return helper_jit()(
            tuple(arrays_of(self)), y, statics=tuple(statics_of(self)), n_ops=shape.n_ops
        )

    return _plain_class("HelperFunction", shape, {"calc": calc})


def _build_static_self_id_hash(shape: Shape) -> type:
    import jax

    calc = functools.partial(jax.jit, static_argnums=0)(raw_calc)
    return _plain_class("StaticSelfIdHash", shape, {"calc": calc})


def _array_key(a: Any) -> tuple[tuple[int, ...], str, int]:
    # jax.Array is unhashable, so the value hash copies each array to the host
    # and hashes its bytes: O(size) work on every call, since jit hashes its
    # static arguments at every call. blake2b is used because Python's hash of
    # a bytes object would need an extra copy into a bytes object anyway.
    host = np.ascontiguousarray(np.asarray(a))
    digest = hashlib.blake2b(host.data, digest_size=8).digest()
    return host.shape, host.dtype.str, int.from_bytes(digest, "little")


def _build_static_self_value_hash(shape: Shape) -> type:
    import jax

    def __hash__(self: Any) -> int:
        return hash((tuple(statics_of(self)), tuple(_array_key(a) for a in arrays_of(self))))

    def __eq__(self: Any, other: object) -> bool:
        # Exact comparison (not the digests): equal hashes must not make two
        # different objects share one compiled program.
        if type(other) is not type(self):
            return NotImplemented
        return statics_of(self) == statics_of(other) and all(
            np.array_equal(np.asarray(a), np.asarray(b))
            for a, b in zip(arrays_of(self), arrays_of(other), strict=True)
        )

    calc = functools.partial(jax.jit, static_argnums=0)(raw_calc)
    namespace = {"calc": calc, "__hash__": __hash__, "__eq__": __eq__}
    return _plain_class("StaticSelfValueHash", shape, namespace)


def _build_pytree_class(shape: Shape) -> type:
    import jax

    def tree_flatten(self: Any) -> tuple[tuple[Any, ...], tuple[int, ...]]:
        return tuple(arrays_of(self)), tuple(statics_of(self))

    @classmethod
    def tree_unflatten(cls: type, aux: tuple[int, ...], children: tuple[Any, ...]) -> Any:
        obj = object.__new__(cls)
        _plain_init(obj, **dict(zip(shape.array_fields, children, strict=True)))
        _plain_init(obj, **dict(zip(shape.static_fields, aux, strict=True)))
        return obj

    namespace = {
        "calc": jax.jit(raw_calc),
        "tree_flatten": tree_flatten,
        "tree_unflatten": tree_unflatten,
    }
    return jax.tree_util.register_pytree_node_class(_plain_class("PytreeClass", shape, namespace))


def _dataclass_fields(shape: Shape, static_field: Callable[[], Any] | None = None) -> list[Any]:
    fields: list[Any] = [(name, Any) for name in shape.array_fields]
    for name in shape.static_fields:
        fields.append((name, int) if static_field is None else (name, int, static_field()))
    return fields


def _build_pytree_dataclass(shape: Shape) -> type:
    import jax

    cls = dataclasses.make_dataclass(
        _class_name("PytreeDataclass", shape),
        _dataclass_fields(shape),
        namespace={"calc": jax.jit(raw_calc)},
        frozen=True,
    )
    return jax.tree_util.register_dataclass(
        cls, data_fields=list(shape.array_fields), meta_fields=list(shape.static_fields)
    )


def _build_jit_per_call(shape: Shape) -> type:
    import jax

    def calc(self: Any, y: Any) -> Any:
        return jax.jit(self._calc)(y)

    return _plain_class("JitPerCall", shape, {"calc": calc, "_calc": raw_calc})


def _build_equinox_filter_jit(shape: Shape) -> type:
    import equinox as eqx
    import jax

    namespace: dict[str, Any] = {
        "__annotations__": {
            **{name: jax.Array for name in shape.array_fields},
            **{name: int for name in shape.static_fields},
        },
        **{name: eqx.field(static=True) for name in shape.static_fields},
        "calc": eqx.filter_jit(raw_calc),
    }
    return type(_class_name("EquinoxFilterJit", shape), (eqx.Module,), namespace)


def _build_flax_struct_dataclass(shape: Shape) -> type:
    import jax
    from flax import struct

    namespace: dict[str, Any] = {
        "__annotations__": {
            **{name: jax.Array for name in shape.array_fields},
            **{name: int for name in shape.static_fields},
        },
        **{name: struct.field(pytree_node=False) for name in shape.static_fields},
        "calc": jax.jit(raw_calc),
    }
    return struct.dataclass(type(_class_name("FlaxStructDataclass", shape), (), namespace))


def _build_flax_nnx_jit(shape: Shape) -> type:
    from flax import nnx

    def __init__(self: Any, **fields: Any) -> None:
        _plain_init(self, **fields)

    namespace = {"__init__": __init__, "calc": nnx.jit(raw_calc)}
    return type(_class_name("FlaxNnxJit", shape), (nnx.Module,), namespace)


STRATEGIES: dict[str, Strategy] = {}


def register_strategy(strategy: Strategy, *, replace: bool = False) -> Strategy:
    """Add a strategy to :data:`STRATEGIES`; the asv suite reads the registry at import.

    Register before the benchmarks are imported (e.g. from a module named in
    ``JITBENCH_PLUGINS``, see the README) so the grid includes it.
    """
    if not replace and strategy.name in STRATEGIES:
        raise JitbenchError(f"strategy {strategy.name!r} is already registered")
    STRATEGIES[strategy.name] = strategy
    return strategy


def get_strategy(name: str) -> Strategy:
    """Look a strategy up by name; an unknown name lists the valid ones."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise JitbenchError(f"unknown strategy {name!r}; valid: {', '.join(STRATEGIES)}") from None


for _strategy in (
    Strategy(
        "eager",
        "plain Python method, no jit: the baseline",
        "op-by-op dispatch of jax.numpy, nothing cached",
        _build_eager,
        jitted=False,
    ),
    Strategy(
        "bound_method_jit",
        "jax.jit(obj.calc) wrapped once per instance and reused",
        "attributes are closed over at trace time; the key ignores them (stale after a change)",
        _build_bound_method_jit,
    ),
    Strategy(
        "helper_function",
        "method calls a module-level jitted function (JAX docs, strategy 1)",
        "flags as static_argnames, arrays as dynamic arguments",
        _build_helper_function,
    ),
    Strategy(
        "static_self_id_hash",
        "partial(jax.jit, static_argnums=0) with the default identity hash",
        "self is static and hashed by id: changes go unseen (stale), instances kept alive",
        _build_static_self_id_hash,
    ),
    Strategy(
        "static_self_value_hash",
        "static self with __hash__/__eq__ over field values (JAX docs, strategy 2)",
        "self is static and hashed by value; arrays hashed by content, baked in as constants",
        _build_static_self_value_hash,
    ),
    Strategy(
        "pytree_class",
        "register_pytree_node_class, plain jax.jit on the method (JAX docs, strategy 3)",
        "arrays are children, flags aux data; Python flatten/unflatten at every call",
        _build_pytree_class,
    ),
    Strategy(
        "pytree_dataclass",
        "frozen dataclass registered with jax.tree_util.register_dataclass",
        "data and meta fields flattened in C++; changed with dataclasses.replace",
        _build_pytree_dataclass,
        frozen=True,
        replace=_dataclass_update,
    ),
    Strategy(
        "jit_per_call",
        "a new jax.jit(self._calc) wrapper made inside every call (anti-pattern)",
        "a fresh jit object per call; what it reuses depends on JAX's tracing caches",
        _build_jit_per_call,
    ),
    Strategy(
        "equinox_filter_jit",
        "eqx.Module with eqx.filter_jit on the method",
        "arrays partitioned from everything else at every call; frozen, dataclasses.replace",
        _build_equinox_filter_jit,
        requires=("equinox",),
        extra="equinox",
        frozen=True,
        replace=_dataclass_update,
    ),
    Strategy(
        "flax_struct_dataclass",
        "flax.struct.dataclass, flags as pytree_node=False, jax.jit on the method",
        "a register_dataclass pytree under the hood; frozen, changed with .replace",
        _build_flax_struct_dataclass,
        requires=("flax",),
        extra="flax",
        frozen=True,
        replace=_method_update,
    ),
    Strategy(
        "flax_nnx_jit",
        "nnx.Module with nnx.jit on the method",
        "graph traversal in Python at every call; mutable, changed in place",
        _build_flax_nnx_jit,
        requires=("flax",),
        extra="flax",
    ),
):
    register_strategy(_strategy)
