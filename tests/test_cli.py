"""The command line: exact output, and one-line errors with exit status 2."""

from __future__ import annotations

import argparse
import csv
import importlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from jax_releases import below_minimum, for_release
from test_audit import STEPS, cells_of, expected_rows, observed, recompiles_of, traces_of

import jitbench
from jitbench import cli
from jitbench.cli import build_parser, main
from jitbench.vocabulary import StepName

ROOT = Path(__file__).resolve().parents[1]

NAMES = list(jitbench.STRATEGIES)
ALL_NAMES = ", ".join(NAMES)
COMMANDS = (
    "strategies",
    "show",
    "audit",
    "time",
    "advise",
    "report",
    "compare",
    "device-run",
    "init",
    "asv",
    "validate",
)
# What the audit runs by default: the strategies the installed packages serve.
AVAILABLE = [name for name in NAMES if below_minimum(name) is None]
AOT_DIFFER = (
    "TypeError: Argument types differ from the types for which this computation was compiled."
)
AOT_X64 = (
    " Perhaps you are calling the compiled executable with a different enable_x64 mode than when"
    " it was AOT compiled?"
)
AOT_MISMATCH = (
    " The mismatches are: Argument 'a0' compiled with float32[64] and called with float32[2,64]"
)
# The AOT executable's error for another shape; JAX 0.7.2 added the enable_x64 hint.
AOT_ERRORS = [
    ((0, 4, 30), (0, 4, 36), AOT_DIFFER + AOT_MISMATCH),
    ((0, 9), None, AOT_DIFFER + AOT_X64 + AOT_MISMATCH),
]


def _run(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "jitbench", *args],
        capture_output=True,
        text=True,
        check=False,
        env=None if env is None else {**os.environ, **env},
    )


def test_strategies_lists_every_name_with_availability(capsys):
    assert main(["strategies"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["strategy", "what", "the", "user", "writes", "available"]
    assert set(lines[1]) == {"-", " "}
    rows = lines[2:]
    assert [row.split()[0] for row in rows] == NAMES
    for row in rows:
        name = row.split()[0]
        assert jitbench.STRATEGIES[name].summary in row
        reason = below_minimum(name)  # the nnx guide's with the flax of JAX 0.4.30
        assert row.endswith(f"  no: {reason}" if reason else "  yes"), row


def test_strategies_shows_why_one_is_unavailable(tmp_path):
    (tmp_path / "jb_ghost.py").write_text(
        "import jitbench\n"
        "jitbench.register_strategy(jitbench.Strategy(\n"
        "    'ghost', 'needs a missing package', 'm', jitbench.get_strategy('eager').render,\n"
        "    requires=('no_such_package_jitbench',), extra='ghost'))\n"
    )
    env = {"JITBENCH_PLUGINS": "jb_ghost", "PYTHONPATH": str(tmp_path)}
    out = _run("strategies", env=env)
    assert out.returncode == 0, out.stderr
    rows = out.stdout.splitlines()[2:]
    assert [row.split()[0] for row in rows] == [*NAMES, "ghost"]
    assert rows[-1].endswith(
        "no: strategy 'ghost' needs package 'no_such_package_jitbench' "
        "(pip install 'jitbench[ghost]')"
    )


def _table_row(rule: str, name: str, cells: str, totals: tuple[int, ...]) -> str:
    """A row of the audit table: each value left-aligned in its column of ``rule``."""
    values = [name, *cells_of(cells), *map(str, totals)]
    widths = [len(dashes) for dashes in rule.split("  ")]
    return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()


def test_audit_table(capsys):
    args = ["audit", "--strategy", "bound_method_jit", "--strategy", "aot_compiled"]
    assert main([*args, "--device", "cpu-sharded"]) == 0
    header = (
        "strategy          first_call  repeat_call  new_static  seen_static  same_shape_array  "
        "new_shape_array  equal_instance  other_instance  compiles  traces  stale  errors  leaked  "
        "recompiles  repeat"
    )
    rule = (
        "----------------  ----------  -----------  ----------  -----------  ----------------  "
        "---------------  --------------  --------------  --------  ------  -----  ------  ------  "
        "----------  ------"
    )
    # From JAX 0.10 on:
    # "bound_method_jit  1/1         0/0          0/0!        0/0          0/0!              "
    # "0/0!             1/1             1/1             3         3       3      0       0       0"
    bound, aot = expected_rows()["bound_method_jit"][0], expected_rows()["aot_compiled"][0]
    assert capsys.readouterr().out.splitlines() == [
        "cache audit on cpu-sharded, size 64",
        "each step: traces/compiles; '!' marks a stale (wrong) result, 'E' an error",
        "",
        header,
        rule,
        _table_row(
            rule, "bound_method_jit", bound, (3, traces_of(bound), 3, 0, 0, recompiles_of(bound), 0)
        ),
        _table_row(rule, "aot_compiled", aot, (2, traces_of(aot), 1, 1, 0, recompiles_of(aot), 0)),
        "",
        f"aot_compiled new_shape_array: {for_release(AOT_ERRORS)}",
    ]


def test_audit_json(capsys):
    assert main(["audit", "--strategy", "bound_method_jit", "--format", "json", "--size", "8"]) == 0
    (data,) = json.loads(capsys.readouterr().out)
    steps = data.pop("steps")
    row = expected_rows()["bound_method_jit"][0]  # 1/1 0/0 0/0! 0/0 0/0! 0/0! 1/1 1/1 from 0.10
    assert data == {
        "strategy": "bound_method_jit",
        "device": "cpu",
        "size": 8,
        "compiles": 3,
        "traces": traces_of(row),
        "stale_results": 3,
        "errors": 0,
        "leaked_instances": 0,
        "recompiles": recompiles_of(row),
        "repeat_call_compiles": 0,
    }
    fields = ["", "", "s0", "s0", "a0", "a0", "", ""]
    for step, name, cell, field in zip(steps, STEPS, cells_of(row), fields, strict=True):
        explanations = step.pop("explanations")
        how = step.pop("how")
        traces, compiles = map(int, cell.rstrip("!").split("/"))
        assert step == {
            "name": name,
            "field": field,
            "traces": traces,
            "compiles": compiles,
            "outcome": "stale" if cell.endswith("!") else "correct",
            "error": "",
            "body_runs": None,
            "role": "attribute" if field else "",  # an attribute of a plain class
        }
        assert how == ("setattr" if field else how)
        # Where nested traces count (before 0.10), JAX explains the traced call only.
        assert len(explanations) == (min(traces, 1) if observed().nested_traces else traces)
        assert all(e.startswith("TRACING CACHE MISS") for e in explanations)


def test_audit_csv(capsys):
    assert main(["audit", "--strategy", "aot_compiled", "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    # The columns of every audit's CSV, a built-in strategy's or a user's object's.
    assert rows[0] == [
        "subject", "device", "size", "step", "field", "how", "traces", "compiles", "outcome",
        "error", "explanation",
    ]  # fmt: skip
    for row in rows[1:]:
        del row[4:6]  # the field and how it was changed: s0 and a0 by setattr
    aot_error = for_release(AOT_ERRORS)
    # Where nested traces count (before 0.10), first_call and equal_instance report more.
    first, *_, equal, other = (
        c.split("/")[0] for c in cells_of(expected_rows()["aot_compiled"][0])
    )
    assert [row[:8] for row in rows[1:]] == [
        ["aot_compiled", "cpu", "64", "first_call", first, "1", "correct", ""],
        ["aot_compiled", "cpu", "64", "repeat_call", "0", "0", "correct", ""],
        ["aot_compiled", "cpu", "64", "new_static", "0", "0", "stale", ""],
        ["aot_compiled", "cpu", "64", "seen_static", "0", "0", "correct", ""],
        ["aot_compiled", "cpu", "64", "same_shape_array", "0", "0", "correct", ""],
        ["aot_compiled", "cpu", "64", "new_shape_array", "0", "0", "error", aot_error],
        ["aot_compiled", "cpu", "64", "equal_instance", equal, "0", "correct", ""],
        ["aot_compiled", "cpu", "64", "other_instance", other, "1", "correct", ""],
    ]
    explained = [row[3] for row in rows[1:] if row[8].startswith("TRACING CACHE MISS")]
    assert explained == ["first_call", "other_instance"]
    assert [row[8] for row in rows[1:] if row[3] not in explained] == [""] * 6


def test_audit_explain_gives_a_reason_for_every_trace(capsys):
    assert main(["audit", "--explain"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    rows = [re.findall(r"\S+(?: E)?", line) for line in lines[5 : 5 + len(AVAILABLE)]]
    table = {row[0]: row for row in rows}
    assert list(table) == AVAILABLE
    sections = out.split("\n\n")[-len(AVAILABLE) :]
    ghosts = observed().ghost_traces
    for name, section in zip(AVAILABLE, sections, strict=True):
        heading, *body = section.strip("\n").splitlines()
        assert heading == name
        cells = dict(zip(STEPS, table[name][1 : 1 + len(STEPS)], strict=True))
        traced = [step for step in STEPS if not cells[step].startswith("0/")]
        entries = re.findall(r"^  (\w+) \((.+?)\): (.+)$", "\n".join(body), flags=re.M)
        assert [step for step, _, _ in entries] == traced, name
        for step, cell, description in entries:
            assert cell == cells[step] and description == StepName(step).does
            reason = section.split(f"  {step} (", 1)[1].splitlines()[1]
            if name == "eager" or (name, step) in ghosts:
                assert reason.startswith("    JAX gave no explanation: it explains misses"), reason
            else:
                assert reason.startswith("    TRACING CACHE MISS at "), (name, step, reason)


def test_audit_of_cpu_sharded_in_a_fresh_process(bare_env):
    # The command resolves the device before JAX's backend starts: four host devices.
    args = ["audit", "--strategy", "aot_compiled", "--device", "cpu-sharded", "--size", "10"]
    out = subprocess.run(
        [sys.executable, "-m", "jitbench", *args, "--format", "csv"],
        capture_output=True,
        text=True,
        env=bare_env,
    )
    assert out.returncode == 0, out.stderr
    rows = list(csv.reader(io.StringIO(out.stdout)))[1:]
    first = cells_of(expected_rows()["aot_compiled"][0])[0].split("/")[0]  # 1 from 0.10 on
    assert [row[3:9] for row in rows][:3] == [
        ["first_call", "", "", first, "1", "correct"],
        ["repeat_call", "", "", "0", "0", "correct"],
        ["new_static", "s0", "setattr", "0", "0", "stale"],
    ]
    # 10 elements rounded up to 12 for four devices.
    assert "Argument 'a0' compiled with float32[12] and called with float32[2,12]" in rows[5][9]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["audit", "--strategy", "nope"],
         f"jitbench: error: unknown strategy 'nope'; valid: {ALL_NAMES}"),
        (
            ["audit", "--device", "xpu"],
            "jitbench audit: error: argument --device: unknown device 'xpu'; valid: cpu, "
            "cpu-sharded, gpu, gpu-sharded, tpu, tpu-sharded",
        ),
        (["audit", "--size", "0"], "jitbench audit: error: argument --size: must be a positive "
                                   "integer, got '0'"),
        (["audit", "--size", "ten"], "jitbench audit: error: argument --size: must be a positive "
                                     "integer, got 'ten'"),
        (["audit", "--format", "xml"],
         "jitbench audit: error: argument --format: unknown format 'xml'; valid: table, json, "
         "csv"),
        (["frobnicate"], "jitbench: error: argument command: invalid choice: 'frobnicate' "
                         "(choose from {commands})"),
        (["show", "nope"], f"jitbench: error: unknown strategy 'nope'; valid: {ALL_NAMES}"),
        (["show", "eager", "--n-arrays", "0"],
         "jitbench show: error: argument --n-arrays: must be a positive integer, got '0'"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(args, message):
    out = _run(*args)
    assert out.returncode == 2
    assert out.stdout == ""
    assert len(out.stderr.splitlines()) == 1, out.stderr
    # argparse quotes the choices it lists in some Python releases and not in others.
    commands = ", ".join(f"'?{name}'?" for name in COMMANDS)
    pattern = re.escape(message).replace(re.escape("{commands}"), commands)
    assert re.fullmatch(pattern + "\n", out.stderr), out.stderr


def test_absent_device_is_one_line_and_exit_2():
    if "gpu" in jitbench.host_devices():
        pytest.skip("this host has a gpu: the test is about its absence")
    out = _run("audit", "--device", "gpu")
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == (
        "jitbench: error: device 'gpu' is not available on this host; available: cpu, cpu-sharded\n"
    )


@pytest.mark.parametrize("command", ["strategies", "audit", "show"])
def test_bad_plugin_module_is_one_line_and_exit_2(command):
    args = [command] + (["eager"] if command == "show" else [])
    out = _run(*args, env={"JITBENCH_PLUGINS": "no_such_module_jb"})
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == (
        "jitbench: error: cannot import JITBENCH_PLUGINS module 'no_such_module_jb': "
        "No module named 'no_such_module_jb'\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["compare", "a", "b", "--factor", "inf"],
         "jitbench compare: error: argument --factor: must be a finite number >= 1 such as 1.05, "
         "got 'inf'"),
        (["compare", "a", "b", "--factor", "nan"],
         "jitbench compare: error: argument --factor: must be a finite number >= 1 such as 1.05, "
         "got 'nan'"),
        (["validate", "--factor", "inf"],
         "jitbench validate: error: argument --factor: must be a finite number >= 1 such as "
         "1.05, got 'inf'"),
    ],
)  # fmt: skip
def test_non_finite_factor_is_refused(args, message):
    # With an infinite factor nothing could ever regress: compare would always exit 0.
    out = _run(*args)
    assert (out.returncode, out.stdout, out.stderr) == (2, "", message + "\n")


# Runs the command with pandas hidden, as on a base install without the report extra.
HIDE_PANDAS = """
import sys

class HidePandas:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pandas":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, HidePandas())
from jitbench.cli import build_parser, main
from jitbench.vocabulary import StepName
from jitbench.vocabulary import StepName
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    "args",
    [["report", "--results", "{tmp}/results"], ["compare", "a", "b"], ["validate"]],
    ids=["report", "compare", "validate"],
)
def test_commands_on_results_name_the_missing_extra(args, tmp_path):
    out_dir = tmp_path / "out"
    argv = [a.format(tmp=tmp_path) for a in args] + ["--out", str(out_dir)] * (args[0] != "compare")
    out = subprocess.run(
        [sys.executable, "-c", HIDE_PANDAS, *argv], capture_output=True, text=True, check=False
    )
    assert (out.returncode, out.stdout) == (2, ""), out.stderr
    assert out.stderr == (
        f"jitbench: error: jitbench {args[0]} needs package 'pandas', which is not installed: "
        "pip install 'jitbench[report]'\n"
    )
    assert not out_dir.exists()


def test_paths_of_the_wrong_kind_are_refused(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    out_dir = tmp_path / "out"
    for args in (
        ["report", "--results", str(a_file), "--out", str(out_dir)],
        ["compare", "a", "b", "--results", str(a_file)],
    ):
        out = _run(*args)
        assert (out.returncode, out.stdout) == (2, "")
        assert out.stderr == (
            f"jitbench: error: results directory '{a_file}' is a file; pass asv's results_dir "
            "(a folder with one folder per machine)\n"
        )
    out = _run("validate", "--phases", "fidelity", "--out", str(a_file))
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == f"jitbench: error: --out '{a_file}' exists and is not a directory\n"
    assert not out_dir.exists() and a_file.read_text() == ""


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("import jitbench\nundefined_name\n", "NameError: name 'undefined_name' is not defined"),
        ("raise RuntimeError('plugin\\nbroken')\n", "RuntimeError: plugin broken"),
        ("x = = 1\n", "SyntaxError: invalid syntax (jb_broken.py, line 1)"),
    ],
    ids=["name-error", "two-line-error", "syntax-error"],
)
def test_plugin_that_raises_is_one_line_and_exit_2(tmp_path, source, error):
    (tmp_path / "jb_broken.py").write_text(source)
    env = {"JITBENCH_PLUGINS": "jb_broken", "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    out = _run("strategies", env=env)
    assert (out.returncode, out.stdout) == (2, "")
    assert (
        out.stderr
        == f"jitbench: error: cannot import JITBENCH_PLUGINS module 'jb_broken': {error}\n"
    )


def test_the_same_miss_of_a_function_defined_anew_at_every_call_is_told_once_with_a_count():
    import jax
    import jax.numpy as jnp

    from jitbench.auditing.result import Step
    from jitbench.cli.render import explanation
    from jitbench.compiles import explain_misses

    def solve(x):  # as diffrax's solvers jit lambdas they define anew at every call
        return jax.jit(lambda y: y + 1)(x)

    with explain_misses() as messages:
        for _ in range(3):
            solve(jnp.ones(3))
    text = explanation(Step("first_call", 3, 3, "correct", explanations=tuple(messages)))
    assert len(messages) == 3 and text.count("TRACING CACHE MISS") == 1
    assert "never seen function" in text and text.endswith("\n  (2 more misses like it)")
    assert "but seen another function" not in text  # JAX's remark on the second and third


def test_a_closed_pipe_ends_a_command_quietly():
    # `jitbench compare A B | head -1`: the reader leaves after one line of some 360 kB.
    command = [sys.executable, "-m", "jitbench", "compare", "0e5c4dd7", "39f46c3c",
               "--machine", "vm-epyc", "--results", str(ROOT / "results")]  # fmt: skip
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout.readline().startswith(b"BASE vm-epyc 0e5c4dd7")
        proc.stdout.close()
        stderr = proc.stderr.read().decode()
        assert proc.wait() == 141 and stderr == ""


def test_every_command_is_a_module_the_loader_finds():
    # cli.run imports jitbench.cli.commands.<command> (- as _) once the command is chosen.
    parser = build_parser()
    (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    for name in commands.choices:
        module = importlib.import_module(f"jitbench.cli.commands.{name.replace('-', '_')}")
        assert callable(module.run), name


def _helps() -> dict[str, str]:
    """``jitbench --help`` and each command's ``--help``, as argparse prints them."""
    parser = build_parser()
    found = {"jitbench": parser.format_help()}
    (commands,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found.update({name: sub.format_help() for name, sub in commands.choices.items()})
    return found


def test_every_help_says_what_the_command_is_for_and_what_to_try_first():
    """The help a user reads is written for them: what jitbench (or the command) does, the one
    command to try first, and no reStructuredText markup from the code's docstrings."""
    helps = _helps()
    assert set(helps) == {"jitbench", *cli.COMMANDS}
    markup = re.compile(r"``|:(?:mod|func|class|data|meth|attr):`|parsed here")
    for name, text in helps.items():
        assert not markup.search(text), (name, markup.findall(text))
        if name == "jitbench":
            assert "Start with your own object" in text and "jitbench audit " in text
        else:
            said, first = cli.COMMANDS[name]
            assert f"Try first:\n  {first}\n" in text and said.split()[0] in text.lower()
