"""``jitbench validate``: the canary's arithmetic and correctness, the fidelity timing's
alternation, the validation arithmetic on hand-built result frames, and one-line input
errors. No timing thresholds: nothing here depends on how fast this machine is."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from jax_releases import below_minimum

import jitbench
from jitbench import cli, validate
from jitbench.compiles import block
from jitbench.document import markdown_blocks
from jitbench.errors import JitbenchError
from jitbench.results.noise import Noise
from jitbench.strategies.codegen import Shape
from jitbench.strategies.twins import TWINS
from jitbench.validate import inprocess, stats, summary, writer
from jitbench.validate.plan import PHASES, Outcome, Plan, Progress
from jitbench.ways.registry import STRATEGIES, get_strategy

CACHED, DISPATCH, COLD = stats.CACHED, stats.DISPATCH, stats.COLD
CPU = jitbench.resolve("cpu")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def canary(monkeypatch):
    """The canary's module, the strategy registered for the test only (other tests see the
    usual registry)."""
    from jitbench.strategies import canary as module
    from jitbench.ways import canary as strategy

    strategy.register()
    module.reset_calibration()
    monkeypatch.delenv(module.SLOWDOWN_ENV, raising=False)
    yield module
    STRATEGIES.pop(module.NAME, None)
    module.reset_calibration()


def _canary(size: int = 16):
    return jitbench.make_instance(get_strategy("canary"), size, CPU)


def _check_result(obj, y) -> None:
    got = np.asarray(block(obj.calc(y)))
    want = jitbench.reference_calc([np.asarray(obj.a0)], [obj.s0], np.asarray(y), 1)
    np.testing.assert_allclose(got, want, rtol=1e-5)


# --- the canary --------------------------------------------------------------------------


def test_units_are_proportional_to_the_slowdown(canary):
    assert canary.units_for(0.10, 1e-3, 1e-7) == 1000
    assert canary.units_for(0.20, 1e-3, 1e-7) == 2000
    assert canary.units_for(0.10, 2e-3, 1e-7) == 2000  # twice the call, twice the work
    assert canary.units_for(0.10, 1e-3, 2e-7) == 500  # twice the unit cost, half the units
    # The work loop's own cost comes off first; any slowdown plants at least one unit.
    assert canary.units_for(0.10, 1e-3, 1e-7, fixed_seconds=2e-5) == 800
    assert canary.units_for(0.01, 1e-5, 1e-7, fixed_seconds=1e-6) == 1
    assert canary.units_for(0.0, 1e-3, 1e-7, fixed_seconds=1e-6) == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((-0.1, 1e-3, 1e-7), "slowdown must be a finite fraction >= 0, got -0.1"),
        ((math.nan, 1e-3, 1e-7), "slowdown must be a finite fraction >= 0"),
        ((0.1, 0.0, 1e-7), "call_seconds must be a positive number, got 0.0"),
        ((0.1, 1e-3, math.inf), "unit_seconds must be a positive number, got inf"),
        ((0.1, 1e-3, 1e-7, -1.0), "fixed_seconds must be a number >= 0, got -1.0"),
    ],
)
def test_units_for_rejects_nonsense(canary, args, message):
    with pytest.raises(JitbenchError, match=re.escape(message)):
        canary.units_for(*args)


def test_spin_runs_exactly_k_units(canary):
    state, states = 1, []
    for _ in range(37):
        state = (state * 1103515245 + 12345) & 0x7FFFFFFF
        states.append(state)
    assert canary.spin(0) == 1
    assert [canary.spin(k) for k in (1, 2, 37)] == [states[0], states[1], states[36]]


def test_measured_costs_are_positive(canary):
    empty, unit = canary.spin_costs(repeats=2, budget=0.001)
    assert 0 < empty < math.inf and 0 < unit < math.inf
    obj, y = _canary()
    assert obj.units == 0
    assert canary.calibrate(obj, y, 0.1) >= 1 and obj.units == 0


def test_calibration_arithmetic(canary, monkeypatch):
    monkeypatch.setattr(canary, "_seconds", lambda *a, **k: 1e-5)  # the call without work
    monkeypatch.setattr(canary, "spin_costs", lambda: (1e-7, 5e-8))
    obj, y = _canary()
    obj.units = 5
    assert canary.calibrate(obj, y, 0.1) == round((0.1 * 1e-5 - 1e-7) / 5e-8) == 18
    assert obj.units == 0  # timed without work, and left without


def test_slowdown_env(canary, monkeypatch):
    assert canary.slowdown_from_env() == 0.0
    monkeypatch.setenv(canary.SLOWDOWN_ENV, "0.10")
    assert canary.slowdown_from_env() == 0.10
    for bad in ("ten", "-0.1", "nan", "inf"):
        monkeypatch.setenv(canary.SLOWDOWN_ENV, bad)
        with pytest.raises(JitbenchError, match=f"JITBENCH_CANARY_SLOWDOWN is '{bad}'; expected"):
            canary.slowdown_from_env()


def _work_calls(monkeypatch, obj) -> list[int]:
    """Every ``spin`` call the instance's generated module makes from now on."""
    done: list[int] = []
    monkeypatch.setattr(sys.modules[type(obj).__module__], "spin", done.append)
    return done


def test_zero_slowdown_times_nothing_and_adds_no_work(canary, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("no calibration and no extra work at slowdown 0")

    monkeypatch.setattr(canary, "calibrate", refuse)
    monkeypatch.setenv(canary.SLOWDOWN_ENV, "0")
    obj, y = _canary()
    done = _work_calls(monkeypatch, obj)
    assert obj.units == 0
    _check_result(obj, y)
    assert done == []


@pytest.mark.parametrize(("slowdown", "units"), [("0.05", 50), ("0.1", 100), ("0.2", 200)])
def test_each_call_runs_the_calibrated_units(canary, monkeypatch, slowdown, units):
    monkeypatch.setattr(canary, "calibrate", lambda obj, y, s: round(s * 1000))
    monkeypatch.setenv(canary.SLOWDOWN_ENV, slowdown)
    obj, y = _canary()
    done = _work_calls(monkeypatch, obj)
    assert obj.units == units
    for _ in range(3):
        _check_result(obj, y)
    assert done == [units] * 3


def test_calibration_is_per_layout_and_slowdown_and_measured_once(canary, monkeypatch):
    seen = []
    monkeypatch.setattr(canary, "calibrate", lambda obj, y, s: seen.append((y.shape, s)) or 7)
    monkeypatch.setenv(canary.SLOWDOWN_ENV, "0.1")
    for size in (16, 16, 32):
        assert _canary(size)[0].units == 7
    monkeypatch.setenv(canary.SLOWDOWN_ENV, "0.2")
    _canary(16)
    assert seen == [((16,), 0.1), ((32,), 0.1), ((16,), 0.2)]


def test_canary_source_is_helper_function_plus_the_work(canary):
    helper = get_strategy("helper_function").source(Shape()).splitlines()
    mine = get_strategy("canary").source(Shape()).splitlines()
    added = [line for line in mine if line not in helper]
    assert added == [
        "from jitbench.strategies.canary import planned_units, spin",
        "class Canary:",
        "        self.units = planned_units(self)",
        "        if self.units:",
        "            spin(self.units)",
    ]
    assert [line for line in helper if line not in mine] == ["class HelperFunction:"]


@pytest.mark.parametrize("slowdown", ["0", "0.2"])
def test_canary_results_stay_correct(canary, monkeypatch, slowdown):
    monkeypatch.setattr(canary, "calibrate", lambda obj, y, s: 20)
    monkeypatch.setenv(canary.SLOWDOWN_ENV, slowdown)
    got = jitbench.audit(get_strategy("canary"), CPU)
    helper = jitbench.audit(get_strategy("helper_function"), CPU)
    assert got.stale_results == 0 and got.errors == 0 and got.leaked_instances == 0
    # The same jit cache behaviour as helper_function, step by step.
    assert [(s.name, s.traces, s.compiles, s.outcome) for s in got.steps] == [
        (s.name, s.traces, s.compiles, s.outcome) for s in helper.steps
    ]


def test_canary_registers_only_when_imported():
    for code, registered in (
        ("import jitbench; print('canary' in jitbench.STRATEGIES)", "False"),
        # Its class's work alone (what the generated class imports) registers nothing.
        (
            "import jitbench.strategies.canary, jitbench; print('canary' in jitbench.STRATEGIES)",
            "False",
        ),
        ("import jitbench.ways.canary, jitbench; print('canary' in jitbench.STRATEGIES)", "True"),
    ):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.stdout.strip() == registered, out.stderr


# --- fidelity: the alternation, and a real (small) measurement ---------------------------


def test_interleaved_alternates_with_one_number_of_calls():
    calls: list[str] = []
    ticks = iter(range(10_000))

    def timer() -> float:  # every loop "takes" one second, whatever it runs
        return float(next(ticks))

    timed = inprocess.interleaved(
        lambda: calls.append("g"),
        lambda: calls.append("t"),
        after=lambda: calls.append("|"),
        loop_s=5.0,
        rounds=4,
        min_rounds=4,
        budget_s=0.0,
        timer=timer,
    )
    # Calibration: three loops of one call of the first side; 1 s a loop, so 5 calls
    # make the 5 s asked for. Then 4 rounds, the order swapped every round.
    loops = "".join(calls).split("|")[:-1]
    assert loops[:3] == ["g", "g", "g"]
    assert loops[3:] == ["ggggg", "ttttt", "ttttt", "ggggg", "ggggg", "ttttt", "ttttt", "ggggg"]
    assert timed == {"generated_s": 0.2, "twin_s": 0.2, "rounds": 4, "number": 5}


def test_fidelity_strategies_are_every_builtin_here():
    # All but those too new for the installed flax (the nnx guide's with JAX 0.4.30).
    assert inprocess.fidelity_strategies() == [n for n in TWINS if below_minimum(n) is None]


@pytest.fixture
def quick_fidelity(monkeypatch):
    """Fidelity timing cut to a few short rounds (a test checks its wiring, not the figures)."""
    defaults = {"loop_s": 2e-4, "rounds": 3, "min_rounds": 3, "budget_s": 0.0}
    monkeypatch.setattr(inprocess.interleaved, "__kwdefaults__", {
        **inprocess.interleaved.__kwdefaults__, **defaults
    })  # fmt: skip


def test_measure_fidelity(quick_fidelity):
    names = ["eager", "helper_function", "pytree_class"]
    table = inprocess.measure_fidelity(10, Progress(3), names)
    assert table[["strategy", "measure"]].values.tolist() == [
        [name, measure] for name in names for measure in stats.FIDELITY_MEASURES
    ]
    assert table["same_result"].all() and (table["rounds"] == 3).all()
    assert (table["size"] == 10).all() and (table["device"] == "cpu").all()
    assert np.isfinite(table["ratio"]).all() and (table["ratio"] > 0).all()
    assert table["ratio"].tolist() == (table["generated_s"] / table["twin_s"]).tolist()
    assert table["held"].tolist() == [False, False, True, True, True, True]


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
    ok = not math.isnan(value)
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
        "samples": list(value * SPREAD) if ok else None,
        "status": "ok" if ok else "skipped",
        "version": "v1",
        "started_at": pd.Timestamp("2024-01-01", tz="UTC"),
        "case": f"{benchmark}('{strategy}', {size}, '{device}')",
    }


def _run(machine: str, values: dict[tuple[str, str, int, str], float]) -> pd.DataFrame:
    frame = pd.DataFrame(
        [_row(machine, b, s, n, d, v) for (b, s, n, d), v in values.items()], columns=COLUMNS
    )
    text = ["machine", "commit", "env", "python", "jax", "benchmark", "kind", "strategy"]
    frame[[*text, "device", "unit", "status", "version", "case"]] = frame[
        [*text, "device", "unit", "status", "version", "case"]
    ].astype("string")
    frame["size"] = frame["size"].astype("Int64")
    frame[["number", "repeat"]] = frame[["number", "repeat"]].astype("Int64")
    return frame


def test_spread_is_the_95th_percentile_of_the_deviation():
    ratios = [1.01] * 10 + [0.99] * 9 + [1.5]
    # 20 deviations, 19 of 0.01 and one of 0.5: p95 interpolates 5% of the way to 0.5.
    assert stats.spread(ratios) == pytest.approx(0.01 + 0.05 * 0.49)
    assert stats.spread([1.0, 1.0]) == 0
    assert stats.spread(pd.Series([1.2, math.nan])) == pytest.approx(0.2)
    assert math.isnan(stats.spread([]))


def test_fidelity_and_accuracy_ratios():
    measured = pd.DataFrame(
        {
            "strategy": ["eager", "helper_function", "jit_per_call", "pytree_class"],
            "measure": ["cached call"] * 4,
            "generated_s": [2e-5, 1.2e-5, 5e-2, 1e-5],
            "twin_s": [1e-5, 1e-5, 1e-2, 1.05e-5],
        }
    )
    table = stats.fidelity_table(measured)
    assert table["ratio"].round(4).tolist() == [2.0, 1.2, 5.0, 0.9524]
    assert table["held"].tolist() == [False, True, False, True]
    assert table["in_range"].tolist() == [False, False, False, True]
    accuracy = stats.accuracy_table(
        pd.DataFrame({"asv_s": [10e-6, 13e-6, 5e-6], "timeit_s": [10e-6, 10e-6, 5.5e-6]})
    )
    assert accuracy["ratio"].round(4).tolist() == [1.0, 1.3, 0.9091]
    assert accuracy["in_range"].tolist() == [True, False, True]


def _noise_runs() -> tuple[pd.DataFrame, pd.DataFrame]:
    first, second = {}, {}
    cached = {"a": 1.00, "b": 1.02, "c": 0.97, "d": 1.01}
    for i, (strategy, ratio) in enumerate(cached.items()):
        for size, device, drift in ((10, "cpu", ratio), (1_000_000, "cpu-sharded", 1.25)):
            first[CACHED, strategy, size, device] = 1e-5 * (i + 1)
            second[CACHED, strategy, size, device] = 1e-5 * (i + 1) * drift
            first[DISPATCH, strategy, size, device] = 1e-6
            second[DISPATCH, strategy, size, device] = 1e-6
            first[COLD, strategy, size, device] = 0.05
            second[COLD, strategy, size, device] = 0.05 * (1.3 if strategy == "d" else 1.0)
    first[CACHED, "a", 10, "gpu"] = second[CACHED, "a", 10, "gpu"] = math.nan  # n/a: left out
    return _run("one", first), _run("two", second)


def test_noise_table_summary_and_the_file_compare_reads(tmp_path):
    table = stats.noise_table(*_noise_runs(), 1.05)
    assert len(table) == 24 and set(table["family"]) == set(stats.FAMILIES.values())
    row = table.set_index("case").loc[f"{CACHED}('c', 10, 'cpu')"]
    assert row["ratio"] == pytest.approx(0.97) and row["spread"] == pytest.approx(0.03)
    result = stats.noise_summary(table).set_index(["family", "scope"])
    small, every = stats.SCOPES["small"], stats.SCOPES["all"]
    # The cached-call target is about small sizes on cpu, where the drift is small.
    assert result.loc[("cached call", small), "spread"] == pytest.approx(
        np.percentile([0.0, 0.02, 0.03, 0.01], 95)
    )
    assert (
        result.loc[("cached call", small), "met"]
        and result.loc[("cached call", small), "rows"] == 4
    )
    assert result.loc[("cached call", every), "spread"] == pytest.approx(0.25)
    assert pd.isna(result.loc[("cached call", every), "met"])  # reported, not judged
    assert result.loc[("dispatch", small), "spread"] == 0
    # The cold-call target is about every row; one 30% move in 8 misses it.
    assert result.loc[("cold first call", every), "flagged"] == 2
    assert result.loc[("cold first call", every), "met"] == False  # noqa: E712
    assert pd.isna(result.loc[("cold first call", small), "met"])
    # validate's noise.csv is what compare --noise reads.
    path = tmp_path / "noise.csv"
    table.to_csv(path, index=False)
    noise = Noise.load(path)
    assert noise.threshold(CACHED, f"{CACHED}('c', 10, 'cpu')") == (pytest.approx(0.03), "row")
    p95 = noise.threshold(CACHED, f"{CACHED}('e', 10, 'cpu')")
    assert p95 == (pytest.approx(stats.spread(table[table["benchmark"] == CACHED]["ratio"])), "p95")
    assert noise.threshold(stats.catalog.MEMORY, "x") == (pytest.approx(math.nan, nan_ok=True), "")


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
    judged = stats.judge_sensitivity(_sensitivity_pairs(), 1.05)
    assert len(judged) == 3 * 3 * 6  # gpu rows are n/a and left out
    result = stats.sensitivity_summary(judged).set_index("slowdown_pct")
    assert result["canary_flagged"].tolist() == [0, 6, 6]
    assert result["false_flags"].tolist() == [0, 0, 0]
    assert result.loc[10.0, "canary_ratio_median"] == pytest.approx(1.10)
    assert stats.smallest_flagged(result.reset_index()) == 10.0
    by_size = stats.sensitivity_summary(judged, by_size=True)
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
    judged = stats.judge_sensitivity(_sensitivity_pairs(false_flag_at=(2, 10.0)), 1.05)
    result = stats.sensitivity_summary(judged)
    row = result.set_index("slowdown_pct").loc[10.0]
    assert row["false_flags"] == 1
    assert "r2 " in row["false_flag_cases"] and "'eager'" in row["false_flag_cases"]
    assert stats.smallest_flagged(result) == 20.0
    assert stats.smallest_flagged(result, require_clean=False) == 10.0


def _outcome(out: Path, phases: tuple[str, ...]) -> Outcome:
    plan = Plan(out, 3, (5.0, 10.0, 20.0), 1.05, (10,), phases)
    outcome = Outcome(plan, "f" * 40, 0.0, {p: 1.0 for p in phases})
    outcome.fidelity = stats.fidelity_table(
        pd.DataFrame(
            {
                "strategy": ["eager", "eager", "helper_function", "helper_function"],
                "measure": list(stats.FIDELITY_MEASURES) * 2,
                "size": [10] * 4,
                "device": ["cpu"] * 4,
                "same_result": [True] * 4,
                "generated_s": [3e-5, 3e-5, 1e-5, 1.2e-5],
                "twin_s": [1e-5, 1e-5, 1e-5, 1e-5],
                "rounds": [40] * 4,
            }
        )
    )
    outcome.noise = stats.noise_table(*_noise_runs(), 1.05)
    outcome.noise_summary = stats.noise_summary(outcome.noise)
    judged = stats.judge_sensitivity(_sensitivity_pairs(false_flag_at=(1, 20.0)), 1.05)
    outcome.sensitivity = judged
    outcome.sensitivity_summary = stats.sensitivity_summary(judged)
    return outcome


def test_summary_and_report(tmp_path):
    outcome = _outcome(tmp_path / "out", ("fidelity", "noise", "sensitivity"))
    table = summary.summary_table(outcome, 100.0)
    assert table["check"].tolist() == [
        "fidelity: cached call, generated class / hand-written twin",
        "fidelity: dispatch, generated class / hand-written twin",
        f"noise: cached call spread, {stats.SCOPES['small']} (p95 of abs(ratio - 1))",
        f"noise: dispatch spread, {stats.SCOPES['small']} (p95 of abs(ratio - 1))",
        "noise: cold first call spread, all rows (p95 of abs(ratio - 1))",
        "sensitivity: smallest slowdown flagged every repetition, no false flag",
    ]  # no runtime row: not every phase ran
    assert table["met"].tolist() == [True, False, True, True, False, True]
    assert table["reached"][0] == "1.000-1.000 (1/1 in range); not held to it: eager x3.00"
    path = writer.write_report(outcome, table, 100.0)
    text = path.read_text()
    lines = text.splitlines()
    # The report's header line and summary table, as summary.json renders them too.
    assert lines[2].startswith("Commit ffffffffffff, JAX ") and "## Summary" in lines
    assert "- Fidelity: outside 0.9-1.1: dispatch helper_function x1.20." in text
    assert "| eager           | cached call | 30.0μs" in text and "not held" in text
    assert "**10%**" in text
    assert "- Noise above target: cold first call 30.0% over all rows (cpu size 10: 25%" in text
    assert {p.name for p in outcome.plan.out.iterdir()} == {
        "validation.md",
        "summary.json",
        "summary.csv",
        "fidelity.csv",
        "noise.csv",
        "noise_summary.csv",
        "noise_by_size.csv",
        "sensitivity.csv",
        "sensitivity_summary.csv",
    }
    assert Noise.load(outcome.plan.out / "noise.csv").rows == dict(
        zip(outcome.noise["case"], outcome.noise["spread"], strict=True)
    )
    # The brief summary the README's validation page is generated from: the same header
    # line and summary table as validation.md, from the JSON alone.
    record = json.loads((outcome.plan.out / "summary.json").read_text())
    assert record["commit"] == "f" * 40 and record["sizes"] == [10]
    assert record["seconds"] == {"total": 100.0, "fidelity": 1.0, "noise": 1.0, "sensitivity": 1.0}
    assert [row["met"] for row in record["summary"]] == table["met"].tolist()
    assert writer.header(record) == lines[2]
    assert f"## Summary\n\n{markdown_blocks([writer.verdicts(record['summary'])])}" in text


# --- running it, and input errors -------------------------------------------------------


def _arguments(out: Path, **changes):
    options = {
        "repetitions": 3,
        "slowdowns": (5.0, 10.0, 20.0),
        "factor": 1.05,
        "sizes": (10, 1_000_000),
        "phases": ("fidelity",),
    }
    return {**options, **changes}


def test_fidelity_phase_alone_outside_a_checkout(tmp_path, monkeypatch, capsys, quick_fidelity):
    monkeypatch.chdir(tmp_path)  # fidelity needs the package only, not the suite's checkout
    monkeypatch.setattr(inprocess, "fidelity_strategies", lambda: ["helper_function"])
    status = validate.run_validation(tmp_path / "report", **_arguments(tmp_path))
    out = capsys.readouterr().out
    assert "| fidelity: cached call, generated class / hand-written twin" in out
    text = (tmp_path / "report" / "validation.md").read_text()
    assert text.splitlines()[2].startswith("Commit n/a, JAX ")
    fidelity = pd.read_csv(tmp_path / "report" / "fidelity.csv")
    assert fidelity[["strategy", "measure"]].values.tolist() == [
        ["helper_function", "cached call"],
        ["helper_function", "dispatch"],
    ]
    # Whether a ratio landed in the target is this machine's business; the verdicts and
    # the exit status must follow from the ratios the run recorded, whichever they are.
    in_range = fidelity["in_range"].tolist()
    verdicts = pd.read_csv(tmp_path / "report" / "summary.csv")
    assert verdicts["met"].tolist() == in_range
    assert status == (0 if all(in_range) else 1)


BAD = [
    (
        {"phases": ("speed",)},
        "unknown phase 'speed'; valid: fidelity, accuracy, noise, sensitivity",
    ),
    ({"phases": ()}, "unknown phase ''; valid: fidelity"),
    ({"repetitions": 0}, "repetitions must be a positive integer, got 0"),
    ({"slowdowns": (5.0, 0.0)}, "a slowdown must be a percentage > 0 such as 10, got 0.0"),
    ({"slowdowns": (math.nan,)}, "a slowdown must be a percentage > 0 such as 10, got nan"),
    ({"factor": 0.5}, "factor must be a number >= 1 such as 1.05, got 0.5"),
    ({"sizes": (10, 7)}, "size 7 is not in the suite's grid; valid: 10, 1000, 100000, 1000000"),
]


@pytest.mark.parametrize(("changes", "message"), BAD)
def test_bad_input_raises_and_writes_nothing(tmp_path, changes, message):
    out = tmp_path / "report"
    with pytest.raises(JitbenchError, match=re.escape(message)):
        validate.run_validation(out, **_arguments(out, **changes))
    assert not out.exists()


def test_report_folder_must_be_a_folder_outside_the_results(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    with pytest.raises(JitbenchError, match="exists and is not a directory"):
        validate.run_validation(tmp_path / "file", **_arguments(tmp_path))
    monkeypatch.chdir(REPO / "benchmarks")  # the checkout is found from here, as asv finds it
    inside = REPO / "results" / "validation"
    with pytest.raises(JitbenchError, match="is inside the asv results dir"):
        validate.run_validation(inside, **_arguments(inside))
    assert not inside.exists()


def test_suite_phases_need_a_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for phase in ("accuracy", "noise", "sensitivity"):
        with pytest.raises(JitbenchError, match="found from the working directory") as caught:
            validate.run_validation(tmp_path / "r", **_arguments(tmp_path, phases=(phase,)))
        assert "no jitbench checkout at or above" in str(caught.value)
    assert not (tmp_path / "r").exists()


def test_plan_knows_the_phases():
    assert PHASES == validate.PHASES == ("fidelity", "accuracy", "noise", "sensitivity", "counts")
    assert PHASES == cli.VALIDATE_PHASES
    plan = Plan(Path("r"), 1, (5.0,), 1.05, (10,), ("fidelity",))
    assert not plan.needs_suite and dataclasses.replace(plan, phases=("noise",)).needs_suite


CLI_BAD = [
    (["--repetitions", "0"], "--repetitions: must be a positive integer, got '0'"),
    (
        ["--phases", "speed"],
        "unknown phase 'speed'; valid: fidelity, accuracy, noise, sensitivity, counts",
    ),
    (["--slowdowns", "5,abc"], "a slowdown in percent such as 10, got 'abc'"),
    (["--sizes", "10,7"], "size 7 is not in the suite's grid; valid: 10, 1000, 100000, 1000000"),
    (["--cpu-affinity", "4096"], "unknown CPU '4096'; valid: 0"),
]


@pytest.mark.parametrize(("argv", "message"), CLI_BAD)
def test_cli_bad_input(tmp_path, argv, message):
    """The installed command: one line on stderr, exit 2, nothing written."""
    command = Path(sys.executable).with_name("jitbench")
    out = tmp_path / "report"
    done = subprocess.run(
        [str(command), "validate", "--out", str(out), *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not out.exists()


def _counts_table(base: dict, slowed: list[dict], twin: dict) -> pd.DataFrame:
    """Counts in measure_counts' layout: place i holds strategy i, the last the canary's."""
    rows = []
    plans = {"base": base, **{f"slowed {i + 1}": s for i, s in enumerate(slowed)}, "twin": twin}
    for process, found in plans.items():
        for place, (strategy, count) in enumerate(found.items()):
            for kind, factor in (("call", 1.0), ("dispatch", 0.8)):
                rows.append(
                    {
                        "process": process, "place": place, "strategy": strategy.strip("*"),
                        "slowdown": 0.02 if process.startswith("slowed") and strategy == "*" else 0,
                        "kind": kind, "instructions": count * factor, "outcome": "ok",
                    }
                )  # fmt: skip
    return pd.DataFrame(rows)


def test_counts_figures_judge_same_places_of_different_processes():
    from jitbench.validate import counts

    base = {"eager": 200_000, "helper_function": 50_000, "*": 50_500}
    slowed = [
        {"eager": 200_100, "helper_function": 50_050, "*": 51_510},  # +2.0%: flagged
        {"eager": 203_000, "helper_function": 50_000, "*": 50_700},  # eager +1.5%: false flag
    ]
    twin = {"eager": 200_500, "helper_function": 52_000}  # helper's twin 4% off
    found = counts.figures(_counts_table(base, slowed, twin), [100.0, 120.0, 110.0])
    assert found["noise_rows"] == 4  # two strategies x two kinds, the canary's place apart
    assert found["noise_max"] == pytest.approx(0.015)
    assert found["canary_judged"] == 4 and found["canary_flagged"] == 2  # +0.4% is not
    assert found["canary_ratios"] == pytest.approx([1.02, 1.02, 50_700 / 50_500, 50_700 / 50_500])
    # eager's +1.5% (second to third process), both kinds; nothing else moved beyond 1%.
    assert found["false_flags"] == 2 and found["unchanged_pairs"] == 8
    assert found["fidelity_outside"] == [
        "helper_function call x0.962",
        "helper_function dispatch x0.962",
    ]
    assert [r["strategy"] for r in found["per_call"]] == ["eager", "helper_function"]
    rows = {r["check"].split(":")[1].strip()[:12]: r["met"] for r in counts.summary_rows(found)}
    assert rows == {
        "spread of a ": False, "+2% planted,": False, "fidelity, ge": False, "one process ": True
    }  # fmt: skip


def test_counts_figures_leave_out_and_name_what_was_not_counted():
    from jitbench.measure.counting.instructions import COMPILES_REASON
    from jitbench.validate import counts

    base = {"helper_function": 50_000, "jit_per_call": 0, "*": 50_000}
    slowed = [{"helper_function": 50_000, "jit_per_call": 0, "*": 51_000}]
    table = _counts_table(base, slowed, {"helper_function": 50_000, "jit_per_call": 0})
    skipped = table["strategy"] == "jit_per_call"
    table.loc[skipped, "instructions"] = float("nan")
    table.loc[skipped, "outcome"] = COMPILES_REASON
    found = counts.figures(table, [100.0, 100.0])
    assert found["noise_rows"] == 2 and found["fidelity_rows"] == 2 and found["false_flags"] == 0
    assert [r["strategy"] for r in found["per_call"]] == ["helper_function"]
    assert found["not_counted"] == {"jit_per_call": COMPILES_REASON}


def test_the_counts_phase_names_each_process_before_counting_it(monkeypatch, capsys):
    from jitbench.measure.counting.instructions import Counts
    from jitbench.validate import counts

    def count_rows(rows):
        print(f"counting {len(rows)} rows", file=sys.stderr)
        return [Counts(1000.0, 900.0) for _ in rows]

    monkeypatch.setattr(counts, "count_rows", count_rows)
    counts.measure_counts(10, Progress(5))
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(" (load")[0] for line in lines[:4]] == [
        "[1/5] counts: process base",
        f"counting {len(inprocess.fidelity_strategies()) + 1} rows",
        "[2/5] counts: process slowed 1",
        f"counting {len(inprocess.fidelity_strategies()) + 1} rows",
    ]
