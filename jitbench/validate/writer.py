"""The report: ``validation.md`` (Markdown tables through pandas), the CSVs behind it (among
them ``noise.csv``, which ``jitbench compare --noise`` reads) and ``summary.json``
(docs/validation.md)."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import pandas as pd

from jitbench.validate import counts
from jitbench.validate.asvphases import NOISE_DEVICES, SENSITIVITY_DEVICE
from jitbench.validate.inprocess import (
    ACCURACY_ROUNDS,
    FIDELITY_LOOP_S,
    FIDELITY_ROUNDS,
    TIMEIT_REPEATS,
)
from jitbench.validate.plan import SUITE_PHASES, Outcome
from jitbench.validate.stats import (
    ACCURACY_RANGE,
    FAMILIES,
    FIDELITY_EXEMPT,
    FIDELITY_RANGE,
    SCOPES,
    minutes,
    noise_by_size,
    pct,
    seconds,
    sensitivity_summary,
    smallest_flagged,
)
from jitbench.validate.summary import limits


def markdown(table: pd.DataFrame) -> str:
    return table.to_markdown(index=False, disable_numparse=True)


def yes(flag: Any) -> str:
    return "yes" if bool(flag) else "NO"


def _ratio(value: float) -> str:
    return f"{value:.3f}" if pd.notna(value) else "n/a"


def _fidelity_section(outcome: Outcome, out: Path) -> list[str]:
    table = outcome.fidelity
    assert table is not None
    table.to_csv(out / "fidelity.csv", index=False)
    low, high = FIDELITY_RANGE
    shown = pd.DataFrame(
        {
            "strategy": table["strategy"],
            "measure": table["measure"],
            "generated (CPU)": table["generated_s"].map(seconds),
            "twin (CPU)": table["twin_s"].map(seconds),
            "ratio": table["ratio"].map(_ratio),
            "in range": [yes(r.in_range) if r.held else "not held" for r in table.itertuples()],
            "same result": table["same_result"].map(yes),
            "rounds": table["rounds"],
        }
    )
    size, device = table["size"].iloc[0], table["device"].iloc[0]
    lines = [
        "## Fidelity: each generated class against its hand-written twin",
        "",
        f"Size {size} on {device}. The generated instance (`jitbench show STRATEGY`) and its "
        "twin (`jitbench.strategies.twins`) hold the same arrays and are called with the same "
        "`y`, in "
        "this process, in alternation: per round one timeit loop of each (about "
        f"{FIDELITY_LOOP_S * 1e3:g} ms of calls, the same number on both sides), the order "
        f"swapped every round, up to {FIDELITY_ROUNDS} rounds; each side is the median. "
        "Loops are timed in CPU seconds of this process (all its threads), so time spent "
        "waiting for a core on a busy machine counts on neither side. "
        "Cached call: `jax.block_until_ready(obj.calc(y))`; dispatch: `obj.calc(y)`. "
        f"Target: generated / twin in {low}-{high} for the jit strategies. Data: "
        "`fidelity.csv`.",
        "",
        markdown(shown),
        "",
        "Not held to the target:",
        "",
    ]
    lines += [f"- {name}: {why}." for name, why in FIDELITY_EXEMPT.items()]
    return [*lines, ""]


def _accuracy_section(outcome: Outcome, out: Path) -> list[str]:
    table = outcome.accuracy
    assert table is not None
    table.to_csv(out / "accuracy.csv", index=False)
    shown = pd.DataFrame(
        {
            "benchmark": table["benchmark"].map(FAMILIES),
            "strategy": table["strategy"],
            "size": table["size"],
            "device": table["device"],
            "asv": table["asv_s"].map(seconds),
            "timeit": table["timeit_s"].map(seconds),
            "ratio": table["ratio"].map(_ratio),
            "in range": table["in_range"].map(yes),
        }
    )
    if "rounds" in table:
        shown["rounds"] = table["rounds"]
    return [
        "## Accuracy: asv's figure against an independent timeit",
        "",
        "asv: the suite's own benchmark object run in-process as asv's runner runs it, "
        "median of its samples; timeit: an instance of its own, timeit's own calibration "
        f"(`autorange`). Up to {ACCURACY_ROUNDS} rounds alternate the two (asv's run, then "
        f"{TIMEIT_REPEATS} timeit loop); each side is the median over its rounds. jit's "
        "in-memory caches are cleared before each benchmark, so its instance is the only one "
        "in its cache entry, as in an asv benchmark process. Target: every ratio in "
        f"{ACCURACY_RANGE[0]}-{ACCURACY_RANGE[1]}. Data: `accuracy.csv`.",
        "",
        markdown(shown),
        "",
    ]


def _noise_section(outcome: Outcome, out: Path) -> list[str]:
    table, summary = outcome.noise, outcome.noise_summary
    assert table is not None and summary is not None
    table.to_csv(out / "noise.csv", index=False)
    summary.to_csv(out / "noise_summary.csv", index=False)
    by_size = noise_by_size(table)
    by_size.to_csv(out / "noise_by_size.csv", index=False)
    shown = pd.DataFrame(
        {
            "family": summary["family"],
            "scope": summary["scope"],
            "rows": summary["rows"],
            "spread": summary["spread"].map(pct),
            "max deviation": summary["max_deviation"].map(pct),
            "median ratio": summary["median_ratio"].map(_ratio),
            "flagged by compare": summary["flagged"],
            "target": summary["target"].map(lambda t: f"<= {t:.0%}" if pd.notna(t) else ""),
            "met": summary["met"].map(lambda m: "" if pd.isna(m) else yes(m)),
        }
    )
    sized = by_size.assign(
        spread=by_size["spread"].map(pct), median_ratio=by_size["median_ratio"].map(_ratio)
    )
    lines = [
        "## Noise: asv twice on unchanged code",
        "",
        f"Devices {', '.join(NOISE_DEVICES)}, the benchmark classes' own timing attributes; "
        "ratio = second run's median / first's; a row's spread = |ratio - 1|; a family's "
        "spread = the 95th percentile of its rows', over all rows and over "
        f"{SCOPES['small']}. Flagged = rows `jitbench compare` marks as changed at factor "
        f"{outcome.plan.factor:g}. Rows: `noise.csv`, which `jitbench compare --noise` reads "
        "to leave differences within a row's measured noise unflagged.",
        "",
        markdown(shown),
        "",
        "By size and device (`noise_by_size.csv`):",
        "",
        markdown(sized),
        "",
    ]
    probe = outcome.parallelism
    if probe:
        lines += [
            f"Host parallelism: helper_function's cached call at size {probe['size']} takes "
            f"{seconds(probe['all_cpus_s'])} with this process on all {probe['cpus']} "
            f"CPUs and {seconds(probe['one_cpu_s'])} pinned to one "
            f"(x{probe['one_cpu_s'] / probe['all_cpus_s']:.2f}).",
            "",
        ]
    return lines


def _sensitivity_shown(table: pd.DataFrame) -> pd.DataFrame:
    frame = pd.DataFrame({"slowdown": table["slowdown_pct"].map("{:g}%".format)})
    if "size" in table:
        frame["size"] = table["size"]
    rows = list(table.itertuples())
    frame["canary flagged"] = [f"{r.canary_flagged}/{r.canary_rows}" for r in rows]
    frame["canary ratio median (range)"] = [
        f"{r.canary_ratio_median:.3f} ({r.canary_ratio_min:.3f}-{r.canary_ratio_max:.3f})"
        for r in rows
    ]
    frame["false flags"] = [f"{r.false_flags}/{r.unchanged_rows}" for r in rows]
    return frame


def _sensitivity_section(outcome: Outcome, out: Path) -> list[str]:
    judged, summary = outcome.sensitivity, outcome.sensitivity_summary
    assert judged is not None and summary is not None
    judged.to_csv(out / "sensitivity.csv", index=False)
    summary.to_csv(out / "sensitivity_summary.csv", index=False)
    by_size = sensitivity_summary(judged, by_size=True)
    smallest = smallest_flagged(summary)
    lines = [
        "## Sensitivity: a planted regression against jitbench compare",
        "",
        "`canary` is helper_function plus host work calibrated to slow its cached call by the "
        f"given fraction; {outcome.plan.repetitions} independent base/head pairs per slowdown "
        f"on {SENSITIVITY_DEVICE}, every strategy in each run, judged by `compare_frames` at "
        f"factor {outcome.plan.factor:g}. Smallest slowdown flagged in every repetition with "
        "no unchanged strategy flagged: "
        f"**{'none' if smallest is None else f'{smallest:g}%'}**. Rows: `sensitivity.csv`.",
        "",
        markdown(_sensitivity_shown(summary)),
        "",
        "By size:",
        "",
        markdown(_sensitivity_shown(by_size)),
        "",
    ]
    false = summary[summary["false_flags"] > 0]
    if not false.empty:
        lines += ["False flags (unchanged strategies marked as regressions):", ""]
        lines += [f"- {r.slowdown_pct:g}%: {r.false_flag_cases}" for r in false.itertuples()]
        lines += [""]
    zero = outcome.canary_zero
    if zero is not None and not zero.empty:
        lines += [
            "Canary at slowdown 0 / helper_function in the same base run: "
            f"{zero['ratio'].min():.3f}-{zero['ratio'].max():.3f} over {len(zero)} rows.",
            "",
        ]
    return lines


def _counts_section(outcome: Outcome, out: Path) -> list[str]:
    table, found = outcome.counts, outcome.count_figures
    assert table is not None and found is not None
    table.to_csv(out / "counts.csv", index=False)
    per_call = pd.DataFrame(found["per_call"]).rename(
        columns={"call": "instructions per cached call", "dispatch": "instructions per dispatch"}
    )
    return [
        "## Counts: instructions per call under Valgrind",
        "",
        f"{table['process'].nunique()} Valgrind processes "
        "(`jitbench.measure.counting.instructions`): a base "
        "one counts every strategy with a hand-written twin at the smallest size on cpu and "
        f"then {counts.BASELINE} again, {counts.SLOWED} more the same with that last row slowed "
        f"by {counts.SLOWDOWN:.0%} of its instructions (planted work sized by counts), and one "
        "the twins in the same order. The calling thread's instructions per call, median over "
        "the base and slowed processes (every count: `counts.csv`):",
        "",
        markdown(per_call.round(0)),
        "",
    ]


SUMMARY_JSON = "summary.json"
SUMMARY_COLUMNS = ("check", "target", "reached", "met")


def summary_record(outcome: Outcome, summary: pd.DataFrame, total_seconds: float) -> dict:
    """The run in brief: commit, JAX, Python, host, start, settings, durations, summary rows."""
    import jax

    return {
        "commit": outcome.commit,
        "jax": jax.__version__,
        "python": platform.python_version(),
        "arch": platform.machine(),
        "cpus": os.cpu_count(),
        "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(outcome.started)),
        "sizes": list(outcome.plan.sizes),
        "cpu_affinity": outcome.plan.cpu_affinity,
        "seconds": {"total": total_seconds, **outcome.seconds},
        "summary": [
            {"check": r.check, "target": r.target, "reached": r.reached, "met": bool(r.met)}
            for r in summary.itertuples()
        ],
        **({"counts": outcome.count_figures} if outcome.count_figures is not None else {}),
    }


def header(record: dict) -> str:
    """The report's first line: where, when and how the run of ``record`` was made."""
    seconds = dict(record["seconds"])
    total = seconds.pop("total")
    phases = ", ".join(f"{k} {minutes(v)}" for k, v in seconds.items())
    commit = record["commit"][:12] if record["commit"] else "n/a"
    # Pinning applies to asv's processes: a run of no asv phase ran none to pin.
    pinned = record["cpu_affinity"] if set(seconds) & set(SUITE_PHASES) else None
    return (
        f"Commit {commit}, JAX {record['jax']}, Python {record['python']}, {record['arch']} "
        f"with {record['cpus']} CPUs; {record['started']}. "
        f"Sizes {', '.join(map(str, record['sizes']))}"
        + (f"; asv pinned to CPU {pinned}" if pinned else "")
        + f"; runtime {minutes(total)} ({phases})."
    )


def summary_markdown(record: dict) -> str:
    """The summary table of ``record`` as the report shows it."""
    table = pd.DataFrame(record["summary"], columns=list(SUMMARY_COLUMNS))
    return markdown(table.assign(met=table["met"].map(yes)))


def write_report(outcome: Outcome, summary: pd.DataFrame, total_seconds: float) -> Path:
    """validation.md, summary.json and the CSVs behind them in ``plan.out``."""
    out = outcome.plan.out
    out.mkdir(parents=True, exist_ok=True)
    summary.to_csv(out / "summary.csv", index=False)
    record = summary_record(outcome, summary, total_seconds)
    (out / SUMMARY_JSON).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    lines = [
        "# jitbench validation",
        "",
        header(record),
        "",
        "## Summary",
        "",
        summary_markdown(record),
        "",
    ]
    notes = limits(outcome)
    if notes:
        lines += ["## What limits the missed targets", ""]
        lines += [f"- {note}" for note in notes] + [""]
    sections = (
        (outcome.fidelity, _fidelity_section),
        (outcome.accuracy, _accuracy_section),
        (outcome.noise, _noise_section),
        (outcome.sensitivity, _sensitivity_section),
        (outcome.counts, _counts_section),
    )
    for measured, section in sections:
        if measured is not None:
            lines += section(outcome, out)
    (out / "validation.md").write_text("\n".join(lines), encoding="utf-8")
    return out / "validation.md"
