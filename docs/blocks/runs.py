"""The committed results every generated block reads, and the checkout's paths."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from jitbench import document, results
from jitbench.document import Page
from jitbench.report import (
    choice,
    fit_tables,
    plots,
    sections,
)
from jitbench.report import releases as release_page
from jitbench.report.run import Run

# The checkout this jitbench was imported from: its README, docs/ and results/.
ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RESULTS = ROOT / "results"
AUDITS = DOCS / "history"
VALIDATIONS = DOCS / "validation"
PROBES = DOCS / "async_dispatch"
COUNTS = DOCS / "counts"
RUN_SIZE = 10
# The releases on each side of every change the history shows, for the evidence rows.
EDGE_STRATEGY = "static_self_value_hash"


def splice(text: str, name: str, body: str) -> str:
    """``text`` with the generated block ``name`` replaced by ``body``."""
    begin, end = f"<!-- BEGIN generated: {name} -->", f"<!-- END generated: {name} -->"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), flags=re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"no generated block {name!r} where make_readme puts it")
    return pattern.sub(lambda _: f"{begin}\n{body.strip()}\n{end}", text)


def section(markdown: str, heading: str) -> str:
    """The body of the report section titled ``heading`` (up to its CSV link or next heading)."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip("#").strip() == heading)
    body = []
    for line in lines[start + 1 :]:
        if line.startswith("#") or line.startswith("CSV:"):
            break
        body.append(line)
    return "\n".join(body).strip()


class Runs:
    """The committed results: the complete run and the newest JAX history.

    Both are :mod:`jitbench.report.choice`'s, as ``jitbench report`` shows
    them: the complete run is the chosen run with the most (benchmark,
    strategy) pairs across machines, its instructions per call folded in; the
    history the newest (machine, commit) with results from two JAX releases or more.
    """

    def __init__(self, tmp: Path) -> None:
        # Every block reads this one load of results/ (thousands of rows, seconds).
        self.frame = frame = results.load(RESULTS)
        picked = choice.choose(frame)
        self.machine, self.commit, self.env = max(picked.runs, key=picked.pairs.__getitem__)
        self.counts_from = picked.counts.get((self.machine, self.commit, self.env))
        one = choice.Choice((self.full_key,), picked.counts, (), picked.pairs)
        self.full = choice.apply(frame, one)
        if picked.history is None:
            raise SystemExit("the committed results hold no JAX history: run nox -s jax_history")
        self.history_machine, self.history_commit, _ = picked.history
        self.tmp = tmp
        # Generated plots to copy into docs/: {destination: source}.
        self.images: dict[Path, Path] = {}
        # The parts of jitbench report's pages the blocks quote, made as the report makes
        # them: the full run's headline tables and cached-call plot, and the page across
        # JAX releases (the whole report, one run per release, takes minutes).
        self.report = self.tmp / "full"
        run = Run(with_params(self.full).reset_index(drop=True), self.report)
        sections.headline(run)
        plots.plot_cached(run)
        self.headline_md = document.markdown(Page("headline", run.blocks))
        depth = Run(run.frame, self.report)
        fit_tables.depth_fits(depth)
        plots.plot_depth(depth)
        self.depth_md = document.markdown(Page("depth", depth.blocks))
        history = results.select(frame, machine=self.history_machine, commit=self.history_commit)
        self.releases = self.tmp / "history"
        self.releases_md = document.markdown(
            release_page.page(release_page.groups(with_params(history)), self.releases)
        )

    @property
    def full_key(self) -> choice.Key:
        return self.machine, self.commit, self.env

    @property
    def jax(self) -> str:
        return str(self.full["jax"].iloc[0])


def with_params(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every parameter column the report's tables index, as the report fills it."""
    frame = frame.copy()
    for column in results.PARAM_ORDER:
        if column not in frame:
            frame[column] = pd.Series(pd.NA, index=frame.index, dtype="object")
    return frame


def newest_run(frame: pd.DataFrame, benchmarks: tuple[str, ...], command: str) -> pd.DataFrame:
    """The rows of ``benchmarks`` in the newest run that measured one of them
    (:func:`jitbench.report.choice.newest_measuring`); stops naming ``command`` (which runs
    them) where the committed results hold none."""
    key = choice.newest_measuring(frame, benchmarks)
    if key is None:
        raise SystemExit(f"the committed results hold no run of {command}: run it")
    machine, commit, env = key
    run = results.select(frame, machine=machine, commit=commit, env=env)
    return run[run["benchmark"].isin(benchmarks)]


def newest(folder: Path, date: Callable[[dict], str]) -> dict | None:
    """The newest committed record in ``folder`` (one file per machine), by ``date``."""
    records = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    return max(records, key=date, default=None)
