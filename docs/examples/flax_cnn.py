"""flax's MNIST CNN as a jitbench target: the model of flax's nnx tutorial, called as written.

The model and its batch are those of ``docs/advise_reference.py`` (the hand-written reference
that imports no jitbench): two convolutions, average pooling and two dense layers on a batch
of 32 images 28x28x1. Called as written, it runs op by op::

    PYTHONPATH=docs/examples jitbench advise flax_cnn:model [--device tpu]

``jitbench advise`` builds each way of jitting the call from it (``nnx.jit``, tree mode,
``nnx.jit_partial``, ``nnx.cached_partial``, ``jax.jit`` over ``nnx.split``), measured
beside what ``python docs/advise_reference.py`` measures by hand.
"""

from __future__ import annotations

from functools import partial

import jax
from flax import nnx

from jitbench.targets import Target

BATCH = 32


class CNN(nnx.Module):
    """flax's MNIST tutorial model, as its docs write it."""

    def __init__(self, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 32, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(32, 64, kernel_size=(3, 3), rngs=rngs)
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
        self.linear1 = nnx.Linear(3136, 256, rngs=rngs)
        self.linear2 = nnx.Linear(256, 10, rngs=rngs)

    def __call__(self, x):
        x = self.avg_pool(nnx.relu(self.conv1(x)))
        x = self.avg_pool(nnx.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        x = nnx.relu(self.linear1(x))
        return self.linear2(x)


def batch() -> jax.Array:
    """A batch of images, on JAX's default device (``--device`` makes it the chosen one)."""
    return jax.random.normal(jax.random.key(1), (BATCH, 28, 28, 1))


def model() -> Target:
    """The CNN, built on JAX's default device, and its batch."""
    return Target(CNN(rngs=nnx.Rngs(0)), (batch(),))
