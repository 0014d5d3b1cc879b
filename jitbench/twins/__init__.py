"""Hand-written twins: each built-in strategy written by hand, the way its users write it.

They are the reference the generated classes are held to (same Python work
per call, same cost), so they are written independently of
:mod:`jitbench.codegen`: one array field ``x``, one int flag ``mul`` and
``calc(self, y)``, following the JAX docs and the flax/equinox idioms. Each
computes what the generated default shape computes
(``acc = x * y``, then ``acc * y + mul`` for an odd ``mul``, else ``acc + mul``).

``twin(name)`` imports the module that holds the strategy's twin (equinox and
flax twins only load when asked for).
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
}


def twin(name: str) -> type:
    """The hand-written class of strategy ``name``: ``Twin(x, mul)`` with ``calc(y)``."""
    try:
        module, cls = TWINS[name]
    except KeyError:
        raise JitbenchError(
            f"no hand-written twin for {name!r}; valid: {', '.join(TWINS)}"
        ) from None
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)
