"""The audit's totals: one table, a row per total, each with the hazard it counts.

The asv hazard tracks of built-in strategies and of targets, the CLI's audit columns and
the report's hazard words are read from :data:`HAZARDS`; the hazards themselves (what
``assert_jit_safe`` fails on and ``advise`` reports) are :class:`jitbench.vocabulary.Hazard`,
and which one a step shows is ``Step.hazard`` (jitbench.auditing.result).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from jitbench.vocabulary import Hazard


@dataclasses.dataclass(frozen=True)
class Total:
    """One total of an audit: ``name`` (the attribute and the asv track ``track_NAME``),
    ``unit`` (asv's), ``short`` (the CLI's column); for a hazard's total, ``found`` (the
    hazard it counts) and ``words`` (the report's label of a strategy with a non-zero count);
    ``part_of``: the total this one counts a part of, whose words its own replace where both
    are non-zero."""

    name: str
    unit: str
    short: str
    found: Hazard | None = None
    words: str = ""
    part_of: str = ""


HAZARDS = (
    Total("compiles", "compiles", "compiles"),
    Total("traces", "traces", "traces"),
    Total("stale_results", "stale results", "stale", Hazard.STALE, "stale"),
    Total("errors", "errors", "errors", Hazard.ERROR, "errors"),
    Total("leaked_instances", "instances", "leaked", Hazard.LEAK, "leaks"),
    # Every step where nothing new was seen (AuditResult.recompiles).
    Total("recompiles", "compiles", "recompiles", Hazard.RECOMPILE, "recompiles"),
    # The repeated call alone, where a built-in that compiles at every call shows it.
    Total("repeat_call_compiles", "compiles", "repeat", words="recompiles every call",
          part_of="recompiles"),
)  # fmt: skip
TOTALS = tuple(h.name for h in HAZARDS)
# The report's words for each hazardous total, in the table's order.
WORDS = {h.name: h.words for h in HAZARDS if h.words}
# An object's hazards, by the name assert_jit_safe's allow= and advise's rows use: what each is.
FOUND = {hazard.value: hazard.means for hazard in Hazard}


def named(counts: Mapping[str, object]) -> list[str]:
    """The hazardous totals of ``counts`` above zero (absent, NaN and zero are none), in
    :data:`HAZARDS`' order; a part in place of its whole (one hazard, one name)."""
    found = {name for name in WORDS if _above_zero(counts.get(name))}
    covered = {h.part_of for h in HAZARDS if h.name in found and h.part_of}
    return [name for name in WORDS if name in found and name not in covered]


def _above_zero(value: object) -> bool:
    try:
        return float(value) > 0  # type: ignore[arg-type]  # NaN and None: not a count
    except (TypeError, ValueError):
        return False
