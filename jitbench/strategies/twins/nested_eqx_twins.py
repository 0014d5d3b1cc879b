"""Nested equinox twins: a module holding a list of sub-modules, as equinox's docs nest
layers (each layer's flag a static field, its arrays leaves)."""

from __future__ import annotations

import equinox as eqx
import jax
import jax.numpy as jnp


class Layer(eqx.Module):
    weight: jax.Array
    bias: jax.Array
    act: bool = eqx.field(static=True)

    def __call__(self, y):
        y = self.weight * y + self.bias
        return jnp.tanh(y) if self.act else y


class EquinoxFilterJit(eqx.Module):
    Layer = Layer

    layers: list[Layer]

    @eqx.filter_jit
    def calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y


class EquinoxModuleJaxJit(eqx.Module):
    """A module is a pytree all the way down, so plain jax.jit on a method is safe."""

    Layer = Layer

    layers: list[Layer]

    @jax.jit
    def calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y
