"""Rows read as rows of another kind before the tables are made: counts of a hooks-only asv env
(``nox -s instructions``) as rows of its timed twin env, beside the times of the same calls
(docs/counting.md); target rows as rows of the built-in benchmark they twin, the target as
strategy and no size (docs/design.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pandas as pd

from jitbench.report.run import slug
from jitbench.suite import catalog

# The hooks' package in an asv environment name (asv writes name and version, no separator).
_HOOKS = re.compile(r"-pytest-codspeed[0-9.]*(?=-|$)")
TARGET = "target"


def fold_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with counts of a hooks-only env moved to its timed twin's (the same name
    without pytest-codspeed, same machine and commit) where there is one."""
    counted = frame["benchmark"].isin(catalog.COUNTED)
    timed = frame.loc[~counted, ["machine", "commit", "env"]]
    envs = set(timed.itertuples(index=False, name=None))
    twin = frame["env"].astype(str).map(lambda name: _HOOKS.sub("", name))
    keys = zip(frame["machine"], frame["commit"], twin, strict=True)
    has_twin = pd.Series([key in envs for key in keys], index=frame.index)
    moved = counted & has_twin & (twin != frame["env"])
    return frame.assign(env=frame["env"].where(~moved, twin))


def fold_targets(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each target row renamed to its built-in twin, the target as strategy."""
    builtin = {twin: name for name, twin in catalog.TARGET_TWINS.items()}
    rows = frame["benchmark"].isin(list(builtin))
    if not rows.any():
        return frame
    frame = frame.copy()
    if "strategy" not in frame:
        # Where the target column is: among the parameter columns (results.param_columns).
        frame.insert(frame.columns.get_loc(TARGET), "strategy", pd.NA)
    frame["strategy"] = frame["strategy"].astype("string")
    frame.loc[rows, "strategy"] = frame.loc[rows, TARGET].astype("string")
    frame.loc[rows, "benchmark"] = frame.loc[rows, "benchmark"].map(builtin)
    return frame.drop(columns=TARGET)


def groups(table: pd.DataFrame) -> Iterator[tuple[str, str, bool, pd.DataFrame]]:
    """Each (device, size) group of a summary table in order: its heading (``cpu, size 10`` or
    ``cpu, targets``), its part of a file name, whether it is the targets' (no size), its rows."""
    for (device, size), rows in table.groupby(["device", "size"], sort=False, dropna=False):
        targets = bool(pd.isna(size))
        name = f"{device}-targets" if targets else f"{device}-size{size}"
        title = f"{device}, targets" if targets else f"{device}, size {size}"
        yield title, slug(name), targets, rows
