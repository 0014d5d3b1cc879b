"""The numbers behind every table: per (device, size, strategy) and per (device, strategy),
with ratios, the ★, and break-even against eager (definitions: README.md#results)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from jitbench import hazards
from jitbench.figure import NOT_MEASURED
from jitbench.report.run import BEST_MARK, Run, order
from jitbench.suite import catalog

BASELINE = "eager"
# The floor, the least a call can cost (what it is: README.md#results).
FLOOR = "jit_function"
# The figures divided by the floor's, and the column each ratio is written to.
FLOOR_RATIOS = {
    "first_call_s": "first_call_x_floor",
    "cached_call_s": "cached_x_floor",
    "dispatch_s": "dispatch_x_floor",
    "cached_call_instructions": "cached_instructions_x_floor",
    "dispatch_instructions": "dispatch_instructions_x_floor",
}

# Measured per (strategy, size, device).
SIZED = {
    "first_call_s": catalog.COLD,
    "first_call_fresh_process_s": catalog.COLD_FRESH,
    "first_call_cold_disk_s": catalog.DISK_COLD,
    "first_call_warm_disk_s": catalog.DISK_WARM,
    "disk_cache_hits": catalog.DISK_HITS,
    "trace_s": catalog.TRACE,
    "lower_s": catalog.LOWER,
    "compile_s": catalog.COMPILE,
    "stage_call_s": catalog.STAGE_CALL,
    "cached_call_s": catalog.CACHED,
    "dispatch_s": catalog.DISPATCH,
}
# Their samples' 75th percentile beside the median (why: docs/design.md, Results and the report).
PERCENTILES = {"cached_call_q75_s": catalog.CACHED, "dispatch_q75_s": catalog.DISPATCH}
# Instructions per call (Valgrind, opt-in): columns only where a run counted them.
COUNTED = {
    "cached_call_instructions": catalog.INSTRUCTIONS["call"],
    "dispatch_instructions": catalog.INSTRUCTIONS["dispatch"],
}
# Per (device, strategy): sizes whose first call found nothing in a filled disk cache.
DISK_MISSES = "sizes_without_disk_hit"
# Hazard words in the order they are listed; stale is the one that bars "fastest".
HAZARD_WORDS = {**hazards.WORDS, DISK_MISSES: "no disk-cache hit"}
BREAK_EVEN = ("break_even_vs_warm_eager", "break_even_vs_cold_eager")
# Each time beside its count: a count holds still under load, a time does not.
HEADLINE = [
    "strategy", "hazard", "first_call_s", "cached_call_s", "cached_call_instructions",
    "dispatch_s", "dispatch_instructions", "cached_x_eager", "first_call_x_floor",
    "cached_x_floor", "dispatch_x_floor", *BREAK_EVEN,
]  # fmt: skip
# Flags the tables show as marks (run.display), not as columns.
MARKS = ["best", "dispatch_dearer"]
FULL = [
    "strategy", "hazard", "first_call_s", "first_call_fresh_process_s", "first_call_cold_disk_s",
    "first_call_warm_disk_s", "disk_cache_saving_s", "disk_cache_speedup", "disk_cache_hits",
    "trace_s", "lower_s", "compile_s", "stage_call_s", "cached_call_s", "cached_call_q75_s",
    "dispatch_s", "dispatch_q75_s", *COUNTED, "cached_x_eager", "cached_x_best",
    "first_call_x_eager", "first_call_x_best", *FLOOR_RATIOS.values(), *BREAK_EVEN,
    *catalog.HAZARDS, "peak_memory_bytes", "fastest_correct", "fewest_instructions", "best_by",
    *MARKS,
]  # fmt: skip


def summary(run: Run) -> pd.DataFrame:
    """Every per-(device, size, strategy) number, hazard, ratio and break-even (memoized)."""
    if "summary" not in run.cache:
        run.cache["summary"] = _summary(run)
    return run.cache["summary"]


def per_device(run: Run) -> pd.DataFrame | None:
    """Hazard counts, hazard words and peak memory per (device, strategy) (memoized)."""
    if "per_device" not in run.cache:
        run.cache["per_device"] = _per_device(run)
    return run.cache["per_device"]


def hazard_of(run: Run) -> dict[tuple[Any, str], str]:
    """(device, strategy) -> hazard words; (None, strategy) -> its words on any device."""
    table = per_device(run)
    if table is None:
        return {}
    hazards = {(r.device, r.strategy): r.hazard for r in table.itertuples()}
    for r in table[table["hazard"] != ""].itertuples():
        hazards.setdefault((None, r.strategy), r.hazard)
    return hazards


def break_even_warm(strategy: str, first: float, cached: float, eager_cached: float) -> str | int:
    """Calls until jit's first call is repaid against eager with its ops compiled."""
    if strategy == BASELINE:
        return "baseline"
    if any(pd.isna(v) for v in (first, cached, eager_cached)):
        return NOT_MEASURED
    if cached >= eager_cached:
        return "never"
    return math.ceil(first / (eager_cached - cached))


def break_even_cold(
    strategy: str, first: float, cached: float, eager_first: float, eager_cached: float
) -> str | int:
    """The smallest n from which first + (m-1) cached <= eager first + (m-1) eager cached."""
    if strategy == BASELINE:
        return "baseline"
    if any(pd.isna(v) for v in (first, cached, eager_first, eager_cached)):
        return NOT_MEASURED
    if first <= eager_first and cached <= eager_cached:
        return 1
    if cached >= eager_cached:
        return "never"
    return 1 + math.ceil((first - eager_first) / (eager_cached - cached))


def _summary(run: Run) -> pd.DataFrame:
    keys = ["device", "size", "strategy"]
    columns = run.columns(SIZED, keys, omitted="summary column")
    columns.update(run.columns(PERCENTILES, keys, "q_75"))
    for name, benchmark in COUNTED.items():
        counted = run.rows(benchmark)
        if (counted["status"] == "ok").any():  # n/a in every run that did not opt in
            columns[name] = counted.set_index(keys)["value"]
    after = run.rows(catalog.AFTER_CHANGE)
    if after.empty:
        run.omit("after-change columns", catalog.AFTER_CHANGE)
    else:
        wide = after.pivot(index=keys, columns="change", values="value")
        for change in pd.unique(after["change"].dropna()):
            columns[f"after_{change}_s"] = wide[change]
    if not columns:
        return pd.DataFrame()
    table = pd.concat(columns, axis=1).dropna(how="all").reset_index()
    devices = per_device(run)
    if devices is not None:
        table = table.merge(devices, on=["device", "strategy"], how="left")
    stale = catalog.HAZARDS["stale_results"]
    if run.sized and run.in_suite(stale) and (devices is None or "stale_results" not in devices):
        run.notes.append(
            f"stale results not measured ({run.suite_name(stale)} absent): "
            f"{BEST_MARK} cannot exclude stale strategies"
        )
    table["hazard"] = table["hazard"].fillna("") if "hazard" in table else ""
    table["stale"] = table["stale"].fillna(False).astype(bool) if "stale" in table else False
    table = order(table, run.frame)
    if {"first_call_cold_disk_s", "first_call_warm_disk_s"} <= set(table):
        cold, warm = table["first_call_cold_disk_s"], table["first_call_warm_disk_s"]
        table["disk_cache_saving_s"] = cold - warm
        table["disk_cache_speedup"] = cold / warm
    if run.sized and not (table["strategy"] == BASELINE).any():
        run.notes.append(f"ratios to eager and break-even omitted: no {BASELINE!r} results")
    for metric, short in (("cached_call_s", "cached"), ("first_call_s", "first_call")):
        if metric not in table:
            continue
        baseline = beside(table, BASELINE, metric)
        correct = table[metric].where(~table["stale"])
        best = correct.groupby([table["device"], table["size"]]).transform("min")
        table[f"{short}_x_eager"] = table[metric] / baseline
        table[f"{short}_x_best"] = table[metric] / best
        table[f"eager_{metric}"] = baseline
        if metric == "cached_call_s":
            table["fastest_correct"] = correct == best
    _best(table)
    for metric, column in FLOOR_RATIOS.items():
        # Each figure over the floor's at the same device and size, where it was measured.
        floor = beside(table, FLOOR, metric) if metric in table else None
        if floor is not None and floor.notna().any():
            table[column] = table[metric] / floor
    if {"cached_call_s", "first_call_s"} <= set(table):
        warm, cold = [], []
        for r in table.itertuples():
            jit = (r.strategy, r.first_call_s, r.cached_call_s)
            warm.append(break_even_warm(*jit, r.eager_cached_call_s))
            cold.append(break_even_cold(*jit, r.eager_first_call_s, r.eager_cached_call_s))
        table["break_even_vs_warm_eager"] = warm
        table["break_even_vs_cold_eager"] = cold
    return table


def _best(table: pd.DataFrame) -> None:
    """The ★ per (device, size) and the dispatches dearer than their call (README.md#results):
    none where fewer than two strategies are compared, nor among targets, which compute
    different things."""
    groups = [table["device"], table["size"]]
    # The floor is no way of jitting a method: the bar the others are set against.
    method = ~table["stale"] & (table["strategy"] != FLOOR) & table["size"].notna()
    by_time = pd.Series(False, index=table.index)
    if "cached_call_s" in table:
        time = table["cached_call_s"].where(method)
        by_time = time == time.groupby(groups, dropna=False).transform("min")
    counted = pd.Series(False, index=table.index)
    if "cached_call_instructions" in table:
        count = table["cached_call_instructions"].where(method)
        fewest = count.groupby(groups, dropna=False).transform("min")
        table["fewest_instructions"] = count == fewest
        counted = count.notna().groupby(groups, dropna=False).transform("any")
    fewest = table.get("fewest_instructions", pd.Series(False, index=table.index))
    measured = table["cached_call_s"].where(method) if "cached_call_s" in table else None
    if "cached_call_instructions" in table:
        counts = table["cached_call_instructions"].where(method)
        measured = counts if measured is None else counts.fillna(measured)
    compared = pd.Series(False, index=table.index)
    if measured is not None:
        compared = measured.notna().groupby(groups, dropna=False).transform("sum") > 1
    table["best"] = (fewest.where(counted, by_time) & compared).astype(bool)
    table["best_by"] = counted.map({True: "instructions", False: "time"})
    if {"dispatch_s", "cached_call_s"} <= set(table):
        table["dispatch_dearer"] = table["dispatch_s"] > table["cached_call_s"]


def beside(table: pd.DataFrame, strategy: str, metric: str) -> pd.Series:
    """Each row's ``metric`` of ``strategy`` at the same device and size."""
    where = pd.MultiIndex.from_frame(table[["device", "size"]])
    of = table[table["strategy"] == strategy].set_index(["device", "size"])[metric]
    return pd.Series(of.reindex(where).to_numpy(), index=table.index)


def _per_device(run: Run) -> pd.DataFrame | None:
    keys = ["device", "strategy"]
    audited = any(run.has(bench) for bench in catalog.HAZARDS.values())
    columns = run.columns(catalog.HAZARDS, keys, omitted="hazard count" if audited else "")
    if run.has(catalog.DISK_HITS):
        hits = run.rows(catalog.DISK_HITS)
        hits = hits[hits["status"] == "ok"]
        missed = hits["value"] == 0
        columns[DISK_MISSES] = missed.groupby([hits["device"], hits["strategy"]]).sum()
    if run.has(catalog.MEMORY):
        columns["peak_memory_bytes"] = run.rows(catalog.MEMORY).set_index(keys)["value"]
    if not columns:
        return None
    table = pd.concat(columns, axis=1).reset_index()
    words = [[HAZARD_WORDS[n] for n in hazards.named(row)] for row in table.to_dict("records")]
    if DISK_MISSES in table:
        for found, missed in zip(words, table[DISK_MISSES].fillna(0) > 0, strict=True):
            found += [HAZARD_WORDS[DISK_MISSES]] * bool(missed)
    table["hazard"] = [", ".join(found) for found in words]
    table["stale"] = table["stale_results"].fillna(0) > 0 if "stale_results" in table else False
    return table


def flag_hazards(table: pd.DataFrame, run: Run) -> pd.DataFrame:
    """Add the hazard column to a per-strategy table (hazardous on any device)."""
    hazards = hazard_of(run)
    table.insert(1, "hazard", [hazards.get((None, s), "") for s in table["strategy"]])
    return table
