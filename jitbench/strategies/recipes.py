"""The built-in plain-JAX strategies' source, as their users write it: one module text per
recipe with placeholders that :class:`jitbench.strategies.codegen.Template` fills."""

from __future__ import annotations

import json
from functools import partial

from jitbench.strategies.codegen import Template

EAGER = """
import jax.numpy as jnp


{layer}class Eager:
    def __init__(self, {params}):
        {init}

    def calc(self, y):
        {method_body}
"""

BOUND_METHOD_JIT = """
import jax
import jax.numpy as jnp


{layer}class BoundMethodJit:
    def __init__(self, {params}):
        {init}
        self.calc = jax.jit(self._calc)  # once per instance, then reused

    def _calc(self, y):
        {method_body}
"""

HELPER_FUNCTION = """
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.jit, static_argnums={static_argnums})
def _calc({statics}, {arrays}, y):
    {body}


{layer}class HelperFunction:
    def __init__(self, {params}):
        {init}

    def calc(self, y):
        return _calc({self_statics}, {self_arrays}, y)
"""

STATIC_SELF_ID_HASH = """
from functools import partial

import jax
import jax.numpy as jnp


{layer}class StaticSelfIdHash:
    def __init__(self, {params}):
        {init}

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        {method_body}
"""

# jax.Array is unhashable: the hash takes each array's bytes (a copy to the host).
STATIC_SELF_VALUE_HASH = """
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np


{layer}class StaticSelfValueHash:
    def __init__(self, {params}):
        {init}

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        {method_body}

    def __hash__(self):
        return hash(({self_statics}, {array_bytes}))

    def __eq__(self, other):
        return (
            isinstance(other, StaticSelfValueHash)
            and {self_statics_tuple} == {other_statics_tuple}
            and {arrays_equal}
        )
"""

PYTREE_CLASS = """
import jax
import jax.numpy as jnp
from jax import tree_util


{layer}@tree_util.register_pytree_node_class
class PytreeClass:
    def __init__(self, {params}):
        {init}

    @jax.jit
    def calc(self, y):
        {method_body}

    def tree_flatten(self):
        return {self_arrays_tuple}, {self_statics_tuple}

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, *aux_data)
"""

PYTREE_DATACLASS = """
import dataclasses
from functools import partial

import jax
import jax.numpy as jnp


{layer}@partial(jax.tree_util.register_dataclass, data_fields={data_fields}, meta_fields={meta_fields})
@dataclasses.dataclass(frozen=True)
class PytreeDataclass:
    {fields}

    @jax.jit
    def calc(self, y):
        {method_body}
"""

JIT_PER_CALL = """
import jax
import jax.numpy as jnp


{layer}class JitPerCall:
    def __init__(self, {params}):
        {init}

    def calc(self, y):
        return jax.jit(self._calc)(y)  # a new jit object, and an empty cache, every call

    def _calc(self, y):
        {method_body}
"""

# Layers: a nested shape's sub-objects, nested the way each strategy's users nest.

PLAIN_LAYER = """
class Layer:
    def __init__(self, {weight}, {bias}, {act}):
        self.{weight} = {weight}
        self.{bias} = {bias}
        self.{act} = {act}

    def __call__(self, y):
        {layer_step}
"""

# The plain layer registered as a pytree: arrays are children, the flag aux data.
PYTREE_CLASS_LAYER = (
    "\n@tree_util.register_pytree_node_class"
    + PLAIN_LAYER
    + """
    def tree_flatten(self):
        return (self.{weight}, self.{bias}), (self.{act},)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, *aux_data)
"""
)

PYTREE_DATACLASS_LAYER = """
@partial(jax.tree_util.register_dataclass, data_fields=["{weight}", "{bias}"], meta_fields=["{act}"])
@dataclasses.dataclass(frozen=True)
class Layer:
    {weight}: jax.Array
    {bias}: jax.Array
    {act}: bool

    def __call__(self, y):
        {layer_step}
"""


def _with_layer(text: str, layer: str, t: Template) -> str:
    """``text`` rendered, with ``layer`` as the layer class of a nested shape (a recipe binds
    the first two)."""
    return t.render(text, layer=t.layer(layer))


# The floor: helper_function's module, its jitted _calc called by the user on the arrays.
JIT_FUNCTION = HELPER_FUNCTION.replace("class HelperFunction:", "class JitFunction:")

eager = partial(_with_layer, EAGER, PLAIN_LAYER)
bound_method_jit = partial(_with_layer, BOUND_METHOD_JIT, PLAIN_LAYER)
helper_function = partial(_with_layer, HELPER_FUNCTION, PLAIN_LAYER)
jit_function = partial(_with_layer, JIT_FUNCTION, PLAIN_LAYER)
static_self_id_hash = partial(_with_layer, STATIC_SELF_ID_HASH, PLAIN_LAYER)
jit_per_call = partial(_with_layer, JIT_PER_CALL, PLAIN_LAYER)
pytree_class = partial(_with_layer, PYTREE_CLASS, PYTREE_CLASS_LAYER)


def static_self_value_hash(t: Template) -> str:
    if t.shape.depth:
        # The whole tree hashed and compared: every layer's flag and arrays.
        acts = "tuple(layer.act for layer in {}.layers)"
        return t.render(
            STATIC_SELF_VALUE_HASH,
            layer=t.layer(PLAIN_LAYER),
            array_bytes="tuple((layer.weight.tobytes(), layer.bias.tobytes()) "
            "for layer in self.layers)",
            self_statics_tuple=acts.format("self"),
            other_statics_tuple=acts.format("other"),
            arrays_equal="all(\n                np.array_equal(a.weight, b.weight) and "
            "np.array_equal(a.bias, b.bias)\n"
            "                for a, b in zip(self.layers, other.layers)\n            )",
        )
    arrays = t.shape.array_fields
    return t.render(
        STATIC_SELF_VALUE_HASH,
        array_bytes=", ".join(f"self.{a}.tobytes()" for a in arrays),
        arrays_equal="\n            and ".join(
            f"np.array_equal(self.{a}, other.{a})" for a in arrays
        ),
    )


def pytree_dataclass(t: Template) -> str:
    data = ("layers",) if t.shape.depth else t.shape.array_fields
    return t.render(
        PYTREE_DATACLASS,
        fields=t.fields("jax.Array"),
        data_fields=json.dumps(list(data)),  # ["a0", "a1"]
        meta_fields=json.dumps(list(t.shape.static_fields)),
        layer=t.layer(PYTREE_DATACLASS_LAYER),
    )


# Compiled on the first call, the executable kept and called (the statics baked in).
AOT_COMPILED = """
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.jit, static_argnums={static_argnums})
def _calc({statics}, {arrays}, y):
    {body}


{layer}class AotCompiled:
    def __init__(self, {params}):
        {init}
        self._compiled = None

    def calc(self, y):
        if self._compiled is None:
            self._compiled = _calc.lower({self_statics}, {self_arrays}, y).compile()
        return self._compiled({self_arrays}, y)
"""

aot_compiled = partial(_with_layer, AOT_COMPILED, PLAIN_LAYER)
