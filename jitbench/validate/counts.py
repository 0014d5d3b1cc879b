"""The counts phase of ``jitbench validate``: Valgrind's instruction counts checked for noise,
sensitivity and fidelity (docs/validation.md#how-each-phase-measures). Only ``--phases counts``
runs it: it needs Valgrind and minutes."""

from __future__ import annotations

import itertools
import time

import numpy as np
import pandas as pd

from jitbench.jsondata import JsonObject
from jitbench.measure.counting.instructions import KINDS, Counts, Row, count_rows
from jitbench.options import COUNT_TOLERANCE
from jitbench.results.compare import count_mark
from jitbench.validate.inprocess import fidelity_strategies
from jitbench.validate.plan import Progress

SLOWED = 2
# The planted work, a fraction of the call's instructions.
SLOWDOWN = 0.02
BASELINE = "helper_function"
# Targets: the spread of counts per call (p95 over strategies and kinds of call), and the
# seconds of counting the whole family (every strategy, no twins; a process each).
NOISE_TARGET = 0.005
FAMILY_TARGET_S = 600.0


def measure_counts(size: int, progress: Progress) -> tuple[pd.DataFrame, JsonObject]:
    """Per process, strategy and kind of call its count per call; and the phase's figures."""
    names = fidelity_strategies()
    family = [Row(name, "cpu", size) for name in names]
    plans = {"base": [*family, Row(BASELINE, "cpu", size, calibrated=True)]}
    for number in range(1, SLOWED + 1):
        plans[f"slowed {number}"] = [*family, Row(BASELINE, "cpu", size, slowdown=SLOWDOWN)]
    plans["twin"] = [Row(name, "cpu", size, twin=True) for name in names]
    # One plan at a time: count_rows runs its subjects' processes two at a time itself.
    runs = {}
    for name, rows in plans.items():
        progress.step("counts", f"process {name}")
        runs[name] = _timed(rows)
    rows = []
    for process, (found, _) in runs.items():
        for place, (row, counts) in enumerate(found):
            ok = isinstance(counts, Counts)
            rows += [
                {
                    "process": process,
                    "place": place,
                    "strategy": row.subject,
                    "slowdown": row.slowdown,
                    "kind": kind,
                    "instructions": getattr(counts, kind) if ok else np.nan,
                    "outcome": "ok" if ok else counts.reason,
                }
                for kind in KINDS
            ]
    seconds = [runs[name][1] for name in plans if name != "twin"]
    return pd.DataFrame(rows), figures(pd.DataFrame(rows), seconds)


def _timed(rows: list[Row]) -> tuple[list[tuple[Row, Counts | str]], float]:
    start = time.perf_counter()
    found = count_rows(rows)
    return list(zip(rows, found, strict=True)), time.perf_counter() - start


def figures(table: pd.DataFrame, family_seconds: list[float]) -> JsonObject:
    """Noise, sensitivity, fidelity and runtime from the counts of :func:`measure_counts`."""
    counted = table[table["outcome"] == "ok"]
    wide = counted.pivot_table(
        index=["place", "strategy", "kind"], columns="process", values="instructions"
    )
    slowed = [c for c in wide.columns if c.startswith("slowed")]
    last = wide.index.get_level_values("place").max()
    family = wide.drop(index=last, level="place")[["base", *slowed]].dropna()
    spread = family.max(axis=1) / family.min(axis=1) - 1
    false_flags = sum(
        count_mark(a, b, COUNT_TOLERANCE) != "~"
        for first, second in itertools.pairwise(family.columns)
        for a, b in zip(family[first], family[second], strict=True)
    )
    canary = wide.xs(last, level="place")
    ratios = [canary[name] / canary["base"] for name in slowed]
    marks = [count_mark(b, s, COUNT_TOLERANCE) for name in slowed
             for b, s in zip(canary["base"], canary[name], strict=True)]  # fmt: skip
    fidelity = (family["base"] / wide.drop(index=last, level="place")["twin"]).dropna()
    return {
        "noise_p95": float(np.percentile(spread, 95)) if len(spread) else None,
        "noise_max": float(spread.max()) if len(spread) else None,
        "noise_rows": len(spread),
        "noise_worst": spread.idxmax()[1] if len(spread) else None,
        "canary_ratios": [float(r) for part in ratios for r in part],
        "canary_flagged": sum(m == "+" for m in marks),
        "canary_judged": len(marks),
        "false_flags": int(false_flags),
        "unchanged_pairs": len(family) * max(0, len(family.columns) - 1),
        "fidelity_min": float(fidelity.min()) if len(fidelity) else None,
        "fidelity_max": float(fidelity.max()) if len(fidelity) else None,
        "fidelity_rows": len(fidelity),
        "fidelity_outside": sorted(
            f"{s} {k} x{r:.3f}" for (_, s, k), r in fidelity.items() if abs(r - 1) > COUNT_TOLERANCE
        ),
        "family_seconds": [float(s) for s in family_seconds],
        "per_call": median_counts(counted[counted["process"] != "twin"], last),
        "not_counted": not_counted(table),
    }


def not_counted(table: pd.DataFrame) -> dict[str, str]:
    """Each strategy the base process did not count, with why (n/a or its error)."""
    base = table[(table["process"] == "base") & (table["outcome"] != "ok")]
    return dict(zip(base["strategy"], base["outcome"], strict=True))


def median_counts(counted: pd.DataFrame, last: int) -> list[dict[str, object]]:
    """Each strategy's median count per call and per dispatch over the base and slowed
    processes (the canary's place left out)."""
    plain = counted[counted["place"] != last]
    medians = plain.pivot_table("instructions", "strategy", "kind", "median", sort=False)
    return medians[list(KINDS)].reset_index().to_dict("records")


def summary_rows(found: JsonObject) -> list[dict[str, object]]:
    """The phase's rows of the validation summary."""
    tolerance = f"{COUNT_TOLERANCE:.0%}"
    noise = found["noise_p95"]
    fastest, slowest = found["fidelity_min"], found["fidelity_max"]
    seconds = found["family_seconds"]
    return [
        {
            "check": "counts: spread of a count per call over processes (p95)",
            "target": f"<= {NOISE_TARGET:.1%}",
            "reached": "n/a" if noise is None else f"{noise:.3%} over {found['noise_rows']} rows "
            f"(max {found['noise_max']:.3%}, {found['noise_worst']})",
            "met": noise is not None and noise <= NOISE_TARGET,
        },
        {
            "check": f"counts: +{SLOWDOWN:.0%} planted, flagged every process, no false flag",
            "target": f"flagged {found['canary_judged']}/{found['canary_judged']} at "
            f"tolerance {tolerance}",
            "reached": f"flagged {found['canary_flagged']}/{found['canary_judged']} (ratios "
            + ", ".join(f"{r:.4f}" for r in found["canary_ratios"])
            + f"); {found['false_flags']} false flags in {found['unchanged_pairs']} pairs",
            "met": found["canary_judged"] > 0
            and found["canary_flagged"] == found["canary_judged"]
            and found["false_flags"] == 0,
        },
        {
            "check": "counts: fidelity, generated class / hand-written twin",
            "target": f"within {tolerance} for every strategy",
            "reached": "n/a" if fastest is None else f"{fastest:.4f}-{slowest:.4f} over "
            f"{found['fidelity_rows']} rows"
            + (f"; outside: {', '.join(found['fidelity_outside'])}" if found["fidelity_outside"]
               else ""),
            "met": fastest is not None and not found["fidelity_outside"],
        },
        {
            "check": "counts: one process counting every strategy",
            "target": f"<= {FAMILY_TARGET_S / 60:.0f} min",
            "reached": ", ".join(f"{s / 60:.1f} min" for s in seconds) or "n/a",
            "met": bool(seconds) and max(seconds) <= FAMILY_TARGET_S,
        },
    ]  # fmt: skip
