"""The built-in strategies' source, as their users write it.

Each recipe is the module a user would write for one shape: imports, any
module-level jitted helper, and the class named after the strategy. The
placeholders (``{params}``, ``{method_body}``...) are filled by
:class:`jitbench.strategies.codegen.Template`; ``jitbench show STRATEGY`` prints the
result. The hand-written references these are checked against live in
:mod:`jitbench.strategies.twins`.
"""

from __future__ import annotations

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

# jax.Array is unhashable, so the value hash takes each array's bytes (a copy to
# the host) and __eq__ compares the arrays exactly; jit runs both at every call.
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

# --- Layers: a nested shape's sub-objects (jitbench.strategies.codegen.Shape.depth) ---------------------
# Each strategy nests the way its users nest: plain objects held in a list for the
# plain-class strategies, pytrees of the same registration for the pytree ones,
# sub-modules for equinox and nnx. The top-level class holds ``layers`` (a list).

PLAIN_LAYER = """
class Layer:
    def __init__(self, {weight}, {bias}, {act}):
        self.{weight} = {weight}
        self.{bias} = {bias}
        self.{act} = {act}

    def __call__(self, y):
        {layer_step}
"""

PYTREE_CLASS_LAYER = """
@tree_util.register_pytree_node_class
class Layer:
    def __init__(self, {weight}, {bias}, {act}):
        self.{weight} = {weight}
        self.{bias} = {bias}
        self.{act} = {act}

    def __call__(self, y):
        {layer_step}

    def tree_flatten(self):
        return (self.{weight}, self.{bias}), (self.{act},)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, *aux_data)
"""

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


def _names_list(names: tuple[str, ...]) -> str:
    return "[" + ", ".join(f'"{name}"' for name in names) + "]"


def eager(t: Template) -> str:
    return t.render(EAGER, layer=t.layer(PLAIN_LAYER))


def bound_method_jit(t: Template) -> str:
    return t.render(BOUND_METHOD_JIT, layer=t.layer(PLAIN_LAYER))


def helper_function(t: Template) -> str:
    return t.render(HELPER_FUNCTION, layer=t.layer(PLAIN_LAYER))


# The floor: helper_function's module, its jitted _calc called by the user on the arrays
# (jit_function's ``function``); the class only holds what the call passes.
JIT_FUNCTION = HELPER_FUNCTION.replace("class HelperFunction:", "class JitFunction:")


def jit_function(t: Template) -> str:
    return t.render(JIT_FUNCTION, layer=t.layer(PLAIN_LAYER))


def static_self_id_hash(t: Template) -> str:
    return t.render(STATIC_SELF_ID_HASH, layer=t.layer(PLAIN_LAYER))


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


def pytree_class(t: Template) -> str:
    return t.render(PYTREE_CLASS, layer=t.layer(PYTREE_CLASS_LAYER))


def pytree_dataclass(t: Template) -> str:
    data = ("layers",) if t.shape.depth else t.shape.array_fields
    return t.render(
        PYTREE_DATACLASS,
        fields=t.fields("jax.Array"),
        data_fields=_names_list(data),
        meta_fields=_names_list(t.shape.static_fields),
        layer=t.layer(PYTREE_DATACLASS_LAYER),
    )


def jit_per_call(t: Template) -> str:
    return t.render(JIT_PER_CALL, layer=t.layer(PLAIN_LAYER))


# Ahead-of-time: lowered and compiled on the first call, the executable kept and
# called directly (the statics are baked into it, so it takes the arrays only).
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


def aot_compiled(t: Template) -> str:
    return t.render(AOT_COMPILED, layer=t.layer(PLAIN_LAYER))
