"""The validation arithmetic on pandas frames (the phases' measurements, or frames shaped like
:func:`jitbench.results.load` output): ratios, spreads, verdicts. Nothing here runs anything."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from jitbench.figure import NOT_MEASURED
from jitbench.results.compare import CHANGE_MARKS, REGRESSION_MARKS, compare_frames
from jitbench.suite import catalog

CACHED, DISPATCH, COLD = catalog.CACHED, catalog.DISPATCH, catalog.COLD
FAMILIES = {CACHED: "cached call", DISPATCH: "dispatch", COLD: "cold first call"}
CANARY = "canary"
# Fidelity: generated class / hand-written twin, for the strategies held to it.
FIDELITY_RANGE = (0.9, 1.1)
FIDELITY_MEASURES = ("cached call", "dispatch")
# Reported, but not held to FIDELITY_RANGE: their time per call is not a jitted call.
FIDELITY_EXEMPT = {
    "eager": "no jit: the op-by-op baseline",
    "jit_per_call": "every call compiles, for milliseconds that vary",
}
ACCURACY_RANGE = (0.8, 1.25)
# Noise: p95 of |ratio - 1| per family, over its rows in a scope.
SMALL_SIZE = 1000
SMALL_DEVICE = "cpu"
SCOPES = {"all": "all rows", "small": f"sizes <= {SMALL_SIZE} on {SMALL_DEVICE}"}
NOISE_TARGETS = {CACHED: (0.05, "small"), DISPATCH: (0.05, "small"), COLD: (0.10, "all")}
TARGET_SLOWDOWN = 10.0
RUNTIME_TARGET_S = 15 * 60


def spread(ratios: Sequence[float] | pd.Series) -> float:
    """The noise figure: 95th percentile of ``|ratio - 1|`` (NaN when there is no ratio)."""
    values = np.abs(np.asarray(ratios, dtype="float64") - 1.0)
    values = values[np.isfinite(values)]
    return float(np.percentile(values, 95)) if values.size else math.nan


def fidelity_table(measured: pd.DataFrame) -> pd.DataFrame:
    """Add ``ratio`` (``generated_s`` / ``twin_s``), ``held`` (to the target) and ``in_range``."""
    ratio = measured["generated_s"] / measured["twin_s"]
    return measured.assign(
        ratio=ratio,
        held=~measured["strategy"].isin(list(FIDELITY_EXEMPT)),
        in_range=ratio.between(*FIDELITY_RANGE),
    )


def accuracy_table(measured: pd.DataFrame) -> pd.DataFrame:
    """Add ``ratio`` (asv median ``asv_s`` / timeit median ``timeit_s``) and ``in_range``."""
    ratio = measured["asv_s"] / measured["timeit_s"]
    return measured.assign(ratio=ratio, in_range=ratio.between(*ACCURACY_RANGE))


def noise_table(first: pd.DataFrame, second: pd.DataFrame, factor: float) -> pd.DataFrame:
    """The rows of :data:`FAMILIES` measured in both runs of unchanged code (``results.load``
    frames): ratio, ``spread`` (``|ratio - 1|``), compare's mark; ``noise.csv``'s columns,
    which :class:`jitbench.results.noise.Noise` reads."""
    table = compare_frames(first, second, factor)
    keep = table["benchmark"].isin(list(FAMILIES)) & (table["base_status"] == "ok")
    table = table[keep & (table["head_status"] == "ok")]
    out = table.rename(columns={"base": "first_s", "head": "second_s"}).assign(
        family=table["benchmark"].map(FAMILIES), spread=(table["ratio"] - 1).abs()
    )
    columns = ["family", "benchmark", "strategy", "size", "device", "case", "first_s", "second_s"]
    out = out[[*columns, "ratio", "spread", "mark"]]
    return out.sort_values(["family", "case"]).reset_index(drop=True)


def noise_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per family and scope (all rows; sizes <= 1000 on cpu): rows, spread, largest, flags.

    ``target`` and ``met`` are set on the scope each family's target is about.
    """
    rows = []
    small = table[(table["size"] <= SMALL_SIZE) & (table["device"] == SMALL_DEVICE)]
    for benchmark, family in FAMILIES.items():
        target, scope = NOISE_TARGETS[benchmark]
        for name, part in (("all", table), ("small", small)):
            part = part[part["benchmark"] == benchmark]
            value = spread(part["ratio"])
            held = name == scope
            rows.append(
                {
                    "family": family,
                    "benchmark": benchmark,
                    "scope": SCOPES[name],
                    "rows": len(part),
                    "spread": value,
                    "max_deviation": float(part["spread"].max()) if len(part) else math.nan,
                    "median_ratio": float(part["ratio"].median()) if len(part) else math.nan,
                    "flagged": int(part["mark"].isin(CHANGE_MARKS).sum()),
                    "target": target if held else math.nan,
                    "met": (bool(value <= target) if len(part) else False) if held else None,
                }
            )
    return pd.DataFrame(rows)


def noise_by_size(table: pd.DataFrame) -> pd.DataFrame:
    """The spread per family, size and device: where the noise comes from."""
    return (
        table.groupby(["family", "size", "device"], sort=True)
        .agg(
            rows=("ratio", "size"),
            spread=("ratio", spread),
            median_ratio=("ratio", "median"),
            flagged=("mark", lambda marks: int(marks.isin(CHANGE_MARKS).sum())),
        )
        .reset_index()
    )


def judge_sensitivity(
    pairs: Sequence[tuple[int, float, pd.DataFrame, pd.DataFrame]], factor: float
) -> pd.DataFrame:
    """One row per (repetition, slowdown, cached-call case) of ``pairs`` (repetition, slowdown
    in percent, base and head ``results.load`` frames): compare's mark and ratio; ``flagged``
    is a regression mark; the canary's rows are the planted regression, the rest unchanged."""
    parts = []
    for repetition, slowdown, base, head in pairs:
        table = compare_frames(base, head, factor)
        keep = (table["benchmark"] == CACHED) & (table["base_status"] == "ok")
        table = table[keep & table["head_status"].isin(["ok", "failed"])].copy()
        table.insert(0, "slowdown", float(slowdown))
        table.insert(0, "repetition", int(repetition))
        table["factor"] = float(factor)
        table["canary"] = table["strategy"] == CANARY
        table["flagged"] = table["mark"].isin(REGRESSION_MARKS)
        parts.append(table)
    if not parts:
        return pd.DataFrame(
            columns=["repetition", "slowdown", "case", "ratio", "mark", "canary", "flagged"]
        )
    return pd.concat(parts, ignore_index=True)


def sensitivity_summary(judged: pd.DataFrame, *, by_size: bool = False) -> pd.DataFrame:
    """Per slowdown (and size): how often the canary was flagged, its ratios, the false flags;
    ``canary_above_factor`` and ``canary_significant``: which half of compare's test failed."""
    keys = ["slowdown", "size"] if by_size else ["slowdown"]
    rows = []
    for key, part in judged.groupby(keys, sort=True):
        canary = part[part["canary"]]
        unchanged = part[~part["canary"]]
        false = unchanged[unchanged["flagged"]]
        factor = float(part["factor"].iloc[0])
        rows.append(
            {
                "slowdown_pct": float(key[0]),
                **({"size": int(key[1])} if by_size else {}),
                "repetitions": int(part["repetition"].nunique()),
                "canary_rows": len(canary),
                "canary_flagged": int(canary["flagged"].sum()),
                "canary_above_factor": int((canary["ratio"] > factor).sum()),
                "canary_significant": int(canary["significant"].fillna(False).sum()),
                "canary_ratio_median": float(canary["ratio"].median()),
                "canary_ratio_min": float(canary["ratio"].min()),
                "canary_ratio_max": float(canary["ratio"].max()),
                "unchanged_rows": len(unchanged),
                "false_flags": len(false),
                "false_flag_cases": "; ".join(
                    f"r{r.repetition} {r.case} x{r.ratio:.3f}" for r in false.itertuples()
                ),
                "detected": bool(len(canary)) and bool(canary["flagged"].all()),
                "clean": false.empty,
            }
        )
    return pd.DataFrame(rows)


def smallest_flagged(summary: pd.DataFrame, *, require_clean: bool = True) -> float | None:
    """The smallest slowdown flagged in every repetition (with no false flag), else None."""
    if summary.empty:
        return None
    ok = summary["detected"] & (summary["clean"] if require_clean else True)
    chosen = summary.loc[ok, "slowdown_pct"]
    return float(chosen.min()) if len(chosen) else None


def canary_at_zero(bases: pd.DataFrame) -> pd.DataFrame:
    """Canary unslowed / helper_function in the same run: the canary adds nothing at 0."""
    rows = bases[(bases["benchmark"] == CACHED) & (bases["status"] == "ok")]
    keys = ["machine", "size", "device"]
    canary = rows[rows["strategy"] == CANARY].set_index(keys)["value"]
    helper = rows[rows["strategy"] == "helper_function"].set_index(keys)["value"]
    joined = pd.DataFrame({"canary_s": canary, "helper_function_s": helper}).dropna()
    joined["ratio"] = joined["canary_s"] / joined["helper_function_s"]
    return joined.reset_index()


def minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def pct(value: float) -> str:
    return f"{value:.1%}" if pd.notna(value) else NOT_MEASURED
