"""The report: ``validation.md`` (a :class:`jitbench.document.Page`), the CSVs behind it
(among them ``noise.csv``, which ``jitbench compare --noise`` reads) and ``summary.json``
(docs/validation.md)."""

from __future__ import annotations

import json
import os
import platform
import time
from functools import partial
from pathlib import Path

import pandas as pd

from jitbench import document
from jitbench.document import Block, Bold, Bullets, Code, Heading, Page, Paragraph, Table
from jitbench.figure import NOT_MEASURED, seconds
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
    sensitivity_summary,
    smallest_flagged,
)
from jitbench.validate.summary import limits

# Every cell is a display string: a ratio keeps its three decimals.
Shown = partial(Table, as_written=True)


def yes(flag: object) -> str:
    return "yes" if bool(flag) else "NO"


def _ratio(value: float) -> str:
    return f"{value:.3f}" if pd.notna(value) else NOT_MEASURED


def _fidelity_section(outcome: Outcome, out: Path) -> list[Block]:
    table = outcome.fidelity
    assert table is not None
    table.to_csv(out / "fidelity.csv", index=False)
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
    exempt = ", ".join(f"{name} ({why})" for name, why in FIDELITY_EXEMPT.items())
    return [
        Heading("Fidelity: each generated class against its hand-written twin"),
        Paragraph(
            f"Size {size} on {device}, CPU seconds of this process, the median over up to "
            f"{FIDELITY_ROUNDS} rounds of about {FIDELITY_LOOP_S * 1e3:g} ms a side; target "
            f"{FIDELITY_RANGE[0]}-{FIDELITY_RANGE[1]}, not held for {exempt}."
        ),
        Shown(shown),
    ]


def _accuracy_section(outcome: Outcome, out: Path) -> list[Block]:
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
            "rounds": table["rounds"],
        }
    )
    return [
        Heading("Accuracy: asv's figure against an independent timeit"),
        Paragraph(
            f"The median over up to {ACCURACY_ROUNDS} rounds of one asv run (in-process) and "
            f"{TIMEIT_REPEATS} timeit loop; target: every ratio in "
            f"{ACCURACY_RANGE[0]}-{ACCURACY_RANGE[1]}."
        ),
        Shown(shown),
    ]


def _noise_section(outcome: Outcome, out: Path) -> list[Block]:
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
    blocks: list[Block] = [
        Heading("Noise: asv twice on unchanged code"),
        Paragraph(
            (
                f"Devices {', '.join(NOISE_DEVICES)}; ratio = second run / first, spread = p95 "
                f"of |ratio - 1| over all rows and over {SCOPES['small']}, flagged by ",
                Code("jitbench compare"),
                f" at factor {outcome.plan.factor:g} (",
                Code("--noise noise.csv"),
                " leaves a change within a row's spread unflagged).",
            )
        ),
        Shown(shown),
        Paragraph("By size and device:"),
        Shown(sized),
    ]
    probe = outcome.parallelism
    if probe:
        blocks.append(
            Paragraph(
                f"Host parallelism: helper_function's cached call at size {probe['size']} "
                f"takes {seconds(probe['all_cpus_s'])} on all {probe['cpus']} CPUs and "
                f"{seconds(probe['one_cpu_s'])} pinned to one "
                f"(x{probe['one_cpu_s'] / probe['all_cpus_s']:.2f})."
            )
        )
    return blocks


def _sensitivity_shown(table: pd.DataFrame) -> Table:
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
    return Shown(frame)


def _sensitivity_section(outcome: Outcome, out: Path) -> list[Block]:
    judged, summary = outcome.sensitivity, outcome.sensitivity_summary
    assert judged is not None and summary is not None
    judged.to_csv(out / "sensitivity.csv", index=False)
    summary.to_csv(out / "sensitivity_summary.csv", index=False)
    smallest = smallest_flagged(summary)
    blocks: list[Block] = [
        Heading("Sensitivity: a planted regression against jitbench compare"),
        Paragraph(
            (
                f"{outcome.plan.repetitions} base/head pairs per slowdown of the canary on "
                f"{SENSITIVITY_DEVICE} at factor {outcome.plan.factor:g}; the smallest flagged "
                "every time with no false flag: ",
                Bold("none" if smallest is None else f"{smallest:g}%"),
                ".",
            )
        ),
        _sensitivity_shown(summary),
        Paragraph("By size:"),
        _sensitivity_shown(sensitivity_summary(judged, by_size=True)),
    ]
    false = summary[summary["false_flags"] > 0]
    if not false.empty:
        cases = (f"{r.slowdown_pct:g}%: {r.false_flag_cases}" for r in false.itertuples())
        blocks += [Paragraph("False flags:"), Bullets(tuple(cases))]
    zero = outcome.canary_zero
    if zero is not None and not zero.empty:
        blocks.append(
            Paragraph(
                "Canary at slowdown 0 / helper_function in the same base run: "
                f"{zero['ratio'].min():.3f}-{zero['ratio'].max():.3f} over {len(zero)} rows."
            )
        )
    return blocks


def _counts_section(outcome: Outcome, out: Path) -> list[Block]:
    table, found = outcome.counts, outcome.count_figures
    assert table is not None and found is not None
    table.to_csv(out / "counts.csv", index=False)
    per_call = pd.DataFrame(found["per_call"]).rename(
        columns={"call": "instructions per cached call", "dispatch": "instructions per dispatch"}
    )
    return [
        Heading("Counts: instructions per call under Valgrind"),
        Paragraph(
            f"The calling thread's, median over the base process and the {counts.SLOWED} with "
            f"{counts.BASELINE} slowed by {counts.SLOWDOWN:.0%} "
            f"({table['process'].nunique()} processes in all):"
        ),
        Shown(per_call.round(0)),
    ]


SUMMARY_JSON = "summary.json"
SUMMARY_COLUMNS = ["check", "target", "reached", "met"]


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
        "summary": summary.astype({"met": bool}).to_dict("records"),
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


def verdicts(summary: pd.DataFrame | list[dict]) -> Table:
    """The summary table (a frame, or ``summary.json``'s rows) as the report shows it."""
    table = pd.DataFrame(summary, columns=SUMMARY_COLUMNS)
    return Shown(table.assign(met=table["met"].map(yes)))


def write_report(outcome: Outcome, summary: pd.DataFrame, total_seconds: float) -> Path:
    """validation.md, summary.json and the CSVs behind them in ``plan.out``."""
    out = outcome.plan.out
    out.mkdir(parents=True, exist_ok=True)
    summary.to_csv(out / "summary.csv", index=False)
    record = summary_record(outcome, summary, total_seconds)
    (out / SUMMARY_JSON).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    page = Page("jitbench validation", [Paragraph(header(record)), Heading("Summary")])
    page.blocks.append(verdicts(summary))
    notes = limits(outcome)
    if notes:
        page.blocks += [Heading("What limits the missed targets"), Bullets(tuple(notes))]
    sections = (
        (outcome.fidelity, _fidelity_section),
        (outcome.accuracy, _accuracy_section),
        (outcome.noise, _noise_section),
        (outcome.sensitivity, _sensitivity_section),
        (outcome.counts, _counts_section),
    )
    for measured, section in sections:
        if measured is not None:
            page.blocks += section(outcome, out)
    page.blocks.append(
        Paragraph(
            (
                "Rows: the CSVs beside this file; how each phase measures: jitbench's ",
                Code("docs/validation.md"),
                ".",
            )
        )
    )
    (out / "validation.md").write_text(document.markdown(page), encoding="utf-8")
    return out / "validation.md"
