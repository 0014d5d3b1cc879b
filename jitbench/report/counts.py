"""Counts beside the times of the same calls.

``nox -s instructions`` runs in an asv environment of its own: the timed
environment's packages plus pytest-codspeed, whose compiled hooks start and
stop Valgrind's counting (:mod:`jitbench.measure.counting.callgrind`) and which no timed code
path imports. asv names an environment by its packages, so the counts are
filed under another name than the times they go with. The report reads them
as rows of the timed environment of the same machine, commit and packages
otherwise, so that one table sets a strategy's count beside its time.
"""

from __future__ import annotations

import re

import pandas as pd

from jitbench.suite import catalog

# The hooks' package in an asv environment name (asv writes name and version, no separator).
_HOOKS = re.compile(r"-pytest-codspeed[0-9.]*(?=-|$)")


def fold(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with counts of a hooks-only environment moved to its timed twin's env.

    Counts whose environment has no timed twin (the same name without
    pytest-codspeed, same machine and commit) keep their own.
    """
    counted = frame["benchmark"].isin([*catalog.INSTRUCTIONS.values(), *catalog.COUNTED])
    if not counted.any():
        return frame
    timed = frame.loc[~counted, ["machine", "commit", "env"]]
    envs = set(timed.itertuples(index=False, name=None))
    twin = frame["env"].astype(str).map(lambda name: _HOOKS.sub("", name))
    keys = zip(frame["machine"], frame["commit"], twin, strict=True)
    has_twin = pd.Series([key in envs for key in keys], index=frame.index)
    moved = counted & has_twin & (twin != frame["env"])
    if not moved.any():
        return frame
    frame = frame.copy()
    frame.loc[moved, "env"] = twin[moved]
    return frame
