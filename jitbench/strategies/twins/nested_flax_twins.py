"""Nested flax twins: struct dataclasses holding struct dataclasses under jax.jit, and NNX
modules holding their layers (sub-modules) in an ``nnx.List`` under nnx.jit and its fast
paths. Each twin class names its layer class as ``Layer``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx, struct


@struct.dataclass
class StructLayer:
    weight: jax.Array
    bias: jax.Array
    act: bool = struct.field(pytree_node=False)

    def __call__(self, y):
        y = self.weight * y + self.bias
        return jnp.tanh(y) if self.act else y


@struct.dataclass
class FlaxStructDataclass:
    Layer = StructLayer

    layers: list[StructLayer]

    @jax.jit
    def calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y


class Layer(nnx.Module):
    def __init__(self, weight, bias, act):
        self.weight = nnx.Param(weight)
        self.bias = nnx.Param(bias)
        self.act = act

    def __call__(self, y):
        y = self.weight[...] * y + self.bias[...]
        return jnp.tanh(y) if self.act else y


class FlaxNnxJit(nnx.Module):
    Layer = Layer

    def __init__(self, layers):
        self.layers = nnx.List(layers)

    @nnx.jit
    def calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y


class _CachedModel(nnx.Module):
    def __init__(self, layers):
        self.layers = nnx.List(layers)

    @nnx.jit
    def calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y


class NnxCachedPartial:
    """flax's performance guide: the jitted method through nnx.cached_partial."""

    Layer = Layer

    def __init__(self, layers):
        self.model = _CachedModel(layers)
        self.calc = nnx.cached_partial(_CachedModel.calc, self.model)


class _Model(nnx.Module):
    def __init__(self, layers):
        self.layers = nnx.List(layers)

    def calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y


@jax.jit
def _split_calc(graphdef, state, y):
    model = nnx.merge(graphdef, state)
    return model.calc(y)


class NnxSplitMerge:
    """flax's performance guide: split once, jax.jit a function that merges inside."""

    Layer = Layer

    def __init__(self, layers):
        self.model = _Model(layers)
        self.graphdef, self.state = nnx.split(self.model)

    def calc(self, y):
        return _split_calc(self.graphdef, self.state, y)


class NnxTreeMode(nnx.Module):
    """flax's tree mode: the module, layers and all, goes to jax.jit as a plain pytree."""

    Layer = Layer

    def __init__(self, layers):
        self.layers = nnx.List(layers)

    @nnx.jit(graph=False)
    def calc(self, y):
        for layer in self.layers:
            y = layer(y)
        return y


class NnxJitPartial:
    """flax's tree-mode fast path: the module flattened once by nnx.jit_partial."""

    Layer = Layer

    def __init__(self, layers):
        self.model = _Model(layers)
        self.calc = nnx.jit_partial(_Model.calc, self.model, graph=False)
