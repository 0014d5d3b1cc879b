"""JAX's own dispatch benchmarks as jitbench targets: the same functions, the same arguments.

JAX's ``benchmarks/api_benchmark.py`` times a few jitted calls with
google_benchmark, with and without the wait for the result; each is a target
here, so ``jitbench time`` measures the call theirs measures (its cached call
waits, its loop per call waits once, for the last call, as their ``_dispatch`` loops do)::

    PYTHONPATH=docs/examples jitbench time jax_api:trivial
    PYTHONPATH=docs/examples jitbench time jax_api:simple
    PYTHONPATH=docs/examples jitbench time jax_api:small_matmul

``docs/ecosystem.py`` runs both and sets the figures side by side.
"""

from __future__ import annotations

import operator

import jax
import jax.numpy as jnp
import numpy as np

from jitbench.targets import Target


def swap(a, b):
    return b, a


def trivial() -> Target:
    """``jit_trivial``: ``jax.jit(swap)`` on two arrays it returns swapped."""
    f = jax.jit(swap)
    a, b = f(1, 2)
    return Target(f, (a, b), name="jax_api:trivial")


def simple() -> Target:
    """``jit_simple``: ``jax.jit(operator.add)`` on two scalars already on the device."""
    a, b = jax.device_put(1), jax.device_put(2)
    return Target(jax.jit(operator.add), (a, b), name="jax_api:simple")


def small_matmul() -> Target:
    """``jit_small_matmul``: ``x @ x`` of a 2x2 float32 array."""
    x = jax.device_put(np.random.default_rng(0).uniform(size=(2, 2)).astype(np.float32))
    return Target(jax.jit(lambda x: jnp.dot(x, x)), (x,), name="jax_api:small_matmul")
