"""Counts of a hooks-only asv env (``nox -s instructions``) read as rows of its timed twin env,
beside the times of the same calls (docs/counting.md)."""

from __future__ import annotations

import re

import pandas as pd

from jitbench.suite import catalog

# The hooks' package in an asv environment name (asv writes name and version, no separator).
_HOOKS = re.compile(r"-pytest-codspeed[0-9.]*(?=-|$)")


def fold(frame: pd.DataFrame) -> pd.DataFrame:
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
