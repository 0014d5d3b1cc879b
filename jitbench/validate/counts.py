"""The counts phase of ``jitbench validate``: Valgrind's instruction counts, checked three ways.

Several Valgrind processes (:func:`jitbench.instructions.count_rows`) count
every built-in strategy that has a hand-written twin, and the canary slowed
by ``SLOWDOWN`` of its call's instructions (sized by counts):

* **noise**: the spread of each strategy's count per call over the processes;
* **sensitivity**: in every process the canary against ``helper_function``
  (whose code it is, plus the planted work) is a ``+`` of
  :func:`jitbench.compare.count_mark`, and no strategy is one between two
  processes of unchanged code;
* **fidelity**: the first process counts the twins too; a generated class
  and its twin make the same call, so their counts must agree.

Counts do not move with the machine's load, so the processes run two at a
time where there are two CPUs. Only ``jitbench validate --phases counts``
runs this phase: it needs Valgrind and minutes.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import time
from typing import Any

import numpy as np
import pandas as pd

from jitbench.compare import count_mark
from jitbench.instructions import COUNT_TOLERANCE, KINDS, Counts, Row, count_rows
from jitbench.validate.plan import Progress

PROCESSES = 3
# The canary's planted work, a fraction of its call's instructions.
SLOWDOWN = 0.02
BASELINE = "helper_function"
# Targets: the spread of counts per call (p95 over strategies and kinds of call), and the
# seconds of one process counting the whole family (every strategy, no twins).
NOISE_TARGET = 0.005
FAMILY_TARGET_S = 600.0
PLUGINS = {"JITBENCH_PLUGINS": "jitbench.canary"}


def measure_counts(size: int, progress: Progress) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per process, strategy, twin and kind its count per call; and the phase's figures."""
    from jitbench.validate.inprocess import fidelity_strategies

    names = fidelity_strategies()
    family = [Row(name, "cpu", size) for name in names]
    canary = Row("canary", "cpu", size, slowdown=SLOWDOWN)
    plans = [[*family, *(Row(n, "cpu", size, twin=True) for n in names), canary]]
    plans += [[*family, canary] for _ in range(PROCESSES - 1)]
    workers = min(2, os.cpu_count() or 1)
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        runs = list(pool.map(_timed, plans))
    for number in range(len(plans)):
        progress.step("counts", f"process {number + 1} of {len(plans)}")
    rows = []
    for number, (found, _) in enumerate(runs):
        for row, counts in found.items():
            for kind in KINDS:
                rows.append(
                    {
                        "process": number + 1,
                        "strategy": row.subject,
                        "twin": row.twin,
                        "slowdown": row.slowdown,
                        "kind": kind,
                        "instructions": getattr(counts, kind) if isinstance(counts, Counts)
                        else np.nan,
                        "outcome": counts if isinstance(counts, str) else "ok",
                    }
                )  # fmt: skip
    table = pd.DataFrame(rows)
    return table, figures(table, [seconds for _, seconds in runs[1:]])


def _timed(rows: list[Row]) -> tuple[dict[Row, Counts | str], float]:
    start = time.perf_counter()
    found = count_rows(rows, env=PLUGINS)
    return found, time.perf_counter() - start


def figures(table: pd.DataFrame, family_seconds: list[float]) -> dict[str, Any]:
    """Noise, sensitivity, fidelity and runtime from the counts of :func:`measure_counts`."""
    counted = table[table["outcome"] == "ok"]
    plain = counted[~counted["twin"] & (counted["slowdown"] == 0)]
    wide = plain.pivot_table(
        index=["strategy", "kind"], columns="process", values="instructions"
    ).dropna()
    spread = wide.max(axis=1) / wide.min(axis=1) - 1
    processes = list(wide.columns)
    false_flags = sum(
        count_mark(a, b, COUNT_TOLERANCE) != "~"
        for first, second in itertools.pairwise(processes)
        for a, b in zip(wide[first], wide[second], strict=True)
    )
    slowed = counted[counted["slowdown"] > 0].set_index(["process", "kind"])["instructions"]
    base = plain[plain["strategy"] == BASELINE].set_index(["process", "kind"])["instructions"]
    ratios = (slowed / base).dropna()
    marks = [count_mark(base[key], slowed[key], COUNT_TOLERANCE) for key in ratios.index]
    twins = counted[counted["twin"]].set_index(["strategy", "kind"])["instructions"]
    first = plain[plain["process"] == 1].set_index(["strategy", "kind"])["instructions"]
    fidelity = (first / twins).dropna()
    return {
        "noise_p95": float(np.percentile(spread, 95)) if len(spread) else None,
        "noise_max": float(spread.max()) if len(spread) else None,
        "noise_rows": len(spread),
        "noise_worst": spread.idxmax()[0] if len(spread) else None,
        "canary_ratios": [float(r) for r in ratios],
        "canary_flagged": sum(m == "+" for m in marks),
        "canary_judged": len(marks),
        "false_flags": int(false_flags),
        "unchanged_pairs": len(wide) * max(0, len(processes) - 1),
        "fidelity_min": float(fidelity.min()) if len(fidelity) else None,
        "fidelity_max": float(fidelity.max()) if len(fidelity) else None,
        "fidelity_rows": len(fidelity),
        "fidelity_outside": sorted(
            f"{s} {k} x{r:.3f}" for (s, k), r in fidelity.items() if abs(r - 1) > COUNT_TOLERANCE
        ),
        "family_seconds": [float(s) for s in family_seconds],
        "per_call": median_counts(plain),
    }


def median_counts(plain: pd.DataFrame) -> list[dict[str, Any]]:
    """Each strategy's median count per call and per dispatch over the processes."""
    medians = plain.groupby(["strategy", "kind"], sort=False)["instructions"].median()
    order = list(dict.fromkeys(plain["strategy"]))
    return [
        {"strategy": name, **{kind: float(medians[name, kind]) for kind in KINDS}} for name in order
    ]


def summary_rows(found: dict[str, Any]) -> list[dict[str, Any]]:
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
            "check": f"counts: canary +{SLOWDOWN:.0%} flagged every process, no false flag",
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
