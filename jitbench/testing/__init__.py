"""Checks of a jitted method for a project's own tests: never stale, compiles only when it
should, leaks nothing, and costs no more instructions than last time.

Plain functions for any test runner: :func:`assert_jit_safe` (the audit's scenario,
failing with its verdict), :func:`compiles` (a bound on traces and backend compiles,
failing with JAX's explanation of each miss) and :func:`check_counts` (instructions
per call under Valgrind against a committed baseline). Under pytest the plugin
(:mod:`jitbench.testing.plugin`) adds the ``jitbench_counts`` fixture. Importing this
package imports neither JAX nor Valgrind's tooling. docs/testing.md is the guide;
design notes in docs/design.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from jitbench.hazards import FOUND as HAZARDS
from jitbench.testing.counts import CountsCheck, check_counts

if TYPE_CHECKING:
    from jitbench.testing.checks import CompileCount, assert_jit_safe, compiles

__all__ = [
    "HAZARDS",
    "CompileCount",
    "CountsCheck",
    "assert_jit_safe",
    "check_counts",
    "compiles",
]

# The checks that play the audit or count compiles are loaded on first use (PEP 562): the
# plugin imports this package in every pytest run, where it must import no JAX and no audit.
_CHECKS = ("CompileCount", "assert_jit_safe", "compiles")


def __getattr__(name: str) -> object:
    if name in _CHECKS:
        return getattr(importlib.import_module("jitbench.testing.checks"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
