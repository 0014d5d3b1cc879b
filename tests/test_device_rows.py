"""The device rows: measured on the CPU through the path an accelerator takes, the committed
TPU v5e run read as the report reads it, and ``jitbench device-run`` end to end on the CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from jitbench import results
from jitbench.errors import NoFigure
from jitbench.measure import device_rows
from jitbench.measure.device_rows import Calls, Changes, too_slow
from jitbench.report import device
from jitbench.report.run import Run
from jitbench.suite import catalog
from jitbench.ways.registry import STRATEGIES, load_plugins

ROOT = Path(__file__).resolve().parents[1]
TPU = "tpu-v5e"


@pytest.fixture
def opted_in(monkeypatch):
    monkeypatch.setenv(device_rows.OPT_IN_ENV, "1")


def test_not_opted_in_every_row_is_one_reason(monkeypatch):
    monkeypatch.delenv(device_rows.OPT_IN_ENV, raising=False)
    table = device_rows.table(["helper_function"], [10], [10], ["cpu"])
    assert isinstance(table, NoFigure) and not table.failed
    with pytest.raises(NotImplementedError, match="device-run"):
        device_rows.lookup(table, ("calls", "helper_function", 10, "cpu"))


def test_rows_on_the_cpu_through_the_accelerators_path(opted_in):
    table = device_rows.table(["helper_function", "aot_compiled"], [10], [10, 1000], ["cpu"])
    for strategy in ("helper_function", "aot_compiled"):
        for size in (10, 1000):
            calls = device_rows.lookup(table, ("calls", strategy, size, "cpu"))
            assert isinstance(calls, Calls)
            assert calls.calls >= device_rows.MIN_CALLS
            assert min(calls.dispatch, calls.call, calls.loop) > 0
        changes = device_rows.lookup(table, ("changes", strategy, 10, "cpu"))
        assert isinstance(changes, Changes) and changes.first_call > 0
    helper = device_rows.lookup(table, ("changes", "helper_function", 10, "cpu"))
    assert {"new_static", "new_shape_array", "equal_instance"} <= set(helper.after)
    assert helper.raised == {}
    # An AOT executable raises on a new shape: that step has no time, but its reason.
    aot = device_rows.lookup(table, ("changes", "aot_compiled", 10, "cpu"))
    assert "new_shape_array" not in aot.after
    assert "Argument types differ" in aot.raised["new_shape_array"]
    with pytest.raises(NotImplementedError, match="not measured in this run"):
        device_rows.lookup(table, ("calls", "helper_function", 100, "cpu"))


def test_the_cpu_stops_at_its_limit_and_an_unavailable_strategy_is_na(opted_in, monkeypatch):
    monkeypatch.setattr(device_rows, "CPU_LIMIT", 100)
    table = device_rows.table(["helper_function"], [10], [10, 1000], ["cpu"])
    with pytest.raises(NotImplementedError, match="CPU rows stop at 100 elements"):
        device_rows.lookup(table, ("calls", "helper_function", 1000, "cpu"))
    table = device_rows.table(["helper_function"], [10], [10], ["tpu"])
    with pytest.raises(NotImplementedError, match="'tpu' is not available on this host"):
        device_rows.lookup(table, ("calls", "helper_function", 10, "tpu"))


def _calls(seconds: float) -> Calls:
    return Calls(seconds, seconds, seconds, 3)


def test_a_size_is_skipped_where_the_two_sizes_before_predict_a_slow_call():
    # What the TPU v5e measured: jit_per_call's compile of its baked-in arrays, value hashing.
    assert too_slow([(10, _calls(0.052))], 1000) is None  # one size alone predicts nothing
    assert too_slow([(10, _calls(0.052)), (1000, _calls(0.052))], 10**5) is None
    skipped = too_slow([(10**5, _calls(0.06)), (10**6, _calls(0.17))], 10**7)
    assert skipped is not None and "about 1.27 s here" in skipped
    assert too_slow([(10**6, _calls(0.00196)), (10**7, _calls(0.058))], 10**8) is not None
    assert too_slow([(10**6, _calls(0.00052)), (10**7, _calls(0.0007))], 10**8) is None


def test_a_skipped_size_skips_every_larger_one(opted_in, monkeypatch):
    monkeypatch.setattr(device_rows, "CALL_LIMIT_S", 0.0)
    table = device_rows.table(["helper_function"], [10], [10, 100, 1000, 10_000], ["cpu"])
    for size in (10, 100):
        assert isinstance(table["calls", "helper_function", size, "cpu"], Calls)
    for size in (1000, 10_000):
        skipped = table["calls", "helper_function", size, "cpu"]
        assert isinstance(skipped, NoFigure) and skipped.reason.startswith("not measured")


# --- The report: synthetic rows ----------------------------------------------------------


def _rows(strategy: str, sizes: list[int], dispatch: list[float], loop: list[float]):
    return pd.DataFrame(
        {"strategy": strategy, "size": sizes, "dispatch_s": dispatch, "loop_s": loop}
    )


def test_the_device_hides_the_host_where_a_loop_outgrows_its_dispatch():
    sizes = [10, 10**6, 10**7, 10**8]
    # helper_function's reference on the chip, microseconds: host-bound up to 1e6.
    helper = _rows("h", sizes, [124, 121, 127, 144], [125, 121, 186, 1783])
    assert device.hidden_from(helper) == "1e7"
    never = _rows("n", sizes, [418, 416, 445, 520], [429, 424, 432, 520])
    assert device.hidden_from(never) == "> 1e8"
    # A blip of noise at a small size (flax_nnx_jit's rows on the chip) is not "from" it.
    blip = _rows("b", sizes, [401, 408, 417, 550], [461, 453, 461, 3070])
    assert device.hidden_from(blip) == "1e8"
    back = _rows("r", sizes, [100, 100, 100, 100], [200, 100, 200, 100])
    assert device.hidden_from(back) == "> 1e8"
    assert device.hidden_from(_rows("x", [], [], [])) == "n/a"
    assert device.size_text(10) == "10" and device.size_text(10**6) == "1e6"
    assert device.size_text(1500) == "1,500"


# --- The committed TPU v5e run -----------------------------------------------------------


@pytest.fixture(scope="module")
def tpu_run(tmp_path_factory):
    frame = results.load(ROOT / "results", machine=TPU)
    key = device.accelerator_runs(frame)[0]
    rows = results.select(frame, machine=key[0], commit=key[1], env=key[2])
    for column in results.PARAM_ORDER:
        if column not in rows:
            rows[column] = pd.Series(pd.NA, index=rows.index, dtype="object")
    return Run(rows.reset_index(drop=True), tmp_path_factory.mktemp("tpu"))


def test_the_committed_tpu_run_has_every_strategy_on_tpu_and_cpu(tpu_run):
    load_plugins()
    head = device.per_strategy(tpu_run)
    assert set(head["device"]) == {"tpu", "cpu"}
    assert device.devices_of(head) == ["tpu", "cpu"]
    for dev in ("tpu", "cpu"):
        mine = head[head["device"] == dev]
        assert set(mine["strategy"]) == set(STRATEGIES)
        figures = ["dispatch_s", "call_s", "loop_s", "first_call_s", "recompile_s"]
        assert mine[figures].notna().all().all(), mine
    assert str(tpu_run.frame["jax"].iloc[0]) == "0.10.2"


def test_the_committed_tpu_rows_agree_with_the_hand_written_reference(tpu_run):
    record = json.loads((ROOT / "docs" / "accelerator" / f"{TPU}-tpu.json").read_text())
    reference = device.reference(record)
    mine = device.calls(tpu_run)
    both = device.agreement(mine[mine["device"] == "tpu"], reference)
    assert set(both["strategy"]) == {"helper_function", "flax_nnx_jit", "eager"}
    ratios = both[[c for c in both if c.endswith("_ratio")]]
    assert ((ratios - 1).abs() <= 0.10).all().all(), both


def test_report_opens_on_the_chips_full_table(tmp_path):
    from jitbench.cli import main

    assert main(["report", "--machine", TPU, "--out", str(tmp_path)]) == 0
    page = (tmp_path / "index.md").read_text()
    first = page[page.index("|") :].splitlines()
    assert first[0].startswith("| strategy") and "hidden from" in first[0]
    # A device-only run has no audit rows: no hazard column (a blank one would read "none").
    assert "hazard" not in first[0] and "no audit rows" in page
    rows = [line for line in first[2:] if line.startswith("|")][: len(STRATEGIES)]
    assert not any("n/a" in line for line in rows), rows
    assert "summary omitted" not in page
    # Every figure's heading is a label, never a column's name.
    every = page[page.index("Every device figure") :]
    header = next(line for line in every.splitlines() if line.startswith("| "))
    assert "synchronous call" in header and "loop per call" in header
    assert "_s " not in header, header


# --- jitbench device-run --------------------------------------------------------------------


def _clone(tmp_path: Path) -> Path:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    return clone


def _device_run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    command = [sys.executable, "-m", "jitbench", "device-run", *args]
    return subprocess.run(command, cwd=cwd, env=environ, capture_output=True, text=True)


@pytest.mark.slow
def test_device_run_refuses_uncommitted_code_and_a_bad_machine_name(tmp_path):
    clone = _clone(tmp_path)
    bad = _device_run(clone, "--machine", "a b")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1
    assert "machine name 'a b'" in bad.stderr
    (clone / "jitbench" / "__init__.py").write_text("# changed\n", encoding="utf-8")
    dirty = _device_run(clone, "--machine", "here")
    assert dirty.returncode == 2 and dirty.stdout == ""
    assert dirty.stderr.splitlines() == [
        "jitbench: error: the checkout has uncommitted changes (jitbench/__init__.py and "
        "others may be): commit them first, since the rows are filed under HEAD"
    ]
    assert not (clone / "results" / "here").exists()


@pytest.mark.slow
def test_device_run_names_the_branch_a_bundle_clone_lacks(tmp_path):
    # How a checkout reaches a host without network: a bundle; one made from HEAD alone
    # has no main branch, and asv would stop with "Unknown branch main in configuration".
    bundle = tmp_path / "jitbench.bundle"
    subprocess.run(["git", "bundle", "create", "-q", str(bundle), "HEAD"], cwd=ROOT, check=True)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True)
    done = _device_run(clone, "--machine", "here", HOME=str(tmp_path))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "jitbench: error: asv.conf.json names branch 'main', which this checkout lacks: "
        "git branch main HEAD (or clone with -b main)"
    ]
    assert not (clone / "results" / "here").exists()


@pytest.mark.slow
def test_device_run_files_the_cpu_rows_through_asv_with_the_jax_release(tmp_path):
    clone = _clone(tmp_path)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True
    ).stdout.strip()
    done = _device_run(
        clone, "--machine", "devrun", JITBENCH_SIZES="10", JITBENCH_DEVICES="cpu",
        HOME=str(tmp_path),  # asv's machine file
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    frame = results.load(clone / "results", machine="devrun")
    import jax

    assert set(frame["jax"]) == {jax.__version__}
    assert set(frame["commit"]) == {head}
    assert set(frame["benchmark"]) == set(catalog.DEVICE_ROWS)
    ok = frame[frame["status"] == "ok"]
    load_plugins()
    available = {name for name, s in STRATEGIES.items() if s.available}
    assert set(ok[ok["benchmark"] == catalog.DEVICE_LOOP]["strategy"]) == available
