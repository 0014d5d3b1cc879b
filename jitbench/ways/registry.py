"""The registry of the built-in strategies (:data:`STRATEGIES`: the ways of
:mod:`jitbench.ways.catalog` the suite builds as classes) and plugins.

Never imports JAX; design notes in docs/design.md.
"""

from __future__ import annotations

import importlib
import os

from jitbench.errors import JitbenchError
from jitbench.ways import catalog
from jitbench.ways.record import Way

PLUGINS_ENV = "JITBENCH_PLUGINS"


# A way the suite builds as a class, under the name plugins register it with
# (docs/own-objects.md): every strategy is an entry of the catalog.
Strategy = Way


STRATEGIES: dict[str, Strategy] = {}


def register_strategy(strategy: Strategy, *, replace: bool = False) -> Strategy:
    """Add a strategy to :data:`STRATEGIES`; the asv suite reads the registry at import.

    Register before the benchmarks are imported (from a module named in
    ``JITBENCH_PLUGINS``, see docs/own-objects.md) so the grid includes it.
    ``replace=True`` overwrites a registered strategy of the same name.
    """
    if strategy.render is None:
        raise JitbenchError(f"strategy {strategy.name!r} has no render: the suite cannot build it")
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


for _strategy in catalog.BUILT_IN:
    register_strategy(_strategy)

# The floor the report divides by: a function, not a way of jitting a method.
FLOOR = "jit_function"
