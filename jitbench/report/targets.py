"""Target rows read as rows of the built-in benchmark they twin, the target as strategy and no
size (docs/design.md)."""

from __future__ import annotations

import pandas as pd

from jitbench.suite import catalog

COLUMN = "target"


def fold(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each target row renamed to its built-in twin, the target as strategy."""
    builtin = {twin: name for name, twin in catalog.TARGET_TWINS.items()}
    rows = frame["benchmark"].isin(list(builtin))
    if not rows.any():
        return frame
    frame = frame.copy()
    if "strategy" not in frame:
        # Where the target column is: among the parameter columns (results.param_columns).
        frame.insert(frame.columns.get_loc(COLUMN), "strategy", pd.NA)
    frame["strategy"] = frame["strategy"].astype("string")
    frame.loc[rows, "strategy"] = frame.loc[rows, COLUMN].astype("string")
    frame.loc[rows, "benchmark"] = frame.loc[rows, "benchmark"].map(builtin)
    return frame.drop(columns=COLUMN)


def is_target_group(size: object) -> bool:
    """Whether a (device, size) group of a summary table is the targets' (no size)."""
    return bool(pd.isna(size))


def group_title(device: object, size: object) -> str:
    """The heading of a (device, size) table: ``cpu, size 10`` or ``cpu, targets``."""
    return f"{device}, targets" if is_target_group(size) else f"{device}, size {size}"


def group_slug(device: object, size: object) -> str:
    return f"{device}-targets" if is_target_group(size) else f"{device}-size{size}"
