"""Hand-written twins: each built-in strategy written by hand, the way its users write it.

They are the reference the generated classes are held to (same Python work
per call, same cost), so they are written independently of
:mod:`jitbench.strategies.codegen`: one array field ``x``, one int flag ``mul`` and
``calc(self, y)``, following the JAX docs and the flax/equinox idioms. Each
computes what the generated default shape computes
(``acc = x * y``, then ``acc * y + mul`` for an odd ``mul``, else ``acc + mul``).

The nested twins (``nested_*`` modules) are the same strategies over a nested
model, as :class:`jitbench.strategies.codegen.Shape` renders it at a positive ``depth``: a
class holding ``layers``, a list of layer objects each with ``weight`` and
``bias`` arrays and an ``act`` flag (``y = weight * y + bias``, then ``tanh``
where ``act`` is set), nested the way each library's users nest a model.

``twin(name)`` and ``nested_twin(name)`` import the module that holds the
strategy's twin (equinox and flax twins only load when asked for).
"""

from __future__ import annotations

import importlib

from jitbench.errors import JitbenchError

# strategy -> (module in this package, class)
TWINS = {
    "eager": ("jax_twins", "Eager"),
    "bound_method_jit": ("jax_twins", "BoundMethodJit"),
    "helper_function": ("jax_twins", "HelperFunction"),
    "static_self_id_hash": ("jax_twins", "StaticSelfIdHash"),
    "static_self_value_hash": ("jax_twins", "StaticSelfValueHash"),
    "pytree_class": ("jax_twins", "PytreeClass"),
    "pytree_dataclass": ("jax_twins", "PytreeDataclass"),
    "jit_per_call": ("jax_twins", "JitPerCall"),
    "equinox_filter_jit": ("eqx_twins", "EquinoxFilterJit"),
    "flax_struct_dataclass": ("flax_twins", "FlaxStructDataclass"),
    "flax_nnx_jit": ("flax_twins", "FlaxNnxJit"),
    "aot_compiled": ("jax_twins", "AotCompiled"),
    "equinox_module_jax_jit": ("eqx_twins", "EquinoxModuleJaxJit"),
    "nnx_cached_partial": ("flax_twins", "NnxCachedPartial"),
    "nnx_split_merge": ("flax_twins", "NnxSplitMerge"),
    "nnx_tree_mode": ("flax_twins", "NnxTreeMode"),
    "nnx_jit_partial": ("flax_twins", "NnxJitPartial"),
    "jit_function": ("jax_twins", "JitFunction"),
}

# strategy -> (module in this package, class); each class names its layer class ``Layer``
NESTED_TWINS = {
    "eager": ("nested_jax_twins", "Eager"),
    "bound_method_jit": ("nested_jax_twins", "BoundMethodJit"),
    "helper_function": ("nested_jax_twins", "HelperFunction"),
    "static_self_id_hash": ("nested_jax_twins", "StaticSelfIdHash"),
    "static_self_value_hash": ("nested_jax_twins", "StaticSelfValueHash"),
    "pytree_class": ("nested_jax_twins", "PytreeClass"),
    "pytree_dataclass": ("nested_jax_twins", "PytreeDataclass"),
    "jit_per_call": ("nested_jax_twins", "JitPerCall"),
    "equinox_filter_jit": ("nested_eqx_twins", "EquinoxFilterJit"),
    "flax_struct_dataclass": ("nested_flax_twins", "FlaxStructDataclass"),
    "flax_nnx_jit": ("nested_flax_twins", "FlaxNnxJit"),
    "aot_compiled": ("nested_jax_twins", "AotCompiled"),
    "equinox_module_jax_jit": ("nested_eqx_twins", "EquinoxModuleJaxJit"),
    "nnx_cached_partial": ("nested_flax_twins", "NnxCachedPartial"),
    "nnx_split_merge": ("nested_flax_twins", "NnxSplitMerge"),
    "nnx_tree_mode": ("nested_flax_twins", "NnxTreeMode"),
    "nnx_jit_partial": ("nested_flax_twins", "NnxJitPartial"),
    "jit_function": ("nested_jax_twins", "JitFunction"),
}


def twin(name: str) -> type:
    """The hand-written class of strategy ``name``: ``Twin(x, mul)`` with ``calc(y)``."""
    return _load(TWINS, "hand-written twin", name)


def nested_twin(name: str) -> type:
    """The nested hand-written class of strategy ``name``: ``Twin(layers)`` with
    ``calc(y)``, its layers built as ``Twin.Layer(weight, bias, act)``."""
    return _load(NESTED_TWINS, "nested twin", name)


def _load(table: dict[str, tuple[str, str]], kind: str, name: str) -> type:
    try:
        module, cls = table[name]
    except KeyError:
        raise JitbenchError(f"no {kind} for {name!r}; valid: {', '.join(table)}") from None
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)
