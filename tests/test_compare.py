"""``jitbench compare`` on results of real asv runs (see test_results.asv_runs)."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import itertools
import json
import math
import re
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from test_results import CACHED, MACHINE, MEMORY, SLOWDOWN, copy_results

from jitbench import results
from jitbench.errors import JitbenchError
from jitbench.results import compare
from jitbench.results.noise import Noise
from jitbench.suite import asvcompat, catalog
from jitbench.validate import stats

pytestmark = pytest.mark.slow


def _compare(results_dir, base, head, **options) -> int:
    return compare.run_compare(base, head, results=results_dir, **options)


def _cells(out: str) -> list[tuple[str, str, str]]:
    """(mark, ratio, benchmark) of every row of a printed table."""
    cells = [line.split("|") for line in out.splitlines() if line.startswith("| ")]
    return [(c[1].strip(), c[-3].strip(), c[-2].strip()) for c in cells if "bench_" in c[-2]]


def _rows(out: str) -> list[tuple[str, str]]:
    """(mark, benchmark) of every row of a printed table."""
    return [(mark, case) for mark, _, case in _cells(out)]


def test_drift_within_the_factor_passes(runs, tmp_path, capsys):
    # An unchanged rerun whose every sample drifted by 8%, less than the factor 1.1: by
    # asv's rule no row is a regression, however significant the drift. Built from c1's
    # samples rather than c2's own run, whose drift depends on this machine's load.
    def as_c2(copy, source, data):
        data["commit_hash"] = runs.c2
        head = next((copy / MACHINE).glob(f"{runs.c2[:8]}-*.json"))
        head.write_text(json.dumps(data))
        return runs.c2

    copy, head = _scaled_copy(runs, tmp_path, as_c2, 1.08)
    assert _compare(copy, runs.c1[:8], head[:8]) == 0
    out = capsys.readouterr().out
    assert f"BASE {MACHINE} {runs.c1[:8]}" in out and f"HEAD {MACHINE} {runs.c2[:8]}" in out
    assert "noise" not in out  # asv's rule unless a noise file is given
    cached = [(mark, ratio) for mark, ratio, case in _cells(out) if case.startswith(f"{CACHED}(")]
    assert len(cached) == 20  # 10 measured, 10 skipped (gpu)
    assert sorted(cached)[-10:] == [("~", "1.08")] * 10
    assert {mark for mark, _ in cached} == {"", "~"}


def _asv_compare_marks(runs, base: str, head: str) -> dict[str, str]:
    """``asv compare``'s own mark per benchmark case, from its printed table."""
    command = [sys.executable, "-m", "asv", "compare", "--factor", "1.1"]
    command += ["--machine", MACHINE, base, head]
    done = subprocess.run(command, cwd=runs.project, capture_output=True, text=True, check=True)
    return {case: mark for mark, _, case in _cells(done.stdout)}


@pytest.mark.parametrize("pair", [("c1", "c2"), ("c1", "c3")], ids=["unchanged", "slower"])
def test_marks_are_those_of_asv_compare(runs, frame, pair):
    base, head = (getattr(runs, name) for name in pair)
    table = _table(frame, base, head, 1.1)
    asv = _asv_compare_marks(runs, base, head)
    # asv leaves a row without a change blank; it is ~ here when both sides were measured.
    expected = [
        "~" if not asv[row.case] and (row.base_status, row.head_status) == ("ok", "ok")
        else asv[row.case]
        for row in table.itertuples()
    ]  # fmt: skip
    assert table["mark"].tolist() == expected
    ok = table[(table["base_status"] == "ok") & (table["head_status"] == "ok")]
    assert ok["significant"].notna().any()  # asv's Mann-Whitney test on the samples
    if pair == ("c1", "c2"):
        # c2 ran only the cached call, so that is all both sides hold.
        assert set(table["benchmark"]) == {CACHED} and len(ok) == 10
        assert ok["significant"].notna().all()
        skipped = table[table["base_status"] == "skipped"]
        assert len(skipped) == 10 and (skipped["mark"] == "").all()
        assert skipped["ratio"].isna().all()


def test_slower_benchmark_fails(runs, frame, capsys):
    assert _compare(runs.results, runs.c1, runs.c3) == 1
    out = capsys.readouterr().out
    assert "combinations are present on one side only" in out
    # What fails is the row that ran on c1 and fails on c3, not the slower times.
    assert out.splitlines()[-1] == "fails: 1 row that ran on BASE failed on HEAD"
    table = compare.compare_frames(
        results.select(frame, commit=runs.c1), results.select(frame, commit=runs.c3), 1.1
    )
    slowed = table[(table["benchmark"] == CACHED) & (table["base_status"] == "ok")]
    # The fixture does SLOWDOWN times the work, more than load on either side can
    # take back: every row comes out slower.
    assert (slowed["mark"] == "+").all() and slowed["significant"].all()
    assert (slowed["ratio"] > 1.1).all()
    assert 100000 not in set(table["size"].dropna())  # only in HEAD's grid
    failed = table[(table["benchmark"] == MEMORY) & (table["head_status"] == "failed")]
    assert failed["mark"].tolist() == ["!"] and failed["strategy"].tolist() == ["pytree_class"]
    # Worst first: every regression comes before anything else.
    marks = table["mark"].tolist()
    regressions = sum(m in ("+", "!") for m in marks)
    assert set(marks[:regressions]) <= {"+", "!"}
    ordered = table[table["mark"] == "+"]["ratio"].tolist()
    assert ordered == sorted(ordered, reverse=True)


def _table(frame, base, head, factor, noise=None):
    return compare.compare_frames(
        results.select(frame, commit=base), results.select(frame, commit=head), factor, noise
    )


def test_only_changed_lists_exactly_the_changes(runs, frame, capsys):
    assert _compare(runs.results, runs.c1, runs.c3, only_changed=True) == 1
    shown = _rows(capsys.readouterr().out)
    table = _table(frame, runs.c1, runs.c3, 1.1)
    changed = table[table["mark"].isin(["+", "-", "!"])]
    assert shown == list(zip(changed["mark"], changed["case"], strict=True))
    # Among them, every cached call on cpu (SLOWDOWN times the work) and the newly failing peakmem.
    cached = table[(table["benchmark"] == CACHED) & (table["device"] == "cpu")]
    assert len(cached) == 10 and set(cached["mark"]) == {"+"}
    failed = (MEMORY, "pytree_class", "cpu")
    assert table.set_index(["benchmark", "strategy", "device"]).loc[failed, "mark"] == "!"
    # Unchanged and n/a rows are left out; the full table has them.
    assert len(shown) < len(table) and {"~", ""} <= set(table["mark"])
    assert _compare(runs.results, runs.c1, runs.c3) == 1
    assert len(_rows(capsys.readouterr().out)) == len(table)


def test_factor_above_any_change_leaves_only_the_failure(runs, frame):
    # No timing moves by a million times (a single quick sample that another process
    # interrupted can move by a hundred): every row measured on both sides is ~.
    table = _table(frame, runs.c1, runs.c3, 1e6)
    statuses = list(zip(table["base_status"], table["head_status"], strict=True))
    expected = [
        "~" if s == ("ok", "ok") else "!" if s == ("ok", "failed") else "" for s in statuses
    ]
    assert table["mark"].tolist() == expected
    assert set(statuses) == {("ok", "ok"), ("ok", "failed"), ("skipped", "skipped")}
    assert expected.count("!") == 1 and statuses.count(("ok", "ok")) > len(table) / 2


def _noise_file(tmp_path, rows: dict[str, float]):
    path = tmp_path / "noise.csv"
    pd.DataFrame(
        {
            "benchmark": [case.split("(")[0] for case in rows],
            "case": list(rows),
            "spread": list(rows.values()),
        }
    ).to_csv(path, index=False)
    return path


def test_noise_keeps_changes_within_it_unflagged(runs, frame, tmp_path, capsys):
    quiet = f"{CACHED}('eager', 10, 'cpu')"
    noisy = f"{CACHED}('bound_method_jit', 10, 'cpu')"
    # The noisy row's noise, 100 (10000%), is far above anything load makes of the
    # planted slowdown; the quiet row's 1% far below it.
    path = _noise_file(tmp_path, {quiet: 0.01, noisy: 100.0})
    plain = _table(frame, runs.c1, runs.c3, 1.1)
    judged = _table(frame, runs.c1, runs.c3, 1.1, Noise.load(path))
    assert judged["case"].tolist() != plain["case"].tolist()  # re-sorted: ~ after +
    judged = judged.set_index("case").loc[plain["case"]]
    p95 = float(np.percentile([0.01, 100.0], 95))
    for row, asv_mark in zip(judged.itertuples(), plain["mark"], strict=True):
        case = row.Index
        noise, source = (
            (0.01, "row") if case == quiet
            else (100.0, "row") if case == noisy
            else (p95, "p95") if row.benchmark == CACHED
            else (math.nan, "")
        )  # fmt: skip
        assert row.noise_from == source and (row.noise == pytest.approx(noise, nan_ok=True))
        within = asv_mark in ("+", "-") and abs(row.ratio - 1) <= noise
        assert row.within_noise == within
        assert row.mark == ("~" if within else asv_mark), case
    # The planted slowdown is within the noisy row's noise and the cached call's p95,
    # not within the quiet row's 1%: that row alone stays a regression among them.
    cached = judged[(judged["benchmark"] == CACHED) & (judged["device"] == "cpu")]
    assert cached.loc[quiet, "mark"] == "+" and cached.loc[noisy, "mark"] == "~"
    assert (cached.drop(quiet)["mark"] == "~").all() and cached["within_noise"].sum() == 9
    # The run says so, and from which file; the failure still fails.
    assert _compare(runs.results, runs.c1, runs.c3, noise=path) == 1
    out = capsys.readouterr().out
    assert f"noise from {path}: a change within its measured noise is marked ~" in out
    assert "2 by their own noise, 8 by their benchmark's p95" in out
    assert "9 marks of asv's rule changed to ~" in out and "noise applied)" in out
    assert "| Noise " in out and "| 10000.0% " in out
    shown = dict((case, mark) for mark, case in _rows(out))
    assert shown[quiet] == "+" and shown[noisy] == "~"


def test_a_row_of_the_noise_file_is_its_benchmarks_p95_too(runs, frame, tmp_path):
    path = _noise_file(tmp_path, {f"{CACHED}('eager', 10, 'cpu')": 0.01})
    judged = _table(frame, runs.c1, runs.c3, 1.1, Noise.load(path))
    plain = _table(frame, runs.c1, runs.c3, 1.1)
    assert judged["mark"].tolist() == plain["mark"].tolist()
    assert not judged["within_noise"].any()


def test_noise_from_validate_runs_of_unchanged_code(runs, frame, tmp_path):
    # Validate's noise table of c1 and c2 (unchanged code), written as validate writes it.
    table = stats.noise_table(
        results.select(frame, commit=runs.c1), results.select(frame, commit=runs.c2), 1.1
    )
    assert set(table["benchmark"]) == {CACHED} and len(table) == 10
    path = tmp_path / "noise.csv"
    table.to_csv(path, index=False)
    noise = Noise.load(path)
    assert noise.rows == dict(zip(table["case"], table["spread"], strict=True))
    assert noise.benchmarks == {CACHED: pytest.approx(stats.spread(table["ratio"]))}
    judged = _table(frame, runs.c1, runs.c2, 1.1, noise)
    assert not (judged["mark"] == "+").any()
    ok = judged[judged["base_status"] == "ok"]
    assert (ok["noise_from"] == "row").all()


def test_bad_noise_file(runs, tmp_path, capsys):
    missing = tmp_path / "none.csv"
    with pytest.raises(JitbenchError, match=r"cannot read noise file '.*none.csv'"):
        _compare(runs.results, runs.c1, runs.c3, noise=missing)
    wrong = tmp_path / "wrong.csv"
    pd.DataFrame({"benchmark": [CACHED], "ratio": [1.0]}).to_csv(wrong, index=False)
    with pytest.raises(
        JitbenchError, match=re.escape("lacks column(s) case, spread; expected the noise.csv")
    ):
        _compare(runs.results, runs.c1, runs.c3, noise=wrong)
    assert capsys.readouterr().out == ""  # checked before anything is printed


def _scaled_copy(runs, tmp_path, rename, scale):
    """A results copy with c1's file duplicated under another name, its cached call scaled."""
    copy = copy_results(runs, tmp_path)
    source = next((copy / MACHINE).glob(f"{runs.c1[:8]}-*.json"))
    data = json.loads(source.read_text())
    row = data["results"][CACHED]
    columns = data["result_columns"]
    for name in ("result", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75"):
        i = columns.index(name)
        row[i] = [None if v is None else v * scale for v in row[i]]
    i = columns.index("samples")
    row[i] = [None if s is None else [v * scale for v in s] for s in row[i]]
    return copy, rename(copy, source, data)


def test_by_env(runs, tmp_path, capsys):
    def rename(copy, source, data):
        data["env_name"] = "virtualenv-py3.11-jax0.5.0"
        (source.parent / f"{runs.c1[:8]}-{data['env_name']}.json").write_text(json.dumps(data))
        return data["env_name"]

    copy, slow_env = _scaled_copy(runs, tmp_path, rename, SLOWDOWN)
    base_env = results.load(copy, commit=runs.c1)["env"].iloc[0]
    # The cached call got SLOWDOWN times slower: marked, and shown, but a time never fails.
    assert _compare(copy, base_env, slow_env, by="env") == 0
    out = capsys.readouterr().out
    assert ("+", CACHED) in {(mark, case.split("(")[0]) for mark, case in _rows(out)}
    assert _compare(copy, base_env, base_env, by="env", commit=runs.c1[:6]) == 0
    with pytest.raises(JitbenchError, match="no results for env 'jax9'"):
        _compare(copy, base_env, "jax9", by="env")
    capsys.readouterr()


def test_by_machine(runs, tmp_path, capsys):
    def rename(copy, source, data):
        other = copy / "otherbox"
        other.mkdir()
        machine = json.loads((copy / MACHINE / "machine.json").read_text())
        (other / "machine.json").write_text(json.dumps({**machine, "machine": "otherbox"}))
        data["params"]["machine"] = "otherbox"
        (other / source.name).write_text(json.dumps(data))
        return "otherbox"

    copy, other = _scaled_copy(runs, tmp_path, rename, SLOWDOWN)
    # Times are shown, never judged: SLOWDOWN times slower, marked +, and exit 0.
    assert _compare(copy, MACHINE, other, by="machine", commit=runs.c1) == 0
    out = capsys.readouterr().out
    assert f"HEAD otherbox {runs.c1[:8]}" in out
    slowed = [mark for mark, case in _rows(out) if case.startswith(CACHED + "(")]
    assert "+" in slowed and set(slowed) <= {"+", ""}
    assert out.splitlines()[-1] == f"passes: {compare.NOTHING_FAILS}"
    with pytest.raises(JitbenchError, match="--machine cannot be combined"):
        _compare(copy, MACHINE, other, by="machine", machine=MACHINE)


def test_unknown_sides_and_bad_factor(runs, tmp_path):
    with pytest.raises(JitbenchError, match=r"commit 'deadbeef'.*available"):
        _compare(runs.results, runs.c1, "deadbeef")
    with pytest.raises(JitbenchError, match=r"machine 'nobox'.*testbox"):
        _compare(runs.results, "nobox", MACHINE, by="machine")
    with pytest.raises(JitbenchError, match="--factor"):
        _compare(runs.results, runs.c1, runs.c3, factor=0)
    with pytest.raises(JitbenchError, match="unknown comparison 'branch'; valid: commit, env"):
        _compare(runs.results, runs.c1, runs.c3, by="branch")
    empty = tmp_path / "empty"
    shutil.copytree(runs.results, empty, ignore=shutil.ignore_patterns("*-*.json"))
    with pytest.raises(JitbenchError, match="no asv results"):
        _compare(empty, runs.c1, runs.c3)


NOISE_HEADER = "benchmark,case,spread\n"


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            f"{CACHED},{CACHED}(1),0.1\n{CACHED},{CACHED}(2),lots\n",
            "line 3: spread 'lots' is not a number >= 0 such as 0.05 (|ratio - 1| of two runs of "
            "unchanged code)",
        ),
        (
            f"{CACHED},{CACHED}(1),-0.5\n",
            "line 2: spread -0.5 is not a number >= 0 such as 0.05 (|ratio - 1| of two runs of "
            "unchanged code)",
        ),
        (
            f"{CACHED},{CACHED}(1),inf\n",
            "line 2: spread inf is not a number >= 0 such as 0.05 (|ratio - 1| of two runs of "
            "unchanged code)",
        ),
        (
            f"{CACHED},{CACHED}(1),0.1\n{CACHED},{CACHED}(2),0.2\n{CACHED},{CACHED}(1),0.9\n",
            f"has case '{CACHED}(1)' on lines 2, 4; expected one row per case, as jitbench "
            "validate writes it",
        ),
        (
            f"{CACHED},{CACHED}(1),0.1\n\n{CACHED},{CACHED}(2),lots\n",
            "line 4: spread 'lots' is not a number >= 0 such as 0.05 (|ratio - 1| of two runs of "
            "unchanged code)",
        ),
    ],
    ids=["not-a-number", "negative", "infinite", "duplicate", "after-a-blank-line"],
)
def test_bad_noise_rows_name_file_line_and_value(tmp_path, rows, message):
    path = tmp_path / "noise.csv"
    path.write_text(NOISE_HEADER + rows)
    with pytest.raises(JitbenchError) as error:
        Noise.load(path)
    assert str(error.value) == f"noise file '{path}' {message}"


def test_a_row_without_spread_carries_no_noise(tmp_path):
    path = tmp_path / "noise.csv"
    path.write_text(NOISE_HEADER + f"{CACHED},{CACHED}(1),0.25\n{CACHED},{CACHED}(2),\n")
    noise = Noise.load(path)
    assert (noise.rows, noise.benchmarks) == ({f"{CACHED}(1)": 0.25}, {CACHED: 0.25})


@pytest.mark.parametrize("factor", [math.inf, math.nan, 0.0])
def test_factor_must_be_finite_and_positive(tmp_path, factor, capsys):
    # Checked before the results are read: an infinite factor would pass every regression.
    with pytest.raises(JitbenchError) as error:
        _compare(tmp_path / "absent", "a", "b", factor=factor)
    assert str(error.value) == f"--factor must be a finite number > 0 such as 1.1, got {factor}"
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("module", "name"),
    [("asv._stats", "is_different"), ("asv.commands.compare", "_is_result_better")],
)
def test_a_private_asv_function_that_moved_is_one_line(runs, monkeypatch, capsys, module, name):
    # A later asv without the function: compare names it and the release that has it.
    monkeypatch.delattr(importlib.import_module(module), name)
    with pytest.raises(JitbenchError) as error:
        _compare(runs.results, runs.c1, runs.c3)
    installed = importlib.metadata.version("asv")
    assert str(error.value) == (
        f"asv 0.6.6 provides {module}.{name}; the installed asv {installed} lacks it: "
        "install asv==0.6.6"
    )
    assert capsys.readouterr().out == ""


def test_a_private_asv_module_that_moved_is_one_line():
    with pytest.raises(JitbenchError) as error:
        asvcompat.private("asv._no_such_module", "is_different")
    assert str(error.value) == (
        f"asv 0.6.6 provides asv._no_such_module.is_different; the installed asv "
        f"{importlib.metadata.version('asv')} lacks it: install asv==0.6.6"
    )


# Planted changes of each strategy's count per cached call (fixture strategies).
COUNT_CHANGES = {
    "eager": 1.02,
    "bound_method_jit": 0.98,
    "static_self_id_hash": 1.005,
    "pytree_class": 1.0,
    "jit_per_call": 1.011,
}


def _counted_copy(runs, tmp_path):
    """c1's results filed as c2 (every time identical), its counts per cached call changed."""
    copy = copy_results(runs, tmp_path)
    source = next((copy / MACHINE).glob(f"{runs.c1[:8]}-*.json"))
    data = json.loads(source.read_text())
    name = catalog.INSTRUCTIONS["call"]
    columns, row = data["result_columns"], data["results"][name]
    strategies = row[columns.index("params")][0]
    values = row[columns.index("result")]
    scales = [COUNT_CHANGES[ast.literal_eval(s)] for s in strategies]
    row[columns.index("result")] = [v * k for v, k in zip(values, scales, strict=True)]
    data["commit_hash"] = runs.c2
    head = next((copy / MACHINE).glob(f"{runs.c2[:8]}-*.json"))
    head.write_text(json.dumps(data))
    return copy


def test_counts_are_judged_by_the_tolerance_not_by_samples(runs, tmp_path, capsys):
    """A count has no samples: beyond --count-tolerance (default 1%) either way is a change,
    whatever --factor is; within it, or unchanged, it is not."""
    copy = _counted_copy(runs, tmp_path)
    assert _compare(copy, runs.c1[:8], runs.c2[:8], factor=1.5) == 1
    out = capsys.readouterr().out
    counted = {
        case: (mark, ratio)
        for mark, ratio, case in _cells(out)
        if case.startswith(catalog.INSTRUCTIONS["call"] + "(")
    }
    marks = {case.split("'")[1]: mark for case, (mark, _) in counted.items()}
    assert marks == {
        "eager": "+",
        "bound_method_jit": "-",
        "static_self_id_hash": "~",
        "pytree_class": "~",
        "jit_per_call": "+",
    }
    assert "instruction counts by --count-tolerance 0.01" in out
    # Every other row is c1's own result: only the planted counts changed.
    others = [mark for mark, _, case in _cells(out) if not case.startswith("bench_instr")]
    assert set(others) <= {"~", ""}
    assert _compare(copy, runs.c1[:8], runs.c2[:8], count_tolerance=0.025) == 0
    out = capsys.readouterr().out
    assert "+" not in {mark for mark, _, _ in _cells(out)}


def test_a_bad_count_tolerance_is_refused(runs):
    with pytest.raises(JitbenchError, match="--count-tolerance must be a finite fraction"):
        _compare(runs.results, runs.c1[:8], runs.c2[:8], count_tolerance=math.inf)


def _c1_as_c2(runs, tmp_path, edit):
    """A results copy with c1's file filed as c2 after ``edit(data, is_c2)``, and c1's own
    file after ``edit(data, False)``: every time identical, what the edit plants aside."""
    copy = copy_results(runs, tmp_path)
    source = next((copy / MACHINE).glob(f"{runs.c1[:8]}-*.json"))
    data = json.loads(source.read_text())
    edit(data, False)
    source.write_text(json.dumps(data))
    data = json.loads(source.read_text())
    edit(data, True)
    data["commit_hash"] = runs.c2
    next((copy / MACHINE).glob(f"{runs.c2[:8]}-*.json")).write_text(json.dumps(data))
    return copy


def _pinned(jax: str, flax: str):
    def edit(data, is_c2):
        pins = {"jax": jax, "jaxlib": jax, "flax": flax} if is_c2 else dict(PINS)
        data["requirements"] = {**data["requirements"], **pins}
        data["params"] = {**data["params"], **pins}

    return edit


PINS = {"jax": "0.4.30", "jaxlib": "0.4.30", "flax": "0.8.0"}


def test_runs_of_different_jax_releases_are_refused_unless_asked(runs, tmp_path, capsys):
    copy = _c1_as_c2(runs, tmp_path, _pinned("0.4.31", "0.8.1"))
    differ = "jax 0.4.30 vs 0.4.31, jaxlib 0.4.30 vs 0.4.31, flax 0.8.0 vs 0.8.1"
    with pytest.raises(JitbenchError, match=re.escape(f"different releases ({differ})")):
        _compare(copy, runs.c1[:8], runs.c2[:8])
    assert capsys.readouterr().out == ""  # refused before anything is printed
    assert _compare(copy, runs.c1[:8], runs.c2[:8], any_jax=True) == 0
    out = capsys.readouterr().out
    assert f"BASE {MACHINE} {runs.c1[:8]}" in out and "(jax 0.4.30)" in out
    assert "(jax 0.4.31)" in out
    command = [sys.executable, "-m", "jitbench", "compare", runs.c1[:8], runs.c2[:8]]
    done = subprocess.run([*command, "--results", str(copy)], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and differ in done.stderr and "--any-jax" in done.stderr


def test_another_release_of_a_package_other_than_jax_is_compared(runs, tmp_path, capsys):
    copy = _c1_as_c2(runs, tmp_path, _pinned("0.4.30", "0.8.1"))
    assert _compare(copy, runs.c1[:8], runs.c2[:8]) == 0
    capsys.readouterr()


def test_a_hazard_new_at_head_is_named_and_fails(runs, tmp_path, capsys):
    def plant(data, is_c2):
        if not is_c2:
            return
        # pytree_class on cpu recompiles at every call (4 recompiles, the repeated call's
        # among them); bound_method_jit no longer leaks.
        _set(data, catalog.HAZARDS["recompiles"], ("'pytree_class'", "'cpu'"), 4.0)
        _set(data, catalog.HAZARDS["repeat_call_compiles"], ("'pytree_class'", "'cpu'"), 1.0)
        _set(data, catalog.HAZARDS["leaked_instances"], ("'bound_method_jit'", "'cpu'"), 0.0)

    copy = _c1_as_c2(runs, tmp_path, plant)
    assert _compare(copy, runs.c1[:8], runs.c2[:8], factor=1e6) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "fails: 1 new hazard at HEAD: recompiles every call"
    repeat = catalog.HAZARDS["repeat_call_compiles"]
    # The part is named, not also its whole (the same hazard).
    assert [line for line in lines if line.startswith(("new hazard", "hazard gone"))] == [
        f"new hazard at HEAD: recompiles every call in pytree_class on cpu ({repeat} 0 -> 1); "
        "jitbench audit --strategy pytree_class --explain says where",
        "hazard gone at HEAD: leaks in bound_method_jit on cpu "
        f"({catalog.HAZARDS['leaked_instances']} 1 -> 0)",
    ]
    # The other way round, the leak is the new hazard.
    assert _compare(copy, runs.c2[:8], runs.c1[:8], factor=1e6) == 1
    out = capsys.readouterr().out
    assert "new hazard at HEAD: leaks in bound_method_jit on cpu" in out
    assert "hazard gone at HEAD: recompiles every call in pytree_class on cpu" in out


def _set(data: dict, benchmark: str, combo: tuple[str, ...], value: float) -> None:
    """Set one parameter combination's value in an asv results file's flat value list."""
    entry = data["results"][benchmark]
    column = data["result_columns"].index
    combos = list(itertools.product(*entry[column("params")]))
    entry[column("result")][combos.index(combo)] = value


def test_the_summary_holds_the_counts_the_hazard_and_the_times(runs, tmp_path, capsys):
    """--summary appends Markdown (a CI job's summary): the verdict, every count with its
    change, each new hazard with the command that says where, then the times unmarked."""

    def plant(data, is_c2):
        if is_c2:
            _set(data, catalog.HAZARDS["recompiles"], ("'pytree_class'", "'cpu'"), 4.0)
            _set(data, catalog.HAZARDS["repeat_call_compiles"], ("'pytree_class'", "'cpu'"), 1.0)
            name = catalog.INSTRUCTIONS["call"]
            column = data["result_columns"].index("result")
            data["results"][name][column] = [v * 1.02 for v in data["results"][name][column]]

    copy = _c1_as_c2(runs, tmp_path, plant)
    summary = tmp_path / "summary.md"
    summary.write_text("an earlier step's lines\n")
    assert _compare(copy, runs.c1[:8], runs.c2[:8], summary=summary) == 1
    printed = capsys.readouterr().out
    text = summary.read_text()
    assert text.startswith(
        f"an earlier step's lines\n### jitbench: HEAD `{runs.c2[:8]}` against BASE "
        f"`{runs.c1[:8]}`: fails\n"
    )
    verdict = printed.splitlines()[-1].removeprefix("fails: ")
    assert f"**{verdict}**. Instruction counts are judged to 1%" in text
    assert "instruction counts rose by over 1%" in verdict and "recompiles every call" in verdict
    counts, timed = text.split("shown, never judged</summary>")
    counted = [line for line in counts.splitlines() if catalog.INSTRUCTIONS["call"] in line]
    assert counted and all(line.startswith("| +  |") and "+2.00%" in line for line in counted)
    assert (
        "New hazard: **recompiles every call** in `pytree_class` on cpu "
        "(track_repeat_call_compiles 0 -> 1). `jitbench audit --strategy pytree_class --explain` "
        "says where."
    ) in counts
    assert CACHED in timed and not re.search(r"^\| [+!~-] ", timed, re.M)


def test_the_summary_says_why_a_count_is_not_measured(runs, tmp_path):
    """A count n/a at HEAD is explained under the counts: by the call compiling on every call
    there (the counting refuses it), or else by what leaves counts out."""

    def plant(data, is_c2):
        if is_c2:
            _set(data, catalog.HAZARDS["repeat_call_compiles"], ("'pytree_class'", "'cpu'"), 1.0)
            column = data["result_columns"].index
            for name in catalog.INSTRUCTIONS.values():  # every size of the two strategies
                entry = data["results"][name]
                combos = list(itertools.product(*entry[column("params")]))
                for index, combo in enumerate(combos):
                    if combo[0] in ("'pytree_class'", "'eager'"):
                        entry[column("result")][index] = math.nan

    copy = _c1_as_c2(runs, tmp_path, plant)
    summary = tmp_path / "summary.md"
    assert _compare(copy, runs.c1[:8], runs.c2[:8], summary=summary) == 1
    counts = summary.read_text().split("shown, never judged</summary>")[0]
    assert (
        "Not counted at HEAD in `pytree_class` on cpu: it compiles on every call there "
        "(track_repeat_call_compiles), so a count would be a compile's."
    ) in counts
    assert ("Not counted at HEAD in `eager` on cpu: no count was recorded there") in counts
    assert "Not counted at BASE" not in counts


def test_a_gate_without_counts_is_refused(runs, tmp_path, capsys):
    """--require-counts: results whose count rows are n/a on both sides would let the gate
    judge hazards alone; one line, exit 2, nothing printed."""

    def drop(data, is_c2):
        column = data["result_columns"].index("result")
        for name, row in data["results"].items():
            if name.endswith("_instructions"):  # every count benchmark's name
                row[column] = [math.nan] * len(row[column])

    copy = _c1_as_c2(runs, tmp_path, drop)
    with pytest.raises(JitbenchError, match="no instruction count was measured on either side"):
        _compare(copy, runs.c1[:8], runs.c2[:8], require_counts=True)
    assert capsys.readouterr().out == ""
    assert _compare(copy, runs.c1[:8], runs.c2[:8]) == 0
    capsys.readouterr()
