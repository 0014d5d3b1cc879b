"""``jitbench report``: tables, plots and an index page from asv results.

Answers the questions the suite exists for, per device and size: which strategy
is cheapest to call once it is cached, what its first call costs (with JAX's
on-disk compilation cache cold or warm), after how many calls that pays off
against eager, what each kind of object change costs, what sharding adds, and
which strategies are hazardous (stale results, leaks, recompiling every call,
no hit in a filled disk cache). A stale strategy is flagged wherever it
appears and is never named the fastest.
"""

from __future__ import annotations

import base64
import html
import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from asv.util import human_value
from matplotlib.figure import Figure

from jitbench import results
from jitbench.devices import PLATFORMS
from jitbench.errors import JitbenchError

BASELINE = "eager"
HAZARD_MARK = "⚠"
BEST_MARK = "★"
MARKERS = "os^D"

COLD = "bench_cold.ColdCall.time_first_call"
COLD_FRESH = "bench_cold.ColdCall.timeraw_first_call_fresh_process"
DISK_COLD = "bench_persistent.PersistentCache.timeraw_first_call_disk_cache_cold"
DISK_WARM = "bench_persistent.PersistentCache.timeraw_first_call_disk_cache_warm"
DISK_HITS = "bench_persistent.PersistentCache.track_persistent_cache_hits"
TRACE = "bench_cold.Stages.track_trace_seconds"
LOWER = "bench_cold.Stages.track_lower_seconds"
COMPILE = "bench_cold.Stages.track_compile_seconds"
CACHED = "bench_cached.CachedCall.time_cached_call"
DISPATCH = "bench_cached.CachedCall.time_cached_call_dispatch"
AFTER_CHANGE = "bench_change.AfterChange.time_call_after_change"
MEMORY = "bench_memory.Memory.peakmem_build_and_first_call"
WIDTH = "bench_scaling.DispatchVsWidth.time_dispatch"
OPS_TRACE = "bench_scaling.CompileVsProgramSize.track_trace_seconds"
OPS_COMPILE = "bench_scaling.CompileVsProgramSize.track_compile_seconds"
DEVICE_COUNT = "bench_scaling.DispatchVsDeviceCount.timeraw_dispatch"

# Summary columns measured per (strategy, size, device).
SIZED = {
    "first_call_s": COLD,
    "first_call_fresh_process_s": COLD_FRESH,
    "first_call_cold_disk_s": DISK_COLD,
    "first_call_warm_disk_s": DISK_WARM,
    "disk_cache_hits": DISK_HITS,
    "trace_s": TRACE,
    "lower_s": LOWER,
    "compile_s": COMPILE,
    "cached_call_s": CACHED,
    "dispatch_s": DISPATCH,
}
# Columns measured per (strategy, device).
HAZARDS = {
    "stale_results": "bench_hazards.Hazards.track_stale_results",
    "leaked_instances": "bench_hazards.Hazards.track_leaked_instances",
    "repeat_call_compiles": "bench_hazards.Hazards.track_repeat_call_compiles",
    "compiles": "bench_hazards.Hazards.track_compiles",
    "traces": "bench_hazards.Hazards.track_traces",
}
# Per (device, strategy): sizes whose first call found nothing in a filled disk cache.
DISK_MISSES = "sizes_without_disk_hit"
HAZARD_WORDS = {
    "stale_results": "stale",
    "leaked_instances": "leaks",
    "repeat_call_compiles": "recompiles every call",
    DISK_MISSES: "no disk-cache hit",
}
SUMMARY_SHOWN = [
    "first_call_s",
    "first_call_fresh_process_s",
    "first_call_cold_disk_s",
    "first_call_warm_disk_s",
    "disk_cache_saving_s",
    "disk_cache_speedup",
    "disk_cache_hits",
    "trace_s",
    "lower_s",
    "compile_s",
    "cached_call_s",
    "dispatch_s",
    "cached_x_eager",
    "cached_x_best",
    "first_call_x_eager",
    "first_call_x_best",
    "break_even_calls",
    *HAZARDS,
    "peak_memory_bytes",
]


def write_report(
    results_dir: str | Path,
    out: str | Path,
    *,
    machine: str | None = None,
    commit: str | None = None,
    env: str | None = None,
    skip_bad: bool = False,
) -> Path:
    """Write the report into ``out``; returns its index.html. Inputs are checked first."""
    frame = results.load(results_dir, machine=machine, commit=commit, env=env, skip_bad=skip_bad)
    out = _check_out_dir(Path(out), Path(results_dir))
    for column in results.PARAM_ORDER:
        if column not in frame:
            # The tables below index these; results without them just show nothing there.
            frame[column] = pd.Series(pd.NA, index=frame.index, dtype="object")
    chosen = frame if commit else results.latest(frame)
    runs = [rows for _, rows in chosen.groupby(["machine", "commit", "env"], sort=True)]
    total = 2 + len(STEPS) * len(runs)
    _progress(1, total, f"results: {len(frame)} rows from {results_dir}")
    done = 1
    reports = []
    for rows in runs:
        prefix = "" if len(runs) == 1 else _slug(f"{rows['machine'].iloc[0]}-{rows['env'].iloc[0]}")
        report = _Run(rows.reset_index(drop=True), out, prefix)
        for label, step in STEPS:
            done += 1
            _progress(done, total, f"{report.label + ': ' if prefix else ''}{label}")
            step(report)
        reports.append(report)
    _progress(total, total, "index.md and index.html")
    header = _header(frame, chosen, str(results_dir))
    (out / "index.md").write_text(_markdown(header, reports), encoding="utf-8")
    (out / "index.html").write_text(_html(header, reports), encoding="utf-8")
    return out / "index.html"


@dataclass
class _Section:
    title: str
    table: pd.DataFrame | None = None
    csv: Path | None = None
    image: Path | None = None
    text: str = ""


@dataclass
class _Run:
    """One (machine, commit, env) of the results and what has been written for it."""

    frame: pd.DataFrame
    out: Path
    prefix: str
    sections: list[_Section] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _cache: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        first = self.frame.iloc[0]
        return f"{first['machine']} / {first['env']}"

    def rows(self, benchmark: str) -> pd.DataFrame:
        return self.frame[self.frame["benchmark"] == benchmark]

    def has(self, benchmark: str) -> bool:
        return bool((self.frame["benchmark"] == benchmark).any())

    def omit(self, what: str, *benchmarks: str) -> None:
        missing = [b for b in benchmarks if not self.has(b)]
        self.notes.append(f"{what} omitted: no results for {', '.join(missing)}")

    def path(self, kind: str, name: str) -> Path:
        folder = self.out / self.prefix / kind if self.prefix else self.out / kind
        folder.mkdir(parents=True, exist_ok=True)
        return folder / name

    def table(self, title: str, name: str, data: pd.DataFrame, text: str = "") -> None:
        csv = self.path("tables", f"{name}.csv")
        data.to_csv(csv, index=False)
        self.sections.append(_Section(title, _display(data), csv, text=text))

    def figure(self, title: str, name: str, fig: Figure, text: str = "") -> None:
        png = self.path("plots", f"{name}.png")
        fig.savefig(png, dpi=100, bbox_inches="tight")
        self.sections.append(_Section(title, image=png, text=text))

    def summary(self) -> pd.DataFrame:
        if "summary" not in self._cache:
            self._cache["summary"] = _summary(self)
        return self._cache["summary"]

    def per_device(self) -> pd.DataFrame | None:
        if "per_device" not in self._cache:
            self._cache["per_device"] = _per_device(self)
        return self._cache["per_device"]


def _summary(report: _Run) -> pd.DataFrame:
    """All per-(device, size, strategy) numbers, hazards, ratios and break-even in one frame."""
    keys = ["device", "size", "strategy"]
    columns = {}
    for name, benchmark in SIZED.items():
        if report.has(benchmark):
            columns[name] = report.rows(benchmark).set_index(keys)["value"]
        else:
            report.omit(f"summary column {name}", benchmark)
    after = report.rows(AFTER_CHANGE)
    if after.empty:
        report.omit("summary columns after_<change>_s", AFTER_CHANGE)
    else:
        wide = after.pivot(index=keys, columns="change", values="value")
        for change in pd.unique(after["change"].dropna()):
            columns[f"after_{change}_s"] = wide[change]
    if not columns:
        return pd.DataFrame()
    table = pd.concat(columns, axis=1).dropna(how="all").reset_index()
    per_device = report.per_device()
    if per_device is not None:
        table = table.merge(per_device, on=["device", "strategy"], how="left")
    if per_device is None or "stale_results" not in per_device:
        report.notes.append(
            f"stale results not measured ({HAZARDS['stale_results']} absent): "
            "'fastest correct' cannot exclude stale strategies"
        )
    table["hazard"] = table["hazard"].fillna("") if "hazard" in table else ""
    table["stale"] = table["stale"].fillna(False).astype(bool) if "stale" in table else False
    table = _order(table, report.frame)
    if {"first_call_cold_disk_s", "first_call_warm_disk_s"} <= set(table):
        cold, warm = table["first_call_cold_disk_s"], table["first_call_warm_disk_s"]
        table["disk_cache_saving_s"] = cold - warm
        table["disk_cache_speedup"] = cold / warm
    if not (table["strategy"] == BASELINE).any():
        report.notes.append(f"ratios to eager and break-even omitted: no {BASELINE!r} results")
    where = pd.MultiIndex.from_frame(table[["device", "size"]])
    for metric, short in (("cached_call_s", "cached"), ("first_call_s", "first_call")):
        if metric not in table:
            continue
        eager = table[table["strategy"] == BASELINE].set_index(["device", "size"])[metric]
        baseline = pd.Series(eager.reindex(where).to_numpy(), index=table.index)
        correct = table[metric].where(~table["stale"])
        best = correct.groupby([table["device"], table["size"]]).transform("min")
        table[f"{short}_x_eager"] = table[metric] / baseline
        table[f"{short}_x_best"] = table[metric] / best
        if metric == "cached_call_s":
            table["fastest_correct"] = correct == best
            table["eager_cached_s"] = baseline
    if {"cached_call_s", "first_call_s"} <= set(table):
        table["break_even_calls"] = [
            _break_even(row.strategy, row.first_call_s, row.eager_cached_s, row.cached_call_s)
            for row in table.itertuples()
        ]
    return table


def _break_even(strategy: str, first: float, eager: float, cached: float) -> Any:
    """Calls after which the jitted first call has paid for itself against eager."""
    if strategy == BASELINE:
        return "baseline"
    if any(pd.isna(v) for v in (first, eager, cached)):
        return "n/a"
    if cached >= eager:
        return "never"
    return math.ceil(first / (eager - cached))


def _per_device(report: _Run) -> pd.DataFrame | None:
    """Hazard counts and peak memory per (device, strategy), with the hazard flags."""
    columns = {
        name: report.rows(bench).set_index(["device", "strategy"])["value"]
        for name, bench in HAZARDS.items()
        if report.has(bench)
    }
    if report.has(DISK_HITS):
        hits = report.rows(DISK_HITS)
        hits = hits[hits["status"] == "ok"]
        columns[DISK_MISSES] = (
            (hits["value"] == 0).groupby([hits["device"], hits["strategy"]]).sum()
        )
    if report.has(MEMORY):
        columns["peak_memory_bytes"] = report.rows(MEMORY).set_index(["device", "strategy"])[
            "value"
        ]
    if not columns:
        return None
    table = pd.concat(columns, axis=1).reset_index()
    words = [
        ", ".join(w for name, w in HAZARD_WORDS.items() if name in table and row[name] > 0)
        for _, row in table.iterrows()
    ]
    table["hazard"] = [f"{HAZARD_MARK} {w}" if w else "" for w in words]
    table["stale"] = table["stale_results"].fillna(0) > 0 if "stale_results" in table else False
    return table


def _order(table: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """Strategies and devices in the order asv ran them, sizes ascending."""
    order = {
        column: {v: i for i, v in enumerate(pd.unique(frame[column].dropna()))}
        for column in ("device", "strategy")
    }
    keys = [c for c in ("device", "size", "strategy") if c in table]

    def rank(column: pd.Series) -> pd.Series:
        return column.map(order[column.name]) if column.name in order else column

    return table.sort_values(keys, key=rank).reset_index(drop=True)


def _coverage(report: _Run) -> None:
    """Note devices and strategies with no result at all, and failed benchmarks."""
    frame = report.frame
    ok = frame["status"] == "ok"
    for column, reason in (("device", "device absent"), ("strategy", "optional package missing")):
        measured = ok.groupby(frame[column]).any()
        for name in measured.index[~measured]:
            report.notes.append(f"{column} {name}: every benchmark skipped or failed ({reason}?)")
    failed = frame[frame["status"] == "failed"].groupby("benchmark").size()
    for benchmark, count in failed.items():
        report.notes.append(f"{benchmark}: {count} parameter combinations failed")


def _step_summary(report: _Run) -> None:
    _coverage(report)
    table = report.summary()
    if table.empty:
        report.omit("summary", *SIZED.values(), AFTER_CHANGE)
        return
    for (device, size), rows in table.groupby(["device", "size"], sort=False):
        shown = [c for c in ["strategy", "hazard", *SUMMARY_SHOWN] if c in rows]
        if "fastest_correct" in rows:
            shown.append("fastest_correct")
        report.table(
            f"Summary: {device}, size {size}",
            f"summary-{_slug(device)}-size{size}",
            rows[shown],
            "Ratios are to eager and to the fastest strategy without stale results "
            f"({BEST_MARK}); break-even = first call / (eager cached - cached) calls; "
            "disk cache = first call in a fresh process with JAX's on-disk compilation cache "
            "empty (cold) or filled by an earlier process (warm), saving = cold - warm, "
            "speedup = cold / warm.",
        )
        after = [c for c in rows if c.startswith("after_")]
        if after:
            report.table(
                f"Call right after a change: {device}, size {size}",
                f"after-change-{_slug(device)}-size{size}",
                rows[["strategy", "hazard", "cached_call_s", *after]]
                if "cached_call_s" in rows
                else rows[["strategy", "hazard", *after]],
            )
    csv = report.path("tables", "summary.csv")
    table.to_csv(csv, index=False)
    report.sections.append(
        _Section("All summary numbers (one tidy table)", csv=csv, text="Every device and size.")
    )


def _step_break_even(report: _Run) -> None:
    table = report.summary()
    if "break_even_calls" not in table:
        report.omit("break-even table", COLD, CACHED)
        return
    for device, rows in table.groupby("device", sort=False):
        wide = rows.pivot(index="strategy", columns="size", values="break_even_calls")
        wide.columns = [f"size {size}" for size in wide.columns]
        hazard = rows.drop_duplicates("strategy").set_index("strategy")["hazard"]
        wide = wide.join(hazard).reset_index()
        wide = wide[["strategy", "hazard", *[c for c in wide if c.startswith("size ")]]]
        report.table(
            f"Break-even calls: {device}",
            f"break-even-{_slug(device)}",
            _order(wide, report.frame),
            "Calls until the first call's cost is repaid by cheaper cached calls than eager; "
            "never = not faster per call than eager.",
        )


def _step_hazards(report: _Run) -> None:
    table = report.per_device()
    counts = [c for c in (*HAZARDS, DISK_MISSES) if table is not None and c in table]
    if not counts:
        report.omit("hazard table", *HAZARDS.values(), DISK_HITS)
        return
    shown = table.dropna(subset=counts, how="all")[["device", "strategy", *counts, "hazard"]]
    report.table(
        "Hazards",
        "hazards",
        _order(shown, report.frame),
        "stale = returns results of an older object state; leaks = instances kept alive "
        "by the jit cache; recompiles every call = calling an unchanged object compiles again; "
        "no disk-cache hit = a fresh process read nothing from a filled on-disk cache "
        f"({DISK_MISSES} counts the sizes).",
    )


def _step_sharded(report: _Run) -> None:
    """Per size: what sharding over all devices of a platform costs against one device."""
    table = report.summary()
    measures = [c for c in ("first_call_s", "cached_call_s", "dispatch_s") if c in table]
    measures += [c for c in table if c.startswith("after_")]
    devices = set(table["device"]) if measures else set()
    platforms = [p for p in PLATFORMS if {p, f"{p}-sharded"} <= devices]
    if not platforms:
        report.notes.append(
            "sharded vs unsharded table omitted: no first call, cached call, dispatch or "
            "after-change results on both a device and its -sharded variant"
        )
        return
    keys = ["size", "strategy"]
    ratios = []
    for platform in platforms:
        plain = table[table["device"] == platform].set_index(keys)[measures]
        sharded = table[table["device"] == f"{platform}-sharded"].set_index(keys)[measures]
        ratio = sharded / plain
        ratio.columns = [f"{platform}_{m.removesuffix('_s')}_x_unsharded" for m in measures]
        ratios.append(ratio)
    wide = _order(pd.concat(ratios, axis=1).reset_index(), report.frame)
    for size, rows in wide.groupby("size", sort=False):
        report.table(
            f"Sharded vs unsharded: size {size}",
            f"sharded-vs-unsharded-size{size}",
            _flag(rows.drop(columns="size").reset_index(drop=True), report),
            "Each column: seconds on a platform's -sharded device (every device of the "
            "platform) / seconds on its plain device (one device); above 1, sharding costs more.",
        )


def _step_fits(report: _Run) -> None:
    if report.has(WIDTH):
        report.table(
            "Dispatch cost per pytree leaf",
            "dispatch-scaling",
            _flag(_fits(report, WIDTH, "n_arrays", "dispatch", "leaf"), report),
            "Linear fit of time_dispatch against n_arrays (seconds per leaf) and log-log slope.",
        )
    else:
        report.omit("dispatch scaling fit", WIDTH)
    if report.has(DEVICE_COUNT):
        report.table(
            "Dispatch cost per added device",
            "dispatch-device-scaling",
            _flag(_fits(report, DEVICE_COUNT, "n_devices", "dispatch", "device"), report),
            "Linear fit of the sharded dispatch against n_devices (seconds per added device, "
            "each count in a fresh process) and log-log slope.",
        )
    else:
        report.omit("dispatch device-count fit", DEVICE_COUNT)
    present = [b for b in (OPS_TRACE, OPS_COMPILE) if report.has(b)]
    if not present:
        report.omit("trace/compile scaling fit", OPS_TRACE, OPS_COMPILE)
        return
    parts = [
        _fits(report, bench, "n_ops", "trace" if bench == OPS_TRACE else "compile", "op")
        for bench in present
    ]
    table = parts[0] if len(parts) == 1 else parts[0].merge(parts[1], on="strategy", how="outer")
    report.table(
        "Trace and compile cost per op",
        "compile-scaling",
        _order(_flag(table, report), report.frame),
        "Linear fits against the number of ops in the program and log-log slopes.",
    )


def _fits(report: _Run, benchmark: str, x: str, name: str, unit: str) -> pd.DataFrame:
    """Per strategy: least-squares line and log-log slope of value against ``x``."""
    rows = []
    for strategy, data in report.rows(benchmark).groupby("strategy", sort=False):
        ok = data[data["status"] == "ok"]
        xs, ys = ok[x].to_numpy(dtype=float), ok["value"].to_numpy(dtype=float)
        per, intercept = np.polyfit(xs, ys, 1) if len(set(xs)) > 1 else (math.nan, math.nan)
        positive = (xs > 0) & (ys > 0)
        slope = (
            np.polyfit(np.log(xs[positive]), np.log(ys[positive]), 1)[0]
            if len(set(xs[positive])) > 1
            else math.nan
        )
        rows.append(
            {
                "strategy": strategy,
                f"{name}_per_{unit}_s": per,
                f"{name}_intercept_s": intercept,
                f"{name}_loglog_slope": slope,
                f"{name}_points": len(xs),
            }
        )
    return pd.DataFrame(rows)


def _flag(table: pd.DataFrame, report: _Run) -> pd.DataFrame:
    """Add the hazard column to a per-strategy table (hazardous on any device)."""
    per_device = report.per_device()
    if per_device is None:
        table.insert(1, "hazard", "")
        return table
    flags = per_device[per_device["hazard"] != ""].groupby("strategy")["hazard"].first()
    table.insert(1, "hazard", table["strategy"].map(flags).fillna(""))
    return table


def _line_plot(
    report: _Run,
    benchmarks: dict[str, str],
    x: str,
    title: str,
    name: str,
    ylabel: str,
    doubling: bool = False,
) -> None:
    """One log-log figure per device: a panel per benchmark, a line per strategy.

    ``doubling``: x is a short grid of doublings (1, 2, 4, ...), so the x axis
    is base 2 with a tick at every measured value.
    """
    present = {label: b for label, b in benchmarks.items() if report.has(b)}
    if not present:
        report.omit(f"plot {title}", *benchmarks.values())
        return
    frame = report.frame[report.frame["benchmark"].isin(present.values())]
    frame = frame[frame["status"] == "ok"]
    hazards = _hazard_by_device(report)
    devices = pd.unique(frame["device"].dropna()) if frame["device"].notna().any() else [None]
    for device in devices:
        rows = frame if device is None else frame[frame["device"] == device]
        fig = Figure(figsize=(6.5 * len(present), 4.5))
        axes = fig.subplots(1, len(present), squeeze=False, sharey=True)[0]
        for ax, (label, bench) in zip(axes, present.items(), strict=True):
            data = rows[(rows["benchmark"] == bench) & (rows["value"] > 0)]
            for i, (strategy, line) in enumerate(data.groupby("strategy", sort=False)):
                line = line.sort_values(x)
                bad = hazards.get((device, strategy), "")
                ax.plot(
                    line[x].to_numpy(dtype=float),
                    line["value"].to_numpy(dtype=float),
                    # The colour cycle has ten colours: the marker tells the next ten apart.
                    marker=MARKERS[i // 10 % len(MARKERS)],
                    linestyle="--" if bad else "-",
                    label=f"{strategy} {HAZARD_MARK}" if bad else strategy,
                )
            ax.set(yscale="log", xlabel=x, title=label if len(present) > 1 else "")
            ax.set_xscale("log", base=2 if doubling else 10)
            if doubling:
                xs = sorted(set(data[x].astype(float)))
                ax.set_xticks(xs, [f"{v:g}" for v in xs])
                ax.set_xticks([], minor=True)
            ax.grid(True, which="both", alpha=0.3)
        axes[0].set_ylabel(ylabel)
        # Outside the panel: with a dozen strategies a legend inside hides lines.
        axes[-1].legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))
        where = f" on {device}" if device is not None else ""
        fig.suptitle(f"{title}{where}")
        report.figure(
            f"{title}{where}",
            f"{name}-{_slug(device)}" if device is not None else name,
            fig,
            f"Log-log; dashed lines and {HAZARD_MARK} mark hazardous strategies.",
        )


def _hazard_by_device(report: _Run) -> dict[tuple[Any, str], str]:
    per_device = report.per_device()
    if per_device is None:
        return {}
    hazards = {(r.device, r.strategy): r.hazard for r in per_device.itertuples()}
    # Benchmarks without a device parameter get a strategy's hazards from any device.
    for r in per_device[per_device["hazard"] != ""].itertuples():
        hazards.setdefault((None, r.strategy), r.hazard)
    return hazards


def _step_plot_cached(report: _Run) -> None:
    _line_plot(
        report,
        {"cached call": CACHED},
        "size",
        "Cached call vs size",
        "cached-call-vs-size",
        "seconds per call",
    )


def _step_plot_cold(report: _Run) -> None:
    _line_plot(
        report,
        {
            "first call, in process": COLD,
            "first call, fresh process": COLD_FRESH,
            "fresh process, warm disk cache": DISK_WARM,
        },
        "size",
        "Cold first call vs size",
        "first-call-vs-size",
        "seconds",
    )


def _step_plot_stages(report: _Run) -> None:
    stages = {"trace": TRACE, "lower": LOWER, "compile": COMPILE}
    present = {k: b for k, b in stages.items() if report.has(b)}
    if not present:
        report.omit("plot trace/lower/compile stages", *stages.values())
        return
    frame = report.frame[report.frame["benchmark"].isin(present.values())]
    frame = frame[frame["status"] == "ok"]
    hazards = _hazard_by_device(report)
    for device in pd.unique(frame["device"].dropna()):
        rows = frame[frame["device"] == device]
        size = int(rows["size"].max())
        wide = rows[rows["size"] == size].pivot(
            index="strategy", columns="benchmark", values="value"
        )
        wide = wide.reindex([s for s in pd.unique(rows["strategy"]) if s in wide.index])
        fig = Figure(figsize=(max(6.0, 0.8 * len(wide)), 4.5))
        ax = fig.subplots()
        bottom = np.zeros(len(wide))
        for stage, bench in present.items():
            heights = wide[bench].fillna(0).to_numpy() if bench in wide else np.zeros(len(wide))
            ax.bar(range(len(wide)), heights, bottom=bottom, label=stage)
            bottom += heights
        labels = [f"{s} {HAZARD_MARK}" if hazards.get((device, s)) else str(s) for s in wide.index]
        ax.set_xticks(range(len(wide)), labels, rotation=30, ha="right")
        ax.set(ylabel="seconds", title=f"Trace / lower / compile on {device}, size {size}")
        ax.legend()
        report.figure(
            f"Trace / lower / compile on {device}, size {size}",
            f"stages-{_slug(device)}-size{size}",
            fig,
            "Stacked first-call stages at the largest measured size.",
        )


def _step_plot_width(report: _Run) -> None:
    _line_plot(
        report,
        {"dispatch": WIDTH},
        "n_arrays",
        "Dispatch vs pytree width",
        "dispatch-vs-width",
        "seconds per call",
    )


def _step_plot_device_count(report: _Run) -> None:
    _line_plot(
        report,
        {"dispatch": DEVICE_COUNT},
        "n_devices",
        "Dispatch vs device count",
        "dispatch-vs-device-count",
        "seconds per call",
        doubling=True,
    )


def _step_plot_ops(report: _Run) -> None:
    _line_plot(
        report,
        {"trace": OPS_TRACE, "compile": OPS_COMPILE},
        "n_ops",
        "Trace and compile vs program size",
        "compile-vs-ops",
        "seconds",
    )


STEPS: list[tuple[str, Callable[[_Run], None]]] = [
    ("tables: summary per device and size", _step_summary),
    ("tables: break-even calls", _step_break_even),
    ("tables: hazards", _step_hazards),
    ("tables: sharded vs unsharded", _step_sharded),
    ("tables: scaling fits", _step_fits),
    ("plots: cached call vs size", _step_plot_cached),
    ("plots: cold first call vs size", _step_plot_cold),
    ("plots: trace/lower/compile stages", _step_plot_stages),
    ("plots: dispatch vs pytree width", _step_plot_width),
    ("plots: dispatch vs device count", _step_plot_device_count),
    ("plots: trace and compile vs program size", _step_plot_ops),
]


def _check_out_dir(out: Path, results_dir: Path) -> Path:
    resolved, source = out.resolve(), results_dir.resolve()
    if resolved == source or source in resolved.parents:
        raise JitbenchError(
            f"--out {str(out)!r} is inside the results dir {str(results_dir)!r}; "
            "choose a folder outside it"
        )
    if out.exists() and not out.is_dir():
        raise JitbenchError(f"--out {str(out)!r} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _progress(step: int, total: int | str, label: str) -> None:
    print(f"[{step}/{total}] {label}", file=sys.stderr, flush=True)


def _slug(text: Any) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(text))


def _display(table: pd.DataFrame) -> pd.DataFrame:
    """Human units and markers for the markdown/HTML copy; the CSV keeps raw numbers."""
    shown = table.copy()
    if "strategy" in shown:
        marks = shown.get("hazard", pd.Series("", index=shown.index)).fillna("")
        best = shown.get("fastest_correct", pd.Series(False, index=shown.index))
        shown["strategy"] = [
            f"{s}{f' {HAZARD_MARK}' if m else ''}{f' {BEST_MARK}' if bool(b) else ''}"
            for s, m, b in zip(shown["strategy"], marks, best.fillna(False), strict=True)
        ]
    for column in shown:
        shown[column] = [_cell(column, v) for v in shown[column]]
    return shown.drop(columns=["fastest_correct"], errors="ignore")


def _cell(column: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None or pd.isna(value):
        return "n/a"
    if column.endswith("_bytes"):
        return human_value(float(value), "bytes")
    if column.endswith("_s"):
        # asv's human_value has no negative durations (a saving or an intercept can be).
        text = human_value(abs(float(value)), "seconds")
        return f"-{text}" if value < 0 else text
    if "_x_" in column or column.endswith(("_slope", "_speedup")):
        return f"{value:.2f}"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _header(frame: pd.DataFrame, chosen: pd.DataFrame, results_dir: str) -> list[Any]:
    """Paragraphs of the index page; a list item is a bullet list."""
    runs = []
    for (machine, commit, env), rows in chosen.groupby(["machine", "commit", "env"], sort=True):
        first = rows.iloc[0]
        jax = first["jax"] if pd.notna(first["jax"]) else "unknown"
        date = first["date"].strftime("%Y-%m-%d %H:%M UTC") if pd.notna(first["date"]) else "?"
        runs.append(
            f"machine **{machine}**, commit `{commit[:8]}` ({date}), env `{env}`, "
            f"python `{first['python']}`, jax {jax}"
        )
    blocks: list[Any] = [f"Results: `{results_dir}`.", runs]
    older = sorted(set(frame["commit"]) - set(chosen["commit"]))
    if older:
        blocks.append(
            "Several commits in the results: this report uses the newest commit of each "
            f"machine (by commit date); not shown: {', '.join(c[:8] for c in older)}. "
            "Pass --commit to choose."
        )
    blocks.append(
        f"{HAZARD_MARK} marks a hazardous strategy (see its hazard column), {BEST_MARK} the "
        "fastest cached call among strategies without stale results."
    )
    return blocks


def _markdown(header: list[Any], reports: list[_Run]) -> str:
    out = ["# jitbench report", ""]
    for block in header:
        out += [*(f"- {item}" for item in block), ""] if isinstance(block, list) else [block, ""]
    for report in reports:
        if len(reports) > 1:
            out += [f"## {report.label}", ""]
        level = "###" if len(reports) > 1 else "##"
        for section in report.sections:
            out += [f"{level} {section.title}", ""]
            if section.text:
                out += [section.text, ""]
            if section.table is not None:
                # to_markdown needs tabulate, which asv (the results reader) depends on.
                out += [section.table.to_markdown(index=False), ""]
            if section.image is not None:
                out += [f"![{section.title}]({_rel(section.image, report.out)})", ""]
            if section.csv is not None:
                out += [f"CSV: [{section.csv.name}]({_rel(section.csv, report.out)})", ""]
        if report.notes:
            out += (
                [f"{level} Notes and omissions", ""] + [f"- {note}" for note in report.notes] + [""]
            )
    return "\n".join(out)


def _html(header: list[Any], reports: list[_Run]) -> str:
    style = (
        "body{font-family:sans-serif;margin:2em;max-width:80em}"
        "table{border-collapse:collapse;font-size:90%}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
        "td:first-child,th:first-child{text-align:left}img{max-width:100%}"
    )
    body = ["<h1>jitbench report</h1>"]
    for block in header:
        if isinstance(block, list):
            body.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in block) + "</ul>")
        else:
            body.append(f"<p>{_inline(block)}</p>")
    for report in reports:
        if len(reports) > 1:
            body.append(f"<h2>{html.escape(report.label)}</h2>")
        tag = "h3" if len(reports) > 1 else "h2"
        for section in report.sections:
            body.append(f"<{tag}>{html.escape(section.title)}</{tag}>")
            if section.text:
                body.append(f"<p>{html.escape(section.text)}</p>")
            if section.table is not None:
                body.append(section.table.to_html(index=False, border=0))
            if section.image is not None:
                data = base64.b64encode(section.image.read_bytes()).decode("ascii")
                alt = html.escape(section.title)
                body.append(f'<p><img alt="{alt}" src="data:image/png;base64,{data}"></p>')
            if section.csv is not None:
                link = html.escape(_rel(section.csv, report.out))
                body.append(f'<p>CSV: <a href="{link}">{html.escape(section.csv.name)}</a></p>')
        if report.notes:
            items = "".join(f"<li>{html.escape(n)}</li>" for n in report.notes)
            body.append(f"<{tag}>Notes and omissions</{tag}><ul>{items}</ul>")
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>jitbench report</title>'
        f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _inline(markdown: str) -> str:
    """The little markdown the header uses (bold, code) as HTML."""
    text = html.escape(markdown)
    text = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", text)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", text)


def _rel(path: Path, out: Path) -> str:
    return path.relative_to(out).as_posix()
