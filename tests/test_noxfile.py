"""The workflow's nox sessions exist under the names the README gives, with what it says."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SESSIONS = {
    "lint", "tests-3.11", "tests-3.12", "tests-3.13", "bench", "publish", "compare",
    "jax_history", "readme", "validate",
}  # fmt: skip


def _noxfile():
    spec = importlib.util.spec_from_file_location("noxfile_under_test", ROOT / "noxfile.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
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
    readme = (ROOT / "README.md").read_text()
    for name in ("bench", "tests", "compare", "jax_history", "publish", "validate", "readme"):
        assert f"nox -s {name}" in readme, name


def test_the_test_session_covers_the_supported_pythons():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'requires-python = ">=3.11"' in pyproject
    assert _noxfile().PYTHONS == ("3.11", "3.12", "3.13")


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

    def error(self, message: str) -> None:
        raise self.Stop(message)


def test_bench_files_results_under_the_machine_name_given():
    """The GPU recipe's ``nox -s bench -R -- --machine NAME``: both asv calls get the name."""
    noxfile = _noxfile()
    noxfile._publish = lambda session: None
    noxfile._check_machine = lambda session, name: None  # tested on its own below
    session = RecordingSession("--machine", "myhost-h100", "--quick")
    noxfile.bench(session)
    machine = [c for c in session.commands if c[:2] == ("asv", "machine")]
    assert machine == [("asv", "machine", "--yes", "--machine", "myhost-h100")]
    runs = [c[c.index("--") + 1 :] for c in session.commands if "jitbench.asvrun" in c]
    assert len(runs) == 1 and runs[0][0] == "run"
    assert runs[0][runs[0].index("--machine") + 1] == "myhost-h100"
    assert "--quick" in runs[0]


@pytest.mark.parametrize(
    ("args", "selected"),
    [([], None), (["-b", "Hazards"], ["Hazards"]), (["--bench=Cached"], []), (["-bCold"], [])],
)
def test_jax_history_runs_the_benchmarks_asked_for(args, selected):
    """asv runs every benchmark any ``-b`` matches: a user's ``-b`` must replace the default."""
    noxfile = _noxfile()
    noxfile._check_machine = lambda session, name: None  # tested on its own below
    session = RecordingSession(*args)
    noxfile.jax_history(session)
    (run,) = [c[c.index("--") + 1 :] for c in session.commands if "jitbench.asvrun" in c]
    chosen = [run[i + 1] for i, a in enumerate(run) if a == "-b"]
    if selected is None:  # the default: the history's benchmarks, one regex
        assert len(chosen) == 1 and "Hazards" in chosen[0] and "CachedCall" in chosen[0]
    else:
        assert chosen == selected


def test_validate_files_its_summary_under_the_machine_name(tmp_path):
    """``nox -s validate -- --machine NAME``: jitbench validate never sees --machine, and the
    run's summary.json lands in docs/validation/NAME.json with the name added."""
    noxfile = _noxfile()
    noxfile.VALIDATION_DOCS = tmp_path / "docs"
    out = tmp_path / "report"
    out.mkdir()
    (out / "summary.json").write_text(json.dumps({"commit": "abc", "summary": []}))
    session = RecordingSession("--machine", "box", "--phases", "fidelity", "--out", str(out))
    noxfile.validate(session)
    (run,) = [c for c in session.commands if c[:2] == ("jitbench", "validate")]
    assert "--machine" not in run and run[2:6] == ("--phases", "fidelity", "--out", str(out))
    filed = json.loads((tmp_path / "docs" / "box.json").read_text())
    assert filed == {"machine": "box", "commit": "abc", "summary": []}


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


def test_a_machine_name_with_other_hardware_is_refused(tmp_path):
    """asv would rewrite results/box/machine.json, relabelling the results already there."""
    xeon = {**EPYC, "cpu": "Intel Xeon", "ram": "1"}
    results, machines = _machine_files(tmp_path, EPYC, xeon)
    before = (results / "box" / "machine.json").read_bytes()
    with pytest.raises(RecordingSession.Stop) as stop:
        _noxfile()._check_machine(RecordingSession(), "box", results, machines)
    assert str(stop.value) == (
        "results/box holds results of other hardware (cpu 'AMD EPYC' here 'Intel Xeon'): "
        "name this host with -- --machine NAME"
    )
    assert (results / "box" / "machine.json").read_bytes() == before


@pytest.mark.parametrize(
    ("here", "with_results"),
    [({**EPYC, "ram": "25276497920"}, True), ({**EPYC, "cpu": "Intel Xeon"}, False)],
)
def test_the_same_hardware_or_no_results_may_reuse_a_name(tmp_path, here, with_results):
    results, machines = _machine_files(tmp_path, EPYC, here, with_results)
    _noxfile()._check_machine(RecordingSession(), "box", results, machines)  # no error
