"""Ready-to-call instances of the generated classes, with data on a device."""

from __future__ import annotations

from typing import Any

import numpy as np

from jitbench.devices import Placement, resolve
from jitbench.errors import JitbenchError
from jitbench.strategies import Strategy, get_strategy

DTYPES = ("float32", "float64", "bfloat16", "float16")
DEFAULT_STATIC = 1


def _strategy(strategy: str | Strategy) -> Strategy:
    return strategy if isinstance(strategy, Strategy) else get_strategy(strategy)


def make_class(
    strategy: str | Strategy, *, n_arrays: int = 1, n_static: int = 1, n_ops: int = 1
) -> type:
    """The generated class of ``strategy`` with the given width, static fields and ops."""
    return _strategy(strategy).make_class(n_arrays=n_arrays, n_static=n_static, n_ops=n_ops)


def check_size(size: int) -> int:
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
        raise JitbenchError(f"size must be a positive integer, got {size!r}")
    return int(size)


def random_array(
    placement: Placement, shape: tuple[int, ...], dtype: str, rng: np.random.Generator
) -> Any:
    """A host array of standard-normal values placed for ``placement``."""
    if dtype not in DTYPES:
        raise JitbenchError(f"unknown dtype {dtype!r}; valid: {', '.join(DTYPES)}")
    import jax.numpy as jnp

    return placement.put(rng.standard_normal(shape).astype(jnp.dtype(dtype)))


def make_instance(
    strategy: str | Strategy,
    size: int,
    *,
    device: str = "cpu",
    dtype: str = "float32",
    seed: int = 0,
    n_arrays: int = 1,
    n_static: int = 1,
    n_ops: int = 1,
    statics: int = DEFAULT_STATIC,
) -> tuple[Any, Any]:
    """An instance with ``n_arrays`` arrays of ``size`` elements on ``device``, and its ``y``.

    Sharded devices round ``size`` up to a multiple of the device count; read
    the real length from ``y.shape``. Every static field starts at ``statics``.
    """
    size = check_size(size)
    chosen = _strategy(strategy)
    cls = chosen.make_class(n_arrays=n_arrays, n_static=n_static, n_ops=n_ops)
    placement = resolve(device)
    length = placement.round_size(size)
    rng = np.random.default_rng(seed)
    shape = cls._jb_shape
    fields: dict[str, Any] = {
        name: random_array(placement, (length,), dtype, rng) for name in shape.array_fields
    }
    fields.update({name: statics for name in shape.static_fields})
    y = random_array(placement, (length,), dtype, rng)
    return cls(**fields), y
