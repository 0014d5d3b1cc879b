"""The audit's totals: one table that names each, its unit, its column and its words.

The asv hazard tracks of built-in strategies and of targets, the CLI's audit
columns and the report's hazard words are all generated from :data:`HAZARDS`.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Hazard:
    """One total of an audit: ``name`` (the attribute and the asv track ``track_NAME``),
    ``unit`` (asv's), ``short`` (the CLI's column) and ``words`` (the report's label of a
    strategy with a non-zero count; empty for a count that is no hazard by itself)."""

    name: str
    unit: str
    short: str
    words: str = ""


HAZARDS = (
    Hazard("compiles", "compiles", "compiles"),
    Hazard("traces", "traces", "traces"),
    Hazard("stale_results", "stale results", "stale", "stale"),
    Hazard("errors", "errors", "errors", "errors"),
    Hazard("leaked_instances", "instances", "leaked", "leaks"),
    Hazard("repeat_call_compiles", "compiles", "repeat", "recompiles every call"),
)
TOTALS = tuple(h.name for h in HAZARDS)
# The report's words for each hazardous total, in the table's order.
WORDS = {h.name: h.words for h in HAZARDS if h.words}
