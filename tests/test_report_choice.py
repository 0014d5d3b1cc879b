"""Which runs ``jitbench report`` opens on, on copies of real asv results (test_results)."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from test_results import CACHED, MACHINE, STRATEGIES, copy_results

from jitbench import report, results
from jitbench.report import choice
from jitbench.suite import catalog

pytestmark = pytest.mark.slow

CALLS = catalog.INSTRUCTIONS["call"]


def _file(folder: Path, commit: str) -> Path:
    return next((folder / MACHINE).glob(f"{commit[:8]}-*.json"))


def _edit(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _keep(data: dict, keep) -> None:
    data["results"] = {name: v for name, v in data["results"].items() if keep(name)}


def _set(data: dict, benchmark: str, combo: tuple[str, ...], value: float) -> None:
    """Set one parameter combination's value in an asv results file's flat value list."""
    entry = data["results"][benchmark]
    column = data["result_columns"].index
    combos = list(itertools.product(*entry[column("params")]))
    entry[column("result")][combos.index(combo)] = value


def _report(folder: Path, out: Path) -> str:
    report.write_report(folder, out)
    return (out / "index.md").read_text()


def _headline(out: Path, size: int = 10) -> pd.DataFrame:
    return pd.read_csv(out / "tables" / f"headline-cpu-size{size}.csv").set_index("strategy")


def _strategies(markdown: str) -> list[str]:
    """The strategy cells of the Markdown table rows in ``markdown``."""
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    return [row.split("|")[1].strip() for row in rows[1:]]


def _values(path: Path, benchmark: str) -> dict[str, float]:
    frame = results.load(path.parent.parent, commit=path.name[:8])
    rows = frame[(frame["benchmark"] == benchmark) & (frame["device"] == "cpu")]
    return rows[rows["size"] == 10].set_index("strategy")["value"].to_dict()


def test_complete_run_leads_over_newer_partial_and_counts_only_runs(runs, tmp_path):
    folder = copy_results(runs, tmp_path)
    # c1 ran everything but counted nothing; c2 (newer) timed the cached call only;
    # c3 (newest) counted instructions and ran nothing else, as nox -s instructions does.
    _edit(_file(folder, runs.c1), lambda d: _keep(d, lambda name: name not in catalog.COUNTED))
    _edit(_file(folder, runs.c3), lambda d: _keep(d, lambda name: name in catalog.COUNTED))
    frame = results.load(folder)
    picked = choice.choose(frame)
    key = (MACHINE, runs.c1, frame["env"].iloc[0])
    assert picked.runs == (key,)
    assert picked.counts[key][1] == runs.c3
    reasons = {commit: reason for (_, commit, _), reason in picked.left_out}
    assert reasons[runs.c2].startswith("partial (")
    assert reasons[runs.c3] == "instructions only: its counts stand beside the run used"

    out = tmp_path / "report"
    index = _report(folder, out)
    head = index.split("## At a glance")[0]
    assert f"- used: {MACHINE} {runs.c1[:8]} " in head
    assert f"instructions per call from {runs.c3[:8]}" in head
    assert re.search(rf"- left out: {MACHINE} {runs.c2[:8]} .*: partial \(", head)
    table = _headline(out)
    times = _values(_file(folder, runs.c1), CACHED)
    counts = _values(_file(folder, runs.c3), CALLS)
    for strategy in STRATEGIES:
        assert table.loc[strategy, "cached_call_s"] == times[strategy]
        assert table.loc[strategy, "cached_call_instructions"] == counts[strategy]


def test_a_folder_of_partial_runs_still_opens_on_a_headline(runs, tmp_path):
    folder = copy_results(runs, tmp_path)
    for commit in (runs.c1, runs.c3):
        _file(folder, commit).unlink()
    out = tmp_path / "report"
    index = _report(folder, out)
    assert f"commit `{runs.c2[:8]}`" in index
    table = _headline(out)
    assert list(table.index) == STRATEGIES
    assert table["cached_call_s"].notna().all()
    # c2 timed the cached call only: no counts (the star goes by time) and no audit, so
    # the star cannot skip the stale strategy, and the page says so.
    glance = index.split("## At a glance")[1].split("\n## ")[0]
    assert {cell for cell in _strategies(glance) if cell.endswith(" ★")} == {
        "static_self_id_hash ★"
    }
    assert "★ cannot exclude stale strategies" in index


def test_runs_of_unknown_jax_are_left_out_with_the_reason(runs, tmp_path):
    folder = copy_results(runs, tmp_path)
    for path in (folder / MACHINE).glob("*.json"):
        if path.name != "machine.json":
            _edit(path, lambda d: d.update(requirements={"jax": "0.4.30"}))
    # A stray run on a second machine whose environment names no JAX release.
    stray = folder / "stray"
    stray.mkdir()
    machine = json.loads((folder / MACHINE / "machine.json").read_text())
    (stray / "machine.json").write_text(json.dumps({**machine, "machine": "stray"}))
    data = json.loads(runs.result_file(runs.c3).read_text())
    data["params"]["machine"] = "stray"
    (stray / runs.result_file(runs.c3).name).write_text(json.dumps(data))
    assert results.load(folder, machine="stray")["jax"].isna().all()

    index = _report(folder, tmp_path / "report")
    head = index.split("## At a glance")[0]
    assert re.search(rf"- left out: stray {runs.c3[:8]} .*: JAX release not recorded", head)
    assert f"- used: {MACHINE} {runs.c3[:8]} " in head
    assert "used: stray" not in head and "**stray**" not in head


def test_headline_stars_the_fewest_instructions_and_marks_a_dearer_dispatch(runs, tmp_path):
    folder = copy_results(runs, tmp_path)

    def edit(data: dict) -> None:
        # pytree_class: ten times bound_method_jit's time, the fewest instructions.
        _set(data, CALLS, ("'pytree_class'", "10", "'cpu'"), 1.0)
        # eager's dispatch measured dearer than its blocking call.
        _set(data, catalog.DISPATCH, ("'eager'", "10", "'cpu'"), 1.0)

    _edit(_file(folder, runs.c3), edit)
    out = tmp_path / "report"
    index = _report(folder, out)
    table = _headline(out)
    assert table.index[table["best"]].tolist() == ["pytree_class"]
    summary = pd.read_csv(out / "tables" / "summary-cpu-size10.csv").set_index("strategy")
    assert summary.index[summary["fastest_correct"]].tolist() == ["bound_method_jit"]
    glance = index.split("## At a glance")[1].split("\n## ")[0]
    size10 = glance.split("### cpu, size 10")[1].split("###")[0]
    starred = [cell for cell in _strategies(size10) if cell.endswith(" ★")]
    assert starred == ["pytree_class ⚠ ★"]  # its hazard (no disk-cache hit) is not stale
    assert re.search(r"^\| eager .*\| 1\.00s †", size10, flags=re.M)
    assert "†: dispatch measured dearer than the blocking call" in size10
    # No counts at size 1000: the star goes by time there, and the table says so.
    size1000 = glance.split("### cpu, size 1000")[1].split("###")[0]
    assert [cell for cell in _strategies(size1000) if cell.endswith(" ★")] == [
        "bound_method_jit ⚠ ★"
    ]
    assert "★ by time here: no instructions counted at this size." in size1000


def test_no_star_where_one_strategy_is_measured(runs, tmp_path):
    folder = copy_results(runs, tmp_path)

    def edit(data: dict) -> None:
        # At size 10 on cpu, only bound_method_jit has a cached call or a count.
        for strategy in STRATEGIES:
            if strategy != "bound_method_jit":
                for benchmark in (CACHED, CALLS):
                    _set(data, benchmark, (f"'{strategy}'", "10", "'cpu'"), float("nan"))

    _edit(_file(folder, runs.c3), edit)
    out = tmp_path / "report"
    glance = _report(folder, out).split("## At a glance")[1].split("\n## ")[0]
    size10 = glance.split("### cpu, size 10")[1].split("###")[0]
    assert not [cell for cell in _strategies(size10) if "★" in cell], size10
    assert not _headline(out)["best"].any()
    size1000 = glance.split("### cpu, size 1000")[1].split("###")[0]
    assert [cell for cell in _strategies(size1000) if cell.endswith(" ★")] == [
        "bound_method_jit ⚠ ★"
    ]
    assert "★:" in glance  # the legend explains the star that is there
