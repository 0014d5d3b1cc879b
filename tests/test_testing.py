"""jitbench.testing and its pytest plugin, used as a project uses them.

A throwaway project (the README's ``Scaler`` with the default hash, its
pytree-registered twin, a test file using the plugin) is tested by a pytest of its
own in a subprocess, with the plugin loaded through the installed entry point;
outcomes are read from its JUnit XML. The counts tests run three Valgrind processes
in all: a baseline written, then the unchanged project and a copy with about 2% of
planted additions on the call path, side by side.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
import user_models
from conftest import without_host_devices
from jax_releases import for_release
from test_object_audit import VALUE_HASH_STALE

from jitbench.errors import JitbenchError
from jitbench.measure.counting import callgrind
from jitbench.testing import HAZARDS, assert_jit_safe, compiles, counts
from jitbench.testing.counts import CountsCheck, CountsImproved, check_counts

MODEL = '''\
"""The README's Scaler, jitted with the default hash, and its pytree-registered twin."""

from functools import partial

import jax
import jax.numpy as jnp


class Scaler:
    def __init__(self, x, mul):
        self.x, self.mul = x, mul

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        return self.x * y if self.mul else y


@jax.tree_util.register_pytree_node_class
class TreeScaler:
    def __init__(self, x, mul):
        self.x, self.mul = x, mul

    def tree_flatten(self):
        return (self.x,), (self.mul,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, *aux)

    @jax.jit
    def calc(self, y):
        return self.x * y if self.mul else y


def tree_scaler():
    return TreeScaler(2.0, True)


def inputs():
    return (jnp.arange(4.0),)
'''
TESTS = """\
import jax.numpy as jnp

from jitbench.testing import assert_jit_safe, compiles
from scaling.model import Scaler, TreeScaler, inputs, tree_scaler


def test_seed_scaler():
    assert_jit_safe(Scaler(2.0, True), call="calc", inputs=inputs())


def test_tree_scaler():
    assert_jit_safe(tree_scaler, call="calc", inputs=inputs())


def test_repeated_call():
    s, y = TreeScaler(2.0, True), jnp.arange(4.0)
    s.calc(y)
    with compiles(max=0):
        s.calc(y)


def test_new_shape():
    s, y, wider = TreeScaler(2.0, True), jnp.arange(4.0), jnp.arange(8.0)
    s.calc(y)
    with compiles(max=0):
        s.calc(wider)


def test_counts(jitbench_counts):
    jitbench_counts(tree_scaler, call="calc", inputs=inputs)
"""
# About 2% of the tree scaler's cached call (65k instructions): flatten runs several times
# per call, an addition costs about 30 instructions each time.
SLOWDOWN = "        n = 0\n" + "        n += 1\n" * 11
COUNTS_TEST = "tests/test_model.py::test_counts"
EXAMPLE = Path(__file__).resolve().parents[1] / "docs" / "examples" / "testing"


def make_project(root: Path, slowed: bool = False) -> Path:
    """The throwaway project at ``root``: docs/testing.md's example project (its model, its
    tests, its pytest settings) and the scaler package with its tests (``slowed``: planted
    additions in the flatten)."""
    (root / "scaling").mkdir(parents=True)
    (root / "tests").mkdir()
    for name in ("pyproject.toml", "affine.py", "tests/test_affine.py"):
        shutil.copy(EXAMPLE / name, root / name)
    (root / "scaling" / "__init__.py").write_text("")
    model = MODEL.replace(
        "    def tree_flatten(self):\n", "    def tree_flatten(self):\n" + SLOWDOWN
    )
    (root / "scaling" / "model.py").write_text(model if slowed else MODEL)
    (root / "tests" / "test_model.py").write_text(TESTS)
    return root


def run_pytest(root: Path, *args: str, path: str | None = None) -> dict[str, tuple[str, str]]:
    """``python -m pytest`` in ``root`` (the plugin from its entry point): per test its
    outcome (passed, failed, skipped) and message, from pytest's JUnit XML."""
    env = without_host_devices(os.environ)
    env.pop("PYTHONPATH", None)
    if path is not None:
        env["PATH"] = path
    report = root / "report.xml"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--junitxml={report}",
         "-q", *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    outcomes = {}
    for case in ET.parse(report).iter("testcase"):
        outcome = ("passed", "")
        for element in case:  # a failure's whole report; a skip's reason
            if element.tag == "failure":
                outcome = ("failure", element.text or "")
            elif element.tag == "skipped":
                outcome = ("skipped", element.get("message") or "")
        module = (case.get("classname") or "").replace(".", "/")
        outcomes[f"{module}.py::{case.get('name')}"] = outcome
    outcomes["stdout"] = ("", done.stdout)
    return outcomes


def _without_valgrind() -> str:
    folders = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(f for f in folders if not os.path.exists(os.path.join(f, "valgrind")))


@pytest.mark.slow  # pytest run in a throwaway project, a fresh process
def test_the_projects_checks_run_and_counts_skip_without_valgrind(tmp_path):
    root = make_project(tmp_path / "project")
    found = run_pytest(root, path=_without_valgrind())
    kind, message = found["tests/test_model.py::test_seed_scaler"]
    assert kind == "failure"
    assert "Scaler (call calc) is not jit-safe: stale (2), leak (3), recompile (1)" in message
    assert "`mul` set to a new value in place is not seen" in message
    assert any(line.removeprefix("E").split()[:5]
               == ["new_static", "mul", "attribute", "setattr", "0/0!"]
               for line in message.splitlines())  # fmt: skip
    assert "behaves like the built-in strategy static_self_id_hash" in message
    assert found["tests/test_model.py::test_tree_scaler"] == ("passed", "")
    assert found["tests/test_model.py::test_repeated_call"] == ("passed", "")
    kind, message = found["tests/test_model.py::test_new_shape"]
    assert kind == "failure"
    assert "1 traces and 1 backend compiles inside the block, expected at most 0" in message
    assert "* at y, now f32[8] and before f32[4]" in message  # JAX's own words
    kind, message = found[COUNTS_TEST]
    assert kind == "skipped"
    assert message.strip() == (
        "instruction counts not checked: valgrind is not on PATH "
        "(Debian/Ubuntu: apt-get install valgrind)"
    )
    assert not (root / counts.BASELINE_NAME).exists()
    # docs/testing.md's example: its checks pass, its count skips for the same reason.
    example = {k: v for k, v in found.items() if k.startswith("tests/test_affine.py::")}
    assert sorted(kind for kind, _ in example.values()) == ["passed"] * 3 + ["skipped"]


HEAVY = ("jax", "jaxlib", "pandas", "jitbench.measure", "jitbench.auditing", "numpy")
RECORD = """\
import json, sys


def pytest_collection_finish(session):
    with open("modules.json", "w") as f:
        json.dump(sorted(sys.modules), f)
"""


def test_collecting_a_project_that_does_not_use_the_plugin_imports_no_jax(tmp_path):
    (tmp_path / "conftest.py").write_text(RECORD)
    (tmp_path / "test_plain.py").write_text("def test_plain():\n    assert True\n")
    loaded = {}
    for name, args in {"with": [], "without": ["-p", "no:jitbench"]}.items():
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
            cwd=tmp_path, capture_output=True, text=True, env=without_host_devices(os.environ),
        )  # fmt: skip
        assert done.returncode == 0, done.stdout
        loaded[name] = set(json.loads((tmp_path / "modules.json").read_text()))
    assert "jitbench.testing.plugin" in loaded["with"]  # the entry point is active
    assert "jax" not in loaded["with"]
    added = loaded["with"] - loaded["without"]
    assert not [m for m in added if m.split(".")[0] in HEAVY or m.startswith(HEAVY)], added
    assert {m for m in added if m.startswith("jitbench")} == {
        "jitbench", "jitbench.errors", "jitbench.hazards", "jitbench.options", "jitbench.testing",
        "jitbench.testing.counts", "jitbench.testing.plugin", "jitbench.vocabulary",
    }  # fmt: skip


def test_a_bad_count_tolerance_is_a_usage_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--count-tolerance=-1"],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 4
    assert "'-1' is not a fraction, 0 or more" in done.stderr


# --- In this process: the seed's class and the libraries' models -----------------------------


def test_the_seed_class_fails_with_its_verdict_and_passes_what_it_allows():
    obj, y = user_models.custom_class(), user_models.vector()
    with pytest.raises(AssertionError) as failed:
        assert_jit_safe(obj, call="calc", inputs=y)
    message = str(failed.value)
    assert message.startswith("CustomClass (call calc) is not jit-safe: stale (3), leak (3)")
    assert "`x` given new values of the same shape in place is not seen" in message
    allowed = ("stale", "leak", "recompile")
    result = assert_jit_safe(obj, call="calc", inputs=(y,), allow=allowed)
    assert result.stale_results == 3
    by_name = assert_jit_safe("user_models:custom_class", call="calc", inputs=y, allow=allowed)
    assert [s.cell for s in by_name.steps] == [s.cell for s in result.steps]


def test_a_call_raising_under_jit_alone_fails_with_the_error_hazard_allow_accepts():
    """A first call that raises under jit and not without it (jax-cosmo's own tree_unflatten
    with a gamma) is the object's error hazard: an AssertionError naming it, never
    jitbench's own error; allow="error" accepts it."""
    with pytest.raises(AssertionError) as failed:
        assert_jit_safe("user_models:returns_function")
    message = str(failed.value)
    assert message.startswith(
        "user_models:returns_function (call user_models.with_function) is not jit-safe: "
        "error (1); allowed: none"
    )
    said = "  - the first call raises under jit, the call without jit does not: TypeError"
    assert said in message
    assert assert_jit_safe("user_models:returns_function", allow="error").hazards() == {"error": 1}


def test_no_warning_of_jitbench_s_own_reaches_a_user_s_run():
    """What jitbench's code calls of JAX raises no warning in a user's tests (JAX 0.12.1
    deprecated jax.sharding.SingleDeviceSharding, which placing a built-in's arrays called
    for every failing check's verdict); pyproject's filterwarnings makes any such
    deprecation an error in every test."""
    import warnings

    import numpy as np

    import jitbench
    from jitbench.auditing.audit import builtin_audits
    from jitbench.devices import resolve

    ours = os.path.dirname(jitbench.__file__)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        resolve("cpu").put(np.ones(3))
        builtin_audits.cache_clear()  # the verdict's built-in audits, placed anew
        with pytest.raises(AssertionError):
            assert_jit_safe(user_models.custom_class(), call="calc", inputs=user_models.vector())
    found = [f"{w.filename}:{w.lineno}: {w.message}" for w in seen if w.filename.startswith(ours)]
    assert not found, found


def test_a_failure_takes_the_cli_s_target_forms_reads_in_few_lines_and_plays_once(monkeypatch):
    from jitbench.auditing import audit
    from jitbench.targets import Inputs

    played = []
    run = audit.run
    monkeypatch.setattr(audit, "run", lambda *a, **k: played.append(a[0].name) or run(*a, **k))
    with pytest.raises(AssertionError) as failed:  # as jitbench audit TARGET --call --inputs
        assert_jit_safe("user_models:custom_class", call="calc", inputs="user_models:vector")
    message = str(failed.value)
    assert message.startswith("user_models:custom_class (call calc) is not jit-safe: stale (3)")
    assert len(message.splitlines()) < 40 and "behaves like the built-in strategy" in message
    assert "same_shape_array  x" in message and "explain=True" in message
    # The scenario once on the target (the built-ins' audits are the verdict's own).
    assert played.count("user_models:custom_class") == 1
    with pytest.raises(AssertionError) as whole:
        assert_jit_safe(user_models.custom_class(), call="calc",
                        inputs=Inputs(user_models.vector()), explain=True)  # fmt: skip
    assert str(whole.value).count("\n") > message.count("\n")  # every step, JAX's reasons


def test_new_values_that_compile_again_are_a_recompile():
    """The seed class hashing its array: correct, but a new program for every new value."""
    with pytest.raises(AssertionError) as failed:
        assert_jit_safe(user_models.value_hash_target)
    message = str(failed.value)
    stale = for_release(VALUE_HASH_STALE)  # JAX 0.9 and 0.10 keyed the class as it first was
    found = f"stale ({stale}), leak (2)" if stale else "leak (2), recompile (1)"
    assert f"is not jit-safe: {found}; allowed: none" in message
    if not stale:
        assert "`x` given new values compile again: the call hashes them" in message
    assert_jit_safe(user_models.value_hash_target, allow=("stale", "leak", "recompile"))


@pytest.mark.parametrize(
    ("factory", "call", "fields"),
    [
        (user_models.mlp, user_models.forward, "layers[0]."),  # eqx.filter_jit
        (user_models.linear, user_models.apply, None),  # nnx.jit
        ("user_models:scaled", None, None),  # a registered dataclass, jax.jit on __call__
    ],
)
def test_libraries_models_are_jit_safe(factory, call, fields):
    result = assert_jit_safe(factory, call=call, inputs=user_models.vector(), fields=fields)
    assert result.stale_results == result.errors == result.leaked_instances == 0


def test_bad_input_names_the_value_and_the_choices():
    obj = user_models.custom_class()
    with pytest.raises(JitbenchError, match=r"unknown hazard 'stales'; the hazards: stale, err"):
        assert_jit_safe(obj, call="calc", inputs=user_models.vector(), allow="stales")
    assert set(HAZARDS) == {"stale", "error", "leak", "recompile"}
    with pytest.raises(JitbenchError, match=r"has no method 'calk'; its methods: calc"):
        assert_jit_safe(obj, call="calk", inputs=user_models.vector())
    with pytest.raises(JitbenchError, match=r"call 3 must be a method name or a function"):
        assert_jit_safe(obj, call=3)
    with pytest.raises(JitbenchError, match=r"give max= or exactly=, not both"):
        with compiles(max=1, exactly=1):
            pass
    with pytest.raises(JitbenchError, match=r"max=-1 must be a whole number"):
        with compiles(max=-1):
            pass
    with pytest.raises(JitbenchError, match=r"target 'model' must be package.module:name"):
        check_counts("model", key="k")
    with pytest.raises(JitbenchError, match=r"cannot be imported by name as 'test_testing:"):
        check_counts(lambda: None, key="k")
    with pytest.raises(JitbenchError, match=r"inputs \(1,\) must be a module-level function"):
        check_counts(user_models.scaled, inputs=(1,), key="k")


def test_compiles_counts_a_block_and_bounds_it():
    f = jax.jit(lambda v: v * 2)
    small, large = jnp.ones(3), jnp.ones(5)
    with compiles(exactly=1) as seen:
        f(small)
    assert (seen.traces, seen.compiles) == (1, 1)
    with compiles(max=0):
        f(small)
    with pytest.raises(AssertionError, match=r"expected exactly 0;.*\n.*TRACING CACHE MISS"):
        with compiles(exactly=0):
            f(large)
    with pytest.raises(ZeroDivisionError):  # the block's own error, not a count
        with compiles(max=0):
            f(jnp.ones(7))
            _ = 1 / 0


# --- The baseline file, without Valgrind ------------------------------------------------------

VERSIONS = {"python": "3.13.0", "jax": "0.12.0.1", "filelock": "4.3.2"}
TARGET = {"target": "user_models:scaled", "call": None, "inputs": None, "device": "cpu"}


@pytest.fixture
def counted(monkeypatch):
    """check_counts with counting available, these versions and a count of 1,000 a call."""
    monkeypatch.setattr(callgrind, "unavailable_reason", lambda: None)
    monkeypatch.setattr(counts, "versions", lambda: dict(VERSIONS))
    monkeypatch.setattr(counts, "_count", lambda what: {"call": 1000, "dispatch": 800})


def test_a_baseline_is_written_then_checked(counted, tmp_path):
    path = tmp_path / "sub" / counts.BASELINE_NAME
    with pytest.raises(AssertionError, match=r"no baseline count of t::a in .*--jitbench-update"):
        check_counts(user_models.scaled, key="t::a", baseline=path)
    written = check_counts("user_models:scaled", key="t::a", baseline=path, update=True)
    assert written.baseline is None
    data = json.loads(path.read_text())
    entry = {**TARGET, "instructions": {"call": 1000, "dispatch": 800}, "versions": VERSIONS}
    assert data["entries"] == {"t::a": entry}
    checked = check_counts(user_models.scaled, key="t::a", baseline=path)
    assert (checked.ratio("call"), checked.ratio("dispatch")) == (1.0, 1.0)
    with pytest.raises(AssertionError, match=r"counts call None; this test counts call calc"):
        check_counts(user_models.scaled, call="calc", key="t::a", baseline=path)


def test_other_versions_are_reported_never_a_regression(counted, tmp_path, monkeypatch):
    path = tmp_path / counts.BASELINE_NAME
    check_counts(user_models.scaled, key="t::a", baseline=path, update=True)
    monkeypatch.setattr(counts, "versions", lambda: {**VERSIONS, "filelock": "absent"})
    monkeypatch.setattr(counts, "_count", lambda what: {"call": 2000, "dispatch": 1600})
    with pytest.raises(unittest.SkipTest) as skipped:
        check_counts(user_models.scaled, key="t::a", baseline=path)
    assert str(skipped.value) == (
        f"instruction counts not compared: the baseline of t::a was counted with filelock "
        f"4.3.2, this run has filelock absent, and counts depend on them: {counts.REFRESH}"
    )


def test_a_count_beyond_the_tolerance_fails_with_old_new_and_ratio(tmp_path):
    grown = CountsCheck("t::a", {"call": 1021, "dispatch": 800}, {"call": 1000, "dispatch": 800},
                        tmp_path)  # fmt: skip
    with pytest.raises(AssertionError) as failed:
        counts._judge(grown, "m:f", "cpu", 0.01)
    assert "  call: 1,000 -> 1,021 instructions, ratio 1.0210\n" in str(failed.value)
    counts._judge(grown, "m:f", "cpu", 0.03)
    fell = CountsCheck("t::a", {"call": 900, "dispatch": 800}, {"call": 1000, "dispatch": 800},
                       tmp_path)  # fmt: skip
    with pytest.warns(CountsImproved, match=r"fell beyond .* ratio 0\.9000"):
        counts._judge(fell, "m:f", "cpu", 0.01)


def test_the_check_judges_the_hosts_share_where_the_baseline_has_it(tmp_path):
    """On a compute-heavy model the whole call is mostly XLA's kernels: a host-side change of 2%
    moves it by a tenth of that, the host's share by all of it (docs/counting.md)."""
    old = {"call": 61_890_000, "dispatch": 61_880_000, "host_call": 3_670_000,
           "host_dispatch": 3_660_000}  # fmt: skip
    new = {"call": 61_963_000, "dispatch": 61_953_000, "host_call": 3_743_000,
           "host_dispatch": 3_733_000}  # fmt: skip
    planted = CountsCheck("t::a", new, old, tmp_path)
    assert planted.judged == ["host_call", "host_dispatch"]
    with pytest.raises(AssertionError) as failed:
        counts._judge(planted, "m:f", "cpu", 0.01)
    assert "  host call: 3,670,000 -> 3,743,000 instructions, ratio 1.0199\n" in str(failed.value)
    assert "  call:" not in str(failed.value)
    # A baseline written before the host's share was counted: judged by what it has.
    older = CountsCheck("t::a", new, {"call": 61_890_000, "dispatch": 61_880_000}, tmp_path)
    assert older.judged == ["call", "dispatch"]
    counts._judge(older, "m:f", "cpu", 0.01)


def test_a_file_that_is_not_a_baseline_is_one_error(tmp_path):
    path = tmp_path / counts.BASELINE_NAME
    path.write_text("[1, 2]")
    with pytest.raises(JitbenchError, match=r"is not a jitbench counts file \(TypeError"):
        counts.read(path)


# --- Under Valgrind: three processes ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(
    callgrind.unavailable_reason() is not None,
    reason=f"counting cannot run here: {callgrind.unavailable_reason()}",
)
def test_a_baseline_holds_on_the_next_run_and_a_planted_slowdown_fails_it(tmp_path):
    root = make_project(tmp_path / "project")
    written = run_pytest(root, "--jitbench-update-counts", COUNTS_TEST)
    assert written[COUNTS_TEST] == ("passed", "")
    assert f"{COUNTS_TEST}: written to {root / counts.BASELINE_NAME}" in written["stdout"][1]
    entry = json.loads((root / counts.BASELINE_NAME).read_text())["entries"][COUNTS_TEST]
    assert entry["versions"]["jax"] == jax.__version__
    assert {"python", "jaxlib", "flax", "equinox", "filelock"} <= set(entry["versions"])
    slowed = make_project(tmp_path / "slowed", slowed=True)
    shutil.copy(root / counts.BASELINE_NAME, slowed / counts.BASELINE_NAME)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        again, slower = pool.map(lambda r: run_pytest(r, COUNTS_TEST), (root, slowed))
    assert again[COUNTS_TEST] == ("passed", "")
    kind, message = slower[COUNTS_TEST]
    assert kind == "failure"
    assert "instructions per call grew beyond the tolerance 0.01" in message
    ratio = float(message.split("call: ")[1].split("ratio ")[1].split()[0])
    assert 1.01 < ratio < 1.04, message
    print(f"baseline {entry['instructions']}; planted slowdown: call ratio {ratio}")


@pytest.mark.slow  # a real Valgrind process, stopped at its limit
@pytest.mark.skipif(
    callgrind.unavailable_reason() is not None,
    reason=f"counting cannot run here: {callgrind.unavailable_reason()}",
)
def test_a_count_that_outlives_its_limit_is_one_line_with_its_seconds(tmp_path, monkeypatch):
    from jitbench.measure.counting import instructions

    monkeypatch.setattr(instructions, "TIMEOUT_S", 2)
    said = []
    with pytest.raises(AssertionError) as failed:
        check_counts("user_models:scaled", key="t::a", baseline=tmp_path / "c.json",
                     update=True, progress=said.append)  # fmt: skip
    assert said == ["jitbench: counting user_models:scaled under Valgrind, in a process of its own"]
    message = str(failed.value)
    assert re.fullmatch(
        r"counting user_models:scaled did not finish in 2 s \(after [23] s\)", message
    ), message


def test_a_correct_flax_training_step_passes_and_the_seed_class_fails():
    """flax's TrainState (linen, BatchNorm, Adam) through a jitted train step, as flax's docs
    write it: no stale result, though Adam's first step rounds apart from the call without
    jit. Each new state the factory builds holds a new ``optax.adam`` (static: its functions
    are made anew), so a new instance compiles once and its transform stays in jit's cache:
    what a project building its state once allows."""
    result = assert_jit_safe(
        "user_models:bn_state",
        call="user_models:bn_train_step",
        inputs="user_models:bn_batch",
        allow=("leak", "recompile"),
    )
    assert result.stale_results == result.errors == 0
    assert result.step("same_shape_array").outcome == "correct"
    with pytest.raises(AssertionError, match="is not jit-safe: stale"):
        assert_jit_safe(user_models.custom_class(), call="calc", inputs=user_models.vector(),
                        allow=("leak", "recompile"))  # fmt: skip
