"""The registry of ways to jit a method (:class:`Strategy`, :data:`STRATEGIES`) and plugins.

Never imports JAX; design notes in docs/design.md.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import importlib.util
import os
from collections.abc import Callable

from jitbench.errors import JitbenchError, StrategyUnavailable
from jitbench.strategies import library_recipes, recipes
from jitbench.strategies.codegen import (
    DEFAULT_SHAPE,
    Shape,
    Template,
    make_class,
    source,
)

PLUGINS_ENV = "JITBENCH_PLUGINS"
# The canary's slowdown (jitbench.strategies.canary), named here: importing the canary
# registers it, which a process that only sets or clears its slowdown must not do.
CANARY_SLOWDOWN_ENV = "JITBENCH_CANARY_SLOWDOWN"


@dataclasses.dataclass(frozen=True)
class Strategy:
    """One way of putting ``jax.jit`` on a method.

    ``render`` turns a :class:`~jitbench.strategies.codegen.Template` into the source of a
    module defining a class named after the strategy (``helper_function`` ->
    ``HelperFunction``) with one constructor parameter per field and a
    ``calc(y)`` method. ``requires`` lists the importable packages it needs,
    as requirement specifiers (``"flax>=0.12.1"``: that release or a newer one), ``extra`` the pip
    extra that installs them, and ``holder`` the attribute holding the fields when the class
    keeps them on another object (an nnx module) rather than on itself. Its fields are
    changed as a user's object is, found by walking it (``jitbench.targets``).
    ``function`` names a module-level jitted function the user calls on the fields
    (``_calc(s0, a0, y)``), no method, no object: the floor the strategies are held to.
    ``raises_on`` names the scenario steps (``jitbench.auditing.scenario``) where a call
    raises by design, such as an AOT executable called with a new shape: the
    after-change benchmark records those as n/a, and the tests check the audit
    sees exactly these errors.
    """

    name: str
    summary: str
    mechanism: str
    render: Callable[[Template], str]
    requires: tuple[str, ...] = ()
    extra: str | None = None
    holder: str = ""
    raises_on: tuple[str, ...] = ()
    function: str = ""

    def __post_init__(self) -> None:
        """Refuse what :attr:`unavailable_reason` could not parse later."""
        from packaging.requirements import InvalidRequirement, Requirement

        form = "a tuple of requirement specifiers such as ('flax>=0.12.1',)"
        if not isinstance(self.requires, tuple):
            raise JitbenchError(
                f"strategy {self.name!r}: requires must be {form}, got {self.requires!r}"
            )
        for text in self.requires:
            try:
                Requirement(text if isinstance(text, str) else "")
            except InvalidRequirement:
                raise JitbenchError(
                    f"strategy {self.name!r} requires {text!r}, which is not a requirement "
                    f"specifier; expected {form}"
                ) from None

    @property
    def unavailable_reason(self) -> str | None:
        """Why the strategy cannot run here, or None when it can."""
        from packaging.requirements import Requirement

        hint = f" (pip install 'jitbench[{self.extra}]')" if self.extra else ""
        for text in self.requires:
            requirement = Requirement(text)
            package = requirement.name
            if importlib.util.find_spec(package) is None:
                return f"strategy {self.name!r} needs package {package!r}{hint}"
            installed = importlib.metadata.version(package)
            if not requirement.specifier.contains(installed, prereleases=True):
                return f"strategy {self.name!r} needs {text}, found {package} {installed}"
        return None

    @property
    def available(self) -> bool:
        return self.unavailable_reason is None

    def check_available(self) -> None:
        """Raise :class:`StrategyUnavailable` (asv shows n/a) when a package is missing."""
        reason = self.unavailable_reason
        if reason is not None:
            raise StrategyUnavailable(reason)

    def make_class(self, shape: Shape = DEFAULT_SHAPE, *, probe: bool = False) -> type:
        """The generated class for ``shape`` (one class per shape, cached)."""
        return make_class(self, shape, probe)

    def source(self, shape: Shape = DEFAULT_SHAPE) -> str:
        """The generated module source for ``shape``."""
        return source(self, shape)


STRATEGIES: dict[str, Strategy] = {}


def register_strategy(strategy: Strategy, *, replace: bool = False) -> Strategy:
    """Add a strategy to :data:`STRATEGIES`; the asv suite reads the registry at import.

    Register before the benchmarks are imported (from a module named in
    ``JITBENCH_PLUGINS``, see docs/own-objects.md) so the grid includes it.
    ``replace=True`` overwrites a registered strategy of the same name.
    """
    if not replace and strategy.name in STRATEGIES:
        raise JitbenchError(f"strategy {strategy.name!r} is already registered")
    STRATEGIES[strategy.name] = strategy
    return strategy


def get_strategy(name: str) -> Strategy:
    """Look a strategy up by name; an unknown name lists the valid ones."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise JitbenchError(f"unknown strategy {name!r}; valid: {', '.join(STRATEGIES)}") from None


def load_plugins() -> list[str]:
    """Import the modules named in ``JITBENCH_PLUGINS`` (comma-separated); returns their names.

    Each may call :func:`register_strategy`. A module that cannot be imported
    (not found, or raising anything while it runs: a syntax error, a misspelt
    name, a strategy it registers twice) is a :class:`JitbenchError` naming it
    and the error, never a silent omission or a traceback.
    """
    names = [n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(",") if n.strip()]
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise JitbenchError(f"cannot import {PLUGINS_ENV} module {name!r}: {exc}") from None
        except Exception as exc:
            reason = " ".join(f"{type(exc).__name__}: {exc}".split())
            raise JitbenchError(f"cannot import {PLUGINS_ENV} module {name!r}: {reason}") from None
    return names


for _strategy in (
    Strategy(
        "eager",
        "plain Python method, no jit: the baseline",
        "op-by-op dispatch of jax.numpy, nothing cached",
        recipes.eager,
    ),
    Strategy(
        "bound_method_jit",
        "jax.jit(obj.calc) wrapped once per instance and reused",
        "attributes are closed over at trace time; the key ignores them (stale after a change)",
        recipes.bound_method_jit,
    ),
    Strategy(
        "helper_function",
        "method calls a module-level jitted function, flags static (JAX docs, strategy 1)",
        "flags as static_argnums, arrays as dynamic arguments",
        recipes.helper_function,
    ),
    Strategy(
        "static_self_id_hash",
        "partial(jax.jit, static_argnums=0) with the default identity hash",
        "self is static and hashed by id: changes go unseen (stale), instances kept alive",
        recipes.static_self_id_hash,
    ),
    Strategy(
        "static_self_value_hash",
        "static self with __hash__/__eq__ over field values (JAX docs, strategy 2)",
        "self is static and hashed by value; arrays hashed by content, baked in as constants",
        recipes.static_self_value_hash,
    ),
    Strategy(
        "pytree_class",
        "register_pytree_node_class, plain jax.jit on the method (JAX docs, strategy 3)",
        "arrays are children, flags aux data; Python tree_flatten at every call",
        recipes.pytree_class,
    ),
    Strategy(
        "pytree_dataclass",
        "frozen dataclass registered with jax.tree_util.register_dataclass",
        "data and meta fields flattened in C++; changed with dataclasses.replace",
        recipes.pytree_dataclass,
    ),
    Strategy(
        "jit_per_call",
        "a new jax.jit(self._calc) wrapper made inside every call (anti-pattern)",
        "a fresh jit object per call; what it reuses depends on JAX's tracing caches",
        recipes.jit_per_call,
    ),
    Strategy(
        "equinox_filter_jit",
        "eqx.Module with eqx.filter_jit on the method",
        "arrays partitioned from everything else at every call; frozen, dataclasses.replace",
        library_recipes.equinox_filter_jit,
        requires=("equinox",),
        extra="equinox",
    ),
    Strategy(
        "flax_struct_dataclass",
        "flax.struct.dataclass, flags as pytree_node=False, jax.jit on the method",
        "a register_dataclass pytree under the hood; frozen, changed with .replace",
        library_recipes.flax_struct_dataclass,
        requires=("flax",),
        extra="flax",
    ),
    Strategy(
        "flax_nnx_jit",
        "nnx.Module with nnx.jit on the method",
        "graph traversal in Python at every call; mutable, changed in place",
        library_recipes.flax_nnx_jit,
        requires=("flax",),
        extra="flax",
    ),
    Strategy(
        "aot_compiled",
        "jax.jit(f).lower(...).compile() on the first call, the executable kept and called",
        "no cache lookup: flags baked in, changes in place unseen (stale), a new shape raises",
        recipes.aot_compiled,
        raises_on=("new_shape_array",),
    ),
    Strategy(
        "equinox_module_jax_jit",
        "eqx.Module with plain jax.jit on the method",
        "the module is a pytree; equinox builds a bound-method pytree at every attribute access",
        library_recipes.equinox_module_jax_jit,
        requires=("equinox",),
        extra="equinox",
    ),
    Strategy(
        "nnx_cached_partial",
        "nnx.jit method called through nnx.cached_partial(Model.calc, model) (flax's guide)",
        "graph traversal cached once; arrays are shared Variables, flag changes unseen (stale)",
        library_recipes.nnx_cached_partial,
        requires=("flax>=0.12.1",),
        extra="flax",
        holder="model",
    ),
    Strategy(
        "nnx_split_merge",
        "nnx.split once, jax.jit over (graphdef, state) with nnx.merge inside (flax's guide)",
        "a plain jit of two pytrees; the split is not redone, so flag changes are unseen",
        library_recipes.nnx_split_merge,
        requires=("flax>=0.12.1",),
        extra="flax",
        holder="model",
    ),
    Strategy(
        "nnx_tree_mode",
        "nnx.Module with nnx.jit(graph=False) on the method: tree mode, no graph traversal",
        "the module is a plain pytree to jax.jit: Variables are leaves, flags in the treedef",
        library_recipes.nnx_tree_mode,
        requires=("flax>=0.12.6",),
        extra="flax",
    ),
    Strategy(
        "nnx_jit_partial",
        "nnx.jit_partial(Model.calc, model, graph=False): the module flattened once (tree mode)",
        "the Variables are flattened at construction: their values are seen, flags unseen (stale)",
        library_recipes.nnx_jit_partial,
        requires=("flax>=0.12.8",),
        extra="flax",
        holder="model",
    ),
    Strategy(
        "jit_function",
        "the floor: helper_function's jitted _calc called on the arrays, no object",
        "jax.jit of a free function: the least a call of this computation costs in JAX",
        recipes.jit_function,
        function="_calc",
    ),
):
    register_strategy(_strategy)

# The floor the report divides by: a function, not a way of jitting a method.
FLOOR = "jit_function"
