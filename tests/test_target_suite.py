"""Targets in the benchmark grid: the rows, what each benchmark's state does, discovery errors.

The targets are real objects (``tests/target_models.py``); compile counts come
from ``jax.monitoring`` (:func:`jitbench.measure.count_compiles`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jitbench import changes, target_benchmarks, target_suite
from jitbench.cache_audit import TOTALS
from jitbench.errors import JitbenchError
from jitbench.measure import count_compiles
from jitbench.object_audit import audit_object
from jitbench.target_suite import PreparedTarget, TargetCase

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

from benchmarks import common  # noqa: E402


@pytest.fixture(autouse=True)
def _no_env_targets(monkeypatch):
    monkeypatch.delenv(target_suite.TARGETS_ENV, raising=False)
    monkeypatch.setattr(target_suite, "_reported", set())


def test_specs_are_declared_then_the_environments_each_once(monkeypatch):
    monkeypatch.setenv(target_suite.TARGETS_ENV, f" {ARRAYS_ONLY} ,{MODEL},, ")
    assert target_suite.target_specs([MODEL]) == [MODEL, ARRAYS_ONLY]


def test_no_target_no_classes():
    assert target_benchmarks.benchmark_classes() == {}


def test_classes_have_target_by_device_rows_and_the_changes_of_the_built_in_grid():
    made = target_benchmarks.benchmark_classes([MODEL])
    assert sorted(made) == sorted(c.__name__ for c in target_benchmarks.CLASSES)
    devices = [d for d in common.DEVICES if not d.endswith("-sharded")]
    for name, cls in made.items():
        if name == "TargetAfterChange":
            assert cls.params == [[MODEL], devices, list(changes.TIMED_CHANGES)]
            assert cls.param_names == ["target", "device", "change"]
        else:
            assert cls.params == [[MODEL], devices], name
            assert cls.param_names == ["target", "device"], name


def test_timing_attributes_are_the_built_in_families():
    for mine, theirs in (
        (target_benchmarks.OneCall, common.OneCall),
        (target_benchmarks.ManyCalls, common.ManyCalls),
    ):
        for attribute in ("number", "repeat", "warmup_time", "rounds", "timer"):
            assert getattr(mine, attribute, None) == getattr(theirs, attribute, None), attribute


def test_unimportable_target_is_one_line_and_its_rows_fail_with_it(capsys):
    made = target_benchmarks.benchmark_classes([MISSING, MODEL])
    assert made["TargetCachedCall"].params[0] == [MISSING, MODEL]
    assert capsys.readouterr().err == f"jitbench: error: {MISSING_LINE}\n"
    with pytest.raises(JitbenchError) as raised:
        TargetCase.of(MISSING, "cpu")
    assert str(raised.value) == MISSING_LINE
    assert capsys.readouterr().err == ""  # said once per process


def test_a_name_that_is_no_factory_is_named(capsys):
    found = target_suite.problems(["target_models:not_a_factory", "target_models:absent"])
    assert found == {
        "target_models:not_a_factory": "target 'target_models:not_a_factory' is not callable: "
        "it is a int (from JITBENCH_TARGETS or a benchmark module's declared targets)",
        "target_models:absent": "target 'target_models:absent': 'target_models' has no "
        "attribute 'absent' (from JITBENCH_TARGETS or a benchmark module's declared targets)",
    }


def test_sharded_devices_do_not_apply_to_a_target():
    with pytest.raises(NotImplementedError, match="unsharded"):
        TargetCase.of(MODEL, "cpu-sharded")


def test_cold_call_compiles_and_cached_call_does_not():
    case = TargetCase.of(MODEL, "cpu")
    call = case.cold_call()
    with count_compiles() as cold:
        call()
    assert cold.compiles == 1
    prepared = PreparedTarget(case)
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
    call = target_suite.after_change(TargetCase.of(MODEL, "cpu"), change)
    with count_compiles() as stats:
        call()
    assert stats.compiles == compiles
    audited = audit_object(TargetCase.of(MODEL, "cpu").load(), verdict=False)
    step = next(s for s in audited.steps if s.name == change)
    assert step.compiles == compiles


def test_a_change_the_target_has_no_field_for_is_not_applicable():
    with pytest.raises(NotImplementedError, match="has no new_static change"):
        target_suite.after_change(TargetCase.of(ARRAYS_ONLY, "cpu"), "new_static")


def test_hazard_totals_are_the_audits_and_a_broken_target_fails_its_rows():
    totals = target_suite.audit_all([MODEL, MISSING], ["cpu", "gpu"])
    result = audit_object(TargetCase.of(MODEL, "cpu").load(), verdict=False)
    assert totals[MODEL, "cpu"] == {key: getattr(result, key) for key in TOTALS}
    assert totals[MODEL, "cpu"]["compiles"] == 4
    assert totals[MISSING, "cpu"] == MISSING_LINE
    with pytest.raises(JitbenchError) as raised:
        target_suite.hazard_count(totals, MISSING, "cpu", "compiles")
    assert str(raised.value) == MISSING_LINE
    with pytest.raises(NotImplementedError):
        target_suite.hazard_count(totals, MODEL, "tpu", "compiles")


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
