"""The many-live-instances family: per strategy, what a population of N costs, and the N
from which a later jit loses its fast path (read from a count)."""

from __future__ import annotations

from functools import partial

import pandas as pd

from jitbench.document import Code
from jitbench.report import plots
from jitbench.report.run import Run, order, slug
from jitbench.report.summary import hazard_of
from jitbench.suite import catalog

# The figures shown, renamed so the report's cells format them (``_s`` seconds, ``_bytes``).
COLUMNS = {
    "first_call_dispatch": "first_instance_dispatch_s",
    "after_jit_dispatch": "jit_made_after_dispatch_s",
    "after_jit_python_calls": "jit_made_after_python_calls",
    "kept_alive": "kept_alive_after_release",
    "peak_rss": "peak_rss_bytes",
    "build_seconds": "build_s",
}
TEXT = (
    "N instances of a strategy, each called once and kept alive (",
    Code("nox -s instances"),
    "), one fresh process per N. 'jit made after' is a plain jax.jit created once the "
    "population exists: past 8,192 live jitted functions with explicit attributes, jax issue "
    "39078 reports that such a jit loses its C++ fast path. Python calls per call counts the "
    "Python functions a call enters: 0 on the fast path. 'kept alive' counts the instances "
    "still alive once the population lets go of them (held by jit's caches).",
)


def wide(run: Run) -> pd.DataFrame:
    """One row per device, strategy and population size (asv's order), a column per figure."""
    names = {bench: key for key, bench in catalog.POPULATION.items()}
    frame = run.frame[run.frame["benchmark"].isin(names) & (run.frame["status"] == "ok")]
    if frame.empty:
        return pd.DataFrame()
    frame = frame.assign(figure=frame["benchmark"].map(names))
    table = frame.pivot_table(
        index=["device", "strategy", "instances"], columns="figure", values="value",
        aggfunc="median",
    ).reset_index()  # fmt: skip
    return order(table, frame)


def cliffs(table: pd.DataFrame, hazards: dict[tuple[object, str], str]) -> pd.DataFrame:
    """Per device and strategy the smallest N whose later jit enters Python (none: no cliff)."""
    rows = []
    for (device, strategy), part in table.groupby(["device", "strategy"], sort=False):
        lost = part[part["after_jit_python_calls"] > 0] if "after_jit_python_calls" in part else []
        rows.append(
            {
                "device": device,
                "strategy": strategy,
                "hazard": hazards.get((device, strategy), ""),
                "largest N measured": int(part["instances"].max()),
                "fast path lost from N": int(lost["instances"].min()) if len(lost) else "none",
            }
        )
    return pd.DataFrame(rows)


def section(run: Run) -> None:
    table = wide(run)
    if table.empty:
        return  # opt-in: a run that built no population has nothing to say here
    hazards = hazard_of(run)
    run.text(*TEXT)
    run.blocks += run.table("population-cliffs", cliffs(table, hazards))
    for device, rows in table.groupby("device", sort=False):
        run.heading(f"device {device}")
        rows = rows.assign(hazard=[hazards.get((device, s), "") for s in rows["strategy"]])
        shown = rows[["strategy", "hazard", "instances", *[c for c in COLUMNS if c in rows]]]
        run.blocks += run.table(f"population-{slug(device)}", shown.rename(columns=COLUMNS))


plot = partial(
    plots.line_plot,
    benchmarks={
        "first instance": catalog.POPULATION["first_call_dispatch"],
        "jit made after": catalog.POPULATION["after_jit_dispatch"],
    },
    x="instances",
    title="Dispatch vs live instances",
    name="dispatch-vs-instances",
    ylabel="seconds per call",
)
