"""Run-to-run noise measured by ``jitbench validate`` (its ``noise.csv``), read back for
``jitbench compare --noise``: a change within a row's measured noise is marked ``~``."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pandas as pd

from jitbench.errors import JitbenchError

# The columns compare reads from validate's noise.csv (validate writes more).
NOISE_COLUMNS = ("benchmark", "case", "spread")


@dataclasses.dataclass(frozen=True)
class Noise:
    """Run-to-run noise measured by ``jitbench validate``: ``rows`` maps a row's ``case`` to its
    relative spread, ``benchmarks`` a benchmark to the 95th percentile of its rows'."""

    path: Path
    rows: dict[str, float]
    benchmarks: dict[str, float]

    @classmethod
    def load(cls, path: str | Path) -> Noise:
        """Read validate's ``noise.csv``; a missing file or column is a JitbenchError."""
        path = Path(path)
        try:
            # Blank lines kept as empty rows: a row's index is its line number - 2.
            table = pd.read_csv(path, skip_blank_lines=False)
        except (OSError, ValueError) as exc:
            reason = " ".join(str(exc).split())
            raise JitbenchError(f"cannot read noise file {str(path)!r} ({reason})") from None
        missing = [c for c in NOISE_COLUMNS if c not in table]
        if missing:
            raise JitbenchError(
                f"noise file {str(path)!r} lacks column(s) {', '.join(missing)}; "
                f"expected the noise.csv of jitbench validate ({', '.join(NOISE_COLUMNS)})"
            )
        # Rows without a spread (a combination skipped in validate's runs) carry no noise.
        table = table.dropna(subset=list(NOISE_COLUMNS))
        spreads = [_spread(path, int(line) + 2, value) for line, value in table["spread"].items()]
        table = table.assign(spread=spreads, case=table["case"].astype(str))
        repeated = table[table.duplicated("case", keep=False)]
        if not repeated.empty:
            case = repeated["case"].iloc[0]
            lines = [str(int(i) + 2) for i in repeated.index[repeated["case"] == case]]
            raise JitbenchError(
                f"noise file {str(path)!r} has case {case!r} on lines {', '.join(lines)}; "
                "expected one row per case, as jitbench validate writes it"
            )
        benchmarks = {
            str(name): float(np.percentile(part["spread"], 95))
            for name, part in table.groupby("benchmark", sort=True)
        }
        rows = dict(zip(table["case"], table["spread"], strict=True))
        return cls(path, rows, benchmarks)

    def threshold(self, benchmark: str, case: str) -> tuple[float, str]:
        """The noise that applies to one row, and where it comes from (``row``/``p95``/``""``)."""
        if case in self.rows:
            return self.rows[case], "row"
        if benchmark in self.benchmarks:
            return self.benchmarks[benchmark], "p95"
        return math.nan, ""

    def describe(self, table: pd.DataFrame) -> str:
        """One line: that noise applies, from which file, and what it changed."""
        compared = (table["base_status"] == "ok") & (table["head_status"] == "ok")
        sources = table.loc[compared, "noise_from"].value_counts()
        return (
            f"noise from {self.path}: a change within its measured noise is marked ~ "
            f"(of the rows measured on both sides, {sources.get('row', 0)} by their own noise, "
            f"{sources.get('p95', 0)} by their benchmark's p95, {sources.get('', 0)} without); "
            f"{int(table['within_noise'].sum())} marks of asv's rule changed to ~"
        )


def _spread(path: Path, line: int, value: object) -> float:
    """One row's spread, a finite number >= 0; anything else names the file, line and value."""
    try:
        spread = float(value)
    except (TypeError, ValueError):
        spread = math.nan
    if not (math.isfinite(spread) and spread >= 0):
        shown = repr(value) if isinstance(value, str) else str(value)
        raise JitbenchError(
            f"noise file {str(path)!r} line {line}: spread {shown} is not a number >= 0 "
            "such as 0.05 (|ratio - 1| of two runs of unchanged code)"
        )
    return spread
