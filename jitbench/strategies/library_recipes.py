"""The built-in equinox and flax (struct, nnx and its fast paths) strategies' source, as their
users write it; the plain JAX ones are in :mod:`jitbench.strategies.recipes`."""

from __future__ import annotations

from functools import partial

from jitbench.strategies.codegen import Template

EQUINOX_FILTER_JIT = """
import equinox as eqx
import jax
import jax.numpy as jnp


{layer}class EquinoxFilterJit(eqx.Module):
    {fields}

    @eqx.filter_jit
    def calc(self, y):
        {method_body}
"""

# The same module with plain jax.jit on the method.
EQUINOX_MODULE_JAX_JIT = EQUINOX_FILTER_JIT.replace(
    "class EquinoxFilterJit", "class EquinoxModuleJaxJit"
).replace("@eqx.filter_jit", "@jax.jit")


FLAX_STRUCT_DATACLASS = """
import jax
import jax.numpy as jnp
from flax import struct


{layer}@struct.dataclass
class FlaxStructDataclass:
    {fields}

    @jax.jit
    def calc(self, y):
        {method_body}
"""


FLAX_NNX_JIT = """
import jax.numpy as jnp
from flax import nnx


{layer}class FlaxNnxJit(nnx.Module):
    def __init__(self, {params}):
        {param_init}

    @nnx.jit
    def calc(self, y):
        {model_body}
"""


EQUINOX_LAYER = """
class Layer(eqx.Module):
    {weight}: jax.Array
    {bias}: jax.Array
    {act}: bool = eqx.field(static=True)

    def __call__(self, y):
        {layer_step}
"""


FLAX_STRUCT_LAYER = """
@struct.dataclass
class Layer:
    {weight}: jax.Array
    {bias}: jax.Array
    {act}: bool = struct.field(pytree_node=False)

    def __call__(self, y):
        {layer_step}
"""


NNX_LAYER = """
class Layer(nnx.Module):
    def __init__(self, {weight}, {bias}, {act}):
        self.{weight} = nnx.Param({weight})
        self.{bias} = nnx.Param({bias})
        self.{act} = {act}

    def __call__(self, y):
        {layer_step}
"""


# flax's performance guide: nnx.cached_partial caches the module's graph traversal.
NNX_CACHED_PARTIAL = """
import jax.numpy as jnp
from flax import nnx


{layer}class Model(nnx.Module):
    def __init__(self, {params}):
        {param_init}

    @nnx.jit
    def calc(self, y):
        {model_body}


class NnxCachedPartial:
    def __init__(self, {params}):
        self.model = Model({params})
        self.calc = nnx.cached_partial(Model.calc, self.model)
"""

# flax's performance guide: split once, jit a function of (graphdef, state) that merges.
NNX_SPLIT_MERGE = """
import jax
import jax.numpy as jnp
from flax import nnx


{layer}class Model(nnx.Module):
    def __init__(self, {params}):
        {param_init}

    def calc(self, y):
        {model_body}


@jax.jit
def _calc(graphdef, state, y):
    return nnx.merge(graphdef, state).calc(y)


class NnxSplitMerge:
    def __init__(self, {params}):
        self.model = Model({params})
        self.graphdef, self.state = nnx.split(self.model)

    def calc(self, y):
        return _calc(self.graphdef, self.state, y)
"""


# flax's tree mode: the module is a plain pytree to jax.jit (no graph traversal).
NNX_TREE_MODE = FLAX_NNX_JIT.replace("class FlaxNnxJit", "class NnxTreeMode").replace(
    "@nnx.jit", "@nnx.jit(graph=False)"
)

# flax's fast path for tree mode: the module flattened once, at construction; the
# unbound method and the module go in apart (why: docs/design.md).
NNX_JIT_PARTIAL = """
import jax.numpy as jnp
from flax import nnx


{layer}class Model(nnx.Module):
    def __init__(self, {params}):
        {param_init}

    def calc(self, y):
        {model_body}


class NnxJitPartial:
    def __init__(self, {params}):
        self.model = Model({params})
        self.calc = nnx.jit_partial(Model.calc, self.model, graph=False)
"""


_NNX_LAYERS = "self.layers = nnx.List(layers)"  # nnx's container for sub-modules
_NNX_READ = "{}[...]"  # a Param's array


def _dataclass(text: str, layer: str, static: str, t: Template) -> str:
    """A dataclass-like module: fields declared, flags with ``static``."""
    return t.render(text, fields=t.fields("jax.Array", static), layer=t.layer(layer))


def _nnx(text: str, t: Template) -> str:
    """An nnx module: arrays as ``nnx.Param`` read with ``[...]``, layers in a list."""
    if t.shape.depth:
        layer = t.layer(NNX_LAYER, read=_NNX_READ)
        return t.render(
            text, param_init=_NNX_LAYERS, model_body=t.pieces["method_body"], layer=layer
        )
    arrays, statics = t.shape.array_fields, t.shape.static_fields
    init = [f"self.{a} = nnx.Param({a})" for a in arrays] + [f"self.{s} = {s}" for s in statics]
    body = t.computation([f"self.{a}[...]" for a in arrays], [f"self.{s}" for s in statics], 8)
    return t.render(text, param_init="\n        ".join(init), model_body=body)


equinox_filter_jit = partial(
    _dataclass, EQUINOX_FILTER_JIT, EQUINOX_LAYER, "eqx.field(static=True)"
)
equinox_module_jax_jit = partial(
    _dataclass, EQUINOX_MODULE_JAX_JIT, EQUINOX_LAYER, "eqx.field(static=True)"
)
flax_struct_dataclass = partial(
    _dataclass, FLAX_STRUCT_DATACLASS, FLAX_STRUCT_LAYER, "struct.field(pytree_node=False)"
)
flax_nnx_jit = partial(_nnx, FLAX_NNX_JIT)
nnx_cached_partial = partial(_nnx, NNX_CACHED_PARTIAL)
nnx_split_merge = partial(_nnx, NNX_SPLIT_MERGE)
nnx_tree_mode = partial(_nnx, NNX_TREE_MODE)
nnx_jit_partial = partial(_nnx, NNX_JIT_PARTIAL)
