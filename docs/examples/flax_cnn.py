"""flax's MNIST CNN as a jitbench target: the model of flax's nnx MNIST tutorial, called as
written (no jit), for ``jitbench advise`` to build each way of jitting its call from it::

    PYTHONPATH=docs/examples jitbench advise flax_cnn:model --inputs flax_cnn:batch
    PYTHONPATH=docs/examples jitbench advise flax_cnn:model --inputs flax_cnn:batch --device tpu

The model is the tutorial's, line for line; ``batch`` is one of its batches (32 images of
28x28x1, seeded).
"""

from __future__ import annotations

from functools import partial

import jax
from flax import nnx

BATCH = 32


class CNN(nnx.Module):
    """A simple CNN model."""

    def __init__(self, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 32, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(32, 64, kernel_size=(3, 3), rngs=rngs)
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
        self.linear1 = nnx.Linear(3136, 256, rngs=rngs)
        self.linear2 = nnx.Linear(256, 10, rngs=rngs)

    def __call__(self, x):
        x = self.avg_pool(nnx.relu(self.conv1(x)))
        x = self.avg_pool(nnx.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)  # flatten
        x = nnx.relu(self.linear1(x))
        x = self.linear2(x)
        return x


def model() -> CNN:
    return CNN(rngs=nnx.Rngs(0))


def batch() -> jax.Array:
    return jax.random.normal(jax.random.key(1), (BATCH, 28, 28, 1))
