"""The report's tables, section by section (plots are in :mod:`jitbench.report.plots`)."""

from __future__ import annotations

import pandas as pd

from jitbench.devices import PLATFORMS
from jitbench.document import Bold, Bullets, Code, Details, Paragraph
from jitbench.measure.counting.instructions import asked_in, off_note
from jitbench.report import fit_tables
from jitbench.report.audit import explanations
from jitbench.report.device import has_rows as has_device_rows
from jitbench.report.folds import groups
from jitbench.report.run import BEST_MARK, DEARER_MARK, HAZARD_MARK, Run, order, slug
from jitbench.report.summary import (
    BREAK_EVEN,
    COUNTED,
    DISK_MISSES,
    FLOOR,
    FLOOR_RATIOS,
    FULL,
    HAZARD_WORDS,
    HEADLINE,
    MARKS,
    SIZED,
    flag_hazards,
    per_device,
    summary,
)
from jitbench.suite import catalog

BREAK_EVEN_TEXT = {
    "break_even_vs_warm_eager": (
        Bold("break-even vs warm eager"),
        " (eager's operations already compiled): ceil(cold first call / (eager's cached call "
        "- cached call)), the calls after which jit's first call is repaid",
    ),
    "break_even_vs_cold_eager": (
        Bold("break-even vs cold eager"),
        " (eager's own first call counted too): the smallest n from which first call + "
        "(m-1) x cached call <= eager's first call + (m-1) x eager's cached call for every "
        "m >= n; 1 = jit is ahead from the first call on",
    ),
}
HAZARD_TEXT = (
    "stale = returns results of an older object state; errors = a call in the audit "
    "raised (for example an AOT executable called with a new shape); leaks = instances kept "
    "alive by jit's cache; recompiles = a compile where nothing new was seen (a new instance "
    "equal to one already called, a flag set back to a value seen before...); recompiles every "
    "call = calling an unchanged object compiles again; no disk-cache hit = a fresh process "
    "read nothing from a filled on-disk cache "
    f"({DISK_MISSES} counts the sizes). Counts are the audit's totals per strategy and device."
)


def coverage(run: Run) -> None:
    """Note devices, strategies and targets with no result at all, failures (by the suite's
    benchmark names), and unknown benchmarks."""
    frame = run.frame
    ok = frame["status"] == "ok"
    # asv's own name of each row (a target's row is shown under its built-in twin's).
    named = frame["case"].str.split("(", n=1).str[0]
    target = named.isin(list(catalog.TARGET_TWINS.values()))
    measured = ok.groupby(frame["device"]).any()
    for name in measured.index[~measured]:
        run.notes.append(f"device {name}: every benchmark skipped or failed (device absent?)")
    measured = ok.groupby([frame["strategy"], target]).any()
    for name, is_target in measured.index[~measured]:
        why = "its module importable at this commit?" if is_target else "optional package missing?"
        kind = "target" if is_target else "strategy"
        run.notes.append(f"{kind} {name}: every benchmark skipped or failed ({why})")
    failed = frame[frame["status"] == "failed"].groupby(named).size()
    for benchmark, count in failed.items():
        run.notes.append(f"{benchmark}: {count} parameter combinations failed")
    unknown = sorted(set(frame["benchmark"]) - set(catalog.ALL))
    if unknown:
        run.notes.append(
            "results of benchmarks the suite no longer has (renamed or removed), not shown: "
            + ", ".join(unknown)
        )


def headline(run: Run) -> None:
    coverage(run)
    table = summary(run)
    if table.empty:
        if not has_device_rows(run):  # a device run's table is the next section's
            run.omit("summary", *SIZED.values(), catalog.AFTER_CHANGE)
        return
    counted = "best_by" in table and (table["best_by"] == "instructions").any()
    parts = [(title, name, rows, _headline_columns(rows, targets)) for title, name, targets, rows
             in groups(table)]  # fmt: skip
    shown = {column for *_, columns in parts for column in columns}
    per = "device and array size" if run.sized else "device"
    run.text(f"One table per {per}; every other column is under All numbers.")
    legend: list[str | tuple[str | Bold, ...]] = []
    if "first_call_s" in shown:
        legend.append(
            (
                Bold("cold first call"),
                ": the first call of a new instance, every in-memory cache cleared "
                "(trace, lower, compile, run)",
            )
        )
    legend.append(
        (
            Bold("cached call"),
            ": a call of an already compiled program, waiting for its result; ",
            Bold("dispatch only"),
            ": the same calls back to back without waiting, in runs that never fill the queue",
            *(["; cached / eager: cached call / eager's"] if "cached_x_eager" in shown else []),
        )
    )
    if shown & set(FLOOR_RATIOS.values()):
        legend.append(
            (
                Bold("/ floor"),
                f": the figure over {FLOOR}'s (jax.jit of a free function of the same "
                "computation, called on the arrays, no object), where it was measured",
            )
        )
    if shown & set(BREAK_EVEN):
        legend += [BREAK_EVEN_TEXT[name] for name in BREAK_EVEN]
        legend.append("never: not cheaper than eager per call, so the first call is never repaid")
    legend.append(f"{HAZARD_MARK}: a hazardous strategy (see Hazards)")
    if "best" in shown and table["best"].any():
        legend.append(BEST_TEXT if counted else best_by_time_text(run))
    # Folded: the page opens on the first table (a 1280x800 window shows it).
    run.blocks.append(Details("What the columns and marks mean", (Bullets(tuple(legend)),)))
    for title, name, rows, columns in parts:
        run.heading(title)
        blocks = run.table(f"headline-{name}", rows[columns])
        notes = []
        starred = "best" in columns and rows["best"].any()
        if counted and starred and (rows["best_by"] == "time").all():
            notes.append(f"{BEST_MARK} by time here: no instructions counted at this size.")
        if "dispatch_dearer" in columns and rows["dispatch_dearer"].fillna(False).any():
            notes.append(DEARER_TEXT)
        if notes:
            blocks.insert(1, Paragraph(" ".join(notes)))
        run.blocks += blocks


# Eager at a target's own sizes was not measured: no ratios, no break-even, and no "best"
# among objects that compute different things.
TARGETS_APART = (
    "cached_x_eager", "cached_x_best", "first_call_x_eager", "first_call_x_best",
    *FLOOR_RATIOS.values(), *BREAK_EVEN, "best",
)  # fmt: skip


def _headline_columns(rows: pd.DataFrame, targets: bool) -> list[str]:
    """The headline's columns of one (device, size) group's rows."""
    shown = [c for c in [*HEADLINE, *MARKS] if c in rows]
    shown = [c for c in shown if c not in COUNTED or rows[c].notna().any()]
    return [c for c in shown if c not in TARGETS_APART] if targets else shown


BEST_TEXT = (
    f"{BEST_MARK}: the fewest instructions per cached call among strategies without stale "
    "results (a count holds still under load, a time does not); where a table has no "
    "counts, the fastest cached call, said under it"
)


def best_by_time_text(run: Run) -> str:
    return (
        f"{BEST_MARK}: the fastest cached call among strategies without stale results (this "
        f"run counted no instructions, which hold still under load: {run.commands.counts})"
    )


DEARER_TEXT = (
    f"{DEARER_MARK}: dispatch measured dearer than the blocking call it is part of. The two "
    "are separate measurements (their own processes and samples), so where they are close, "
    "noise decides which comes out higher: read it as dispatch about equal to the whole call."
)


def counts_text(run: Run) -> tuple[str | Code, ...]:
    return (
        "Instructions the calling thread executes per call (Python and JAX's C++ dispatch; "
        "XLA's worker threads and the device are not counted), counted by Valgrind in ",
        Code(run.commands.counts),
        f"{run.commands.counts_where}, beside the times of the same calls. A count does not "
        "move with the machine's load, so a change of a few percent between two commits shows "
        "where times cannot show it; it does not see memory stalls, device time or waiting.",
    )


def instructions(run: Run) -> None:
    counts = run.frame[run.frame["benchmark"].isin(catalog.COUNTED)]
    if not counts.empty and counts["value"].isna().all():  # counts off: say so, and how
        run.text(off_note(asked_in(str(counts["env"].iloc[0]))))
        return
    table = summary(run)
    counted = [c for c in COUNTED if c in table]
    if not counted:
        return  # opt-in: a run that counted nothing has nothing to say here
    rows = table.dropna(subset=counted, how="all")
    run.text(*counts_text(run))
    ratios = [FLOOR_RATIOS[c] for c in counted]
    wanted = ["strategy", "hazard", "cached_call_s", counted[0], "dispatch_s", *counted[1:],
              *ratios]  # fmt: skip
    for title, name, targets, part in groups(rows):
        run.heading(title)
        shown = part[[c for c in wanted if c in part]]
        if targets:
            shown = shown.drop(columns=ratios, errors="ignore")
        run.blocks += run.table(f"instructions-{name}", shown)
    fit_tables.counted_fits(run)


def full_tables(run: Run) -> None:
    table = summary(run)
    if table.empty:
        return
    run.text("Every measured column per device and size (click to open), and one tidy CSV.")
    run.text(
        "trace, lower and compile are the stages of one cold first call, the stages' call, "
        "measured in one process for the grid; 'cold first call' comes from processes of "
        "its own, so the two calls differ by the process-to-process spread of a compile."
    )
    for title, name, targets, rows in groups(table):
        # A target's own sizes have no eager, floor or other strategy beside them.
        apart = TARGETS_APART if targets else ()
        blocks = run.table(
            f"summary-{name}", rows[[c for c in FULL if c in rows and c not in apart]]
        )
        run.blocks.append(Details(f"{title}: every column", tuple(blocks)))
    run.blocks.append(run.csv("summary", table))


def break_even(run: Run) -> None:
    table = summary(run)
    if not set(BREAK_EVEN) <= set(table):
        if run.sized:  # targets have no eager at their own sizes: never a break-even
            run.omit("break-even tables", catalog.COLD, catalog.CACHED)
        return
    sized = table[table["size"].notna()]  # targets have no eager at their own sizes
    if sized.empty:
        return
    run.text("Two definitions, both against eager at the same device and size:")
    run.blocks.append(Bullets(tuple((*BREAK_EVEN_TEXT[name], ".") for name in BREAK_EVEN)))
    run.text("never = not cheaper than eager per call; baseline = eager itself.")
    for device, rows in sized.groupby("device", sort=False):
        hazards = rows.drop_duplicates("strategy").set_index("strategy")["hazard"]
        for name, short in zip(BREAK_EVEN, ("warm", "cold"), strict=True):
            wide = rows.pivot(index="strategy", columns="size", values=name)
            wide.columns = [f"size {size}" for size in wide.columns]
            wide.insert(0, "hazard", hazards)
            wide = wide.reset_index()
            run.heading(f"Break-even vs {short} eager: {device}")
            run.blocks += run.table(f"break-even-{short}-{slug(device)}", order(wide, run.frame))


def hazards(run: Run) -> None:
    table = per_device(run)
    counts = [c for c in {**HAZARD_WORDS, **catalog.HAZARDS} if table is not None and c in table]
    if counts:
        shown = table.dropna(subset=counts, how="all")[["device", "strategy", *counts, "hazard"]]
        run.text(HAZARD_TEXT)
        run.blocks += run.table("hazards", order(shown, run.frame))
    else:
        run.omit("hazard table", *catalog.HAZARDS.values(), catalog.DISK_HITS)
    run.heading("Why they recompiled: JAX's explanations")
    if run.audit is None:
        run.text(
            "asv results hold numbers only. For JAX's explanation of every recompile and "
            "error of the audit, run ",
            Code(run.commands.audit),
            " and pass the file to the report (",
            Code("jitbench report --audit-json audit.json"),
            ").",
        )
        return
    steps = explanations(run.audit)
    where = dict.fromkeys(zip(steps["device"], steps["size"], strict=True)) if len(steps) else {}
    devices = ", ".join(f"{d} (size {s})" for d, s in where)
    run.text(
        "From the audit JSON given to the report, on ",
        devices or "no device",
        ": the steps of the audit scenario that compiled again or raised, with JAX's words "
        "for the tracing-cache miss (its first line, the location, dropped; long ones cut) "
        "or the error. A stale result causes no trace, so JAX explains nothing there.",
    )
    if not steps.empty:
        one_device = steps["device"].nunique() == 1
        shown = steps.drop(columns=["device", "size"] if one_device else ["size"])
        run.blocks += run.table("audit-explanations", shown, wrap=("explanation",))


def after_change(run: Run) -> None:
    table = summary(run)
    after = [c for c in table if c.startswith("after_")]
    if not after:
        return
    run.text(
        "The call right after a change made as the object's users make it; a retrace "
        "shows as a call close to the cold first call."
    )
    for title, name, _, rows in groups(table):
        first = [c for c in ("strategy", "hazard", "cached_call_s") if c in rows]
        run.heading(title)
        run.blocks += run.table(f"after-change-{name}", rows[[*first, *after]])


def sharded(run: Run) -> None:
    """Per size: what sharding over all devices of a platform costs against one device."""
    table = summary(run)
    measures = [c for c in ("first_call_s", "cached_call_s", "dispatch_s") if c in table]
    measures += [c for c in table if c.startswith("after_")]
    devices = set(table["device"]) if measures else set()
    platforms = [p for p in PLATFORMS if {p, f"{p}-sharded"} <= devices]
    if not platforms:
        if run.sized:  # a target is measured unsharded only
            run.notes.append(
                "sharded vs unsharded table omitted: no first call, cached call, dispatch or "
                "after-change results on both a device and its -sharded variant"
            )
        return
    keys = ["size", "strategy"]
    ratios = []
    for platform in platforms:
        plain = table[table["device"] == platform].set_index(keys)[measures]
        split = table[table["device"] == f"{platform}-sharded"].set_index(keys)[measures]
        ratio = split / plain
        ratio.columns = [f"{platform}_{m.removesuffix('_s')}_x_unsharded" for m in measures]
        ratios.append(ratio)
    wide = order(pd.concat(ratios, axis=1).reset_index(), run.frame)
    run.text(
        "Each column: seconds on a platform's -sharded device (every device of the platform) "
        "/ seconds on its plain device (one device); above 1, sharding costs more."
    )
    for size, rows in wide.groupby("size", sort=False):
        run.heading(f"size {size}")
        run.blocks += run.table(
            f"sharded-vs-unsharded-size{size}",
            flag_hazards(rows.drop(columns="size").reset_index(drop=True), run),
        )
