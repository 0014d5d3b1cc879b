"""``jitbench audit TARGET`` and ``jitbench time TARGET``: outputs, and bad input in one line."""

from __future__ import annotations

import csv
import io
import json

import pytest
from jax_releases import needs
from test_object_audit import _target_audit

import jitbench
from jitbench import time_object
from jitbench.auditing.scenario import SCENARIO
from jitbench.cli import main
from jitbench.devices import resolve
from jitbench.measure.timing import Spread
from jitbench.targets import load_target
from jitbench.ways.subject import Generated

SEED = ["user_models:custom_class", "--call", "calc", "--inputs", "user_models:vector"]


def test_audit_target_table(capsys):
    assert main(["audit", *SEED]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "cache audit of user_models:custom_class (CustomClass, call calc)"
    assert out[1] == "on cpu, the first array field played of 64 elements"
    assert out[2] == "fields played: 2"  # and how many were left out, where any were
    rows = [line.split() for line in out[7:15]]
    assert [r[0] for r in rows] == list(SCENARIO)
    assert rows[2] == ["new_static", "mul", "attribute", "setattr", "0/0!"]  # a plain object's
    assert "leaked: 3 objects, 3 arrays" in out
    verdict = out[out.index("verdict:") + 1 :]
    assert verdict == [f"  - {line}" for line in _target_audit(SEED[0], "calc").verdict]


def test_audit_target_json_and_csv(capsys):
    assert main(["audit", *SEED, "--format", "json"]) == 0
    (data,) = json.loads(capsys.readouterr().out)
    assert data["target"] == "user_models:custom_class" and data["matches"] == "static_self_id_hash"
    assert (data["leaked_instances"], data["leaked_arrays"]) == (3, 3)  # the arrays counted too
    assert [s["field"] for s in data["steps"]] == ["", "", "mul", "mul", "x", "x", "", ""]
    assert main(["audit", *SEED, "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0][:8] == [
        "subject",
        "device",
        "size",
        "step",
        "field",
        "how",
        "traces",
        "compiles",
    ]
    assert rows[3][3:9] == ["new_static", "mul", "setattr", "0", "0", "stale"]


def test_audit_target_explain(capsys):
    assert main(["audit", *SEED, "--explain"]) == 0
    out = capsys.readouterr().out
    assert "  equal_instance (1/1): a new instance built from the same field values\n" in out
    assert out.count("TRACING CACHE MISS") == 3  # first, equal and other instance


@pytest.mark.parametrize(
    "args, message",
    [
        (["audit", "user_models:nope"],
         "target 'user_models:nope': 'user_models' has no attribute 'nope'"),
        (["audit", "no_such_pkg_jb.models:make"],
         "target 'no_such_pkg_jb.models:make': cannot import module 'no_such_pkg_jb.models': "
         "ModuleNotFoundError: No module named 'no_such_pkg_jb'"),
        (["audit", "user_models:NOT_A_FACTORY"],
         "target 'user_models:NOT_A_FACTORY' is not callable: it is a int"),
        (["audit", "user_models:custom_class"],
         "target 'user_models:custom_class' (CustomClass) has no method '__call__'; "
         "its methods: calc"),
        (["audit", "user_models:custom_class", "--call", "calcc"],
         "target 'user_models:custom_class' (CustomClass) has no method 'calcc'; "
         "its methods: calc"),
        (["audit", "user_models:mlp", "--call", "user_models:forward", "--inputs",
          "user_models:scalar"],
         # JAX's own words for the shape error follow (they differ by release).
         "the first call of target 'user_models:mlp': the call without jit (the oracle) raises: "),
        (["advise", "user_models:mlp", "--call", "user_models:forward", "--inputs",
          "user_models:scalar", "--no-count"],
         "the first call of target 'user_models:mlp (as written)': the call without jit (the "
         "oracle) raises: "),
        (["audit", "user_models:scaled", "--strategy", "eager"],
         "give a TARGET ('user_models:scaled') or --strategy, not both"),
        (["time"], "give a TARGET (package.module:factory) or --strategy NAME, one of them"),
        (["time", "user_models:custom_class", "--call", "nope"],
         "target 'user_models:custom_class' (CustomClass) has no method 'nope'; "
         "its methods: calc"),
        (["time", "user_models:scaled", "--inputs", "user_models:wrong_inputs"],
         "inputs 'user_models:wrong_inputs' raised ValueError: batch size must be positive"),
        (["time", "user_models:linear", "--call", "user_models:apply", "--inputs",
          "user_models:scalar"],
         "the first call of target 'user_models:linear' raises: "),
        (["time", "--strategy", "nope"], None),
        (["audit", "user_models:scaled", "--size", "10"],
         "--size 10 applies to --strategy; a TARGET's arrays are what its factory builds"),
        (["time", "user_models:scaled", "--device", "cpu-sharded"],
         "--device 'cpu-sharded': a target is measured unsharded; 'cpu-sharded' does not apply"),
    ],
)  # fmt: skip
def test_bad_target_is_one_line_exit_2_nothing_written(args, message, capsys):
    assert main(args) == 2
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.splitlines()
    if message is None:  # the registry's own message
        assert line.startswith("jitbench: error: unknown strategy 'nope'; valid: eager, ")
    elif message.endswith(": "):
        assert line.startswith(f"jitbench: error: {message}") and len(line) > len(message) + 20
    else:
        assert line == f"jitbench: error: {message}"


@pytest.mark.slow  # two jitbench time runs, cold calls in fresh processes
def test_time_target_and_strategy_measure_the_same_things(capsys):
    assert main(["time", "user_models:scaled", "--inputs", "user_models:vector",
                 "--repeat", "2", "--format", "json"]) == 0  # fmt: skip
    mine = json.loads(capsys.readouterr().out)
    assert (
        main(["time", "--strategy", "pytree_dataclass", "--repeat", "2", "--format", "json"]) == 0
    )
    builtin = json.loads(capsys.readouterr().out)
    assert set(mine) == set(builtin) == {
        "target", "device", "cold", "cold_on", "cold_filled", "cached", "dispatch", "loop",
        "after_change", "restarts",
    }  # fmt: skip
    # A restarted script's first call, in fresh processes, for a target and a strategy alike.
    assert mine["restarts"] == builtin["restarts"] == ""
    assert mine["cold_filled"]["samples"] == builtin["cold_filled"]["samples"] == 5
    assert [a["step"] for a in mine["after_change"]] == [a["step"] for a in builtin["after_change"]]
    assert [a["step"] for a in mine["after_change"]] == list(SCENARIO)
    assert mine["cold_on"] == builtin["cold_on"] == "a new instance from the factory"
    assert mine["cached"]["samples"] >= 2 and builtin["cold"]["samples"] == 5
    assert main(["time", "user_models:scaled", "--inputs", "user_models:vector",
                 "--repeat", "2"]) == 0  # fmt: skip
    table = capsys.readouterr().out.splitlines()
    assert [row.split("  ")[0] for row in table[5:10]] == [
        "cold first call", "cold first call, cache filled", "dispatch", "cached call",
        "loop per call",
    ]  # fmt: skip
    assert table[10].startswith("after first_call ")


def test_time_object_counts_what_it_was_asked():
    target = Generated(jitbench.get_strategy("helper_function"), resolve("cpu"), 16).target
    result = time_object(target, repeat=3, number=4, cold_calls=2, after_runs=2, fields="s0")
    for figure in (result.cached, result.dispatch, result.loop):
        assert figure is not None and figure.samples >= 3 and figure.number == 4  # more: unknown
    assert result.cold.samples == 2 and all(a.seconds.samples == 2 for a in result.after_change)
    assert result.cold_filled is None or result.cold_filled.samples == 2
    assert [(a.step, a.field) for a in result.after_change] == [
        ("first_call", ""), ("repeat_call", ""), ("new_static", "s0"), ("seen_static", "s0"),
        ("equal_instance", ""), ("other_instance", ""),
    ]  # fmt: skip
    without_factory = load_target("user_models:scaled", inputs="user_models:vector")
    from dataclasses import replace

    result = time_object(replace(without_factory, factory=None), repeat=2, cold_calls=2,
                         after_runs=1)  # fmt: skip
    assert result.cold_on == "a copy of the object, caches cleared"


def test_spread_quartiles():
    # Five samples are too few for 95% bounds of the median: their range stands for them.
    assert Spread.of([4.0, 1.0, 3.0, 2.0, 5.0]) == Spread(3.0, 2.0, 4.0, 5, 1, 1.0, 5.0)
    assert Spread.of([2.0], 10) == Spread(2.0, 2.0, 2.0, 1, 10, 2.0, 2.0)


@pytest.mark.slow  # the README example end to end, each command a fresh process
def test_the_documented_example_runs_as_a_user_runs_it(bare_env):
    """docs/examples/equinox_mlp.py, found through PYTHONPATH as its docstring says."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**bare_env, "PYTHONPATH": f"{root / 'docs' / 'examples'}:{root}"}
    args = ["equinox_mlp:mlp", "--call", "equinox_mlp:forward", "--inputs", "equinox_mlp:batch"]
    args += ["--fields", "layers[0].", "--format", "json"]
    command = [sys.executable, "-m", "jitbench", "audit", *args]
    out = subprocess.run(command, capture_output=True, text=True, env=env, cwd=root)
    assert out.returncode == 0, out.stderr
    (data,) = json.loads(out.stdout)
    assert data["matches"] == "equinox_filter_jit" and data["stale_results"] == 0
    assert {s["field"] for s in data["steps"]} == {
        "", "layers[0].weight", "layers[0].bias", "layers[0].in_features",
        "layers[0].out_features", "layers[0].use_bias",
    }  # fmt: skip


@needs("nnx_jit_partial")
@pytest.mark.parametrize("factory", ["graph_mode", "jit_partial", "split_state"])
def test_flax_benchmark_example_compiles_once_then_reuses(factory, monkeypatch):
    """docs/examples/flax_mlp.py: flax's overhead benchmark's three calls, as targets."""
    from pathlib import Path

    from jitbench.compiles import count_compiles

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "docs" / "examples"))
    target = load_target(f"flax_mlp:{factory}")
    call = target.function()
    with count_compiles() as first:
        call()
    with count_compiles() as again:
        call()
        call()
    assert (first.compiles, again.compiles) == (1, 0)


def test_time_says_why_a_step_is_not_judged(capsys):
    """A change that leaves the result without jit as it was (the audit's '?') is not judged:
    not a result that differs from the call's without jit, which is a stale one."""
    from jitbench.cli import render
    from jitbench.measure.timing import AfterChange, Spread, Timings

    once = Spread(1e-5, 1e-5, 1e-5, 1, 1)
    after = (AfterChange("same_shape_array", "max_speed", ".replace", once, "unjudged"),
             AfterChange("new_static", "mul", "setattr", once, "stale"))  # fmt: skip
    render.timings(Timings("t", "cpu", once, "x", once, once, after, once, once), "table", 1)
    lines = capsys.readouterr().out.splitlines()
    unjudged = next(line for line in lines if line.startswith("after same_shape_array max_speed:"))
    assert unjudged.endswith(
        "leaves the result without jit as it was, so whether jit sees it "
        "is not known (jit reused a program: seen or not, it returns the same)"
    )
    stale = next(line for line in lines if line.startswith("after new_static mul:"))
    assert stale == "after new_static mul: STALE: its result differs from the call's without jit"
