"""Twins of the strategies that need JAX alone, written as the JAX docs write them."""

from __future__ import annotations

import dataclasses
from functools import partial

import jax
import numpy as np
from jax import tree_util


class Eager:
    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    def calc(self, y):
        acc = self.x * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc


class BoundMethodJit:
    """``calc = jax.jit(obj.calc)``, kept on the instance."""

    def __init__(self, x, mul):
        self.x = x
        self.mul = mul
        self.calc = jax.jit(self._calc)

    def _calc(self, y):
        acc = self.x * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc


@partial(jax.jit, static_argnums=0)
def _calc(mul, x, y):
    acc = x * y
    acc = acc * y + mul if mul % 2 else acc + mul
    return acc


class HelperFunction:
    """JAX docs, strategy 1: the method calls a jitted function with the flag static."""

    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    def calc(self, y):
        return _calc(self.mul, self.x, y)


class JitFunction(HelperFunction):
    """The floor: the user calls the jitted function itself, ``_calc(mul, x, y)``; the
    object only holds the fields (its ``calc`` is helper_function's)."""


class StaticSelfIdHash:
    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        acc = self.x * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc


class StaticSelfValueHash:
    """JAX docs, strategy 2, with an array field: hashed by its bytes."""

    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        acc = self.x * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc

    def __hash__(self):
        return hash((self.mul, self.x.tobytes()))

    def __eq__(self, other):
        return (
            isinstance(other, StaticSelfValueHash)
            and self.mul == other.mul
            and np.array_equal(self.x, other.x)
        )


@tree_util.register_pytree_node_class
class PytreeClass:
    """JAX docs, strategy 3."""

    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    @jax.jit
    def calc(self, y):
        acc = self.x * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc

    def tree_flatten(self):
        children = (self.x,)
        aux_data = (self.mul,)
        return children, aux_data

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, *aux_data)


@partial(tree_util.register_dataclass, data_fields=["x"], meta_fields=["mul"])
@dataclasses.dataclass(frozen=True)
class PytreeDataclass:
    x: jax.Array
    mul: int

    @jax.jit
    def calc(self, y):
        acc = self.x * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc


class JitPerCall:
    """The anti-pattern: a new jit wrapper inside every call."""

    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    def calc(self, y):
        return jax.jit(self._calc)(y)

    def _calc(self, y):
        acc = self.x * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc


@partial(jax.jit, static_argnums=0)
def _aot_calc(mul, x, y):
    acc = x * y
    acc = acc * y + mul if mul % 2 else acc + mul
    return acc


class AotCompiled:
    """Lowered and compiled ahead of time (on the first call); the executable is called."""

    def __init__(self, x, mul):
        self.x = x
        self.mul = mul
        self._compiled = None

    def calc(self, y):
        if self._compiled is None:
            self._compiled = _aot_calc.lower(self.mul, self.x, y).compile()
        return self._compiled(self.x, y)
