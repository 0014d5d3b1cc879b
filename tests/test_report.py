"""``jitbench report`` on results of real asv runs (see test_results.asv_runs)."""

from __future__ import annotations

import argparse
import ast
import contextlib
import io
import itertools
import json
import math
import re

import numpy as np
import pandas as pd
import pytest
from asv.results import Results
from test_results import CACHED, MACHINE, PER_CALL, STRATEGIES, copy_results

from jitbench import report
from jitbench.cli import main
from jitbench.errors import JitbenchError

pytestmark = pytest.mark.slow

COLD = "bench_cold.ColdCall.time_first_call"
DISPATCH = "bench_cached.CachedCall.time_cached_call_dispatch"
AFTER_CHANGE = "bench_change.AfterChange.time_call_after_change"
DISK_COLD = "bench_persistent.PersistentCache.timeraw_first_call_disk_cache_cold"
DISK_WARM = "bench_persistent.PersistentCache.timeraw_first_call_disk_cache_warm"
DISK_HITS = "bench_persistent.PersistentCache.track_persistent_cache_hits"
DEVICE_COUNT = "bench_scaling.DispatchVsDeviceCount.timeraw_dispatch"
STALE = "static_self_id_hash"
# The fixture's strategy whose first call finds nothing in a filled disk cache.
DISK_MISS = "pytree_class"
SIZES = (10, 1000, 100000)


def _args(results_dir, out, **options) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    report.add_arguments(parser)
    argv = ["--results", str(results_dir), "--out", str(out)]
    for name, value in options.items():
        argv += [f"--{name.replace('_', '-')}"] + ([] if value is True else [str(value)])
    return parser.parse_args(argv)


@pytest.fixture(scope="module")
def built(runs, tmp_path_factory):
    """The default report (newest commit) with its stdout and stderr."""
    out = tmp_path_factory.mktemp("report") / "reports"
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = report.run(_args(runs.results, out))
    return out, code, stdout.getvalue(), stderr.getvalue()


def _summary(out, size, device="cpu"):
    return pd.read_csv(out / "tables" / f"summary-{device}-size{size}.csv").set_index("strategy")


def _asv(result: Results, benchmark: str) -> dict[tuple[object, ...], float]:
    """asv's own values of a benchmark by parameter values (sizes as ints)."""
    params = result.get_result_params(benchmark)
    values = result.get_result_value(benchmark, params)
    keys = [tuple(ast.literal_eval(v) for v in combo) for combo in itertools.product(*params)]
    return dict(zip(keys, values, strict=True))


def test_progress_and_output_path(built):
    out, code, stdout, stderr = built
    assert code == 0
    assert stdout.strip() == str(out / "index.html")
    steps = re.findall(r"^\[(\d+)/(\d+)\] (.+)$", stderr, flags=re.M)
    assert [int(n) for n, _, _ in steps] == list(range(1, len(steps) + 1))
    assert {int(total) for _, total, _ in steps} == {len(steps)}
    labels = {label for _, _, label in steps}
    assert {
        "plots: cached call vs size",
        "tables: sharded vs unsharded",
        "plots: dispatch vs device count",
    } <= labels


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
        "tables/sharded-vs-unsharded-size10.csv",
        "tables/sharded-vs-unsharded-size100000.csv",
        "tables/dispatch-device-scaling.csv",
        "plots/cached-call-vs-size-cpu.png",
        "plots/cached-call-vs-size-cpu-sharded.png",
        "plots/first-call-vs-size-cpu.png",
        "plots/stages-cpu-size100000.png",
        "plots/dispatch-vs-width.png",
        "plots/compile-vs-ops.png",
        "plots/dispatch-vs-device-count.png",
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
    for size in SIZES:
        summary = _summary(out, size)
        assert list(summary.index) == STRATEGIES
        for benchmark, column in ((CACHED, "cached_call_s"), (COLD, "first_call_s")):
            values = _asv(result, benchmark)
            for strategy in STRATEGIES:
                expected = values[strategy, size, "cpu"]
                assert summary.loc[strategy, column] == expected, (strategy, size)
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
    hazards = pd.read_csv(out / "tables" / "hazards.csv").set_index(["device", "strategy"])
    for device in ("cpu", "cpu-sharded"):
        assert hazards.loc[(device, STALE), "stale_results"] == 1
        assert hazards.loc[(device, "jit_per_call"), "hazard"] == "⚠ recompiles every call"
    assert list(hazards.index.unique("device")) == ["cpu", "cpu-sharded"]


def test_disk_cache_columns_equal_asv_values(runs, built):
    result = runs.asv_result(runs.c3)
    cold, warm, hits = (_asv(result, b) for b in (DISK_COLD, DISK_WARM, DISK_HITS))
    for device in ("cpu", "cpu-sharded"):
        for size in SIZES:
            summary = _summary(built[0], size, device)
            for strategy in STRATEGIES:
                key = (strategy, size, device)
                row = summary.loc[strategy]
                assert row["first_call_warm_disk_s"] == warm[key]
                assert row["first_call_cold_disk_s"] == cold[key]
                assert row["disk_cache_saving_s"] == pytest.approx(cold[key] - warm[key])
                assert row["disk_cache_speedup"] == pytest.approx(cold[key] / warm[key])
                assert row["disk_cache_hits"] == hits[key]
                missed = "no disk-cache hit" in str(row["hazard"])
                assert missed == (strategy == DISK_MISS), key
    hazards = pd.read_csv(built[0] / "tables" / "hazards.csv").set_index(["device", "strategy"])
    misses = hazards["sizes_without_disk_hit"]
    assert misses.to_dict() == {
        (d, s): len(SIZES) if s == DISK_MISS else 0
        for d in ("cpu", "cpu-sharded")
        for s in STRATEGIES
    }
    assert hazards.loc[("cpu", DISK_MISS), "hazard"] == "⚠ no disk-cache hit"
    index = (built[0] / "index.md").read_text(encoding="utf-8")
    assert "first_call_warm_disk_s" in index and f"| {DISK_MISS} ⚠" in index


def test_sharded_ratios_equal_ratio_of_asv_values(runs, built):
    result = runs.asv_result(runs.c3)
    measures = {"first_call": _asv(result, COLD), "cached_call": _asv(result, CACHED)}
    measures["dispatch"] = _asv(result, DISPATCH)
    after = _asv(result, AFTER_CHANGE)
    for change in dict.fromkeys(key[3] for key in after):
        measures[f"after_{change}"] = {k[:3]: v for k, v in after.items() if k[3] == change}
    hazards = pd.read_csv(built[0] / "tables" / "hazards.csv").drop_duplicates("strategy")
    for size in SIZES:
        table = pd.read_csv(built[0] / "tables" / f"sharded-vs-unsharded-size{size}.csv")
        assert table["strategy"].tolist() == STRATEGIES
        assert table["hazard"].fillna("").tolist() == hazards["hazard"].fillna("").tolist()
        table = table.set_index("strategy")
        assert list(table.columns) == ["hazard"] + [f"cpu_{name}_x_unsharded" for name in measures]
        for name, values in measures.items():
            for strategy in STRATEGIES:
                expected = values[strategy, size, "cpu-sharded"] / values[strategy, size, "cpu"]
                got = table.loc[strategy, f"cpu_{name}_x_unsharded"]
                assert got == pytest.approx(expected, rel=1e-12), (name, strategy, size)


def test_dispatch_vs_device_count_fit(runs, built):
    values = _asv(runs.asv_result(runs.c3), DEVICE_COUNT)
    fits = pd.read_csv(built[0] / "tables" / "dispatch-device-scaling.csv")
    assert fits["strategy"].tolist() == STRATEGIES
    fits = fits.set_index("strategy")
    counts = [1, 2, 4, 8]
    for strategy in STRATEGIES:
        slope, intercept = np.polyfit(counts, [values[strategy, n] for n in counts], 1)
        assert fits.loc[strategy, "dispatch_per_device_s"] == pytest.approx(slope, rel=1e-9)
        assert fits.loc[strategy, "dispatch_intercept_s"] == pytest.approx(intercept, rel=1e-9)
        assert fits.loc[strategy, "dispatch_points"] == len(counts)
    assert fits.loc["jit_per_call", "hazard"] == "⚠ recompiles every call"


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


def test_results_older_than_the_new_benchmarks_still_report(runs, tmp_path):
    # c1 ran the suite before the disk-cache and device-count benchmarks, on cpu only.
    out = tmp_path / "reports"
    assert report.run(_args(runs.results, out, commit=runs.c1[:8])) == 0
    index = (out / "index.md").read_text(encoding="utf-8")
    for omitted, benchmark in (
        ("summary column first_call_warm_disk_s", DISK_WARM),
        ("dispatch device-count fit", DEVICE_COUNT),
        ("plot Dispatch vs device count", DEVICE_COUNT),
    ):
        assert f"{omitted} omitted: no results for {benchmark}" in index
    assert "sharded vs unsharded table omitted" in index
    assert not list(out.glob("tables/sharded-*")) and not list(out.glob("plots/*device-count*"))
    summary = _summary(out, 1000)
    assert "first_call_s" in summary and "first_call_warm_disk_s" not in summary
    hazards = pd.read_csv(out / "tables" / "hazards.csv")
    assert "sizes_without_disk_hit" not in hazards and "stale_results" in hazards


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
