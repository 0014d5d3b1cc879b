"""The verdicts: one summary row per target, and what the data say about each missed one."""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from jitbench.options import DEFAULT_PHASES
from jitbench.validate import counts
from jitbench.validate.plan import Outcome
from jitbench.validate.stats import (
    ACCURACY_RANGE,
    CACHED,
    DISPATCH,
    FAMILIES,
    FIDELITY_MEASURES,
    FIDELITY_RANGE,
    RUNTIME_TARGET_S,
    TARGET_SLOWDOWN,
    minutes,
    noise_by_size,
    pct,
    sensitivity_summary,
    smallest_flagged,
)


def summary_table(outcome: Outcome, total_seconds: float) -> pd.DataFrame:
    """One row per target: what was asked, what was reached, whether it was met."""
    rows: list[dict[str, Any]] = []
    if outcome.fidelity is not None:
        rows += _fidelity_rows(outcome.fidelity)
    if outcome.accuracy is not None:
        low, high = ACCURACY_RANGE
        for benchmark in (CACHED, DISPATCH):
            reached, met = _ranged(outcome.accuracy[outcome.accuracy["benchmark"] == benchmark])
            rows.append(
                {
                    "check": f"accuracy: {FAMILIES[benchmark]} asv / timeit",
                    "target": f"every ratio in {low}-{high}",
                    "reached": reached,
                    "met": met,
                }
            )
    if outcome.noise_summary is not None:
        rows += _noise_rows(outcome.noise_summary)
    if outcome.sensitivity_summary is not None:
        rows.append(_sensitivity_row(outcome.sensitivity_summary, outcome.plan.factor))
    if outcome.count_figures is not None:
        rows += counts.summary_rows(outcome.count_figures)
    if set(outcome.plan.phases) == set(DEFAULT_PHASES):
        rows.append(
            {
                "check": "runtime of jitbench validate",
                "target": f"< {RUNTIME_TARGET_S // 60} min",
                "reached": minutes(total_seconds),
                "met": total_seconds < RUNTIME_TARGET_S,
            }
        )
    return pd.DataFrame(rows, columns=["check", "target", "reached", "met"])


def _ranged(part: pd.DataFrame) -> tuple[str, bool]:
    """The range of the ratios, how many are in range; whether all are and there are some."""
    inside = int(part["in_range"].sum())
    reached = f"{part['ratio'].min():.3f}-{part['ratio'].max():.3f} ({inside}/{len(part)} in range)"
    return reached, inside == len(part) > 0


def _fidelity_rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    low, high = FIDELITY_RANGE
    rows = []
    for measure in FIDELITY_MEASURES:
        part = table[table["measure"] == measure]
        reached, met = _ranged(part[part["held"]])
        others = ", ".join(f"{r.strategy} x{r.ratio:.2f}" for r in part[~part["held"]].itertuples())
        rows.append(
            {
                "check": f"fidelity: {measure}, generated class / hand-written twin",
                "target": f"{low}-{high} for the jit strategies",
                "reached": reached + (f"; not held to it: {others}" if others else ""),
                "met": met and bool(part["same_result"].all()),
            }
        )
    return rows


def _noise_rows(summary: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for benchmark, family in FAMILIES.items():
        part = summary[summary["benchmark"] == benchmark]
        judged = part[part["met"].notna()].iloc[0]
        other = part[part["met"].isna()].iloc[0]
        rows.append(
            {
                "check": f"noise: {family} spread, {judged.scope} (p95 of abs(ratio - 1))",
                "target": f"<= {judged.target:.0%}",
                "reached": f"{pct(judged.spread)} over {judged.rows} rows "
                f"(max {pct(judged.max_deviation)}, {judged.flagged} flagged by compare); "
                f"{other.scope}: {pct(other.spread)} over {other.rows}",
                "met": bool(judged.met),
            }
        )
    return rows


def _sensitivity_row(summary: pd.DataFrame, factor: float) -> dict[str, Any]:
    smallest = smallest_flagged(summary)
    detected = smallest_flagged(summary, require_clean=False)
    false = int(summary["false_flags"].sum()) if not summary.empty else 0
    unchanged = int(summary["unchanged_rows"].sum()) if not summary.empty else 0
    reached = "none" if smallest is None else f"{smallest:g}%"
    if smallest is None and detected is not None:
        reached += f" (canary flagged every time from {detected:g}%, but false flags)"
    return {
        "check": "sensitivity: smallest slowdown flagged every repetition, no false flag",
        "target": f"<= {TARGET_SLOWDOWN:g}% at factor {factor:g}",
        "reached": f"{reached}; {false} false flags in {unchanged} rows",
        "met": smallest is not None and smallest <= TARGET_SLOWDOWN,
    }


def limits(outcome: Outcome) -> list[str]:
    """What the data say about each missed target, a sentence each."""
    notes = []
    cpus = os.cpu_count() or 1
    if outcome.fidelity is not None:
        notes += _fidelity_notes(outcome, cpus)
    if outcome.accuracy is not None and not outcome.accuracy["in_range"].all():
        bad = outcome.accuracy[~outcome.accuracy["in_range"]]
        cases = ", ".join(
            f"{FAMILIES[r.benchmark]} {r.strategy} {r.size} x{r.ratio:.2f}"
            for r in bad.itertuples()
        )
        low, high = ACCURACY_RANGE
        notes.append(f"Accuracy: outside {low}-{high}: {cases}{_load(outcome, 'accuracy', cpus)}.")
    if outcome.noise_summary is not None and outcome.noise is not None:
        notes += _noise_notes(outcome, cpus)
    summary = outcome.sensitivity_summary
    if outcome.sensitivity is not None and summary is not None and not summary.empty:
        smallest = smallest_flagged(summary)
        if smallest is None or smallest > TARGET_SLOWDOWN:
            notes.append(_sensitivity_note(outcome, cpus))
    return notes


def _fidelity_notes(outcome: Outcome, cpus: int) -> list[str]:
    table = outcome.fidelity
    assert table is not None
    notes = []
    differ = table[~table["same_result"]]
    if not differ.empty:
        names = ", ".join(sorted(set(differ["strategy"])))
        notes.append(f"Fidelity: generated class and twin return different results: {names}.")
    bad = table[table["held"] & ~table["in_range"]]
    if not bad.empty:
        cases = ", ".join(f"{r.measure} {r.strategy} x{r.ratio:.2f}" for r in bad.itertuples())
        low, high = FIDELITY_RANGE
        notes.append(f"Fidelity: outside {low}-{high}: {cases}{_load(outcome, 'fidelity', cpus)}.")
    return notes


def _noise_notes(outcome: Outcome, cpus: int) -> list[str]:
    summary, table = outcome.noise_summary, outcome.noise
    assert summary is not None and table is not None
    missed = summary[summary["met"].eq(False)]  # None: a scope without a target
    if missed.empty:
        return []
    by_size = noise_by_size(table)
    parts = []
    for row in missed.itertuples():
        sized = by_size[by_size["family"] == row.family]
        where = ", ".join(f"{r.device} size {r.size}: {r.spread:.0%}" for r in sized.itertuples())
        parts.append(f"{row.family} {pct(row.spread)} over {row.scope} ({where})")
    return [f"Noise above target: {'; '.join(parts)}{_load(outcome, 'noise', cpus)}."]


def _sensitivity_note(outcome: Outcome, cpus: int) -> str:
    assert outcome.sensitivity is not None
    by_size = sensitivity_summary(outcome.sensitivity, by_size=True)
    parts = "; ".join(
        f"{row.slowdown_pct:g}% size {row.size}: canary flagged "
        f"{row.canary_flagged}/{row.canary_rows} (ratio "
        f"{row.canary_ratio_min:.2f}-{row.canary_ratio_max:.2f}; above the factor "
        f"{row.canary_above_factor}, significant {row.canary_significant}), "
        f"{row.false_flags} false flags"
        for row in by_size.itertuples()
    )
    load = _load(outcome, "sensitivity", cpus)
    return f"Sensitivity at factor {outcome.plan.factor:g}: {parts}{load}."


def _load(outcome: Outcome, phase: str, cpus: int) -> str:
    """The phase's 1-minute load average, as a clause ending a note; "" when not recorded."""
    loads = outcome.loads.get(phase)
    if not loads:
        return ""
    busy = ", other processes competing" if loads[1] > cpus else ""
    return f"; load average {loads[0]:.1f}-{loads[1]:.1f} on {cpus} CPUs{busy}"
