"""flax's own overhead benchmark as jitbench targets: the same model, the same three calls.

flax's ``benchmarks/nnx_graph_overhead.py`` times an empty jitted step over an
MLP of ``Linear`` + ``BatchNorm`` blocks (width 32, depth 5) and its optimizer,
three ways; each is a factory here, so ``jitbench time`` measures it the way
it measures the built-in strategies (cold, cached, dispatch)::

    PYTHONPATH=docs/examples jitbench time flax_mlp:graph_mode
    PYTHONPATH=docs/examples jitbench time flax_mlp:jit_partial
    PYTHONPATH=docs/examples jitbench time flax_mlp:split_state

``model`` is the model itself, for ``jitbench advise`` to build each way of jitting its
call from it (``nnx.jit``, tree mode, ``jit_partial``, ``cached_partial``, split/merge)::

    PYTHONPATH=docs/examples jitbench advise flax_mlp:model

The model is flax's, line for line (it needs optax, which flax installs).
``WIDTH`` and ``DEPTH`` are flax's defaults.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from jitbench.targets import Target

WIDTH = 32
DEPTH = 5


class Linear(nnx.Module):
    def __init__(self, din: int, dout: int, *, rngs: nnx.Rngs):
        self.w = nnx.Param(jax.random.uniform(rngs.params(), (din, dout)))
        self.b = nnx.Param(jnp.zeros((dout,)))

    def __call__(self, x):
        return x @ self.w + self.b


class Block(nnx.Module):
    def __init__(self, din: int, dout: int, *, rngs: nnx.Rngs):
        self.linear = Linear(din, dout, rngs=rngs)
        self.bn = nnx.BatchNorm(dout, rngs=rngs)

    def __call__(self, x):
        return nnx.relu(self.bn(self.linear(x)))


class Count(nnx.Variable):
    pass


class MLP(nnx.Module):
    def __init__(self, din, dhidden, dout, depth, *, rngs: nnx.Rngs):
        self.count = Count(jnp.array(0))
        self.linear_in = Block(din, dhidden, rngs=rngs)
        blocks = [Block(dhidden, dhidden, rngs=rngs) for _ in range(depth - 2)]
        self.intermediates = nnx.List(blocks)
        self.linear_out = Block(dhidden, dout, rngs=rngs)

    def __call__(self, x):
        self.count.value += 1
        x = nnx.relu(self.linear_in(x))
        for layer in self.intermediates:
            x = nnx.relu(layer(x))
        return self.linear_out(x)


BATCH = 16


def model() -> Target:
    """flax's MLP (depth 5, width 32) called on a batch, as it comes: no jit of its own."""
    mlp = MLP(din=1, dhidden=WIDTH, dout=1, depth=DEPTH, rngs=nnx.Rngs(0))
    return Target(mlp, (jnp.linspace(-1.0, 1.0, BATCH).reshape(BATCH, 1),))


def _model_and_optimizer() -> tuple[MLP, nnx.Optimizer]:
    model = MLP(din=1, dhidden=WIDTH, dout=1, depth=DEPTH, rngs=nnx.Rngs(0))
    return model, nnx.Optimizer(model, optax.sgd(1e-3), wrt=nnx.Param)


# flax's "nnx" mode: nnx.jit over (model, optimizer), the graph traversed at every call.
@nnx.jit
def step_nnx(model: MLP, optimizer: nnx.Optimizer):
    pass


class GraphMode:
    def __init__(self) -> None:
        self.model, self.optimizer = _model_and_optimizer()

    def __call__(self) -> None:
        return step_nnx(self.model, self.optimizer)


def graph_mode() -> Target:
    return Target(GraphMode(), factory=GraphMode)


# flax's "jit_partial" mode: both flattened once, tree mode.
def _step_partial(model: MLP, optimizer: nnx.Optimizer):
    pass


class JitPartial:
    def __init__(self) -> None:
        self.model, self.optimizer = _model_and_optimizer()
        self.step = nnx.jit_partial(_step_partial, self.model, self.optimizer, graph=False)

    def __call__(self) -> None:
        return self.step()


def jit_partial() -> Target:
    return Target(JitPartial(), factory=JitPartial)


# flax's "jax" mode: split once, jax.jit over (graphdef, state), the state fed back.
@jax.jit
def step_jax(graphdef, state):
    return graphdef, state


class SplitState:
    def __init__(self) -> None:
        self.graphdef, self.state = nnx.split(_model_and_optimizer())

    def __call__(self):
        self.graphdef, self.state = step_jax(self.graphdef, self.state)
        return self.state


def split_state() -> Target:
    return Target(SplitState(), factory=SplitState)
