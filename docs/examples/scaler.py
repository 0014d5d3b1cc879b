"""The README's ``Scaler``, as a user's own module holds it: the class, a factory, its inputs::

    PYTHONPATH=docs/examples jitbench audit scaler:make --call calc --inputs scaler:batch
    PYTHONPATH=docs/examples jitbench advise scaler:make --call calc --inputs scaler:batch

It imports JAX alone, as such a module does: what advise takes on it is advise's own cost.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

SIZE = 64


class Scaler:
    def __init__(self, x, mul):
        self.x, self.mul = x, mul

    def calc(self, y):
        return self.x * y if self.mul else y


def make() -> Scaler:
    """A Scaler with an array of SIZE and its flag on."""
    return Scaler(jnp.linspace(0.0, 1.0, SIZE), True)


def batch() -> jax.Array:
    """The argument of ``calc``."""
    return jnp.ones(SIZE)
