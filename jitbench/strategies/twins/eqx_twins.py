"""The equinox twin, as equinox's docs write a module with a jitted method."""

from __future__ import annotations

import equinox as eqx
import jax


class EquinoxFilterJit(eqx.Module):
    x: jax.Array
    mul: int = eqx.field(static=True)

    @eqx.filter_jit
    def calc(self, y):
        acc = self.x * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc


class EquinoxModuleJaxJit(eqx.Module):
    """The equinox docs: a module is a pytree, so plain jax.jit on a method is safe."""

    x: jax.Array
    mul: int = eqx.field(static=True)

    @jax.jit
    def calc(self, y):
        acc = self.x * y
        acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
        return acc
