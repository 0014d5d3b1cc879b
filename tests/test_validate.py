"""``jitbench validate``: the canary's arithmetic and correctness, the validation arithmetic on
hand-built result frames, and one-line input errors. No timing thresholds: nothing here
depends on how fast this machine is."""

from __future__ import annotations

import argparse
import math
import re

import numpy as np
import pandas as pd
import pytest

import jitbench
from jitbench import cli, validate
from jitbench.audit import audit
from jitbench.errors import JitbenchError
from jitbench.measure import block
from jitbench.strategies import STRATEGIES

CACHED, DISPATCH, COLD = validate.CACHED, validate.DISPATCH, validate.COLD


@pytest.fixture
def canary(monkeypatch):
    """The canary module, registered for the test only (other tests see the usual registry)."""
    from jitbench import canary as module

    module.register()
    module.reset_calibration()
    monkeypatch.delenv(module.SLOWDOWN_ENV, raising=False)
    yield module
    STRATEGIES.pop(module.NAME, None)
    module.reset_calibration()


def _fixed_calibration(monkeypatch, module, call_s: float, unit_s: float) -> None:
    monkeypatch.setattr(module, "call_seconds", lambda *a, **k: call_s)
    monkeypatch.setattr(module, "unit_seconds", lambda *a, **k: unit_s)
    module.reset_calibration()


# --- the canary --------------------------------------------------------------------------


def test_units_are_proportional_to_the_slowdown(canary):
    assert canary.units_for(0.10, 1e-3, 1e-7) == 1000
    assert canary.units_for(0.20, 1e-3, 1e-7) == 2000
    assert canary.units_for(0.05, 1e-3, 1e-7) == 500
    assert canary.units_for(0.10, 2e-3, 1e-7) == 2000  # twice the call, twice the work
    assert canary.units_for(0.10, 1e-3, 2e-7) == 500  # twice the unit cost, half the units
    assert canary.units_for(0.0, 1e-3, 1e-7) == 0
    for p in (0.01, 0.1, 0.37, 1.0):
        assert canary.units_for(p, 5e-5, 5e-8) == round(p * 1000)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((-0.1, 1e-3, 1e-7), "slowdown must be a finite fraction >= 0, got -0.1"),
        ((math.nan, 1e-3, 1e-7), "slowdown must be a finite fraction >= 0"),
        ((0.1, 0.0, 1e-7), "call_seconds must be a positive number, got 0.0"),
        ((0.1, 1e-3, math.inf), "unit_seconds must be a positive number, got inf"),
    ],
)
def test_units_for_rejects_nonsense(canary, args, message):
    with pytest.raises(JitbenchError, match=re.escape(message)):
        canary.units_for(*args)


def test_spin_runs_exactly_k_units(canary):
    calls = []

    def step(state):
        calls.append(state)
        return canary.work_unit(state)

    assert canary.spin(0, step) == 1 and calls == []
    final = canary.spin(37, step)
    assert len(calls) == 37
    assert final == canary.spin(37)  # the default unit is the same work
    assert canary.work_unit(1) == (1103515245 + 12345) & 0x7FFFFFFF


def test_measured_costs_are_positive(canary):
    assert 0 < canary.unit_seconds(repeats=1, budget=0.001) < math.inf
    obj, _ = jitbench.make_instance("helper_function", 10)
    assert 0 < canary.call_seconds([obj.a0], [1], repeats=1, budget=0.001) < math.inf


def test_slowdown_env(canary, monkeypatch):
    assert canary.slowdown_from_env() == 0.0
    monkeypatch.setenv(canary.SLOWDOWN_ENV, "0.10")
    assert canary.slowdown_from_env() == 0.10
    for bad in ("ten", "-0.1", "nan", "inf"):
        monkeypatch.setenv(canary.SLOWDOWN_ENV, bad)
        with pytest.raises(JitbenchError, match=f"JITBENCH_CANARY_SLOWDOWN is '{bad}'; expected"):
            canary.slowdown_from_env()


def test_zero_slowdown_times_nothing_and_adds_no_work(canary, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("no calibration and no extra work at slowdown 0")

    monkeypatch.setattr(canary, "call_seconds", refuse)
    monkeypatch.setattr(canary, "unit_seconds", refuse)
    monkeypatch.setattr(canary, "spin", refuse)
    monkeypatch.setenv(canary.SLOWDOWN_ENV, "0")
    obj, y = jitbench.make_instance("canary", 16)
    assert obj._jb_units == 0
    np.testing.assert_allclose(
        np.asarray(block(obj.calc(y))), jitbench.reference_calc([obj.a0], [obj.s0], y), rtol=1e-5
    )


@pytest.mark.parametrize(("slowdown", "units"), [("0.05", 50), ("0.1", 100), ("0.2", 200)])
def test_each_call_runs_the_calibrated_units(canary, monkeypatch, slowdown, units):
    _fixed_calibration(monkeypatch, canary, call_s=1e-3, unit_s=1e-6)
    monkeypatch.setenv(canary.SLOWDOWN_ENV, slowdown)
    done = []
    monkeypatch.setattr(canary, "spin", lambda k: done.append(k))
    obj, y = jitbench.make_instance("canary", 16)
    assert obj._jb_units == units
    for _ in range(3):
        result = np.asarray(block(obj.calc(y)))
    assert done == [units] * 3
    np.testing.assert_allclose(result, jitbench.reference_calc([obj.a0], [obj.s0], y), rtol=1e-5)


def test_calibration_is_per_layout_and_measured_once(canary, monkeypatch):
    seen = []
    monkeypatch.setattr(canary, "call_seconds", lambda arrays, *a: seen.append(arrays) or 1e-3)
    monkeypatch.setattr(canary, "unit_seconds", lambda *a, **k: 1e-6)
    canary.reset_calibration()
    monkeypatch.setenv(canary.SLOWDOWN_ENV, "0.1")
    for size in (16, 16, 32):
        jitbench.make_instance("canary", size)
    assert [a[0].shape for a in seen] == [(16,), (32,)]


@pytest.mark.parametrize("slowdown", ["0", "0.2"])
def test_canary_results_stay_correct(canary, monkeypatch, slowdown):
    _fixed_calibration(monkeypatch, canary, call_s=1e-4, unit_s=1e-6)
    monkeypatch.setenv(canary.SLOWDOWN_ENV, slowdown)
    got = audit("canary")
    helper = audit("helper_function")
    assert got.stale_results == 0 and got.leaked_instances == 0
    # The same jit cache behaviour as helper_function, step by step.
    assert [(s.traces, s.compiles, s.correct) for s in got.steps] == [
        (s.traces, s.compiles, s.correct) for s in helper.steps
    ]


def test_canary_registers_only_when_imported():
    import subprocess
    import sys

    code = "import jitbench; print('canary' in jitbench.STRATEGIES)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    code = "import jitbench.canary, jitbench; print('canary' in jitbench.STRATEGIES)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


# --- the validation arithmetic on frames shaped like jitbench.results.load ---------------


COLUMNS = [
    *("machine", "commit", "date", "env", "python", "jax", "benchmark", "kind"),
    *("strategy", "size", "device"),
    *("value", "unit", "ci_99_a", "ci_99_b", "q_25", "q_75", "number", "repeat"),
    *("samples", "status", "version", "started_at", "case"),
]
# Ten samples spread +-2% around the median: a tight run.
SPREAD = np.linspace(0.98, 1.02, 10)


def _row(machine: str, benchmark: str, strategy: str, size: int, device: str, value: float):
    samples = None if math.isnan(value) else list(value * SPREAD)
    ok = samples is not None
    return {
        "machine": machine,
        "commit": "a" * 40,
        "date": pd.Timestamp("2024-01-01", tz="UTC"),
        "env": "existing-py",
        "python": "3.11",
        "jax": "0.10.2",
        "benchmark": benchmark,
        "kind": "time",
        "strategy": strategy,
        "size": size,
        "device": device,
        "value": value,
        "unit": "seconds",
        "ci_99_a": value * 0.97 if ok else math.nan,
        "ci_99_b": value * 1.03 if ok else math.nan,
        "q_25": value * 0.99 if ok else math.nan,
        "q_75": value * 1.01 if ok else math.nan,
        "number": 20 if ok else None,
        "repeat": 10 if ok else None,
        "samples": samples,
        "status": "ok" if ok else "skipped",
        "version": "v1",
        "started_at": pd.Timestamp("2024-01-01", tz="UTC"),
        "case": f"{benchmark}('{strategy}', {size}, '{device}')",
    }


def _frame(rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=COLUMNS)
    text = ["machine", "commit", "env", "python", "jax", "benchmark", "kind", "strategy"]
    text += ["device", "unit", "status", "version", "case"]
    frame[text] = frame[text].astype("string")
    frame["size"] = frame["size"].astype("Int64")
    frame[["number", "repeat"]] = frame[["number", "repeat"]].astype("Int64")
    return frame


def _run(machine: str, values: dict[tuple[str, str, int, str], float]) -> pd.DataFrame:
    return _frame([_row(machine, b, s, n, d, v) for (b, s, n, d), v in values.items()])


def test_spread_is_the_95th_percentile_of_the_deviation():
    ratios = [1.01] * 10 + [0.99] * 9 + [1.5]
    # 20 deviations, 19 of 0.01 and one of 0.5: p95 interpolates 5% of the way to 0.5.
    assert validate.spread(ratios) == pytest.approx(0.01 + 0.05 * 0.49)
    assert validate.spread([1.0, 1.0]) == 0
    assert validate.spread(pd.Series([1.2, math.nan])) == pytest.approx(0.2)
    assert math.isnan(validate.spread([]))


def test_accuracy_ratio_and_range():
    measured = pd.DataFrame(
        {
            "benchmark": [CACHED, CACHED, DISPATCH],
            "strategy": ["eager", "helper_function", "eager"],
            "size": [10, 10, 10],
            "device": ["cpu"] * 3,
            "asv_s": [10e-6, 13e-6, 5e-6],
            "timeit_s": [10e-6, 10e-6, 5.5e-6],
        }
    )
    table = validate.accuracy_table(measured)
    assert table["ratio"].round(4).tolist() == [1.0, 1.3, 0.9091]
    assert table["in_range"].tolist() == [True, False, True]


def test_noise_table_and_summary():
    first, second = {}, {}
    cached = [1.00, 1.02, 0.97, 1.01]
    for i, (strategy, ratio) in enumerate(zip(["a", "b", "c", "d"], cached, strict=True)):
        first[CACHED, strategy, 10, "cpu"] = 1e-5 * (i + 1)
        second[CACHED, strategy, 10, "cpu"] = 1e-5 * (i + 1) * ratio
        first[DISPATCH, strategy, 10, "cpu"] = 1e-6
        second[DISPATCH, strategy, 10, "cpu"] = 1e-6
        first[COLD, strategy, 10, "cpu"] = 0.05
        second[COLD, strategy, 10, "cpu"] = 0.05 * (1.3 if strategy == "d" else 1.0)
    first[CACHED, "a", 10, "gpu"] = second[CACHED, "a", 10, "gpu"] = math.nan  # n/a: left out
    table = validate.noise_table(_run("one", first), _run("two", second), 1.05)
    assert len(table) == 12 and set(table["family"]) == set(validate.FAMILIES.values())
    summary = validate.noise_summary(table).set_index("family")
    assert summary.loc["cached call", "spread"] == pytest.approx(
        np.percentile([0.0, 0.02, 0.03, 0.01], 95)
    )
    assert summary.loc["cached call", "met"] and summary.loc["dispatch", "spread"] == 0
    assert summary.loc["cold first call", "flagged"] == 1  # the 30% move is beyond the factor
    assert not summary.loc["cold first call", "met"]
    assert summary["rows"].tolist() == [4, 4, 4]
    by_size = validate.noise_by_size(table)
    assert by_size[["family", "size", "device", "rows"]].values.tolist() == [
        ["cached call", 10, "cpu", 4],
        ["cold first call", 10, "cpu", 4],
        ["dispatch", 10, "cpu", 4],
    ]


def _sensitivity_pairs(false_flag_at: tuple[int, float] | None = None):
    """Three repetitions x slowdowns 5, 10, 20 with the canary slowed by exactly that much."""
    base_values = {
        (CACHED, s, n, "cpu"): t
        for s, t in (("eager", 4e-5), ("helper_function", 1.2e-5), ("canary", 1.2e-5))
        for n in (10, 1_000_000)
    }
    base_values[CACHED, "eager", 10, "gpu"] = math.nan
    pairs = []
    for repetition in (1, 2, 3):
        base = _run(f"r{repetition}-base", base_values)
        for percent in (5.0, 10.0, 20.0):
            values = dict(base_values)
            for n in (10, 1_000_000):
                values[CACHED, "canary", n, "cpu"] *= 1 + percent / 100
            if false_flag_at == (repetition, percent):
                values[CACHED, "eager", 1_000_000, "cpu"] *= 1.3
            pairs.append((repetition, percent, base, _run(f"r{repetition}-p{percent}", values)))
    return pairs


def test_smallest_flagged_slowdown():
    judged = validate.judge_sensitivity(_sensitivity_pairs(), 1.05)
    assert len(judged) == 3 * 3 * 6  # gpu rows are n/a and left out
    summary = validate.sensitivity_summary(judged).set_index("slowdown_pct")
    assert summary["canary_flagged"].tolist() == [0, 6, 6]
    assert summary["canary_rows"].tolist() == [6, 6, 6]
    assert summary["false_flags"].tolist() == [0, 0, 0]
    assert summary.loc[10.0, "canary_ratio_median"] == pytest.approx(1.10)
    assert validate.smallest_flagged(summary.reset_index()) == 10.0
    by_size = validate.sensitivity_summary(judged, by_size=True)
    assert by_size[["slowdown_pct", "size", "canary_flagged", "canary_rows"]].values.tolist() == [
        [5.0, 10, 0, 3],
        [5.0, 1_000_000, 0, 3],
        [10.0, 10, 3, 3],
        [10.0, 1_000_000, 3, 3],
        [20.0, 10, 3, 3],
        [20.0, 1_000_000, 3, 3],
    ]
    # At 5% the canary's ratio stays under the factor; the samples do differ.
    assert by_size["canary_above_factor"].tolist()[:2] == [0, 0]


def test_a_false_flag_disqualifies_its_slowdown():
    judged = validate.judge_sensitivity(_sensitivity_pairs(false_flag_at=(2, 10.0)), 1.05)
    summary = validate.sensitivity_summary(judged)
    row = summary.set_index("slowdown_pct").loc[10.0]
    assert row["false_flags"] == 1
    assert "r2 " in row["false_flag_cases"] and "'eager'" in row["false_flag_cases"]
    assert validate.smallest_flagged(summary) == 20.0
    assert validate.smallest_flagged(summary, require_clean=False) == 10.0


def test_a_slowdown_missed_once_is_not_detected():
    pairs = _sensitivity_pairs()
    # Repetition 3's head at 10% measured the canary at only 3% slower.
    repetition, percent, base, head = pairs[7]
    assert (repetition, percent) == (3, 10.0)
    head = head.copy()
    is_canary = head["strategy"] == "canary"
    head.loc[is_canary, "value"] = head.loc[is_canary, "value"] / 1.10 * 1.03
    head.loc[is_canary, "samples"] = pd.Series(
        [list(v * SPREAD) for v in head.loc[is_canary, "value"]],
        index=head.index[is_canary],
        dtype=object,
    )
    pairs[7] = (repetition, percent, base, head)
    summary = validate.sensitivity_summary(validate.judge_sensitivity(pairs, 1.05))
    assert summary.set_index("slowdown_pct").loc[10.0, "canary_flagged"] == 4
    assert validate.smallest_flagged(summary) == 20.0


def test_device_regex_selects_rows_as_asv_names_them():
    regex = validate.device_regex(CACHED, ["cpu", "cpu-sharded"])
    name = "bench_cached.CachedCall.time_cached_call"
    assert re.search(regex, f"{name}('eager', 10, 'cpu')")
    assert re.search(regex, f"{name}('eager', 1000000, 'cpu-sharded')")
    assert not re.search(regex, f"{name}('eager', 10, 'gpu')")
    assert not re.search(regex, f"{name}_dispatch('eager', 10, 'cpu')")


def test_report_from_measured_tables(tmp_path):
    plan = validate.Plan(tmp_path / "out", 3, (5.0, 10.0, 20.0), 1.05, (10,), validate.PHASES)
    outcome = validate.Outcome(plan, "f" * 40, 0.0, {"accuracy": 1.0})
    outcome.accuracy = validate.accuracy_table(
        pd.DataFrame(
            {
                "benchmark": [CACHED, DISPATCH],
                "strategy": ["eager"] * 2,
                "size": [10] * 2,
                "device": ["cpu"] * 2,
                "asv_s": [1e-5, 2e-6],
                "timeit_s": [1e-5, 1e-6],
            }
        )
    )
    judged = validate.judge_sensitivity(_sensitivity_pairs(false_flag_at=(1, 20.0)), 1.05)
    outcome.sensitivity = judged
    outcome.sensitivity_summary = validate.sensitivity_summary(judged)
    summary = validate.summary_table(outcome, 100.0)
    assert summary["met"].tolist() == [True, False, True, True]  # the runtime row is last
    path = validate.write_report(outcome, summary, 100.0)
    text = path.read_text()
    assert "## Summary" in text and "## What limits the missed targets" in text
    assert "Accuracy: outside 0.8-1.25: dispatch eager 10 x2.00" in text
    assert "**10%**" in text
    assert {p.name for p in plan.out.iterdir()} == {
        "validation.md",
        "summary.csv",
        "accuracy.csv",
        "sensitivity.csv",
        "sensitivity_summary.csv",
    }


# --- input errors ------------------------------------------------------------------------

BAD_INPUT = [
    (["--repetitions", "0"], "--repetitions must be a positive integer such as 3, got '0'"),
    (["--repetitions", "-2"], "--repetitions must be a positive integer such as 3, got '-2'"),
    (["--repetitions", "two"], "--repetitions must be a positive integer such as 3, got 'two'"),
    (["--slowdowns", "5,abc"], "--slowdowns has 'abc'; expected positive percentages"),
    (["--slowdowns", "0"], "--slowdowns has '0'; expected positive percentages"),
    (["--slowdowns", "-5"], "--slowdowns has '-5'; expected positive percentages"),
    (["--slowdowns", "nan"], "--slowdowns has 'nan'; expected positive percentages"),
    (["--sizes", "10,7"], "--sizes has '7'; expected sizes of the suite's grid (10,1000,"),
    (["--sizes", "ten"], "--sizes has 'ten'; expected sizes of the suite's grid"),
    (["--factor", "0.5"], "--factor must be a number >= 1 such as 1.05, got '0.5'"),
    (["--phases", "speed"], "--phases has 'speed'; expected names from accuracy,noise,"),
]


@pytest.mark.parametrize(("argv", "message"), BAD_INPUT)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, argv, message):
    out = tmp_path / "report"
    assert validate.main(["--out", str(out), *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("jitbench: error: ")
    assert message in captured.err
    assert not out.exists()


def test_parse_plan_raises_jitbench_error(tmp_path):
    parser = argparse.ArgumentParser()
    validate.add_arguments(parser)
    plan = validate.parse_plan(parser.parse_args(["--out", str(tmp_path / "r")]))
    assert plan.repetitions == 3 and plan.slowdowns == (5.0, 10.0, 20.0)
    assert plan.factor == 1.05 and plan.sizes == (10, 1_000_000) and plan.phases == validate.PHASES
    with pytest.raises(JitbenchError, match="inside the asv results dir"):
        validate.parse_plan(parser.parse_args(["--out", "results/validation"]))
    (tmp_path / "file").write_text("")
    with pytest.raises(JitbenchError, match="exists and is not a directory"):
        validate.parse_plan(parser.parse_args(["--out", str(tmp_path / "file")]))


@pytest.mark.skipif(
    "validate" not in cli._COMMANDS, reason="jitbench.cli has no validate subcommand yet"
)
@pytest.mark.parametrize(("argv", "message"), BAD_INPUT[:1] + BAD_INPUT[3:4] + BAD_INPUT[7:8])
def test_cli_bad_input(tmp_path, capsys, argv, message):
    out = tmp_path / "report"
    assert cli.main(["validate", "--out", str(out), *argv]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
