"""The loop a project runs on its own commits: ``jitbench init``, asv, ``jitbench compare``.

A throwaway git repository holds a small package whose model calls a jitted
function; the benchmarked target is its factory. Commit 1 is the model as it
is; commit 2 adds per-call Python work on the call path (a loop over the
model's fields before the jitted call, about ten times the dispatch cost);
commit 3 changes only a comment. ``jitbench init`` writes asv's files, asv
measures each commit checked out (``--python=same --set-commit-hash``, the
package importable through ``ASV_PYTHONPATH``, as the package installed at
each commit would be in asv's own environments), and then: ``jitbench
compare`` flags commit 2 on the target's cached-call row and does not flag
commit 3; ``jitbench report`` shows the target in its headline table; ``asv
publish`` renders the target's graph in the dashboard.

Only the target's cached-call benchmarks run, one round of ten samples
each (samples recorded, so compare uses asv's Mann-Whitney test): 65 to 130
seconds in all on this two-core machine, as busy as other jobs made it
(most of it asv's runs and init's wheel build). The compare factor is 5: the planted slowdown
is ten times beyond it, and the busiest minutes of this two-core machine,
shared by other jobs, moved a median of unchanged code by 2.7 times at most.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from dashboard_helpers import CHROMIUM, CHROMIUM_ARGS, serve

from jitbench.suite import catalog

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TARGET = "affine_pkg.model:make"
MACHINE = "looptest"
FACTOR = "5"
CACHED = catalog.TARGET_TWINS[catalog.CACHED]
DISPATCH = catalog.TARGET_TWINS[catalog.DISPATCH]
ROW = f"{CACHED}('{TARGET}', 'cpu')"

MODEL = """\
import dataclasses

import jax
import jax.numpy as jnp

from jitbench import Target


@jax.tree_util.register_dataclass
@dataclasses.dataclass
class Affine:
    weight: jax.Array
    bias: jax.Array
    scale: float = dataclasses.field(default=2.0, metadata={"static": True})

    def __call__(self, x):
CALL_PATH        return _apply(self, x)


@jax.jit
def _apply(model, x):
    return x * model.weight * model.scale + model.bias


def make():
    return Target(Affine(jnp.ones(8), jnp.zeros(8)), inputs=(jnp.arange(8.0),))
"""
# About 2 ms of Python per call: some fifty times the dispatch of the jitted call.
SLOW_PATH = """\
        for _ in range(2000):
            for field in dataclasses.fields(self):
                getattr(self, field.name)
"""


def _run(args: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode not in ok:
        output = done.stdout[-4000:] + done.stderr[-4000:]
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}:\n{output}")
    return done.stdout


@dataclass
class Loop:
    repo: Path
    env: dict[str, str]
    commits: list[str]  # as is, slowed down, unchanged since the slowdown

    def jitbench(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "jitbench", *args],
            cwd=self.repo,
            env=self.env,
            capture_output=True,
            text=True,
        )


def _commit(repo: Path, env: dict[str, str], message: str) -> str:
    git = ["git", "-c", "user.name=jitbench", "-c", "user.email=jitbench@localhost"]
    _run([*git, "add", "-A", "affine_pkg"], repo, env)
    _run([*git, "commit", "-q", "-m", message], repo, env)
    return _run(["git", "rev-parse", "HEAD"], repo, env).strip()


@pytest.fixture(scope="module")
def loop(tmp_path_factory) -> Loop:
    folder = tmp_path_factory.mktemp("loop")
    repo = folder / "project"
    (repo / "affine_pkg").mkdir(parents=True)
    # HOME in the folder: asv machine leaves the user's ~/.asv-machine.json alone.
    # This checkout's jitbench on the path of jitbench's commands and of asv's processes.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(
        os.environ,
        HOME=str(folder),
        PYTHONPATH=path,
        ASV_PYTHONPATH=os.pathsep.join((str(repo), str(ROOT))),
        JITBENCH_DEVICES="cpu",
    )
    env.pop("JITBENCH_TARGETS", None)
    _run(["git", "-c", "init.defaultBranch=main", "init", "-q"], repo, env)
    package = repo / "affine_pkg"
    (package / "__init__.py").write_text("")
    (package / "model.py").write_text(MODEL.replace("CALL_PATH", ""))
    commits = [_commit(repo, env, "the model as it is")]
    (package / "model.py").write_text(MODEL.replace("CALL_PATH", SLOW_PATH))
    commits.append(_commit(repo, env, "per-call work on the call path"))
    (package / "model.py").write_text(
        "# A comment, no code changed.\n" + MODEL.replace("CALL_PATH", SLOW_PATH)
    )
    commits.append(_commit(repo, env, "a comment"))

    _run([sys.executable, "-m", "jitbench", "init", "--target", TARGET], repo, env)
    asv = [sys.executable, "-m", "asv"]
    _run([*asv, "machine", "--yes", "--machine", MACHINE], repo, env)
    bench = catalog.regex(CACHED, DISPATCH)
    for commit in commits:
        _run(["git", "checkout", "-q", commit], repo, env)
        _run(
            [
                *asv, "run", "--python=same", "--machine", MACHINE, "--set-commit-hash", commit,
                "-b", bench, "-a", "rounds=1", "-a", "repeat=10", "--record-samples",
            ],
            repo,
            env,
        )  # fmt: skip
    _run(["git", "checkout", "-q", "main"], repo, env)
    return Loop(repo, env, commits)


def _marks(output: str) -> dict[str, str]:
    """compare's table as {benchmark (parameters): mark}."""
    marks = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[4].startswith("bench_"):
            marks[re.sub(r" \[.*\]$", "", cells[4])] = cells[0]
    return marks


def test_compare_flags_the_planted_slowdown_on_the_targets_cached_call(loop: Loop) -> None:
    done = loop.jitbench("compare", loop.commits[0], loop.commits[1], "--factor", FACTOR)
    assert done.returncode == 1, done.stdout + done.stderr
    marks = _marks(done.stdout)
    assert marks[ROW] == "+", done.stdout


def test_compare_does_not_flag_an_unchanged_commit(loop: Loop) -> None:
    done = loop.jitbench("compare", loop.commits[1], loop.commits[2], "--factor", FACTOR)
    assert done.returncode == 0, done.stdout + done.stderr
    marks = _marks(done.stdout)
    assert marks[ROW] == "~", done.stdout


def test_report_has_the_target_in_its_headline_table(loop: Loop, tmp_path: Path) -> None:
    done = loop.jitbench("report", "--out", str(tmp_path / "report"))
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "report" / "index.md").read_text()
    at_a_glance = page.split("## At a glance", 1)[1].split("\n## ", 1)[0]
    assert "### cpu, targets" in at_a_glance, at_a_glance
    table = at_a_glance.split("### cpu, targets", 1)[1]
    lines = [line for line in table.splitlines() if line.startswith("|")]
    header, row = ([c.strip() for c in line.strip("|").split("|")] for line in (lines[0], lines[2]))
    # Only the cached-call benchmarks ran; no eager at the target's sizes, so no ratios.
    assert header == ["strategy", "hazard", "cached call", "dispatch only"], header
    assert row[0] == TARGET and row[1] == "" and "n/a" not in row, row


def test_dashboard_renders_the_targets_graph(loop: Loop) -> None:
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"headless Chromium not found at {CHROMIUM}: apt-get install chromium")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    # The publishing of the loop: asv's site, the jitbench report in it, offline files.
    _run([sys.executable, "-m", "asv", "publish"], loop.repo, loop.env)
    html = loop.repo / "html"
    _run(
        [sys.executable, "-m", "jitbench", "report", "--out", str(html / "report")],
        loop.repo,
        loop.env,
    )
    _run([sys.executable, "-m", "jitbench.dashboard", str(html)], loop.repo, loop.env)
    with serve(html) as base, sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_default_timeout(20_000)
            page.route(
                "**/*",
                lambda route, request: (
                    route.continue_() if request.url.startswith(base) else route.abort()
                ),
            )
            page.goto(f"{base}#{CACHED}?p-target={quote(repr(TARGET), safe='')}&p-device='cpu'")
            page.wait_for_selector("#main-graph .flot-overlay")
            assert "error.html" not in page.url
            body = page.inner_text("body")
            assert CACHED in body and TARGET in body, body[:2000]
            # One point per commit measured on the target's line.
            points = page.evaluate(
                "() => $('#main-graph').data('plot').getData()"
                ".map(s => s.data.filter(p => p[1] !== null).length)"
            )
            assert points == [len(loop.commits)], points
        finally:
            browser.close()
