"""New values for a field, the kind its users set: another static value, a new array.

The scenario (:mod:`jitbench.subjects.scenario`) asks these for every change it makes.
"""

from __future__ import annotations

import enum
from typing import Any

import numpy as np


def new_value(value: Any) -> Any:
    """Another value of a static field's type: a bool flipped, a number changed, a string
    changed, the next enum member, a tuple's first item changed; None when there is none."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, enum.Enum):
        members = list(type(value))
        return members[(members.index(value) + 1) % len(members)] if len(members) > 1 else None
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "_changed"
    if isinstance(value, tuple) and value:
        first = new_value(value[0])
        return None if first is None else (first, *value[1:])
    return None


def new_array(like: Any, rng: np.random.Generator, shape: tuple[int, ...] | None = None) -> Any:
    """An array of new values shaped ``shape`` (default: ``like``'s), of ``like``'s dtype and
    placement (a jax array goes where ``like`` is; a NumPy one stays NumPy)."""
    shape = tuple(like.shape) if shape is None else shape
    dtype = like.dtype
    import jax.numpy as jnp

    if jnp.issubdtype(dtype, jnp.integer):
        values = rng.integers(0, 100, shape).astype(dtype)
    else:
        values = rng.standard_normal(shape).astype(dtype)
    if isinstance(like, np.ndarray):
        return values
    import jax

    if not like.committed:  # placed as jnp.asarray places it: a committed copy keys jit apart
        return jnp.asarray(values)
    sharding = like.sharding
    if tuple(shape) != tuple(like.shape) and isinstance(sharding, jax.sharding.NamedSharding):
        # the new leading axis is not sharded; the others stay as they were
        spec = jax.sharding.PartitionSpec(None, *sharding.spec)
        sharding = jax.sharding.NamedSharding(sharding.mesh, spec)
    return jax.device_put(values, sharding)


def new_shape(like: Any) -> tuple[int, ...]:
    """The scenario's new shape for an array: a leading axis of 2 (``(64,)`` -> ``(2, 64)``)."""
    return (2, *like.shape)
