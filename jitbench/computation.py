"""The one computation every strategy jits, and its NumPy reference.

Every generated class computes ``compute(xp, arrays, statics, y, n_ops)`` with
``xp`` = ``jax.numpy`` (or NumPy for the reference), so a difference between
strategies is a difference in *how* the method is jitted, never in *what* it
computes.

The body is built so that every input shows in the result, which is what lets
the audit detect stale results:

* the arrays are summed into ``x`` and enter as ``x * y``;
* ``n_ops - 1`` further elementwise stages ``cos(acc) + x`` grow the traced
  program (trace and compile cost) while keeping ``x`` in the result and
  the values bounded;
* each static field ``s`` picks the program's shape: odd values multiply by
  ``y`` again, even ones do not, and every value is added as a constant, so
  two different values always give two different programs and results.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def compute(xp: Any, arrays: Sequence[Any], statics: Sequence[int], y: Any, n_ops: int) -> Any:
    """Evaluate the benchmark function with the array module ``xp``."""
    x = arrays[0]
    for a in arrays[1:]:
        x = x + a
    acc = x * y
    for _ in range(n_ops - 1):
        acc = xp.cos(acc) + x
    for s in statics:
        acc = acc * y + s if s % 2 else acc + s
    return acc


def reference_calc(
    arrays: Sequence[Any], statics: Sequence[int], y: Any, n_ops: int = 1
) -> np.ndarray:
    """The expected result, computed with NumPy in float64 from host copies."""
    host = [np.asarray(a, dtype=np.float64) for a in arrays]
    return compute(np, host, [int(s) for s in statics], np.asarray(y, dtype=np.float64), n_ops)
