"""An equinox MLP, as equinox's users build and jit it: the example of "Audit your own class".

    PYTHONPATH=docs/examples jitbench audit equinox_mlp:mlp \\
        --call equinox_mlp:forward --inputs equinox_mlp:batch

``mlp`` is the factory (called again for an equal and a different instance),
``forward`` the jitted function that takes the model, ``batch`` its argument.
"""

import equinox as eqx
import jax


def mlp() -> eqx.nn.MLP:
    return eqx.nn.MLP(in_size=32, out_size=8, width_size=64, depth=2, key=jax.random.PRNGKey(0))


@eqx.filter_jit
def forward(model: eqx.nn.MLP, x: jax.Array) -> jax.Array:
    return model(x)


def batch() -> jax.Array:
    return jax.random.normal(jax.random.PRNGKey(1), (32,))
