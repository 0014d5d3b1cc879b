"""Straight-line fits of a cost against a count (layers, leaves, ops, devices), with 95%
intervals; a fit not told apart from zero shows as "below noise" (docs/design.md)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from jitbench.figure import NOT_MEASURED, seconds

LEVEL = 0.95
BELOW_NOISE = "below noise"


def line(xs: np.ndarray, ys: np.ndarray) -> dict[str, float]:
    """Slope and intercept of ys against xs, each with its 95% interval (nan where undefined)."""
    found = dict.fromkeys(("per", "per_lo", "per_hi", "at0", "at0_lo", "at0_hi"), math.nan)
    if len(set(xs)) < 2:
        return found
    slope, intercept = np.polyfit(xs, ys, 1)
    found.update(per=float(slope), at0=float(intercept))
    dof = len(xs) - 2
    if dof < 1:
        return found
    residual = ys - (slope * xs + intercept)
    sigma2 = float(residual @ residual) / dof
    spread = float(((xs - xs.mean()) ** 2).sum())
    t = float(stats.t.ppf((1 + LEVEL) / 2, dof))
    half_slope = t * math.sqrt(sigma2 / spread)
    half_intercept = t * math.sqrt(sigma2 * (1 / len(xs) + xs.mean() ** 2 / spread))
    found.update(per_lo=slope - half_slope, per_hi=slope + half_slope)
    found.update(at0_lo=intercept - half_intercept, at0_hi=intercept + half_intercept)
    return found


def fits(measured: pd.DataFrame, x: str, name: str, unit: str) -> pd.DataFrame:
    """Per strategy of one benchmark's rows: the line of value against ``x`` with 95%
    intervals, and the log-log slope."""
    rows = []
    for strategy, data in measured.groupby("strategy", sort=False):
        ok = data[data["status"] == "ok"]
        xs, ys = ok[x].to_numpy(dtype=float), ok["value"].to_numpy(dtype=float)
        found = line(xs, ys)
        positive = (xs > 0) & (ys > 0)
        row = {"strategy": strategy}
        for column, key in ((f"{name}_per_{unit}", "per"), (f"{name}_intercept", "at0")):
            for end in ("", "_lo", "_hi"):
                row[f"{column}{end}_s"] = found[key + end]
        row[f"{name}_loglog_slope"] = line(np.log(xs[positive]), np.log(ys[positive]))["per"]
        row[f"{name}_points"] = len(xs)
        rows.append(row)
    return pd.DataFrame(rows)


def text(value: float, lo: float, hi: float) -> str:
    """A fitted cost in words: ``1.2μs [1.1μs, 1.3μs]`` or ``below noise [-40ns, 90ns]``."""
    if value is None or pd.isna(value):
        return NOT_MEASURED
    interval = "" if pd.isna(lo) else f" [{seconds(lo)}, {seconds(hi)}]"
    if value < 0 or (not math.isnan(lo) and lo <= 0 <= hi):
        return BELOW_NOISE + interval
    return seconds(value) + interval


def interval_columns(table: pd.DataFrame) -> dict[str, tuple[str, str]]:
    """Fitted columns of ``table`` that have interval columns: {column: (lo, hi)}."""
    found = {}
    for column in table:
        lo, hi = (f"{column.removesuffix('_s')}_{end}_s" for end in ("lo", "hi"))
        if column.endswith("_s") and lo in table and hi in table:
            found[column] = (lo, hi)
    return found
