"""flax's MNIST CNN as a jitbench target: a compute-heavy model whose counts must hold still.

The model is flax's MNIST tutorial's (conv 1->32 and 32->64, average pooling, dense
3136->256->10) on a batch of 32 images 28x28x1, its forward pass jitted with ``nnx.jit``
as flax's docs jit a step. ``model`` is the target; ``slowed`` is the same call with about
2% more host work on its call path (the model's layers looked at before the jitted call,
sized by counts: docs/counting.md, "A compute-heavy model")::

    PYTHONPATH=docs/examples jitbench time flax_cnn:model
    python docs/counts_cnn.py        # its counts in two processes, and the planted 2%
"""

from __future__ import annotations

from functools import partial

import jax
from flax import nnx

from jitbench.targets import Target

BATCH = 32
# Kernels the planted step sizes before its call: about 2% of the host's share of a cached
# call (3.67M instructions of the calling thread outside XLA's run; a kernel's size costs
# about 7,800), counted by docs/counts_cnn.py.
SLOWED_LOOKUPS = 9


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


@nnx.jit
def predict(model: CNN, images: jax.Array) -> jax.Array:
    return model(images)


def predict_slowed(model: CNN, images: jax.Array) -> jax.Array:
    """``predict`` after host work on the call path: the layers' kernels sized in turn,
    ``SLOWED_LOOKUPS`` of them, as a step that checks its model before each call would."""
    layers = (model.conv1, model.conv2, model.linear1, model.linear2)
    sum(layers[i % len(layers)].kernel.size for i in range(SLOWED_LOOKUPS))
    return predict(model, images)


def images() -> tuple[jax.Array]:
    return (jax.random.normal(jax.random.key(1), (BATCH, 28, 28, 1)),)


def model() -> Target:
    return Target(CNN(rngs=nnx.Rngs(0)), inputs=images(), call=predict)


def slowed() -> Target:
    return Target(CNN(rngs=nnx.Rngs(0)), inputs=images(), call=predict_slowed)
