"""Nested twins of the strategies that need JAX alone: a model holding a list of layers.

Plain classes keep plain layer objects in a list; the pytree classes nest pytrees of
the same registration, so jax.jit flattens the whole tree. Each twin class names its
layer class as ``Layer``, built as ``Layer(weight, bias, act)``.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import tree_util


class Layer:
    def __init__(self, weight, bias, act):
        self.weight = weight
        self.bias = bias
        self.act = act

    def __call__(self, y):
        y = self.weight * y + self.bias
        return jnp.tanh(y) if self.act else y


class Eager:
    Layer = Layer

    def __init__(self, layers):
        self.layers = layers

    def calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y


class BoundMethodJit:
    """``calc = jax.jit(obj.calc)``, kept on the instance: the layers are closed over."""

    Layer = Layer

    def __init__(self, layers):
        self.layers = layers
        self.calc = jax.jit(self._calc)

    def _calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y


@partial(jax.jit, static_argnums=0)
def _calc(acts, params, y):
    for (weight, bias), act in zip(params, acts, strict=True):
        y = weight * y + bias
        y = jnp.tanh(y) if act else y
    return y


class HelperFunction:
    """JAX docs, strategy 1: plain layers are no pytree, so each call gathers their flags
    (static, hashable) and their arrays for the jitted function."""

    Layer = Layer

    def __init__(self, layers):
        self.layers = layers

    def calc(self, y):
        acts = tuple(layer.act for layer in self.layers)
        params = tuple((layer.weight, layer.bias) for layer in self.layers)
        return _calc(acts, params, y)


class JitFunction(HelperFunction):
    """The floor: the user calls the jitted function itself on the layers' flags and arrays;
    the object only holds the layers (its ``calc`` is helper_function's)."""


class StaticSelfIdHash:
    Layer = Layer

    def __init__(self, layers):
        self.layers = layers

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y


class StaticSelfValueHash:
    """JAX docs, strategy 2, over the whole tree: every layer's flag and array bytes go
    into the hash, and equality compares them layer by layer."""

    Layer = Layer

    def __init__(self, layers):
        self.layers = layers

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y

    def __hash__(self):
        acts = tuple(layer.act for layer in self.layers)
        arrays = tuple((layer.weight.tobytes(), layer.bias.tobytes()) for layer in self.layers)
        return hash((acts, arrays))

    def __eq__(self, other):
        return (
            isinstance(other, StaticSelfValueHash)
            and tuple(layer.act for layer in self.layers)
            == tuple(layer.act for layer in other.layers)
            and all(
                np.array_equal(a.weight, b.weight) and np.array_equal(a.bias, b.bias)
                for a, b in zip(self.layers, other.layers, strict=True)
            )
        )


@tree_util.register_pytree_node_class
class TreeLayer:
    def __init__(self, weight, bias, act):
        self.weight = weight
        self.bias = bias
        self.act = act

    def __call__(self, y):
        y = self.weight * y + self.bias
        return jnp.tanh(y) if self.act else y

    def tree_flatten(self):
        return (self.weight, self.bias), (self.act,)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, *aux_data)


@tree_util.register_pytree_node_class
class PytreeClass:
    """JAX docs, strategy 3: the list of layers is the one child; jit flattens it."""

    Layer = TreeLayer

    def __init__(self, layers):
        self.layers = layers

    @jax.jit
    def calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y

    def tree_flatten(self):
        return (self.layers,), ()

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children)


@partial(tree_util.register_dataclass, data_fields=["weight", "bias"], meta_fields=["act"])
@dataclasses.dataclass(frozen=True)
class DataLayer:
    weight: jax.Array
    bias: jax.Array
    act: bool

    def __call__(self, y):
        y = self.weight * y + self.bias
        return jnp.tanh(y) if self.act else y


@partial(tree_util.register_dataclass, data_fields=["layers"], meta_fields=[])
@dataclasses.dataclass(frozen=True)
class PytreeDataclass:
    Layer = DataLayer

    layers: list[DataLayer]

    @jax.jit
    def calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y


class JitPerCall:
    """The anti-pattern: a new jit wrapper inside every call."""

    Layer = Layer

    def __init__(self, layers):
        self.layers = layers

    def calc(self, y):
        return jax.jit(self._calc)(y)

    def _calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y


@partial(jax.jit, static_argnums=0)
def _aot_calc(acts, params, y):
    for (weight, bias), act in zip(params, acts, strict=True):
        y = weight * y + bias
        y = jnp.tanh(y) if act else y
    return y


class AotCompiled:
    """Lowered and compiled on the first call; the executable takes the arrays alone
    (the flags are baked in), gathered from the layers at every call."""

    Layer = Layer

    def __init__(self, layers):
        self.layers = layers
        self._compiled = None

    def calc(self, y):
        params = tuple((layer.weight, layer.bias) for layer in self.layers)
        if self._compiled is None:
            acts = tuple(layer.act for layer in self.layers)
            self._compiled = _aot_calc.lower(acts, params, y).compile()
        return self._compiled(params, y)
