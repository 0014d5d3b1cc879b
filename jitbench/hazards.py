"""The audit's totals and an object's hazards: one table, a row per total.

The asv hazard tracks of built-in strategies and of targets, the CLI's audit columns,
the report's hazard words and what ``assert_jit_safe`` fails on and ``advise`` reports
(:data:`FOUND`) are all read from :data:`HAZARDS`; which hazard a step shows is
``Step.hazard`` (jitbench.auditing.result).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Hazard:
    """One total of an audit: ``name`` (the attribute and the asv track ``track_NAME``),
    ``unit`` (asv's), ``short`` (the CLI's column); for a hazard's total, ``found`` (the
    hazard's name in assert_jit_safe's allow= and advise's rows), ``means`` (what it is)
    and ``words`` (the report's label of a strategy with a non-zero count); ``part_of``: the
    total this one counts a part of, whose words its own replace where both are non-zero."""

    name: str
    unit: str
    short: str
    found: str = ""
    words: str = ""
    means: str = ""
    part_of: str = ""


HAZARDS = (
    Hazard("compiles", "compiles", "compiles"),
    Hazard("traces", "traces", "traces"),
    Hazard("stale_results", "stale results", "stale", "stale", "stale",
           "a call returns a result computed for other values (a change jit does not see)"),
    Hazard("errors", "errors", "errors", "error", "errors",
           "a call raises under jit where the call without jit does not, wherever it raises "
           "(the object's own tree_unflatten included)"),
    Hazard("leaked_instances", "instances", "leaked", "leak", "leaks",
           "instances stay alive after the scenario dropped them (jit's cache holds them), "
           "or their arrays do where no instance is seen alive (a closure in a cache key "
           "keeps an array, or the instances cannot be weakly referenced)"),
    # Every step where nothing new was seen (AuditResult.recompiles).
    Hazard("recompiles", "compiles", "recompiles", "recompile", "recompiles",
           "a compile where nothing new was seen: the same call again, a flag set back to a "
           "value seen before, a new instance equal to one already called, new values of an "
           "array of the same shape (the call hashes them), or the object the call returned "
           "called in turn, as a loop does (its types drift)"),
    # The repeated call alone, where a built-in that compiles at every call shows it.
    Hazard("repeat_call_compiles", "compiles", "repeat", words="recompiles every call",
           part_of="recompiles"),
)  # fmt: skip
TOTALS = tuple(h.name for h in HAZARDS)
# The report's words for each hazardous total, in the table's order.
WORDS = {h.name: h.words for h in HAZARDS if h.words}
# An object's hazards, by the name assert_jit_safe's allow= and advise's rows use.
FOUND = {h.found: h.means for h in HAZARDS if h.found}


def named(counts: Mapping[str, Any]) -> list[str]:
    """The hazardous totals of ``counts`` above zero (absent, NaN and zero are none), in
    :data:`HAZARDS`' order; a part in place of its whole (one hazard, one name)."""
    found = {name for name in WORDS if _above_zero(counts.get(name))}
    covered = {h.part_of for h in HAZARDS if h.name in found and h.part_of}
    return [name for name in WORDS if name in found and name not in covered]


def _above_zero(value: Any) -> bool:
    try:
        return float(value) > 0  # NaN and None: not a count
    except (TypeError, ValueError):
        return False
