"""flax's MNIST CNN as a jitbench target: the model of flax's nnx tutorial.

The model and its batch are those of ``docs/advise_reference.py`` (the hand-written reference
that imports no jitbench): two convolutions, average pooling and two dense layers on a batch
of 32 images 28x28x1. Three targets:

* ``as_written``: the model called as written, op by op, for ``jitbench advise`` to build each way
  of jitting the call from it (``nnx.jit``, tree mode, ``nnx.jit_partial``,
  ``nnx.cached_partial``, ``jax.jit`` over ``nnx.split``)::

      PYTHONPATH=docs/examples jitbench advise flax_cnn:as_written [--device tpu]

* ``model``: its forward pass jitted with ``nnx.jit`` as flax's docs jit a step, a
  compute-heavy call whose counts must hold still;
* ``slowed``: ``model`` with about 2% more host work on its call path (the model's layers
  looked at before the jitted call, sized by counts: docs/counting.md, "A compute-heavy
  model")::

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


def batch() -> jax.Array:
    """A batch of images, on JAX's default device (``--device`` makes it the chosen one)."""
    return jax.random.normal(jax.random.key(1), (BATCH, 28, 28, 1))


def as_written() -> Target:
    """The CNN, built on JAX's default device, and its batch, called as written."""
    return Target(CNN(rngs=nnx.Rngs(0)), (batch(),))


def model() -> Target:
    """The CNN's forward pass jitted with ``nnx.jit``."""
    return Target(CNN(rngs=nnx.Rngs(0)), inputs=(batch(),), call=predict)


def slowed() -> Target:
    """``model`` with about 2% more host work before its call."""
    return Target(CNN(rngs=nnx.Rngs(0)), inputs=(batch(),), call=predict_slowed)
