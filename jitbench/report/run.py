"""One asv run of the results (machine, commit, env), what is written for it, and display rules."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from jitbench import results
from jitbench.document import Block, Heading, Image, Inline, Link, Paragraph, Table
from jitbench.figure import NOT_MEASURED, byte_size, seconds
from jitbench.report import fits
from jitbench.results.project import OWN, Commands
from jitbench.suite.catalog import TARGET_TWINS

HAZARD_MARK = "⚠"
BEST_MARK = "★"
# A dispatch measured dearer than the blocking call it is part of (see sections.headline).
DEARER_MARK = "†"
# Columns that mark cells instead of showing (summary.MARKS and what they derive from).
FLAGS = ["fastest_correct", "fewest_instructions", "best_by", "best", "dispatch_dearer"]

# Display names of the tables' columns; the CSVs keep the raw names and numbers.
LABELS = {
    "first_call_s": "cold first call",
    "first_call_fresh_process_s": "first call, fresh process",
    "first_call_cold_disk_s": "first call, cold disk cache",
    "first_call_warm_disk_s": "first call, warm disk cache",
    "disk_cache_saving_s": "disk cache saves",
    "disk_cache_speedup": "disk cache speedup",
    "trace_s": "trace",
    "lower_s": "lower",
    "compile_s": "compile",
    "stage_call_s": "stages' call",
    "cached_call_s": "cached call",
    "cached_call_q75_s": "cached call, 75th pct",
    "dispatch_s": "dispatch only",
    "dispatch_q75_s": "dispatch, 75th pct",
    "call_s": "synchronous call",
    "loop_s": "loop per call",
    "cached_call_instructions": "instructions per cached call",
    "dispatch_instructions": "instructions per dispatch",
    "cached_x_eager": "cached / eager",
    "cached_x_best": "cached / best",
    "first_call_x_eager": "first call / eager",
    "first_call_x_best": "first call / best",
    "first_call_x_floor": "first call / floor",
    "cached_x_floor": "cached / floor",
    "dispatch_x_floor": "dispatch / floor",
    "cached_instructions_x_floor": "instructions per cached call / floor",
    "dispatch_instructions_x_floor": "instructions per dispatch / floor",
    "break_even_vs_warm_eager": "break-even vs warm eager",
    "break_even_vs_cold_eager": "break-even vs cold eager",
    "stale_results": "stale results",
    "leaked_instances": "leaked instances",
    "repeat_call_compiles": "compiles of a repeated call",
    "sizes_without_disk_hit": "sizes without disk-cache hit",
    "peak_memory_bytes": "peak memory",
}


@dataclass
class Run:
    """The rows of one (machine, commit, env) and the blocks and notes written for them."""

    frame: pd.DataFrame
    out: Path
    prefix: str = ""
    level: int = 2
    audit: list[dict[str, Any]] | None = None
    # The suite's benchmarks by asv's names (None: every benchmark of the catalog), and the
    # commands its reader types (jitbench.results.project).
    suite: frozenset[str] | None = None
    commands: Commands = OWN
    blocks: list[Block] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The machine, JAX release and Python: the run's heading (the env, a long name, is in
        the page's list of runs; :attr:`env_label` where two runs share this one)."""
        first = self.frame.iloc[0]
        jax = f", jax {first['jax']}" if pd.notna(first["jax"]) else ""
        # asv records a version, or the interpreter's path for an existing environment.
        version = re.search(r"\d+\.\d+(\.\d+)?", str(first["python"]))
        python = f", python {version[0]}" if version else ""
        return f"{first['machine']}{jax}{python}"

    @property
    def env_label(self) -> str:
        return f"{self.label}, env {self.frame.iloc[0]['env']}"

    def rows(self, benchmark: str) -> pd.DataFrame:
        return self.frame[self.frame["benchmark"] == benchmark]

    def has(self, benchmark: str) -> bool:
        return bool((self.frame["benchmark"] == benchmark).any())

    def columns(
        self, benchmarks: dict[str, str], keys: list[str], field: str = "value", omitted: str = ""
    ) -> dict[str, pd.Series]:
        """``field`` of each benchmark with rows, indexed by ``keys``, under its name; with
        ``omitted``, each benchmark without rows is noted as "``omitted`` NAME omitted"."""
        found = {name: b for name, b in benchmarks.items() if self.has(b)}
        for name, benchmark in benchmarks.items():
            if omitted and name not in found:
                self.omit(f"{omitted} {name}", benchmark)
        return {name: self.rows(b).set_index(keys)[field] for name, b in found.items()}

    def omit(self, what: str, *benchmarks: str) -> None:
        """Note ``what`` as omitted for want of ``benchmarks`` (those absent named by the suite's
        names); nothing where the suite has none of them."""
        known = [b for b in benchmarks if self.in_suite(b)]
        if not known:
            return
        missing = [b for b in known if not self.has(b)] or known
        named = ", ".join(self.suite_name(b) for b in missing)
        self.notes.append(f"{what} omitted: no results for {named}")

    def in_suite(self, benchmark: str) -> bool:
        """Whether the suite has ``benchmark`` (a built-in name), itself or as a target's twin."""
        return self.suite is None or bool({benchmark, TARGET_TWINS.get(benchmark)} & self.suite)

    def suite_name(self, benchmark: str) -> str:
        """``benchmark`` (a built-in name) as the suite names it: the target's twin where the
        suite has only that."""
        if self.suite is None or benchmark in self.suite:
            return benchmark
        return TARGET_TWINS.get(benchmark, benchmark)

    @property
    def sized(self) -> bool:
        """Whether the run holds built-in strategies' rows (sized; a target brings its own)."""
        return bool(self.frame["size"].notna().any()) if "size" in self.frame else False

    def path(self, kind: str, name: str) -> Path:
        folder = self.out / self.prefix / kind if self.prefix else self.out / kind
        folder.mkdir(parents=True, exist_ok=True)
        return folder / name

    def heading(self, title: str) -> None:
        self.blocks.append(Heading(title, self.level + 1))

    def text(self, *pieces: Inline) -> None:
        self.blocks.append(Paragraph(tuple(pieces)))

    def table(
        self, name: str, data: pd.DataFrame, wrap: tuple[str, ...] = (), csv: bool = True
    ) -> list[Block]:
        """The table's blocks (display copy and, with ``csv``, a link to its raw CSV)."""
        # Text columns (every value a string) align left; numbers and break-even right.
        left = [c for c in data if data[c].map(lambda v: isinstance(v, str)).all()]
        labels = (tuple(label(c) for c in names) for names in (left, wrap))
        blocks: list[Block] = [Table(display(data), *labels)]
        if csv:
            blocks.append(self.csv(name, data))
        return blocks

    def csv(self, name: str, data: pd.DataFrame) -> Paragraph:
        """Write ``data`` to tables/``name``.csv; returns the paragraph linking it."""
        path = self.path("tables", f"{name}.csv")
        data.to_csv(path, index=False)
        return Paragraph(("CSV: ", Link(path.name, rel(path, self.out))))

    def figure(self, title: str, name: str, fig: Figure, alt: str, text: str) -> None:
        """A heading, the figure saved as plots/``name``.png, and a paragraph under it."""
        png = self.path("plots", f"{name}.png")
        fig.savefig(png, dpi=100, bbox_inches="tight")
        self.heading(title)
        self.blocks.append(Image(rel(png, self.out), alt))
        self.text(text)


def rel(path: Path, out: Path) -> str:
    return path.relative_to(out).as_posix()


def slug(text: object) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", str(text))


def order(table: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """Strategies and devices in the order asv ran them, sizes (and populations) ascending, JAX
    by release."""
    ranks = {
        column: {v: i for i, v in enumerate(pd.unique(frame[column].dropna()))}
        for column in ("device", "strategy")
    }
    if "jax" in table:
        releases = sorted(set(table["jax"].dropna()), key=results.release_key)
        ranks["jax"] = {v: i for i, v in enumerate(releases)}
    keys = [c for c in ("device", "size", "strategy", "jax", "instances") if c in table]

    def rank(column: pd.Series) -> pd.Series:
        return column.map(ranks[column.name]) if column.name in ranks else column

    return table.sort_values(keys, key=rank).reset_index(drop=True)


def display(table: pd.DataFrame) -> pd.DataFrame:
    """Human units, labels and marks for the Markdown/HTML copy; the CSV keeps raw numbers."""
    shown = table.copy()
    if "strategy" in shown:
        marks = shown.get("hazard", pd.Series("", index=shown.index)).fillna("")
        flag = "best" if "best" in shown else "fastest_correct"
        best = shown.get(flag, pd.Series(False, index=shown.index)).fillna(False)
        shown["strategy"] = [
            f"{s}{f' {HAZARD_MARK}' if m else ''}{f' {BEST_MARK}' if bool(b) else ''}"
            for s, m, b in zip(shown["strategy"], marks, best, strict=True)
        ]
    intervals = fits.interval_columns(shown)
    for column in shown:
        if column in intervals:
            lo, hi = intervals[column]
            values = zip(shown[column], shown[lo], shown[hi], strict=True)
            shown[column] = [fits.text(*v) for v in values]
        elif column not in FLAGS:
            shown[column] = [cell(column, v) for v in shown[column]]
    if "dispatch_dearer" in shown and "dispatch_s" in shown:
        dearer = shown["dispatch_dearer"].fillna(False).astype(bool)
        shown.loc[dearer, "dispatch_s"] += f" {DEARER_MARK}"
    ends = [end for pair in intervals.values() for end in pair]
    shown = shown.drop(columns=[*FLAGS, *ends], errors="ignore")
    return shown.rename(columns=label)


def label(column: str) -> str:
    """A column's heading: ``after_new_static_s`` -> ``after new_static``."""
    if column.startswith("at_") and column.endswith("_s"):  # a figure per size: at_1e7_s
        return column.removeprefix("at_").removesuffix("_s")
    if column.startswith("after_") and column.endswith("_s"):
        return "after " + column.removeprefix("after_").removesuffix("_s")
    return LABELS.get(column, column)


def cell(column: str, value: object) -> str:
    if isinstance(value, str):
        return value
    if value is None or pd.isna(value):
        return NOT_MEASURED
    if column.endswith("_bytes"):
        return byte_size(float(value))
    if column.endswith("_s"):
        return seconds(value)
    if "_x_" in column or column.endswith(("_slope", "_speedup")):
        return f"{value:.2f}"
    if column.endswith("_instructions"):
        return f"{value:,.0f}"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
