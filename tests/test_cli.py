"""The command line: output shape, and one-line errors with exit status 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from jitbench.cli import main


def _run(*args):
    return subprocess.run(
        [sys.executable, "-m", "jitbench", *args], capture_output=True, text=True, check=False
    )


def test_strategies_lists_every_name(capsys):
    assert main(["strategies"]) == 0
    out = capsys.readouterr().out
    for name in ("eager", "helper_function", "flax_nnx_jit"):
        assert name in out


def test_audit_json(capsys):
    assert main(["audit", "--strategy", "bound_method_jit", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[0]["strategy"] == "bound_method_jit" and data[0]["stale_results"] == 3


def test_audit_table_marks_stale(capsys):
    assert main(["audit", "--strategy", "static_self_id_hash", "--device", "cpu-sharded"]) == 0
    out = capsys.readouterr().out
    assert "cpu-sharded" in out and "0/0!" in out


def test_audit_csv_has_a_row_per_step(capsys):
    assert main(["audit", "--strategy", "helper_function", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("strategy,device,size,step") and len(lines) == 9


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["audit", "--strategy", "nope"], "unknown strategy 'nope'; valid: eager,"),
        (["audit", "--device", "xpu"], "unknown device 'xpu'; valid: cpu, cpu-sharded"),
        (["audit", "--device", "gpu"], "device 'gpu' is not available on this host; available"),
        (["audit", "--size", "0"], "size must be a positive integer, got '0'"),
        (["audit", "--size", "ten"], "size must be a positive integer, got 'ten'"),
        (["audit", "--format", "xml"], "unknown format 'xml'; valid: table, json, csv"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message):
    out = _run(*args)
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert message in out.stderr
