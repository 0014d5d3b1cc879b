"""The workflow's nox sessions exist under the names the README gives, with what it says."""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SESSIONS = {
    "lint", "tests-3.11", "tests-3.12", "tests-3.13", "bench", "publish", "compare",
    "jax_history", "readme", "validate", "instructions", "instances",
}  # fmt: skip


@functools.cache
def _noxfile():
    """The noxfile as a module, imported once (nox refuses to register a session twice);
    the PATH its import extends for nox is this process's again. Tests that replace a
    function of it do so through monkeypatch, which puts it back."""
    spec = importlib.util.spec_from_file_location("noxfile_under_test", ROOT / "noxfile.py")
    module = importlib.util.module_from_spec(spec)
    path = os.environ.get("PATH", "")
    try:
        spec.loader.exec_module(module)
    finally:
        os.environ["PATH"] = path
    return module


def test_every_documented_session_is_defined():
    out = subprocess.run(
        [sys.executable, "-m", "nox", "--list"], cwd=ROOT, capture_output=True, text=True,
        check=True,
    )  # fmt: skip
    listed = {
        line[2:].split(" -> ")[0] for line in out.stdout.splitlines() if line[:2] in ("* ", "- ")
    }
    assert listed == SESSIONS
    # The README names the user's sessions, the contributing page the developer's.
    readme = (ROOT / "README.md").read_text() + (ROOT / "docs" / "contributing.md").read_text()
    for name in (
        "bench", "tests", "compare", "jax_history", "publish", "validate", "readme", "instructions",
        "instances",
    ):  # fmt: skip
        assert f"nox -s {name}" in readme, name


def test_the_test_session_covers_the_supported_pythons():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'requires-python = ">=3.11"' in pyproject
    assert _noxfile().PYTHONS == ("3.11", "3.12", "3.13")


def test_slow_tests_run_under_the_newest_python_unless_told():
    noxfile = _noxfile()
    parallel = noxfile.PARALLEL
    assert noxfile.pytest_args("3.13", [], newest="3.13") == parallel
    assert noxfile.pytest_args("3.11", [], newest="3.13") == [*parallel, "-m", "not slow"]
    assert noxfile.pytest_args("3.11", ["-m", "slow"], newest="3.13") == [*parallel, "-m", "slow"]
    assert noxfile.pytest_args("3.11", ["tests/test_cli.py"], newest="3.11") == [
        *parallel, "tests/test_cli.py"
    ]  # fmt: skip


def test_readme_history_lists_the_noxfile_releases():
    """The releases the history page's table shows are those the session measures."""
    releases = list(_noxfile().JAX_HISTORY)
    assert len(releases) >= 8
    page = (ROOT / "docs" / "history.md").read_text()
    block = page.split("<!-- BEGIN generated: history -->")[1]
    header = next(line for line in block.splitlines() if line.startswith("| strategy"))
    shown = re.findall(r"\d+\.\d+\.\d+(?:\.\d+)?", header)
    assert shown == releases


class RecordingSession:
    """Stands in for nox's session: records the commands a session function runs."""

    python = "3.12"

    class Stop(Exception):
        """What ``session.error`` raises (nox's own ends the session)."""

    def __init__(self, *posargs: str) -> None:
        self.posargs = list(posargs)
        self.commands: list[tuple[str, ...]] = []
        self.warnings: list[str] = []

    def install(self, *args: str, **kwargs) -> None:
        self.commands.append(("pip", "install", *args))

    def run(self, *args: str, **kwargs) -> str:
        """Records the command; runs the silent ``python -c`` ones whose output is used."""
        self.commands.append(args)
        if not kwargs.get("silent"):
            return ""
        assert args[:2] == ("python", "-c"), args
        done = subprocess.run([sys.executable, *args[1:]], capture_output=True, text=True)
        return done.stdout

    def log(self, *args) -> None:
        pass

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def error(self, message: str) -> None:
        raise self.Stop(message)


class InstallOnlySession(RecordingSession):
    """nox under ``--install-only``: ``run`` skips every command and returns None."""

    def run(self, *args: str, **kwargs) -> None:
        self.commands.append(args)


@pytest.mark.parametrize(
    "name",
    ["tests", "bench", "publish", "compare", "jax_history", "readme", "validate", "instructions"],
)
def test_install_only_stops_after_the_install(name):
    """``nox -s bench --install-only`` (the GPU recipe's first step) installs and stops:
    the steps after a skipped command would read what it did not write."""
    session = InstallOnlySession("--machine", "myhost-h100")
    getattr(_noxfile(), name)(session)
    assert session.commands == [("pip", "install", "-e", f"{ROOT}[all]"), ("python", "-c", "")]


def test_bench_files_results_under_the_machine_name_given(monkeypatch):
    """The GPU recipe's ``nox -s bench -R -- --machine NAME``: both asv calls get the name."""
    noxfile = _noxfile()
    monkeypatch.setattr(noxfile, "_publish", lambda session: None)
    # _check_machine is tested on its own below.
    monkeypatch.setattr(noxfile, "_check_machine", lambda session, name: None)
    session = RecordingSession("--machine", "myhost-h100", "--quick")
    noxfile.bench(session)
    machine = [c for c in session.commands if "jitbench.suite.asvcompat" in c]
    assert machine == [
        ("python", "-m", "jitbench.suite.asvcompat", "describe-machine", "myhost-h100")
    ]
    runs = [c[c.index("--") + 1 :] for c in session.commands if "jitbench.suite.asvrun" in c]
    assert len(runs) == 1 and runs[0][0] == "run"
    assert runs[0][runs[0].index("--machine") + 1] == "myhost-h100"
    assert "--quick" in runs[0]


@pytest.mark.parametrize(
    ("args", "selected"),
    [([], None), (["-b", "Hazards"], ["Hazards"]), (["--bench=Cached"], []), (["-bCold"], [])],
)
def test_jax_history_runs_the_benchmarks_asked_for(args, selected, monkeypatch):
    """asv runs every benchmark any ``-b`` matches: a user's ``-b`` must replace the default."""
    noxfile = _noxfile()
    # _check_machine is tested on its own below.
    monkeypatch.setattr(noxfile, "_check_machine", lambda session, name: None)
    session = RecordingSession(*args)
    noxfile.jax_history(session)
    (run,) = [c[c.index("--") + 1 :] for c in session.commands if "jitbench.suite.asvrun" in c]
    chosen = [run[i + 1] for i, a in enumerate(run) if a == "-b"]
    if selected is None:  # the default: the history's benchmarks, one regex
        assert len(chosen) == 1 and "Hazards" in chosen[0] and "CachedCall" in chosen[0]
    else:
        assert chosen == selected


def test_validate_files_its_summary_under_the_machine_name(tmp_path, monkeypatch):
    """``nox -s validate -- --machine NAME``: jitbench validate never sees --machine, and the
    run's summary.json lands in docs/validation/NAME.json with the name added."""
    noxfile = _noxfile()
    monkeypatch.setattr(noxfile, "VALIDATION_DOCS", tmp_path / "docs")
    out = tmp_path / "report"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps({"commit": "abc", "summary": []}))
    session = RecordingSession("--machine", "box", "--phases", "fidelity", "--out", str(out))
    noxfile.validate(session)
    (run,) = [c for c in session.commands if c[:2] == ("jitbench", "validate")]
    assert "--machine" not in run and run[2:6] == ("--phases", "fidelity", "--out", str(out))
    filed = json.loads((tmp_path / "docs" / "box.json").read_text())
    assert filed == {"machine": "box", "commit": "abc", "summary": []}
    # The counts phase alone is filed apart, leaving the full validation's record as it is.
    monkeypatch.setattr(noxfile, "COUNTS_DOCS", tmp_path / "counts")
    noxfile.validate(RecordingSession("--machine", "box", "--phases", "counts", "--out", str(out)))
    assert json.loads((tmp_path / "counts" / "box.json").read_text())["machine"] == "box"
    assert json.loads((tmp_path / "docs" / "box.json").read_text()) == filed


def _machine_files(tmp_path, committed: dict, here: dict, with_results: bool = True):
    folder = tmp_path / "results" / "box"
    folder.mkdir(parents=True)
    (folder / "machine.json").write_text(json.dumps({"machine": "box", **committed}))
    if with_results:
        (folder / "0123abcd-env.json").write_text("{}")
    machines = tmp_path / "asv-machine.json"
    machines.write_text(json.dumps({"box": {"machine": "box", **here}, "version": 1}))
    return tmp_path / "results", machines


EPYC = {"arch": "x86_64", "cpu": "AMD EPYC", "num_cpu": "2", "ram": "25276502016"}


def _refusal(results, machines) -> str | None:
    """The message ``_check_machine`` stops the session with for ``box``; None if it runs."""
    try:
        _noxfile()._check_machine(RecordingSession(), "box", results, machines)
    except RecordingSession.Stop as stop:
        return str(stop)
    return None


def test_a_machine_name_with_other_hardware_is_refused(tmp_path):
    """asv would rewrite results/box/machine.json, relabelling the results already there."""
    xeon = {**EPYC, "cpu": "Intel Xeon", "ram": "1"}
    results, machines = _machine_files(tmp_path, EPYC, xeon)
    before = (results / "box" / "machine.json").read_bytes()
    assert _refusal(results, machines) == (
        "results/box holds results of other hardware (cpu 'AMD EPYC' here 'Intel Xeon'): "
        "name this host with -- --machine NAME"
    )
    assert (results / "box" / "machine.json").read_bytes() == before


@pytest.mark.parametrize(
    ("here", "with_results"),
    [({**EPYC, "ram": "25276497920"}, True), ({**EPYC, "cpu": "Intel Xeon"}, False)],
)
def test_the_same_hardware_or_no_results_may_reuse_a_name(tmp_path, here, with_results):
    """Memory the kernel reports a little differently, or a name with no results yet: asv
    may file this host's results under it."""
    results, machines = _machine_files(tmp_path, EPYC, here, with_results)
    assert _refusal(results, machines) is None


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def _pyenv_root(tmp_path, *versions: str) -> Path:
    """A pyenv root with each version's interpreter installed (scripts that exit 0)."""
    root = tmp_path / "pyenv"
    for version in versions:
        minor = ".".join(version.split(".")[:2])
        _script(root / "versions" / version / "bin" / f"python{minor}", "exit 0")
    (root / "versions").mkdir(parents=True, exist_ok=True)
    return root


def _shim(folder: Path, name: str) -> Path:
    """A pyenv shim for a version pyenv is not told to use: it refuses, as pyenv's do."""
    return _script(folder / name, f'echo "pyenv: {name}: command not found" >&2; exit 127')


def test_the_newest_patch_of_each_python_under_pyenv_is_found(tmp_path):
    """pyenv's versions/ folder, newest patch per minor by number; pre-releases left out."""
    root = _pyenv_root(
        tmp_path, "3.10.13", "3.11.7", "3.12.4", "3.12.10", "3.12.9", "3.13.0rc1", "3.13t"
    )
    found = _noxfile().find_pythons(env={"PYENV_ROOT": str(root), "PATH": ""})
    assert found == {
        "3.11": root / "versions/3.11.7/bin/python3.11",
        "3.12": root / "versions/3.12.10/bin/python3.12",
    }


def test_pyenv_is_asked_for_its_root_where_pyenv_root_is_unset(tmp_path):
    root = _pyenv_root(tmp_path, "3.13.0")
    bin_dir = tmp_path / "bin"
    _script(bin_dir / "pyenv", f'[ "$1" = root ] && echo {root}')
    found = _noxfile().find_pythons(env={"PATH": str(bin_dir)})
    assert found == {"3.13": root / "versions/3.13.0/bin/python3.13"}


def test_pyenvs_default_root_is_read_where_pyenv_is_not_on_path(tmp_path):
    """A shell that never ran pyenv's init (``env -i``): pyenv's default root, ~/.pyenv."""
    root = _pyenv_root(tmp_path, "3.13.0")
    home = tmp_path / "home"
    home.mkdir()
    (home / ".pyenv").symlink_to(root)
    found = _noxfile().find_pythons(env={"HOME": str(home), "PATH": ""})
    assert found == {"3.13": home / ".pyenv/versions/3.13.0/bin/python3.13"}


def test_uv_then_path_fill_in_what_pyenv_lacks(tmp_path):
    """pyenv has 3.11, ``uv python find --system 3.12`` knows 3.12, PATH has 3.13 behind a
    refusing shim: a shim that refuses to run is not an interpreter."""
    root = _pyenv_root(tmp_path, "3.11.7")
    uv_python = _script(tmp_path / "uv-python/cpython-3.12.4/bin/python3.12", "exit 0")
    bin_dir, shims, real = tmp_path / "bin", tmp_path / "shims", tmp_path / "real"
    _script(
        bin_dir / "uv",
        f'[ "$*" = "python find --system 3.12" ] && echo {uv_python} && exit 0; exit 2',
    )
    _shim(shims, "python3.13")
    _shim(shims, "python3.11")
    _script(real / "python3.13", "exit 0")
    env = {"PYENV_ROOT": str(root), "PATH": f"{bin_dir}:{shims}:{real}"}
    assert _noxfile().find_pythons(env=env) == {
        "3.11": root / "versions/3.11.7/bin/python3.11",
        "3.12": uv_python,
        "3.13": real / "python3.13",
    }


def test_only_refusing_shims_find_nothing(tmp_path):
    shims = tmp_path / "shims"
    for name in ("python3.11", "python3.12", "python3.13"):
        _shim(shims, name)
    assert _noxfile().find_pythons(env={"PATH": str(shims)}) == {}


def test_path_finds_the_found_pythons_before_the_shims(tmp_path):
    """nox looks ``3.13`` up as python3.13 on PATH, and so does asv: the interpreter pyenv
    installed must come before its shim; one PATH already finds stays where it is."""
    root = _pyenv_root(tmp_path, "3.12.1", "3.13.0")
    shims, real = tmp_path / "shims", tmp_path / "real"
    _shim(shims, "python3.12")
    _shim(shims, "python3.13")
    _script(real / "python3.11", "exit 0")
    path = f"{shims}:{real}"
    noxfile = _noxfile()
    found = noxfile.find_pythons(env={"PYENV_ROOT": str(root), "PATH": path})
    new = noxfile.path_with(found, path)
    assert new == f"{root}/versions/3.13.0/bin:{root}/versions/3.12.1/bin:{path}"
    for version, exe in found.items():
        assert shutil.which(f"python{version}", path=new) == str(exe)


@pytest.mark.parametrize(
    ("installed", "python", "warned"),
    [(("3.11.7",), "3.11", True), (("3.11.7", "3.13.0"), "3.13", False)],
)
def test_bench_says_when_it_measures_an_old_jax(tmp_path, installed, python, warned, monkeypatch):
    """Without a Python 3.12+ bench runs under 3.11, where pip stops at JAX 0.10.2: it says so
    in one line, and nothing where it measures JAX's newest release."""
    noxfile = _noxfile()
    root = _pyenv_root(tmp_path, *installed)
    found = noxfile.find_pythons(env={"PYENV_ROOT": str(root), "PATH": ""})
    assert noxfile.bench_python(found) == python
    monkeypatch.setattr(noxfile, "_publish", lambda session: None)
    monkeypatch.setattr(noxfile, "_check_machine", lambda session, name: None)
    session = RecordingSession("--quick")
    session.python = noxfile.bench_python(found)
    noxfile.bench(session)
    assert session.warnings == (
        [
            "no Python 3.12+ found (pyenv, uv, PATH): measuring the newest JAX that Python 3.11 "
            "installs, not JAX's newest release, which needs 3.12+"
        ]
        if warned
        else []
    )


def test_no_python_found_benches_under_the_oldest():
    assert _noxfile().bench_python({}) == "3.11"


def test_a_named_machine_is_described_with_its_hardware(tmp_path, monkeypatch):
    """``asv machine --yes --machine NAME`` alone would record the name and no hardware."""
    from asv.machine import Machine

    monkeypatch.setenv("HOME", str(tmp_path))  # asv's machine file: ~/.asv-machine.json
    done = subprocess.run(
        [sys.executable, "-m", "jitbench.suite.asvcompat", "describe-machine", "box-1"],
        capture_output=True, text=True, env={**os.environ, "HOME": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    entry = json.loads((tmp_path / ".asv-machine.json").read_text())["box-1"]
    hardware = {k: Machine.get_defaults()[k] for k in _noxfile().HARDWARE}
    assert {k: entry[k] for k in hardware} == hardware and entry["machine"] == "box-1"
    bad = subprocess.run(
        [sys.executable, "-m", "jitbench.suite.asvcompat", "describe"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2
    assert bad.stderr == "usage: python -m jitbench.suite.asvcompat describe-machine NAME\n"


@pytest.mark.parametrize("newest", [True, False])
def test_the_tests_session_runs_pytest_in_parallel_and_asv_under_the_newest(newest):
    noxfile = _noxfile()
    older = next(p for p in noxfile.PYTHONS if p != noxfile.BENCH_PYTHON)
    session = RecordingSession()
    session.python = noxfile.BENCH_PYTHON if newest else older
    noxfile.tests(session)
    pytest_run = next(c for c in session.commands if c[0] == "pytest")
    assert pytest_run[1 : 1 + len(noxfile.PARALLEL)] == tuple(noxfile.PARALLEL)
    assert (pytest_run[-2:] == ("-m", "not slow")) is not newest
    assert (("asv", "check", "--python=same") in session.commands) is newest
