"""A small model: ``x * weight * scale + bias``, a registered dataclass whose call is jitted."""

import dataclasses

import jax
import jax.numpy as jnp


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Affine:
    weight: jax.Array
    bias: jax.Array
    scale: float = dataclasses.field(default=2.0, metadata={"static": True})

    @jax.jit
    def __call__(self, x: jax.Array) -> jax.Array:
        return x * self.weight * self.scale + self.bias


def make() -> Affine:
    return Affine(jnp.ones(8), jnp.zeros(8))


def batch() -> tuple[jax.Array]:
    return (jnp.arange(8.0),)
