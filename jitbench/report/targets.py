"""Target rows read as rows of the built-in benchmark they twin, the target as strategy and no
size (docs/design.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

from jitbench.report.run import slug
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


def groups(table: pd.DataFrame) -> Iterator[tuple[str, str, bool, pd.DataFrame]]:
    """Each (device, size) group of a summary table in order: its heading (``cpu, size 10`` or
    ``cpu, targets``), its part of a file name, whether it is the targets' (no size), its rows."""
    for (device, size), rows in table.groupby(["device", "size"], sort=False, dropna=False):
        targets = bool(pd.isna(size))
        name = f"{device}-targets" if targets else f"{device}-size{size}"
        title = f"{device}, targets" if targets else f"{device}, size {size}"
        yield title, slug(name), targets, rows
