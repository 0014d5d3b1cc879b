"""``jitbench report`` on results of real asv runs (see test_results.asv_runs)."""

from __future__ import annotations

import ast
import contextlib
import io
import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from asv.results import Results
from test_results import CACHED, MACHINE, PER_CALL, STRATEGIES, copy_results

from jitbench import report
from jitbench.cli import main
from jitbench.report.summary import break_even_cold
from jitbench.suite import catalog

pytestmark = pytest.mark.slow

STALE = "static_self_id_hash"
# The fixture's strategy whose audit counts errors (and a compile on every call).
ERRORS = "jit_per_call"
# The fixture's strategy whose first call finds nothing in a filled disk cache.
DISK_MISS = "pytree_class"
SIZES = (10, 1000, 100000)
EDGE_SIZES = (10, 100000)
HEADLINE = [
    "strategy",
    "hazard",
    "first_call_s",
    "cached_call_s",
    "dispatch_s",
    "cached_x_eager",
    "break_even_vs_warm_eager",
    "break_even_vs_cold_eager",
    "best",
    "dispatch_dearer",
]
# Each count beside its time, where the run counted (cpu, size 10 only in the fixture).
COUNTED_HEADLINE = [
    *HEADLINE[:4],
    "cached_call_instructions",
    "dispatch_s",
    "dispatch_instructions",
    *HEADLINE[5:],
]


def _files(folder: Path) -> dict[str, float]:
    return {str(p.relative_to(folder)): p.stat().st_mtime for p in folder.rglob("*")}


class _Terminal(io.StringIO):
    """stderr as a terminal, where the report shows its progress."""

    def isatty(self) -> bool:
        return True


def _cli(*argv: str, terminal: bool = False) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), _Terminal() if terminal else io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(list(argv))
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(scope="module")
def built(runs, tmp_path_factory):
    """The default report (newest commit) through the CLI: (out, exit code, stdout, stderr)."""
    out = tmp_path_factory.mktemp("report") / "reports"
    before = _files(runs.results)
    code, stdout, stderr = _cli(
        "report", "--results", str(runs.results), "--out", str(out), terminal=True
    )
    assert _files(runs.results) == before  # nothing written into the results
    return out, code, stdout, stderr


def _summary(out, size, device="cpu", kind="summary"):
    return pd.read_csv(out / "tables" / f"{kind}-{device}-size{size}.csv").set_index("strategy")


def _asv(result: Results, benchmark: str) -> dict[tuple[object, ...], float]:
    """asv's own values of a benchmark by parameter values (sizes as ints)."""
    params = result.get_result_params(benchmark)
    values = result.get_result_value(benchmark, params)
    keys = [tuple(ast.literal_eval(v) for v in combo) for combo in itertools.product(*params)]
    return dict(zip(keys, values, strict=True))


def _index(out: Path) -> str:
    return (out / "index.md").read_text(encoding="utf-8")


def _links_exist(out: Path, page: str) -> list[str]:
    links = re.findall(r"\]\(([^)]+)\)", (out / page).read_text(encoding="utf-8"))
    assert links and all((out / link).is_file() for link in links), links
    return links


def test_the_terminal_opens_on_the_headline_then_progress_and_output_path(built):
    out, code, stdout, stderr = built
    assert code == 0
    lines = stdout.splitlines()
    assert lines[-1] == str(out / "index.html")
    # The page's first table, the complete run's headline, within the first 20 lines.
    assert lines[0].startswith("| strategy ") and lines[2].startswith("| eager ")
    table = [line for line in lines[:20] if line.startswith("|")]
    assert len(table) == 2 + len(STRATEGIES)
    assert lines[len(table)].startswith("^ ") and "At a glance / cpu, size 10" in lines[len(table)]
    steps = re.findall(r"^\[(\d+)/(\d+)\] (.+)$", stderr, flags=re.M)
    assert [int(n) for n, _, _ in steps] == list(range(1, len(steps) + 1))
    assert {int(total) for _, total, _ in steps} == {len(steps)}
    labels = {label for _, _, label in steps}
    assert {
        "tables: headline per device and size",
        "plots: cached call vs size",
        "tables: sharded vs unsharded",
        "plots: dispatch vs device count",
    } <= labels


def test_every_listed_file_exists(built):
    out = built[0]
    index = _index(out)
    _links_exist(out, "index.md")
    for name in (
        "tables/headline-cpu-size10.csv",
        "tables/headline-cpu-sharded-size100000.csv",
        "tables/summary-cpu-size10.csv",
        "tables/summary-cpu-size100000.csv",
        "tables/after-change-cpu-size1000.csv",
        "tables/summary.csv",
        "tables/break-even-warm-cpu.csv",
        "tables/break-even-cold-cpu.csv",
        "tables/hazards.csv",
        "tables/dispatch-scaling.csv",
        "tables/compile-scaling.csv",
        "tables/sharded-vs-unsharded-size10.csv",
        "tables/sharded-vs-unsharded-size100000.csv",
        "tables/dispatch-device-scaling.csv",
        "tables/depth-scaling.csv",
        "plots/cached-call-vs-depth.png",
        "plots/compile-vs-depth.png",
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
    assert "<title>jitbench report</title>" in page and "<body>" in page
    assert "<table" in page and 'href="tables/summary.csv"' in page
    assert "<details><summary>cpu, size 10: every column</summary>" in page
    assert not list(out.glob("**/gpu*")) and "gpu" not in index.split("## Notes")[0]
    assert not (out / "releases.md").exists() and "releases" not in index


def test_page_leads_with_headline_tables_then_plots(built):
    index = _index(built[0])
    sections = re.findall(r"^## (.+)$", index, flags=re.M)
    assert sections[:4] == [
        "At a glance",
        "Each device: dispatch, call and loop",
        "Plots",
        "Hazards",
    ]
    assert sections[-2:] == ["All numbers", "Notes and omissions"]
    glance = index.split("## At a glance")[1].split("## Each device")[0]
    tables = [t for t in re.findall(r"^\|.*\|$", glance, flags=re.M) if "---" in t]
    # cpu and cpu-sharded a table per size; cpu one more, the targets' (their own sizes).
    assert len(tables) == 2 * len(SIZES) + 1
    header = next(line for line in glance.splitlines() if line.startswith("| strategy"))
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "strategy",
        "hazard",
        "cold first call",
        "cached call",
        "instructions per cached call",
        "dispatch only",
        "instructions per dispatch",
        "cached / eager",
        "break-even vs warm eager",
        "break-even vs cold eager",
    ]
    for size in SIZES:
        expected = COUNTED_HEADLINE if size == 10 else HEADLINE
        assert list(_summary(built[0], size, kind="headline").reset_index()) == expected


def test_targets_are_rows_of_the_headline_tables_beside_the_strategies(runs, built):
    """A target's benchmarks fold into the built-in columns: the target in the strategy column."""
    out = built[0]
    glance = _index(out).split("## At a glance")[1].split("## Plots")[0]
    assert "### cpu, targets" in glance
    table = pd.read_csv(out / "tables" / "headline-cpu-targets.csv")
    assert list(table["strategy"]) == ["fixture_models:make_model"]
    # No eager at the target's sizes: no ratio or break-even columns.
    assert list(table) == [
        *("strategy", "hazard", "first_call_s", "cached_call_s", "cached_call_instructions"),
        *("dispatch_s", "dispatch_instructions", "dispatch_dearer"),
    ]
    result = runs.asv_result(runs.c3)
    for benchmark, column in (
        (catalog.COLD, "first_call_s"),
        (catalog.CACHED, "cached_call_s"),
        (catalog.DISPATCH, "dispatch_s"),
    ):
        twin = _asv(result, catalog.TARGET_TWINS[benchmark])
        assert table[column].iloc[0] == twin["fixture_models:make_model", "cpu"], column


def test_complete_run_is_used_and_the_others_named_with_their_reason(runs, built):
    index = _index(built[0])
    assert f"commit `{runs.c3[:8]}`" in index
    assert f"- used: {MACHINE} {runs.c3[:8]} " in index
    for commit in (runs.c1, runs.c2):
        assert re.search(rf"- left out: {MACHINE} {commit[:8]} .*: partial \(\d+ of \d+", index)
    assert "--commit" in index


def test_summary_numbers_equal_asv_values(runs, built):
    result = runs.asv_result(runs.c3)
    out = built[0]
    for size in SIZES:
        summary, headline = _summary(out, size), _summary(out, size, kind="headline")
        assert list(summary.index) == list(headline.index) == STRATEGIES
        for benchmark, column in (
            (CACHED, "cached_call_s"),
            (catalog.COLD, "first_call_s"),
            (catalog.DISPATCH, "dispatch_s"),
        ):
            values = _asv(result, benchmark)
            for strategy in STRATEGIES:
                expected = values[strategy, size, "cpu"]
                assert summary.loc[strategy, column] == expected, (strategy, size)
                assert headline.loc[strategy, column] == expected, (strategy, size)
        eager = summary.loc["eager", "cached_call_s"]
        assert summary["cached_x_eager"].to_dict() == pytest.approx(
            (summary["cached_call_s"] / eager).to_dict()
        )


def test_hazards_are_flagged_and_stale_is_never_the_winner(built):
    out = built[0]
    for size in SIZES:
        summary = _summary(out, size)
        # The fixture makes the stale strategy the cheapest per call...
        assert summary["cached_call_s"].idxmin() == STALE
        assert summary.loc[STALE, "hazard"] == "stale"
        # ...but the fastest correct one is the next cheapest (errors do not bar it).
        assert summary.index[summary["fastest_correct"]].tolist() == ["bound_method_jit"]
        assert summary.loc["bound_method_jit", "cached_x_best"] == 1
        assert summary.loc[STALE, "cached_x_best"] < 1
    index = _index(out)
    rows = [line for line in index.splitlines() if line.startswith("|") and STALE in line]
    assert rows and all(f"{STALE} ⚠" in row for row in rows)
    assert "| bound_method_jit ⚠ ★" in index and f"{STALE} ⚠ ★" not in index
    hazards = pd.read_csv(out / "tables" / "hazards.csv").set_index(["device", "strategy"])
    assert list(hazards.index.unique("device")) == ["cpu", "cpu-sharded"]
    for device in ("cpu", "cpu-sharded"):
        assert hazards.loc[(device, STALE), "stale_results"] == 1
        assert hazards.loc[(device, ERRORS), "errors"] == 1
        # Its recompiles include the repeated call's: the part is named, not also the whole.
        assert hazards.loc[(device, ERRORS), "recompiles"] > 1
        assert hazards.loc[(device, ERRORS), "hazard"] == "errors, recompiles every call"
        assert hazards.loc[(device, "bound_method_jit"), "hazard"] == "leaks"
    assert list(hazards)[:6] == [
        "stale_results",
        "errors",
        "leaked_instances",
        "recompiles",
        "repeat_call_compiles",
        "sizes_without_disk_hit",
    ]
    assert "jitbench audit --format json" in index.split("## Hazards")[1]


def test_disk_cache_columns_equal_asv_values(runs, built):
    result = runs.asv_result(runs.c3)
    cold, warm, hits, fresh = (
        _asv(result, b)
        for b in (catalog.DISK_COLD, catalog.DISK_WARM, catalog.DISK_HITS, catalog.COLD_FRESH)
    )
    for size in EDGE_SIZES:
        summary = _summary(built[0], size)
        for strategy in STRATEGIES:
            key = (strategy, size, "cpu")
            row = summary.loc[strategy]
            assert row["first_call_fresh_process_s"] == fresh[key]
            assert row["first_call_warm_disk_s"] == warm[key]
            assert row["first_call_cold_disk_s"] == cold[key]
            assert row["disk_cache_saving_s"] == pytest.approx(cold[key] - warm[key])
            assert row["disk_cache_speedup"] == pytest.approx(cold[key] / warm[key])
            assert row["disk_cache_hits"] == hits[key]
            missed = "no disk-cache hit" in str(row["hazard"])
            assert missed == (strategy == DISK_MISS), key
    # Sharded devices and middle sizes have no new-process benchmarks.
    assert _summary(built[0], 1000)["first_call_warm_disk_s"].isna().all()
    assert _summary(built[0], 10, "cpu-sharded")["first_call_warm_disk_s"].isna().all()
    hazards = pd.read_csv(built[0] / "tables" / "hazards.csv").set_index(["device", "strategy"])
    misses = hazards["sizes_without_disk_hit"].dropna()
    assert misses.to_dict() == {
        ("cpu", s): len(EDGE_SIZES) if s == DISK_MISS else 0 for s in STRATEGIES
    }
    assert hazards.loc[("cpu", DISK_MISS), "hazard"] == "no disk-cache hit"
    assert f"| {DISK_MISS} ⚠" in _index(built[0])


def test_sharded_ratios_equal_ratio_of_asv_values(runs, built):
    result = runs.asv_result(runs.c3)
    measures = {
        "first_call": _asv(result, catalog.COLD),
        "cached_call": _asv(result, CACHED),
        "dispatch": _asv(result, catalog.DISPATCH),
    }
    after = _asv(result, catalog.AFTER_CHANGE)
    for change in dict.fromkeys(key[3] for key in after):
        measures[f"after_{change}"] = {k[:3]: v for k, v in after.items() if k[3] == change}
    hazards = pd.read_csv(built[0] / "tables" / "hazards.csv").drop_duplicates("strategy")
    hazards = hazards[hazards["strategy"].isin(STRATEGIES)]  # targets are not sharded
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
    values = _asv(runs.asv_result(runs.c3), catalog.DEVICE_COUNT)
    fits = pd.read_csv(built[0] / "tables" / "dispatch-device-scaling.csv")
    assert fits["strategy"].tolist() == STRATEGIES
    fits = fits.set_index("strategy")
    counts = [1, 2, 4, 8]
    for strategy in STRATEGIES:
        slope, intercept = np.polyfit(counts, [values[strategy, n] for n in counts], 1)
        assert fits.loc[strategy, "dispatch_per_device_s"] == pytest.approx(slope, rel=1e-9)
        assert fits.loc[strategy, "dispatch_intercept_s"] == pytest.approx(intercept, rel=1e-9)
        assert fits.loc[strategy, "dispatch_points"] == len(counts)
    assert fits.loc[ERRORS, "hazard"] == "errors, recompiles every call"


def _jit_ahead(n: int, first: float, cached: float, eager_first: float, eager: float) -> bool:
    """Whether n calls cost jit no more than eager, first calls included."""
    return first + (n - 1) * cached <= eager_first + (n - 1) * eager


@pytest.mark.parametrize(
    ("costs", "expected"),
    [
        # first, cached, eager first, eager cached (ms): jit_per_call's shape, its first
        # call (one compile) beats eager's (one per op), every later call compiles again:
        # ahead at call 1, behind from call 2, so never repaid for good.
        ((20.0, 21.0, 40.0, 0.02), "never"),
        ((20.0, 0.005, 40.0, 0.02), 1),  # ahead from the first call on
        ((50.0, 1.0, 40.0, 2.0), 11),  # 10 ms behind, 1 ms gained a call
        ((50.0, 2.0, 40.0, 2.0), "never"),  # behind, and no call gains
    ],
)
def test_break_even_vs_cold_eager_is_the_call_from_which_jit_stays_ahead(costs, expected):
    assert break_even_cold("pytree_class", *costs) == expected
    ahead = [_jit_ahead(n, *costs) for n in range(1, 200)]
    if expected == "never":
        assert not ahead[-1]
    else:
        assert all(ahead[expected - 1 :]) and not any(ahead[: expected - 1])


def test_break_even_both_definitions(built):
    out = built[0]
    for size in SIZES:
        summary = _summary(out, size)
        eager = summary.loc["eager"]
        assert summary.loc["eager", "break_even_vs_warm_eager"] == "baseline"
        assert summary.loc["eager", "break_even_vs_cold_eager"] == "baseline"
        for strategy in STRATEGIES[1:]:
            row = summary.loc[strategy]
            first, cached = row["first_call_s"], row["cached_call_s"]
            warm, cold = row["break_even_vs_warm_eager"], row["break_even_vs_cold_eager"]
            if cached >= eager["cached_call_s"]:
                assert warm == "never", strategy
            else:
                assert int(warm) == math.ceil(first / (eager["cached_call_s"] - cached))
            costs = (first, cached, eager["first_call_s"], eager["cached_call_s"])
            if cold == "never":  # behind for good, whatever the first call
                assert not _jit_ahead(10**9, *costs), strategy
            else:  # the first n from which jit stays ahead (costs grow linearly in n)
                n = int(cold)
                assert _jit_ahead(n, *costs) and _jit_ahead(10**9, *costs), strategy
                assert not (n > 1 and _jit_ahead(n - 1, *costs)), strategy
        assert summary.loc["jit_per_call", "break_even_vs_warm_eager"] == "never"
    wide = pd.read_csv(out / "tables" / "break-even-warm-cpu.csv").set_index("strategy")
    summary = _summary(out, 1000)
    assert str(wide.loc["pytree_class", "size 1000"]) == str(
        summary.loc["pytree_class", "break_even_vs_warm_eager"]
    )
    cold = pd.read_csv(out / "tables" / "break-even-cold-cpu.csv").set_index("strategy")
    assert str(cold.loc["pytree_class", "size 1000"]) == str(
        summary.loc["pytree_class", "break_even_vs_cold_eager"]
    )
    index = _index(out)
    assert "**break-even vs warm eager** (eager's operations already compiled)" in index
    assert "**break-even vs cold eager** (eager's own first call counted too)" in index
    assert "### Break-even vs cold eager: cpu" in index


def test_scaling_fits_recover_the_fixture_costs(built):
    fits = pd.read_csv(built[0] / "tables" / "compile-scaling.csv").set_index("strategy")
    for strategy in STRATEGIES[1:]:
        factor = PER_CALL[strategy]
        assert fits.loc[strategy, "trace_per_op_s"] == pytest.approx(factor * 2e-5)
        assert fits.loc[strategy, "compile_per_op_s"] == pytest.approx(factor * 1e-4)
        assert fits.loc[strategy, "trace_intercept_s"] == pytest.approx(factor * 1e-3)
        assert 0 < fits.loc[strategy, "trace_loglog_slope"] < 1
    dispatch = pd.read_csv(built[0] / "tables" / "dispatch-scaling.csv").set_index("strategy")
    # Dispatch rows are spins timed on the machine: fitted for every strategy, whatever the sign.
    assert dispatch["dispatch_per_leaf_s"].notna().all()
    assert dispatch["dispatch_points"].tolist() == [4] * len(STRATEGIES)


def test_depth_fits_recover_the_fixture_costs_per_layer(built):
    fits = pd.read_csv(built[0] / "tables" / "depth-scaling.csv").set_index("strategy")
    for strategy in STRATEGIES[1:]:
        factor = PER_CALL[strategy]
        assert fits.loc[strategy, "trace_per_layer_s"] == pytest.approx(factor * 3e-4)
        assert fits.loc[strategy, "compile_per_layer_s"] == pytest.approx(factor * 5e-4)
        assert fits.loc[strategy, "compile_intercept_s"] == pytest.approx(factor * 2e-3)
    # Timed rows (spins, whose medians move with the machine's load): fitted for every
    # strategy; the fit's recovery is pinned on the tracked rows above.
    for column in ("dispatch_per_layer_s", "call_per_layer_s"):
        assert fits[column].notna().all(), column


def test_absent_benchmarks_are_noted_not_fatal(runs, tmp_path):
    # c2 holds only the cached call: most tables and plots have no source.
    out = tmp_path / "reports"
    report.write_report(runs.results, out, commit=runs.c2[:8])
    index = _index(out)
    assert "plots/cached-call-vs-size-cpu.png" in index
    assert "hazard table omitted: no results for bench_hazards.Hazards" in index
    assert f"plot Cold first call vs size omitted: no results for {catalog.COLD}" in index
    assert not (out / "plots" / "stages-cpu-size1000.png").exists()
    summary = pd.read_csv(out / "tables" / "summary-cpu-size10.csv")
    assert "first_call_s" not in summary and "cached_call_s" in summary
    headline = pd.read_csv(out / "tables" / "headline-cpu-size10.csv")
    assert list(headline) == [
        "strategy",
        "hazard",
        "cached_call_s",
        "cached_x_eager",
        "best",
    ]


def test_results_older_than_the_new_benchmarks_still_report(runs, tmp_path):
    # c1 ran the suite before the disk-cache, device-count and errors benchmarks, on cpu only.
    out = tmp_path / "reports"
    report.write_report(runs.results, out, commit=runs.c1[:8])
    index = _index(out)
    for omitted, benchmark in (
        ("summary column first_call_warm_disk_s", catalog.DISK_WARM),
        ("dispatch device-count fit", catalog.DEVICE_COUNT),
        ("plot Dispatch vs device count", catalog.DEVICE_COUNT),
        ("hazard count errors", catalog.HAZARDS["errors"]),
    ):
        assert f"{omitted} omitted: no results for {benchmark}" in index
    assert "sharded vs unsharded table omitted" in index
    assert not list(out.glob("tables/sharded-*")) and not list(out.glob("plots/*device-count*"))
    summary = _summary(out, 1000)
    assert "first_call_s" in summary and "first_call_warm_disk_s" not in summary
    hazards = pd.read_csv(out / "tables" / "hazards.csv")
    assert "sizes_without_disk_hit" not in hazards and "errors" not in hazards
    assert "stale_results" in hazards


def test_counts_stand_beside_the_times_of_the_same_calls(runs, built):
    out = built[0]
    part = _index(out).split("## Instructions per call")[1].split("\n## ")[0]
    assert "nox -s instructions" in part and "### cpu, size 10" in part
    result = runs.asv_result(runs.c3)
    table = pd.read_csv(out / "tables" / "instructions-cpu-size10.csv").set_index("strategy")
    assert list(table.index) == STRATEGIES
    calls, dispatches = (_asv(result, catalog.INSTRUCTIONS[k]) for k in ("call", "dispatch"))
    times = _asv(result, CACHED)
    for strategy in STRATEGIES:
        assert table.loc[strategy, "cached_call_instructions"] == calls[strategy, 10, "cpu"]
        assert table.loc[strategy, "dispatch_instructions"] == dispatches[strategy, 10, "cpu"]
        assert table.loc[strategy, "cached_call_s"] == times[strategy, 10, "cpu"]
    target = pd.read_csv(out / "tables" / "instructions-cpu-targets.csv")
    twin = _asv(result, catalog.TARGET_TWINS[catalog.INSTRUCTIONS["call"]])
    assert list(target["strategy"]) == ["fixture_models:make_model"]
    assert target["cached_call_instructions"].iloc[0] == twin["fixture_models:make_model", "cpu"]


def test_the_population_cliff_is_read_from_the_python_calls(runs, built):
    out = built[0]
    part = _index(out).split("## Many live instances")[1].split("\n## ")[0]
    assert "nox -s instances" in part and "Dispatch vs live instances" in part
    cliffs = pd.read_csv(out / "tables" / "population-cliffs.csv").set_index("strategy")
    assert list(cliffs.index) == STRATEGIES
    # The fixture's bound_method_jit loses the fast path past 8,192 live instances only.
    lost = cliffs["fast path lost from N"].astype(str)
    assert lost.to_dict() == {s: "10000" if s == "bound_method_jit" else "none" for s in STRATEGIES}
    table = pd.read_csv(out / "tables" / "population-cpu.csv")
    result = runs.asv_result(runs.c3)
    kept = _asv(result, catalog.POPULATION["kept_alive"])
    for row in table.itertuples(index=False):
        assert row.kept_alive_after_release == kept[row.strategy, row.instances, "cpu"]


def test_counts_filed_under_the_hooks_env_stand_beside_the_times(runs, tmp_path):
    # nox -s instructions files the counts under an env of their own: the timed env's
    # packages plus pytest-codspeed. Split c3's results file the same way.
    results = copy_results(runs, tmp_path)
    path = next((results / MACHINE).glob(f"{runs.c3[:8]}-*.json"))
    data = json.loads(path.read_text())
    counted = set(catalog.COUNTED)
    hooks = {**data, "env_name": data["env_name"] + "-pytest-codspeed5.0.4"}
    hooks["results"] = {k: v for k, v in data["results"].items() if k in counted}
    data["results"] = {k: v for k, v in data["results"].items() if k not in counted}
    path.write_text(json.dumps(data))
    path.with_name(f"{runs.c3[:8]}-{hooks['env_name']}.json").write_text(json.dumps(hooks))
    out = tmp_path / "reports"
    assert _cli("report", "--results", str(results), "--out", str(out))[0] == 0
    # One run, the timed env's; the hooks' env is named only as the counts' source.
    used, *left = [line for line in _index(out).splitlines() if "pytest-codspeed" in line]
    assert used.startswith(f"- used: {MACHINE} {runs.c3[:8]}") and "its twin env" in used
    assert left == [
        f"- left out: {MACHINE} {runs.c3[:8]} {hooks['env_name']}: "
        "instructions only: its counts stand beside the run used"
    ]
    table = pd.read_csv(out / "tables" / "instructions-cpu-size10.csv").set_index("strategy")
    result = runs.asv_result(runs.c3)
    calls, times = _asv(result, catalog.INSTRUCTIONS["call"]), _asv(result, CACHED)
    for strategy in STRATEGIES:
        assert table.loc[strategy, "cached_call_instructions"] == calls[strategy, 10, "cpu"]
        assert table.loc[strategy, "cached_call_s"] == times[strategy, 10, "cpu"]


def test_counted_slopes_recover_the_fixture_costs_per_frame_and_layer(built):
    tables = built[0] / "tables"
    frame = pd.read_csv(tables / "instructions-per-frame.csv").set_index("strategy")
    assert list(frame.index) == STRATEGIES
    assert frame["call_per_frame_instructions"].tolist() == pytest.approx([184] * len(STRATEGIES))
    assert frame["dispatch_per_frame_instructions"].tolist() == pytest.approx([92] * 5)
    off = pd.read_csv(tables / "instructions-per-frame-no-tracebacks.csv").set_index("strategy")
    assert off["call_per_frame_no_tracebacks_instructions"].abs().max() < 1e-6
    layer = pd.read_csv(tables / "instructions-per-layer.csv").set_index("strategy")
    for strategy in STRATEGIES:
        assert layer.loc[strategy, "call_per_layer_instructions"] == pytest.approx(
            PER_CALL[strategy] * 100
        )


def test_figures_are_divided_by_the_floor_where_it_was_measured(tmp_path):
    from jitbench.report.run import Run
    from jitbench.report.summary import FLOOR_RATIOS, summary

    figures = {catalog.COLD: 2.0, catalog.CACHED: 1.0, catalog.DISPATCH: 0.5}
    records = [
        {"machine": "m", "commit": "c", "env": "e", "jax": "0.12", "benchmark": benchmark,
         "strategy": strategy, "size": 10, "device": "cpu", "status": "ok",
         "value": value * (1.5 if strategy == "helper_function" else 1.0)}
        for benchmark, value in figures.items()
        for strategy in ("eager", "helper_function", "jit_function")
    ]  # fmt: skip
    frame = pd.DataFrame(records)
    for column in ("change", "n_arrays", "n_ops", "depth", "n_devices", "instances", "q_75"):
        frame[column] = pd.NA
    table = summary(Run(frame, tmp_path)).set_index("strategy")
    for column in ("first_call_x_floor", "cached_x_floor", "dispatch_x_floor"):
        assert table.loc["helper_function", column] == pytest.approx(1.5)
        assert table.loc["jit_function", column] == pytest.approx(1.0)
    without = summary(Run(frame[frame["strategy"] != "jit_function"], tmp_path))
    assert not set(FLOOR_RATIOS.values()) & set(without)
