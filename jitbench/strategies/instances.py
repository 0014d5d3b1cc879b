"""Ready-to-call instances of the generated classes, with their data on a device."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from jitbench.devices import Placement, resolve
from jitbench.errors import JitbenchError
from jitbench.strategies.codegen import DEFAULT_SHAPE, Recipe, Shape, layer_class, make_class
from jitbench.strategies.computation import LAYER_FIELDS
from jitbench.targets.kinds import flattened_in_python, object_kind

if TYPE_CHECKING:
    import jax

DTYPES = ("float32", "float64", "bfloat16", "float16")
DEFAULT_STATIC = 1
# Values drawn per array; a longer array repeats them (random_array).
DRAWN = 1 << 20


def check_size(size: object) -> int:
    """``size`` as an int, or JitbenchError when it is not a positive integer."""
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 1:
        raise JitbenchError(f"size must be a positive integer, got {size!r}")
    return int(size)


def random_array(
    placement: Placement, shape: tuple[int, ...], rng: np.random.Generator, dtype: str = "float32"
) -> jax.Array:
    """An array of standard-normal values placed for ``placement``."""
    if dtype not in DTYPES:
        raise JitbenchError(f"unknown dtype {dtype!r}; valid: {', '.join(DTYPES)}")
    import jax.numpy as jnp

    # Drawn in float32 (NumPy's float64 draw takes 4x as long), float64 drawn as such; half
    # precisions cast from float32. Beyond DRAWN elements the draw repeats: a call's time does
    # not depend on the values, and a draw of 1e8 elements (an accelerator's loop rows, two
    # arrays a row) took 1.5 s here, against 0.1 s for this.
    kind = np.float64 if dtype == "float64" else np.float32
    total = int(np.prod(shape))
    drawn = rng.standard_normal(min(total, DRAWN), dtype=kind).astype(jnp.dtype(dtype))
    return placement.put(np.resize(drawn, shape) if total > DRAWN else drawn.reshape(shape))


def make_instance(
    strategy: Recipe,
    size: int,
    placement: Placement,
    shape: Shape = DEFAULT_SHAPE,
    *,
    dtype: str = "float32",
    seed: int = 0,
    statics: int = DEFAULT_STATIC,
    probe: bool = False,
) -> tuple[object, jax.Array]:
    """An instance with ``shape.n_arrays`` arrays of ``size`` elements, and its ``y``.

    Sharded placements round ``size`` up to a multiple of the device count;
    read the real length from ``y.shape``. Every static field starts at ``statics``.
    A nested shape gets ``shape.depth`` layers of the generated module's ``Layer``,
    each with a weight and a bias of ``size`` elements and its flag set.
    ``probe`` builds the probed class (see :func:`jitbench.strategies.codegen.make_class`).
    """
    size = check_size(size)
    cls = make_class(strategy, shape, probe)
    length = placement.round_size(size)
    draw = functools.partial(random_array, placement, (length,), np.random.default_rng(seed), dtype)
    fields: dict[str, object] = {name: draw() for name in shape.array_fields}
    fields.update(dict.fromkeys(shape.static_fields, statics))
    if shape.depth:
        layer = layer_class(cls)
        weight, bias, act = LAYER_FIELDS
        fields["layers"] = [
            layer(**{weight: draw(), bias: draw(), act: True}) for _ in range(shape.depth)
        ]
    return cls(**fields), draw()


def class_kind(strategy: Recipe) -> str:
    """The kind of object the strategy's class is (``kinds.object_kind``'s words): its
    catalog entry's ``kind``, else (a plugin's) that of an instance made on the CPU."""
    return strategy.kind or _made_kind(strategy)


@functools.cache
def _made_kind(strategy: Recipe) -> str:
    obj, _ = make_instance(strategy, 4, resolve("cpu"))
    return object_kind(obj)


@functools.cache
def class_flattening(strategy: Recipe) -> bool | None:
    """Whether jit flattens the strategy's class by Python code (``kinds.flattened_in_python``,
    tried on an instance made on the CPU); None where it is no pytree."""
    obj, _ = make_instance(strategy, 4, resolve("cpu"))
    return flattened_in_python(obj)
