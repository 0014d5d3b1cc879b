"""One small object of each kind advise knows, written as each library's users write it:
tests/test_printed_code.py runs advise's printed code for each against its measured row."""

from __future__ import annotations

from functools import partial

import equinox as eqx
import flax.linen as linen
import jax
import jax.numpy as jnp
from flax import nnx

import jitbench

N = 4


class Scaler:
    """A plain class: an array and a flag the method reads."""

    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    def calc(self, y):
        out = self.x * y
        return out * self.mul if self.mul > 1 else out + 1.0


class EqxScaler(eqx.Module):
    x: jax.Array
    mul: int

    def __call__(self, y):
        out = self.x * y
        return out * self.mul if self.mul > 1 else out + 1.0


class NnxScaler(nnx.Module):
    def __init__(self, x, mul):
        self.x = nnx.Param(x)
        self.mul = mul

    def __call__(self, y):
        out = self.x[...] * y
        return out * self.mul if self.mul > 1 else out + 1.0


class NnxPooled(nnx.Module):
    """flax's MNIST tutorial's habit: a ``functools.partial`` kept as an attribute, which jit
    hashes by identity: every new instance compiles again, the same one never."""

    def __init__(self, x):
        self.x = nnx.Param(x)
        self.pool = partial(nnx.avg_pool, window_shape=(2,), strides=(2,))

    def __call__(self, y):
        return self.pool((self.x[...] * y)[None, :, None])[0, :, 0]


class LinenScaler(linen.Module):
    mul: int = 2

    @linen.compact
    def __call__(self, y):
        x = self.param("x", linen.initializers.ones, (N,))
        out = x * y
        return out * self.mul if self.mul > 1 else out + 1.0


def inputs() -> jax.Array:
    return jnp.linspace(1.0, 2.0, N)


def arrays() -> jax.Array:
    return jnp.arange(1.0, N + 1.0)


def jit_each_call(obj, y):
    """A jit made inside the call: a new program at every call (as ``jax.jit(env.step)(s, a)``)."""
    return jax.jit(obj.calc)(y)


def pooled() -> jitbench.Target:
    return jitbench.Target(NnxPooled(arrays()), (inputs(),))


class StaticSelfScaler(Scaler):
    """A class whose method is jitted with a static ``self`` hashed by identity, as gymnax
    jits its environments' ``step``: a flag set in place is not seen, every instance kept."""

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        out = self.x * y
        return out * self.mul if self.mul > 1 else out + 1.0


class Grid:
    """A class whose every attribute is static (no array: gymnax's Catch keeps two ints), its
    method jitted with a static ``self``."""

    def __init__(self, rows, scale):
        self.rows = rows
        self.scale = scale

    @partial(jax.jit, static_argnums=0)
    def step(self, y):
        return jnp.zeros((self.rows, N)) + y * self.scale
