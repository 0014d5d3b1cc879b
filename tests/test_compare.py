"""``jitbench compare`` on results of real asv runs (see test_results.asv_runs)."""

from __future__ import annotations

import argparse
import json
import shutil

import pytest
from test_results import CACHED, MACHINE, MEMORY, SLOWDOWN, copy_results

from jitbench import compare, results
from jitbench.errors import JitbenchError

pytestmark = pytest.mark.slow


def _args(results_dir, base, head, **options) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    compare.add_arguments(parser)
    argv = [base, head, "--results", str(results_dir)]
    for name, value in options.items():
        argv += [f"--{name.replace('_', '-')}"] + ([] if value is True else [str(value)])
    return parser.parse_args(argv)


def test_unchanged_code_passes(runs, capsys):
    assert compare.run(_args(runs.results, runs.c1[:8], runs.c2[:8])) == 0
    out = capsys.readouterr().out
    assert f"BASE {MACHINE} {runs.c1[:8]}" in out and f"HEAD {MACHINE} {runs.c2[:8]}" in out
    assert "| +" not in out


def test_unchanged_rows_are_judged_with_samples(runs, frame):
    base = results.select(frame, commit=runs.c1)
    head = results.select(frame, commit=runs.c2)
    table = compare.compare_frames(base, head, 1.1)
    # c2 ran only the cached call, so that is all both sides hold.
    assert set(table["benchmark"]) == {CACHED}
    ok = table[table["base_status"] == "ok"]
    assert len(ok) == 10 and set(ok["mark"]) <= {"~", "-"}
    assert ok["significant"].notna().all()  # asv's Mann-Whitney test on the samples
    skipped = table[table["base_status"] == "skipped"]
    assert len(skipped) == 10 and (skipped["mark"] == "").all() and skipped["ratio"].isna().all()


def test_slower_benchmark_fails(runs, frame, capsys):
    assert compare.run(_args(runs.results, runs.c1, runs.c3)) == 1
    out = capsys.readouterr().out
    assert "combinations are present on one side only" in out
    table = compare.compare_frames(
        results.select(frame, commit=runs.c1), results.select(frame, commit=runs.c3), 1.1
    )
    slowed = table[(table["benchmark"] == CACHED) & (table["base_status"] == "ok")]
    assert (slowed["mark"] == "+").all() and slowed["significant"].all()
    assert slowed["ratio"].between(SLOWDOWN * 0.7, SLOWDOWN * 2).all()
    assert 100000 not in set(table["size"].dropna())  # only in HEAD's grid
    failed = table[(table["benchmark"] == MEMORY) & (table["head_status"] == "failed")]
    assert failed["mark"].tolist() == ["!"] and failed["strategy"].tolist() == ["pytree_class"]
    # Worst first: every regression comes before anything else.
    marks = table["mark"].tolist()
    regressions = sum(m in ("+", "!") for m in marks)
    assert set(marks[:regressions]) <= {"+", "!"}
    ordered = table[table["mark"] == "+"]["ratio"].tolist()
    assert ordered == sorted(ordered, reverse=True)


def test_only_changed_hides_the_rest(runs, capsys):
    assert compare.run(_args(runs.results, runs.c1, runs.c3, only_changed=True)) == 1
    rows = [line for line in capsys.readouterr().out.splitlines() if "bench_" in line]
    assert rows and all(line.split("|")[1].strip() in ("+", "-", "!") for line in rows)


def test_factor_above_the_slowdown_passes_the_timings(runs, frame):
    table = compare.compare_frames(
        results.select(frame, commit=runs.c1), results.select(frame, commit=runs.c3), 100.0
    )
    assert not (table[table["benchmark"] == CACHED]["mark"] == "+").any()


def _slow_copy(runs, tmp_path, rename):
    """A results copy with c1's file duplicated under another name and a 3x slower cached call."""
    copy = copy_results(runs, tmp_path)
    source = next((copy / MACHINE).glob(f"{runs.c1[:8]}-*.json"))
    data = json.loads(source.read_text())
    row = data["results"][CACHED]
    columns = data["result_columns"]
    for name in ("result", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25", "stats_q_75"):
        i = columns.index(name)
        row[i] = [None if v is None else v * SLOWDOWN for v in row[i]]
    i = columns.index("samples")
    row[i] = [None if s is None else [v * SLOWDOWN for v in s] for s in row[i]]
    return copy, rename(copy, source, data)


def test_by_env(runs, tmp_path, capsys):
    def rename(copy, source, data):
        data["env_name"] = "virtualenv-py3.11-jax0.5.0"
        (source.parent / f"{runs.c1[:8]}-{data['env_name']}.json").write_text(json.dumps(data))
        return data["env_name"]

    copy, slow_env = _slow_copy(runs, tmp_path, rename)
    base_env = results.load(copy, commit=runs.c1)["env"].iloc[0]
    assert compare.run(_args(copy, base_env, slow_env, by="env")) == 1
    assert compare.run(_args(copy, base_env, base_env, by="env", commit=runs.c1[:6])) == 0
    with pytest.raises(JitbenchError, match="no results for env 'jax9'"):
        compare.run(_args(copy, base_env, "jax9", by="env"))
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

    copy, other = _slow_copy(runs, tmp_path, rename)
    assert compare.run(_args(copy, MACHINE, other, by="machine", commit=runs.c1)) == 1
    out = capsys.readouterr().out
    assert f"HEAD otherbox {runs.c1[:8]}" in out
    with pytest.raises(JitbenchError, match="--machine cannot be combined"):
        compare.run(_args(copy, MACHINE, other, by="machine", machine=MACHINE))


def test_unknown_sides_and_bad_factor(runs, tmp_path):
    with pytest.raises(JitbenchError, match=r"commit 'deadbeef'.*available"):
        compare.run(_args(runs.results, runs.c1, "deadbeef"))
    with pytest.raises(JitbenchError, match=r"machine 'nobox'.*testbox"):
        compare.run(_args(runs.results, "nobox", MACHINE, by="machine"))
    with pytest.raises(JitbenchError, match="--factor"):
        compare.run(_args(runs.results, runs.c1, runs.c3, factor=0))
    empty = tmp_path / "empty"
    shutil.copytree(runs.results, empty, ignore=shutil.ignore_patterns("*-*.json"))
    with pytest.raises(JitbenchError, match="no asv results"):
        compare.run(_args(empty, runs.c1, runs.c3))
