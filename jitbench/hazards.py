"""The audit's totals: one table that names each, its unit, its column and its words.

The asv hazard tracks of built-in strategies and of targets, the CLI's audit
columns and the report's hazard words are all generated from :data:`HAZARDS`;
what ``assert_jit_safe`` fails on and ``advise`` reports is named in :data:`FOUND`.
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

# An object's hazards, by the name assert_jit_safe's allow= and advise's rows use.
FOUND = {
    "stale": "a call returns a result computed for other values (a change jit does not see)",
    "error": "a call raises under jit where the call without jit does not",
    "leak": "instances (their arrays, where they cannot be weakly referenced) stay alive after "
    "the scenario dropped them (jit's cache holds them)",
    "recompile": "a compile where nothing new was seen: the same call again, a flag set back "
    "to a value seen before, a new instance equal to one already called, new values of "
    "an array of the same shape (the call hashes them), or the object the call returned "
    "called in turn, as a loop does (its types drift)",
}
# The steps where jit has seen all that the call needs, or a loop should: a compile there is
# a recompile.
SEEN_STEPS = (
    "repeat_call", "seen_static", "equal_instance", "same_shape_array", "fed_back",
    "fed_back_again",
)  # fmt: skip
