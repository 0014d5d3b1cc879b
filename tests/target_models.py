"""Targets written the way their users write them, for the tests of targets in the grid.

``make_model``: a ``jax.tree_util.register_dataclass`` model whose ``__call__``
calls a module-level jitted function with the model as a pytree argument;
``make_rejitted``: the same model jitting a new function at every call (a recompile at each).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from jitbench.targets import Target


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Affine:
    weight: jax.Array
    bias: jax.Array
    scale: float = dataclasses.field(default=2.0, metadata={"static": True})

    def __call__(self, x: jax.Array) -> jax.Array:
        return _apply(self, x)


@jax.jit
def _apply(model: Affine, x: jax.Array) -> jax.Array:
    return x * model.weight * model.scale + model.bias


def make_model() -> Target:
    return Target(Affine(jnp.ones(8), jnp.zeros(8)), inputs=(jnp.arange(8.0),))


not_a_factory = 3


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Arrays:
    """Only array fields: no static field to change."""

    weight: jax.Array

    def __call__(self, x: jax.Array) -> jax.Array:
        return _double(self, x)


@jax.jit
def _double(model: Arrays, x: jax.Array) -> jax.Array:
    return 2 * x * model.weight


def make_arrays() -> Target:
    return Target(Arrays(jnp.ones(8)), inputs=(jnp.arange(8.0),))


def make_on_one_cpu() -> Target:
    """The model, where this process may use one CPU only (as the counting process must: XLA
    then runs every kernel on the calling thread, the one counted)."""
    import os

    cpus = len(os.sched_getaffinity(0))
    if cpus != 1:
        raise RuntimeError(f"this process may use {cpus} CPUs")
    return make_model()


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Rejitted(Affine):
    """Affine's call through a new jitted function at every call: it compiles every time."""

    def __call__(self, x: jax.Array) -> jax.Array:
        return jax.jit(lambda model, x: _apply(model, x))(self, x)


def make_rejitted() -> Target:
    return Target(Rejitted(jnp.ones(8), jnp.zeros(8)), inputs=(jnp.arange(8.0),))
