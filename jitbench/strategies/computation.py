"""The one computation every strategy jits, rendered as source lines, and its NumPy reference.

Why the body looks as it does (every input shows in the result): docs/design.md.
"""

from __future__ import annotations

import functools
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike  # a NumPy or JAX array, or a number

# A nested shape's layer: two arrays and a flag (see jitbench.strategies.codegen.Shape.depth).
LAYER_FIELDS = ("weight", "bias", "act")


def render_body(
    arrays: Sequence[str], statics: Sequence[str], n_ops: int, *, y: str = "y", xp: str = "jnp"
) -> list[str]:
    """Lines of the method body, ending in ``return``, for the given field expressions."""
    if len(arrays) == 1 and n_ops == 1:
        lines, x = [], arrays[0]
    else:
        lines, x = [f"x = {' + '.join(arrays)}"], "x"
    lines.append(f"acc = {x} * {y}")
    lines += [f"acc = {xp}.cos(acc) + x"] * (n_ops - 1)
    lines += [f"acc = acc * {y} + {s} if {s} % 2 else acc + {s}" for s in statics]
    lines.append("return acc")
    return lines


def layer_step(weight: str, bias: str, act: str, *, xp: str = "jnp") -> list[str]:
    """Lines of one layer's computation of ``y``: an affine step, then ``tanh`` where the
    flag is set."""
    return [f"y = {weight} * y + {bias}", f"y = {xp}.tanh(y) if {act} else y"]


def reference_layers(
    layers: Sequence[tuple[ArrayLike, ArrayLike, bool]], y: ArrayLike
) -> np.ndarray:
    """The expected result of a nested shape's call: the layers' (weight, bias, act) in
    order, computed with NumPy in float64 from host copies."""
    step = _layer_function()
    out = np.asarray(y, dtype=np.float64)
    for weight, bias, act in layers:
        host = (np.asarray(a, dtype=np.float64) for a in (weight, bias))
        out = step(np, *host, bool(act), out)
    return out


def _function(
    name: str, params: list[str], lines: list[str], filename: str
) -> Callable[..., ArrayLike]:
    """The function ``name(*params)`` whose body is ``lines``, compiled under ``filename``."""
    source = f"def {name}({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in lines)
    namespace: dict[str, Callable[..., ArrayLike]] = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


@functools.cache
def _layer_function() -> Callable[..., ArrayLike]:
    """:func:`layer_step` as a function of ``(xp, weight, bias, act, y)``."""
    lines = [*layer_step("weight", "bias", "act", xp="xp"), "return y"]
    params = ["xp", "weight", "bias", "act", "y"]
    return _function("step", params, lines, "<jitbench layer step>")


@functools.cache
def _compiled(n_arrays: int, n_static: int, n_ops: int) -> Callable[..., ArrayLike]:
    arrays = [f"a{i}" for i in range(n_arrays)]
    statics = [f"s{i}" for i in range(n_static)]
    body = render_body(arrays, statics, n_ops, xp="xp")
    filename = f"<jitbench compute {n_arrays}a{n_static}s{n_ops}ops>"
    return _function("compute", ["xp", *arrays, *statics, "y"], body, filename)


def compute(
    xp: types.ModuleType,
    arrays: Sequence[ArrayLike],
    statics: Sequence[int],
    y: ArrayLike,
    n_ops: int,
) -> ArrayLike:
    """Evaluate the rendered body with the array module ``xp`` (``jax.numpy`` or NumPy)."""
    return _compiled(len(arrays), len(statics), n_ops)(xp, *arrays, *statics, y)


def reference_calc(
    arrays: Sequence[ArrayLike], statics: Sequence[int], y: ArrayLike, n_ops: int = 1
) -> np.ndarray:
    """The expected result, computed with NumPy in float64 from host copies."""
    host = [np.asarray(a, dtype=np.float64) for a in arrays]
    y = np.asarray(y, dtype=np.float64)
    return np.asarray(compute(np, host, [int(s) for s in statics], y, n_ops))
