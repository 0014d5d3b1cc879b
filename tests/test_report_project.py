"""``jitbench report`` and ``jitbench compare`` in a project set up by ``jitbench init``: its
results folder read from its asv.conf.json, the main line's newest commit reported, notes and
commands about the target rows its suite has, and a planted hazard named.

The results are the target rows of the fixture's real asv run (test_results, commit c3),
filed under the commits of a small git history made here: two commits on main, then a newer
one on a test branch, as a maintainer's repository holds them.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_results import MACHINE

from jitbench import report
from jitbench.suite import catalog

pytestmark = pytest.mark.slow

TARGET = "fixture_models:make_model"
RECOMPILES = catalog.TARGET_TWINS[catalog.HAZARDS["recompiles"]]
AFTER_CHANGE = catalog.TARGET_TWINS[catalog.AFTER_CHANGE]
# What asv.conf.json names, as init writes it (comments and all).
CONFIG = """\
{
    // A project set up by jitbench init.
    "version": 1,
    "project": "affine",
    "repo": ".",
    "branches": ["main"],
    "environment_type": "virtualenv",
    "benchmark_dir": "benchmarks",
    "results_dir": ".jitbench/results",
    "html_dir": ".jitbench/html"
}
"""


@dataclass(frozen=True)
class Project:
    root: Path
    main: tuple[str, str]  # oldest first
    branch: str  # a commit on a test branch, newer than both


def _git(root: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid")
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def _commit(root: Path, message: str) -> str:
    _git(root, "commit", "-q", "--allow-empty", "-m", message)
    return _git(root, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def project(runs, tmp_path_factory) -> Project:
    root = tmp_path_factory.mktemp("affine")
    (root / "asv.conf.json").write_text(CONFIG)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "asv.conf.json")
    main = (_commit(root, "the model"), _commit(root, "a new instance hashed by identity"))
    _git(root, "checkout", "-q", "-b", "test-branch")
    branch = _commit(root, "an experiment")
    _git(root, "checkout", "-q", "main")

    results = root / ".jitbench" / "results"
    (results / MACHINE).mkdir(parents=True)
    shutil.copy2(runs.results / MACHINE / "machine.json", results / MACHINE)
    described = json.loads((runs.results / "benchmarks.json").read_text())
    kept = {k: v for k, v in described.items() if k.startswith("bench_targets.") or k == "version"}
    (results / "benchmarks.json").write_text(json.dumps(kept))
    source = json.loads(runs.result_file(runs.c3).read_text())
    source["results"] = {
        name: row for name, row in source["results"].items() if name.startswith("bench_targets.")
    }
    column = source["result_columns"].index("result")
    for day, commit in enumerate((*main, branch), start=1):
        data = json.loads(json.dumps(source))
        data["commit_hash"] = commit
        data["date"] = source["date"] + day * 86_400_000
        if commit == main[1]:  # the planted hazard: a new equal instance compiles again
            data["results"][RECOMPILES][column] = [1.0]
            # and a row that failed (asv stores None), as a change the audit cannot play
            data["results"][AFTER_CHANGE][column][3] = None
        name = f"{commit[:8]}-{data['env_name']}.json"
        (results / MACHINE / name).write_text(json.dumps(data))
    return Project(root, main, branch)


def _jitbench(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "jitbench", *args],
        cwd=project.root,
        capture_output=True,
        text=True,
    )


def test_the_report_reads_the_configured_folder_and_shows_the_main_line(project, tmp_path):
    done = _jitbench(project, "report", "--out", str(tmp_path / "report"))
    assert done.returncode == 0, done.stderr
    index = (tmp_path / "report" / "index.md").read_text()
    head = index.split("## At a glance")[0]
    assert "Results: `.jitbench/results`." in head
    assert "main line: main (asv.conf.json's first branch)" in head
    assert f"- used: {MACHINE} {project.main[1][:8]} " in head
    assert re.search(rf"left out: {MACHINE} {project.branch[:8]} .*: not on the main line", head)
    assert re.search(rf"left out: {MACHINE} {project.main[0][:8]} .*: an older commit of", head)

    # --commit chooses another run, the branch's included.
    done = _jitbench(
        project, "report", "--commit", project.branch[:8], "--out", str(tmp_path / "branch")
    )
    assert done.returncode == 0, done.stderr
    assert f"commit `{project.branch[:8]}`" in (tmp_path / "branch" / "index.md").read_text()


def test_notes_commands_and_marks_are_about_the_targets_suite(project, tmp_path, monkeypatch):
    monkeypatch.chdir(project.root)
    report.write_report(None, tmp_path / "report")
    index = (tmp_path / "report" / "index.md").read_text()
    # No built-in benchmark, family or session of jitbench's own suite is named.
    builtin = {name.split(".")[0] for name in catalog.ALL} - {"bench_targets"}
    assert not [word for word in builtin if word in index], index
    # (the env's name may hold a path with .nox in it: a session is named as "nox -s")
    assert "nox -s" not in index and "eager" not in index.split("## Notes")[-1]
    # A failure is named by the suite's own benchmark, not the built-in one it is shown under.
    assert f"- {AFTER_CHANGE}: 1 parameter combinations failed" in index
    assert "`asv run`" in index  # counts: the project's own command
    assert f"`python -m jitbench audit {TARGET} --format json > audit.json`" in index
    # One target, nothing compared: no star, and no legend for one.
    assert "★" not in index
    glance = index.split("## At a glance")[1].split("\n## ")[0]
    assert "### cpu, targets" in glance and "break-even" not in glance
    # The planted hazard is named in the target's row.
    row = next(line for line in glance.splitlines() if line.startswith(f"| {TARGET}"))
    assert "recompiles" in row and "⚠" in row


def test_compare_names_the_new_hazard_and_fails(project):
    base, head = project.main
    done = _jitbench(project, "compare", base[:8], head[:8], "--factor", "1e6")
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = [line for line in done.stdout.splitlines() if line.startswith("new hazard")]
    assert line.startswith(
        f"new hazard at HEAD: recompiles in {TARGET} on cpu ({RECOMPILES} 0 -> 1)"
    )
    assert f"jitbench audit {TARGET} --explain" in line
    done = _jitbench(project, "compare", head[:8], base[:8], "--factor", "1e6")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"hazard gone at HEAD: recompiles in {TARGET} on cpu" in done.stdout


def test_compare_takes_the_names_git_gives_commits(project):
    """A maintainer types branch names (``main``, ``main~1``) as asv continuous takes them;
    a name it does not know is one line naming it."""
    by_name = _jitbench(project, "compare", "main~1", "main", "--factor", "1e6")
    by_hash = _jitbench(project, "compare", project.main[0][:8], project.main[1][:8],
                        "--factor", "1e6")  # fmt: skip
    assert (by_name.returncode, by_name.stdout) == (by_hash.returncode, by_hash.stdout)
    assert by_name.returncode == 1
    done = _jitbench(project, "compare", "main", "test-branch", "--factor", "1e6")
    assert f"HEAD {MACHINE} {project.branch[:8]}" in done.stdout, done.stdout + done.stderr
    done = _jitbench(project, "compare", "nope", "main")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith("jitbench: error: no results for commit 'nope'; available")


def test_outside_a_project_without_results_is_one_line(tmp_path):
    for command in (["report", "--out", str(tmp_path / "out")], ["compare", "a", "b"]):
        done = subprocess.run(
            [sys.executable, "-m", "jitbench", *command],
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 2 and done.stdout == "", done.stderr
        assert done.stderr.count("\n") == 1 and "no asv.conf.json" in done.stderr, done.stderr
        assert "--results" in done.stderr
    assert not (tmp_path / "out").exists()
