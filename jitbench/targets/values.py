"""New values for a field, the kind its users set: another valid value, a new array; None where
none is known (see README.md).
"""

from __future__ import annotations

import enum
import functools
import types
from collections.abc import Sequence
from typing import Any

import numpy as np


def new_number(value: bool | int | float) -> bool | int | float:
    """A bool flipped; a number scaled within its sign and magnitude (|x| < 1 halved, else
    doubled; 0 becomes 1), its type kept."""
    if isinstance(value, bool):
        return not value
    if value == 0:
        return type(value)(1)
    if isinstance(value, int):
        return value * 2
    return value / 2 if abs(value) < 1 else value * 2


def fresh_function(function: Any) -> Any:
    """A new function object of the same code and closure (a bound method's: bound to the same
    object), as rebuilding the object that holds it makes one; None for a builtin."""
    if isinstance(function, functools.partial):
        inner = fresh_function(function.func)
        return (
            None if inner is None else functools.partial(inner, *function.args, **function.keywords)
        )
    if isinstance(function, types.MethodType):
        inner = fresh_function(function.__func__)
        return None if inner is None else types.MethodType(inner, function.__self__)
    if not isinstance(function, types.FunctionType):
        return None
    fresh = types.FunctionType(
        function.__code__, function.__globals__, function.__name__, function.__defaults__,
        function.__closure__,
    )  # fmt: skip
    fresh.__kwdefaults__ = function.__kwdefaults__
    fresh.__dict__.update(function.__dict__)
    return functools.update_wrapper(fresh, function, assigned=("__qualname__", "__doc__"))


def new_value(value: Any, choices: Sequence[Any] = ()) -> Any:
    """Another valid value for a field holding ``value`` (None when none is known): another of
    its declared ``choices`` (a ``Literal``'s), the next enum member, a scaled number, a fresh
    function; a string needs declared choices."""
    options = [c for c in choices if c != value]
    if options:
        return options[0]
    if isinstance(value, enum.Enum):
        members = [m for m in type(value) if m != value]
        return members[0] if members else None
    if isinstance(value, bool | int | float):
        return new_number(value)
    if callable(value):
        return fresh_function(value)
    return None


def new_array(like: Any, rng: np.random.Generator, shape: tuple[int, ...] | None = None) -> Any:
    """An array of new values shaped ``shape`` (default: ``like``'s) in ``like``'s range (its
    sign and bounds kept; a constant array varies around its value), of its dtype, weak type
    and placement (a jax array goes where ``like`` is; a NumPy one stays NumPy)."""
    shape = tuple(like.shape) if shape is None else tuple(shape)
    host = np.asarray(like)
    low, high = (float(host.min()), float(host.max())) if host.size else (0.0, 1.0)
    if low == high:  # a constant: values around it, of its sign
        low, high = (low / 2, low * 2) if low > 0 else (low * 2, low / 2) if low < 0 else (-1, 1)
    if host.dtype.kind in "iub":
        values = rng.integers(int(low), int(high) + 1, shape).astype(host.dtype)
    else:
        values = rng.uniform(low, high, shape).astype(host.dtype)
    if isinstance(like, np.ndarray):
        return values
    import jax
    from jax import lax

    if like.weak_type:  # a weak-typed array (jnp.asarray(1.0)): replaced by one as weak
        return lax.full_like(like, 0, shape=shape).at[...].set(values)
    if not like.committed:  # placed as jnp.asarray places it: a committed copy keys jit apart
        return jax.numpy.asarray(values)
    sharding = like.sharding
    if shape != tuple(like.shape) and isinstance(sharding, jax.sharding.NamedSharding):
        # the new leading axis is not sharded; the others stay as they were
        spec = jax.sharding.PartitionSpec(None, *sharding.spec)
        sharding = jax.sharding.NamedSharding(sharding.mesh, spec)
    return jax.device_put(values, sharding)


def new_shape(like: Any) -> tuple[int, ...]:
    """The scenario's new shape for an array: a leading axis of 2 (``(64,)`` -> ``(2, 64)``)."""
    return (2, *like.shape)
