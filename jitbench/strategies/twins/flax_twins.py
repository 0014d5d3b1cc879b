"""flax twins: a struct dataclass under jax.jit, NNX modules under nnx.jit and its fast paths."""

from __future__ import annotations

import jax
from flax import nnx, struct


@struct.dataclass
class FlaxStructDataclass:
    x: jax.Array
    mul: int = struct.field(pytree_node=False)

    @jax.jit
    def calc(self, y):
        acc = self.x * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc


class FlaxNnxJit(nnx.Module):
    def __init__(self, x, mul):
        self.x = nnx.Param(x)
        self.mul = mul

    @nnx.jit
    def calc(self, y):
        acc = self.x[...] * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc


class _CachedModel(nnx.Module):
    def __init__(self, x, mul):
        self.x = nnx.Param(x)
        self.mul = mul

    @nnx.jit
    def calc(self, y):
        acc = self.x[...] * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc


class NnxCachedPartial:
    """flax's performance guide: the jitted method through nnx.cached_partial."""

    def __init__(self, x, mul):
        self.model = _CachedModel(x, mul)
        self.calc = nnx.cached_partial(_CachedModel.calc, self.model)


class _SplitModel(nnx.Module):
    def __init__(self, x, mul):
        self.x = nnx.Param(x)
        self.mul = mul

    def calc(self, y):
        acc = self.x[...] * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc


@jax.jit
def _split_calc(graphdef, state, y):
    model = nnx.merge(graphdef, state)
    return model.calc(y)


class NnxSplitMerge:
    """flax's performance guide: split once, jax.jit a function that merges inside."""

    def __init__(self, x, mul):
        self.model = _SplitModel(x, mul)
        self.graphdef, self.state = nnx.split(self.model)

    def calc(self, y):
        return _split_calc(self.graphdef, self.state, y)


class NnxTreeMode(nnx.Module):
    """flax's tree mode: the module goes to jax.jit as a plain pytree."""

    def __init__(self, x, mul):
        self.x = nnx.Param(x)
        self.mul = mul

    @nnx.jit(graph=False)
    def calc(self, y):
        acc = self.x[...] * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc


class _PartialModel(nnx.Module):
    def __init__(self, x, mul):
        self.x = nnx.Param(x)
        self.mul = mul

    def calc(self, y):
        acc = self.x[...] * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc


class NnxJitPartial:
    """flax's tree-mode fast path: the module flattened once by nnx.jit_partial."""

    def __init__(self, x, mul):
        self.model = _PartialModel(x, mul)
        self.calc = nnx.jit_partial(_PartialModel.calc, self.model, graph=False)
