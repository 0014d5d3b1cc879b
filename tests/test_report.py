"""``jitbench report`` on results of real asv runs (see test_results.asv_runs)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import re

import pandas as pd
import pytest
from test_results import CACHED, MACHINE, PER_CALL, STRATEGIES, asv_runs, copy_results

from jitbench import report
from jitbench.cli import main
from jitbench.errors import JitbenchError

pytestmark = pytest.mark.slow

COLD = "bench_cold.ColdCall.time_first_call"
STALE = "static_self_id_hash"


def _args(results_dir, out, **options) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    report.add_arguments(parser)
    argv = ["--results", str(results_dir), "--out", str(out)]
    for name, value in options.items():
        argv += [f"--{name.replace('_', '-')}"] + ([] if value is True else [str(value)])
    return parser.parse_args(argv)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return asv_runs(tmp_path_factory)


@pytest.fixture(scope="module")
def built(runs, tmp_path_factory):
    """The default report (newest commit) with its stdout and stderr."""
    out = tmp_path_factory.mktemp("report") / "reports"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = report.run(_args(runs.results, out))
    return out, code, stdout.getvalue(), stderr.getvalue()


def _summary(out, size):
    return pd.read_csv(out / "tables" / f"summary-cpu-size{size}.csv").set_index("strategy")


def test_progress_and_output_path(built):
    out, code, stdout, stderr = built
    assert code == 0
    assert stdout.strip() == str(out / "index.html")
    steps = re.findall(r"^\[(\d+)/(\d+)\] (.+)$", stderr, flags=re.M)
    assert [int(n) for n, _, _ in steps] == list(range(1, len(steps) + 1))
    assert {int(total) for _, total, _ in steps} == {len(steps)}
    assert any(label == "plots: cached call vs size" for _, _, label in steps)


def test_every_listed_file_exists(built):
    out = built[0]
    index = (out / "index.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)]+)\)", index)
    assert links and all((out / link).is_file() for link in links)
    for name in (
        "tables/summary-cpu-size10.csv",
        "tables/summary-cpu-size100000.csv",
        "tables/after-change-cpu-size1000.csv",
        "tables/summary.csv",
        "tables/break-even-cpu.csv",
        "tables/hazards.csv",
        "tables/dispatch-scaling.csv",
        "tables/compile-scaling.csv",
        "plots/cached-call-vs-size-cpu.png",
        "plots/first-call-vs-size-cpu.png",
        "plots/stages-cpu-size100000.png",
        "plots/dispatch-vs-width.png",
        "plots/compile-vs-ops.png",
    ):
        assert f"]({name})" in index, name
        if name.endswith(".png"):
            assert (out / name).read_bytes().startswith(b"\x89PNG"), name
        else:
            assert len(pd.read_csv(out / name)) > 0, name
    page = (out / "index.html").read_text(encoding="utf-8")
    assert page.count("data:image/png;base64,") == index.count("![")
    assert "<table" in page and 'href="tables/summary.csv"' in page
    assert not list(out.glob("**/gpu*")) and "gpu" not in index.split("## Notes")[0]


def test_newest_commit_is_used_and_named(runs, built):
    index = (built[0] / "index.md").read_text(encoding="utf-8")
    assert f"commit `{runs.c3[:8]}`" in index
    assert runs.c1[:8] in index and runs.c2[:8] in index and "--commit" in index


def test_summary_numbers_equal_asv_values(runs, built):
    result = runs.asv_result(runs.c3)
    out = built[0]
    for size in (10, 1000, 100000):
        summary = _summary(out, size)
        assert list(summary.index) == STRATEGIES
        for benchmark, column in ((CACHED, "cached_call_s"), (COLD, "first_call_s")):
            params = result.get_result_params(benchmark)
            values = result.get_result_value(benchmark, params)
            for strategy in STRATEGIES:
                index = params[0].index(repr(strategy)) * len(params[1]) * len(params[2])
                index += params[1].index(str(size)) * len(params[2]) + params[2].index("'cpu'")
                assert summary.loc[strategy, column] == values[index], (strategy, size)
        eager = summary.loc["eager", "cached_call_s"]
        assert summary["cached_x_eager"].to_dict() == pytest.approx(
            (summary["cached_call_s"] / eager).to_dict()
        )


def test_stale_strategy_is_flagged_and_never_the_winner(built):
    out = built[0]
    for size in (10, 1000, 100000):
        summary = _summary(out, size)
        # The fixture makes the stale strategy the cheapest per call...
        assert summary["cached_call_s"].idxmin() == STALE
        assert (
            summary.loc[STALE, "hazard"].startswith("⚠") and "stale" in summary.loc[STALE, "hazard"]
        )
        # ...but the fastest correct one is the next cheapest.
        assert summary.index[summary["fastest_correct"]].tolist() == ["bound_method_jit"]
        assert summary.loc["bound_method_jit", "cached_x_best"] == 1
        assert summary.loc[STALE, "cached_x_best"] < 1
    index = (out / "index.md").read_text(encoding="utf-8")
    rows = [line for line in index.splitlines() if line.startswith("|") and STALE in line]
    assert rows and all(f"{STALE} ⚠" in row for row in rows)
    hazards = pd.read_csv(out / "tables" / "hazards.csv").set_index("strategy")
    assert hazards.loc[STALE, "stale_results"] == 1
    assert hazards.loc["jit_per_call", "hazard"] == "⚠ recompiles every call"
    assert list(hazards["device"].unique()) == ["cpu"]


def test_break_even(built):
    summary = _summary(built[0], 1000)
    eager = summary.loc["eager", "cached_call_s"]
    assert summary.loc["eager", "break_even_calls"] == "baseline"
    assert summary.loc["jit_per_call", "break_even_calls"] == "never"
    row = summary.loc["pytree_class"]
    expected = math.ceil(row["first_call_s"] / (eager - row["cached_call_s"]))
    assert int(row["break_even_calls"]) == expected
    wide = pd.read_csv(built[0] / "tables" / "break-even-cpu.csv").set_index("strategy")
    assert str(wide.loc["pytree_class", "size 1000"]) == str(expected)


def test_scaling_fits_recover_the_fixture_costs(built):
    fits = pd.read_csv(built[0] / "tables" / "compile-scaling.csv").set_index("strategy")
    for strategy in STRATEGIES[1:]:
        factor = PER_CALL[strategy]
        assert fits.loc[strategy, "trace_per_op_s"] == pytest.approx(factor * 2e-5)
        assert fits.loc[strategy, "compile_per_op_s"] == pytest.approx(factor * 1e-4)
        assert fits.loc[strategy, "trace_intercept_s"] == pytest.approx(factor * 1e-3)
        assert 0 < fits.loc[strategy, "trace_loglog_slope"] < 1
    dispatch = pd.read_csv(built[0] / "tables" / "dispatch-scaling.csv").set_index("strategy")
    assert (dispatch["dispatch_per_leaf_s"] > 0).all()
    assert dispatch["dispatch_points"].tolist() == [4] * len(STRATEGIES)


def test_absent_benchmarks_are_noted_not_fatal(runs, tmp_path):
    # c2 holds only the cached call: most tables and plots have no source.
    out = tmp_path / "reports"
    assert report.run(_args(runs.results, out, commit=runs.c2[:8])) == 0
    index = (out / "index.md").read_text(encoding="utf-8")
    assert "plots/cached-call-vs-size-cpu.png" in index
    assert "hazard table omitted: no results for bench_hazards.Hazards" in index
    assert f"plot Cold first call vs size omitted: no results for {COLD}" in index
    assert not (out / "plots" / "stages-cpu-size1000.png").exists()
    summary = pd.read_csv(out / "tables" / "summary-cpu-size10.csv")
    assert "first_call_s" not in summary and "cached_call_s" in summary


def test_several_envs_get_a_section_each(runs, tmp_path):
    copy = copy_results(runs, tmp_path)
    source = next((copy / MACHINE).glob(f"{runs.c3[:8]}-*.json"))
    data = json.loads(source.read_text())
    data["env_name"] = "virtualenv-py3.11-jax0.4.30"
    (source.parent / f"{runs.c3[:8]}-virtualenv-py3.11-jax0.4.30.json").write_text(json.dumps(data))
    out = tmp_path / "reports"
    assert report.run(_args(copy, out)) == 0
    index = (out / "index.md").read_text(encoding="utf-8")
    assert "## testbox / virtualenv-py3.11-jax0.4.30" in index and "jax 0.4.30" in index
    links = re.findall(r"\]\(([^)]+)\)", index)
    assert len({link.split("/")[0] for link in links}) == 2
    assert all((out / link).is_file() for link in links)


def test_bad_input_writes_nothing(runs, tmp_path, capsys):
    out = tmp_path / "reports"
    with pytest.raises(JitbenchError, match="machine 'nobox'"):
        report.run(_args(runs.results, out, machine="nobox"))
    with pytest.raises(JitbenchError, match="inside the results dir"):
        report.run(_args(runs.results, runs.results / "reports"))
    assert not out.exists() and not (runs.results / "reports").exists()
    argv = ["report", "--results", str(runs.results), "--out", str(out), "--commit", "abc"]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("jitbench: error: no results for commit 'abc'")
    assert not out.exists()
