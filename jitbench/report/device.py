"""The device rows (``jitbench device-run``): per strategy, an accelerator beside the host's
CPU: dispatch, synchronous call, loop per call, compiles, the size from which the device hides
the host's overhead, and break-even against eager (definitions in docs/accelerator.md)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from jitbench.document import Bold, Bullets
from jitbench.figure import NOT_MEASURED
from jitbench.measure.sampling import HIDDEN_BY  # the loop over the dispatch that hides the host
from jitbench.report.run import Run, cell, order, slug
from jitbench.report.summary import BASELINE, beside, break_even_warm, flag_hazards, per_device
from jitbench.suite import catalog

# The figures per (strategy, size, device), by column.
CALLS = {
    "dispatch_s": catalog.DEVICE_DISPATCH,
    "call_s": catalog.DEVICE_CALL,
    "loop_s": catalog.DEVICE_LOOP,
}
RECOMPILE = "new_static"
LABELS = {
    "dispatch_s": "dispatch",
    "call_s": "synchronous call",
    "loop_s": "loop, per call",
}
# The headline's column headings (the cells hold one figure per device).
SHORT = {
    "dispatch_s": "dispatch",
    "call_s": "call",
    "loop_s": "loop",
    "first_call_s": "cold",
    "recompile_s": "new flag",
    "hidden_from": "hidden from",
    "break_even": "break-even",
}
# What each heading of the headline means.
TEXT = {
    "dispatch_s": "one call until it returns, the device idle (the wait outside)",
    "call_s": "one call and the wait for its result (synchronous)",
    "loop_s": "calls back to back, one wait at the end, per call: what a training loop gets",
    "first_call_s": "the first call of a new instance, every in-memory cache cleared: it compiles",
    "recompile_s": "the call right after a static field took a new value",
    "hidden_from": "the size from which the device hides the host: from it on, the loop per call "
    f"is {HIDDEN_BY:.2f}x the dispatch or more, where the device's own time, not the host's "
    "dispatch, sets a loop's pace (> the largest size measured: it never does)",
    "break_even": "against eager, the calls after which the cold first call is repaid by a loop "
    "cheaper than eager's (eager's operations compiled already); never: it is not cheaper",
}


def has_rows(run: Run) -> bool:
    return any(run.has(benchmark) for benchmark in catalog.DEVICE_ROWS)


def calls(run: Run) -> pd.DataFrame:
    """dispatch, call and loop per (device, size, strategy), on the devices that measured
    any (a device absent from the host, e.g. a gpu on a TPU host, has no rows)."""
    keys = ["device", "size", "strategy"]
    table = pd.DataFrame(run.columns(CALLS, keys)).reset_index()
    if table.empty:
        return table
    any_figure = table.drop(columns=keys).notna().any(axis=1)
    measured = any_figure.groupby(table["device"]).transform("any")
    return order(table[measured], run.frame)


def hidden_from(rows: pd.DataFrame) -> str:
    """The smallest size from which the loop per call is HIDDEN_BY times the dispatch or more
    at every size measured, among one strategy's rows on one device; ``> N`` where the
    largest is not, n/a where nothing is measured."""
    measured = rows.dropna(subset=["loop_s", "dispatch_s"]).sort_values("size")
    if measured.empty:
        return NOT_MEASURED
    hidden = (measured["loop_s"] >= HIDDEN_BY * measured["dispatch_s"]).to_numpy()
    if not hidden[-1]:
        return f"> {size_text(measured['size'].max())}"
    shown = len(hidden) - 1
    while shown and hidden[shown - 1]:
        shown -= 1
    return size_text(measured["size"].iloc[shown])


def size_text(size: object) -> str:
    """1e7 for 10,000,000 (powers of ten from 1e3); other sizes in full."""
    size = int(size)
    exponent = len(str(size)) - 1
    return f"1e{exponent}" if size == 10**exponent and exponent > 2 else f"{size:,}"


def per_strategy(run: Run) -> pd.DataFrame:
    """One row per (device, strategy) at the smallest size: the headline's figures."""
    table = calls(run)
    if table.empty:
        return table
    smallest = table.groupby("device")["size"].transform("min")
    head = table[table["size"] == smallest].copy()
    keys = ["device", "size", "strategy"]
    for column, benchmark, change in (
        ("first_call_s", catalog.DEVICE_FIRST_CALL, None),
        ("recompile_s", catalog.DEVICE_AFTER_CHANGE, RECOMPILE),
    ):
        rows = run.rows(benchmark)
        if change is not None:
            rows = rows[rows["change"] == change]
        head[column] = head.set_index(keys).index.map(rows.set_index(keys)["value"])
    groups = table.groupby(["device", "strategy"], sort=False)
    hidden = {key: hidden_from(rows) for key, rows in groups}
    pairs = zip(head["device"], head["strategy"], strict=True)
    head["hidden_from"] = [hidden[key] for key in pairs]
    eager = beside(head, BASELINE, "loop_s")  # one size per device: the device's eager
    head["break_even"] = [
        break_even_warm(r.strategy, r.first_call_s, r.loop_s, loop)
        for r, loop in zip(head.itertuples(), eager, strict=True)
    ]
    return order(head.reset_index(drop=True), run.frame)


def side_by_side(head: pd.DataFrame, devices: list[str]) -> pd.DataFrame:
    """One row per strategy, each cell ``accelerator · cpu`` (the devices in ``devices``'
    order), the columns named by SHORT."""
    rows = []
    for strategy in pd.unique(head["strategy"]):
        mine = head[head["strategy"] == strategy].set_index("device")
        row = {"strategy": strategy}
        for column, short in SHORT.items():
            row[short] = " · ".join(cell(column, mine[column].get(d)) for d in devices)
        rows.append(row)
    return pd.DataFrame(rows)


def devices_of(head: pd.DataFrame) -> list[str]:
    """The devices, the accelerators first, the CPU last (each in its order: sorted is stable)."""
    return sorted(pd.unique(head["device"]), key=lambda d: d.startswith("cpu"))


def section(run: Run) -> None:
    """The accelerator's table, then loop per call by size on each device, then every figure."""
    if not has_rows(run):
        return
    head = per_strategy(run)
    if head.empty:
        run.omit("device rows", *CALLS.values())
        return
    devices = devices_of(head)
    size = size_text(head["size"].min())
    run.text(
        f"Every strategy on {' and '.join(devices)}, measured in one process per run "
        f"(jitbench device-run); each cell {' · '.join(devices)}, size {size}:"
    )
    run.blocks.append(Bullets(tuple((Bold(SHORT[c]), f": {text}") for c, text in TEXT.items())))
    audited = per_device(run) is not None
    if not audited:
        run.text(
            "This run holds no audit rows, hence no hazard column: `jitbench audit --strategy "
            f"NAME --device {devices[0]}` audits a strategy there."
        )
    shown = _flagged(side_by_side(head, devices), run, audited)
    run.blocks += run.table("device-headline", shown, csv=False)
    run.blocks.append(run.csv("device-headline", head))
    table = calls(run)
    for device in devices:
        mine = table[table["device"] == device]
        loops = mine.pivot(index="strategy", columns="size", values="loop_s")
        loops = loops.reindex(pd.unique(mine["strategy"]))
        loops.columns = [f"at_{size_text(c)}_s" for c in loops.columns]
        run.heading(f"Loop per call by size, {device}")
        shown = _flagged(loops.reset_index(), run, audited)
        run.blocks += run.table(f"device-loop-{slug(device)}", shown)
    run.heading("Every device figure")
    run.blocks += run.table("device-all", _flagged(table, run, audited))


def _flagged(table: pd.DataFrame, run: Run, audited: bool) -> pd.DataFrame:
    """The hazard column where the run audited; none where not (a blank would read as safe)."""
    return flag_hazards(table, run) if audited else table


def accelerator_runs(frame: pd.DataFrame) -> list[tuple[str, str, str]]:
    """The (machine, commit, env) of every run with device rows on an accelerator, newest
    first."""
    rows = frame[frame["benchmark"].isin(catalog.DEVICE_ROWS) & (frame["status"] == "ok")]
    rows = rows[~rows["device"].astype("string").str.startswith("cpu")]
    newest = rows.groupby(["machine", "commit", "env"])["date"].max().sort_values(ascending=False)
    return [tuple(key) for key in newest.index]


# The ways a hand-written reference times (docs/accelerator.py), by jitbench's names.
REFERENCE_WAYS = ("helper_function", "flax_nnx_jit", "eager")


def reference(record: dict[str, Any]) -> pd.DataFrame:
    """The rows of a reference file (docs/accelerator.py's JSON): per way and size, dispatch,
    synchronous call and loop per call in seconds, and the bytes its program writes."""
    rows = []
    for entry in record["rows"]:
        for way in REFERENCE_WAYS:
            if way in entry:
                figures = entry[way]
                rows.append(
                    {
                        "strategy": way, "size": entry["size"],
                        "dispatch_s": figures["dispatch"], "call_s": figures["sync"],
                        "loop_s": figures["loop"],
                        "output_bytes": entry.get("output_bytes", {}).get(way),
                    }
                )  # fmt: skip
    return pd.DataFrame(rows)


def agreement(measured: pd.DataFrame, ref: pd.DataFrame) -> pd.DataFrame:
    """jitbench's figures over the reference's, per strategy and size both hold, for one
    device's rows of :func:`calls`."""
    keys = ["strategy", "size"]
    both = measured.merge(ref, on=keys, suffixes=("", "_reference"))
    for name in CALLS:
        both[f"{name.removesuffix('_s')}_ratio"] = both[name] / both[f"{name}_reference"]
    columns = [c for name in CALLS for c in (name, f"{name}_reference",
                                              f"{name.removesuffix('_s')}_ratio")]  # fmt: skip
    return both[[*keys, *columns]]
