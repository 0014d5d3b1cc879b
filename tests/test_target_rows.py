"""Targets in the benchmark grid: the rows, what each benchmark's state does, discovery errors.

A target's rows are the built-in strategies' families (``jitbench.suite.families``)
over a (target, device) grid: the same methods measure both kinds of subject.

The targets are real objects (``tests/target_models.py``); compile counts come
from ``jax.monitoring`` (:func:`jitbench.compiles.count_compiles`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jitbench import target_benchmarks
from jitbench.auditing.audit import audit_subject
from jitbench.auditing.scenario import TIMED_CHANGES, call_after
from jitbench.compiles import count_compiles
from jitbench.errors import JitbenchError, NoFigure
from jitbench.measure import case
from jitbench.measure.case import Prepared, Row
from jitbench.suite import families

MODEL = "target_models:make_model"
ARRAYS_ONLY = "target_models:make_arrays"
MISSING = "no_such_package.models:make"
MISSING_LINE = (
    f"target {MISSING!r}: cannot import module 'no_such_package.models': "
    "ModuleNotFoundError: No module named 'no_such_package' "
    "(from JITBENCH_TARGETS or a benchmark module's declared targets)"
)
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks import bench_cached, bench_change, common  # noqa: E402


@pytest.fixture(autouse=True)
def _no_env_targets(monkeypatch):
    monkeypatch.delenv(case.TARGETS_ENV, raising=False)
    monkeypatch.setattr(case, "_reported", set())


def test_specs_are_declared_then_the_environments_each_once(monkeypatch):
    monkeypatch.setenv(case.TARGETS_ENV, f" {ARRAYS_ONLY} ,{MODEL},, ")
    assert case.target_specs([MODEL]) == [MODEL, ARRAYS_ONLY]


def test_no_target_no_classes():
    assert target_benchmarks.benchmark_classes() == {}  # the older init's import still works
    assert target_benchmarks.benchmark_classes is families.benchmark_classes


def test_classes_have_target_by_device_rows_and_the_changes_of_the_built_in_grid():
    made = families.benchmark_classes([MODEL])
    assert sorted(made) == sorted(families.TARGET_FAMILIES)
    devices = [d for d in common.DEVICES if not d.endswith("-sharded")]
    for name, cls in made.items():
        if name == "TargetAfterChange":
            assert cls.params == [[MODEL], devices, list(TIMED_CHANGES)]
            assert cls.param_names == ["target", "device", "change"]
        else:
            assert cls.params == [[MODEL], devices], name
            assert cls.param_names == ["target", "device"], name


def test_a_targets_rows_are_the_built_in_families():
    """The same methods and timing attributes: a target's row and a built-in's are the same
    measurement by construction."""
    made = families.benchmark_classes([MODEL])
    for mine, theirs, method in (
        (made["TargetCachedCall"], bench_cached.CachedCall, "time_cached_call"),
        (made["TargetCachedCall"], bench_cached.CachedCall, "time_cached_call_dispatch"),
        (made["TargetAfterChange"], bench_change.AfterChange, "time_call_after_change"),
    ):
        assert getattr(mine, method) is getattr(theirs, method)
        assert getattr(mine, "setup", None) is getattr(theirs, "setup", None)
        for attribute in ("number", "repeat", "warmup_time", "rounds", "timer"):
            assert getattr(mine, attribute, None) == getattr(theirs, attribute, None), attribute


def test_unimportable_target_is_one_line_and_its_rows_fail_with_it(capsys):
    made = families.benchmark_classes([MISSING, MODEL])
    assert made["TargetCachedCall"].params[0] == [MISSING, MODEL]
    assert capsys.readouterr().err == f"jitbench: error: {MISSING_LINE}\n"
    with pytest.raises(JitbenchError) as raised:
        Row(MISSING, "cpu").load()
    assert str(raised.value) == MISSING_LINE
    assert capsys.readouterr().err == ""  # said once per process


def test_a_name_that_is_no_factory_is_named(capsys):
    found = case.target_problems(["target_models:not_a_factory", "target_models:absent"])
    assert found == {
        "target_models:not_a_factory": "target 'target_models:not_a_factory' is not callable: "
        "it is a int (from JITBENCH_TARGETS or a benchmark module's declared targets)",
        "target_models:absent": "target 'target_models:absent': 'target_models' has no "
        "attribute 'absent' (from JITBENCH_TARGETS or a benchmark module's declared targets)",
    }


def test_sharded_devices_do_not_apply_to_a_target():
    with pytest.raises(NotImplementedError, match="unsharded"):
        Row(MODEL, "cpu-sharded").load()


def test_cold_call_compiles_and_cached_call_does_not():
    subject = Row(MODEL, "cpu").load()
    call = case.cold_call(subject)
    with count_compiles() as cold:
        call()
    assert cold.compiles == 1
    prepared = Prepared(subject)
    with count_compiles() as cached:
        prepared.call()
        prepared.dispatch()
    assert cached.compiles == 0


@pytest.mark.parametrize(
    ("change", "compiles"),
    [
        ("new_static", 1),
        ("seen_static", 0),
        ("same_shape_array", 0),
        ("new_shape_array", 1),
        ("equal_instance", 0),
    ],
)
def test_call_after_each_change_is_the_audits_step(change, compiles):
    subject = Row(MODEL, "cpu").load()
    call = call_after(subject, change, subject.fields(subject.new())[0])
    with count_compiles() as stats:
        call()
    assert stats.compiles == compiles
    audited = audit_subject(subject)
    step = next(s for s in audited.steps if s.name == change)
    assert step.compiles == compiles


def test_a_change_the_target_has_no_field_for_is_not_applicable():
    with pytest.raises(NotImplementedError, match="has no new_static change"):
        families.benchmark_classes([ARRAYS_ONLY])["TargetAfterChange"]().setup(
            ARRAYS_ONLY, "cpu", "new_static"
        )


def test_hazard_totals_are_the_audits_and_a_broken_target_fails_its_rows():
    totals = case.hazard_totals([Row(s, d) for s in (MODEL, MISSING) for d in ("cpu", "gpu")])
    result = audit_subject(Row(MODEL, "cpu").load())
    assert totals[MODEL, "cpu"] == result.totals()
    assert totals[MODEL, "cpu"]["compiles"] == 4
    assert totals[MISSING, "cpu"] == NoFigure(MISSING_LINE, failed=True)
    bench = families.benchmark_classes([MODEL, MISSING])["TargetHazards"]()
    with pytest.raises(JitbenchError) as raised:
        bench.track_compiles(totals, MISSING, "cpu")
    assert str(raised.value) == MISSING_LINE
    with pytest.raises(NotImplementedError):
        bench.track_compiles(totals, MODEL, "tpu")


def test_asv_discovery_keeps_the_suite_when_a_target_cannot_be_imported(tmp_path):
    """One bad target: every built-in benchmark is still discovered, and one line names it."""
    script = (
        "import sys\n"
        "from asv_runner.discovery import list_benchmarks\n"
        "with open(sys.argv[2], 'w') as fp:\n"
        "    list_benchmarks(sys.argv[1], fp)\n"
    )
    listing = tmp_path / "benchmarks.json"
    env = dict(
        os.environ,
        JITBENCH_TARGETS=f"{MISSING},{MODEL}",
        PYTHONPATH=os.pathsep.join((str(ROOT), str(ROOT / "tests"))),
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(ROOT / "benchmarks"), str(listing)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count(MISSING) == 1 and f"jitbench: error: {MISSING_LINE}" in done.stderr
    names = {b["name"]: b for b in json.loads(listing.read_text())}
    assert "bench_cached.CachedCall.time_cached_call" in names
    assert names["bench_targets.TargetCachedCall.time_cached_call"]["params"][0] == [
        repr(MISSING),
        repr(MODEL),
    ]
