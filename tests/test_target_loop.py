"""A project's own history under asv, as its maintainer runs it: ``jitbench init`` in the
repository, then asv's managed environments building and installing each commit, older ones
(which predate the benchmarks) included; ``jitbench compare``, ``jitbench report`` and the
dashboard on the results.

A throwaway git repository holds a small package whose model calls a jitted function:

O  the model as it is;
R  a docstring added, no code changed;
P  per-call Python work on the call path (a loop over the model's fields before the jitted
   call: some forty times the cached call's cost);
K  ``jax<0.1`` in its requirements: it cannot be installed with the JAX every commit is
   measured with;
S  that requirement undone, and the benchmarks: ``jitbench init --target
   benchmarks.targets:make`` and the target module ``benchmarks/benchmarks/targets.py``;
   the package's code as at P.

Only S has the target module: the suite in the working tree measures the older commits.
From ``benchmarks/``, as its README says:

- ``jitbench asv machine --yes``;
- ``jitbench asv run HEAD~3..HEAD`` (S, K, P: asv goes from the newest) exits 2, as asv
  does whenever a commit cannot be installed: K is skipped with jitbench's one line, asv
  marks its rows failed, and P, after it, is measured;
- ``jitbench asv continuous --factor 5 R P`` exits 1 and prints its comparison, the
  target's cached call the row that got slower; ``... O R`` exits 0 (nothing changed);
- ``jitbench asv run O^!`` of the after-change step the model cannot take (an array of a
  new shape) exits 0: the step is n/a, not failed;
- ``jitbench compare`` flags R to P on the target's cached-call row (exit 0: times are shown,
  never judged) and not O to R;
  ``jitbench report`` shows the target in its headline table; ``jitbench asv publish``
  renders the target's graph, one point per commit measured.

Each asv command first measures the commit the one before it left installed: five builds
in all, the fewest these checks take. Only the continuous runs time the target's cached
call for a verdict (one round of ten samples, recorded, so that compare uses asv's
Mann-Whitney test); the other runs are ``--quick``. The compare factor is 5: the planted
slowdown is eight times beyond it, and the busiest minutes of this two-core machine, shared
by other jobs, moved a median of unchanged code by 2.7 times at most. About 110 seconds in
all on this machine, as busy as other jobs made it (most of it pip's installs of each
commit and the benchmarks' processes).

No network: asv's environments are made by tests/asv_offline.py (a plugin: a ``venv`` that
sees this Python's site-packages, with the releases the matrix pins, in place of the
requirements asv would pip-install), the project is built by an in-tree PEP 517 backend with
no build requirements, init's jitbench wheel is built with the setuptools that virtualenv
bundles, and every pip runs with ``PIP_NO_INDEX=1`` and no configuration file. asv.conf.json
is init's but for its environment type and that plugin.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from dashboard_helpers import CHROMIUM, CHROMIUM_ARGS, serve

from jitbench.suite import catalog

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
TARGET = "benchmarks.targets:make"
FACTOR = "5"
CACHED = catalog.TARGET_TWINS[catalog.CACHED]
AFTER_CHANGE = catalog.TARGET_TWINS[catalog.AFTER_CHANGE]
ROW = f"{CACHED}('{TARGET}', 'cpu')"
# The after-change step the model cannot take: its first array field (weight) given a new
# shape, which the dot product rejects with jit or without (the audit: n/a).
NOT_APPLICABLE = "new_shape_array"
STEP = f"{AFTER_CHANGE}('{TARGET}', 'cpu', '{NOT_APPLICABLE}')"
SKIPPED = "jitbench: this commit is skipped: it cannot be installed with "
JAX, JAXLIB = (importlib.metadata.version(name) for name in ("jax", "jaxlib"))

# The project's build backend, in its own tree: the package zipped as a wheel, so that pip's
# isolated build has nothing to install.
BACKEND = '''\
"""A PEP 517 backend of a few lines: the package and its metadata as a wheel."""

import base64
import hashlib
import pathlib
import tomllib
import zipfile


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = tomllib.loads(pathlib.Path("pyproject.toml").read_text())["project"]
    name, version = project["name"], project["version"]
    stem = f"{name.replace('-', '_')}-{version}"
    info = f"{stem}.dist-info"
    requires = "".join(f"Requires-Dist: {r}\\n" for r in project.get("dependencies", []))
    files = {str(p): p.read_bytes() for p in sorted(pathlib.Path("affine_pkg").glob("*.py"))}
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n{requires}".encode()
    )
    files[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    )
    record = ""
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record += f"{path},sha256={digest.decode()},{len(data)}\\n"
    files[f"{info}/RECORD"] = (record + f"{info}/RECORD,,\\n").encode()
    wheel = f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(pathlib.Path(wheel_directory) / wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel
'''
PYPROJECT = """\
[build-system]
requires = []
build-backend = "wheel_backend"
backend-path = ["."]

[project]
name = "affine-pkg"
version = "1.0"
requires-python = ">=3.11"
dependencies = [DEPENDENCIES]
"""
MODEL = """\
import dataclasses

import jax
import jax.numpy as jnp


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
    return jnp.dot(x, model.weight) * model.scale + model.bias
"""
# About 0.3 ms of Python per call: some forty times the cached call of the jitted function.
SLOW_PATH = """\
        for _ in range(200):
            for field in dataclasses.fields(self):
                getattr(self, field.name)
"""
TARGETS = """\
import jax.numpy as jnp
from affine_pkg.model import Affine

from jitbench import Target


def make():
    return Target(Affine(jnp.ones(8), jnp.zeros(8)), inputs=(jnp.arange(8.0),))
"""


def _run(
    args: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode not in ok:
        output = done.stdout[-6000:] + done.stderr[-4000:]
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}:\n{output}")
    return done


def _offline(folder: Path) -> dict[str, str]:
    """This process's environment, every pip in it kept off the network and off this
    machine's pip configuration; HOME in ``folder``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    path = os.pathsep.join(
        p for p in (str(ROOT / "tests"), str(ROOT), os.environ.get("PYTHONPATH", "")) if p
    )
    env.update(
        HOME=str(folder),
        PYTHONPATH=path,  # asv_offline, and this checkout's jitbench for jitbench's commands
        PIP_NO_INDEX="1",
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        JITBENCH_DEVICES="cpu",
        # A tcmalloc that does not exist: counts off, whatever this machine has installed.
        JITBENCH_TCMALLOC="/nonexistent/libtcmalloc_minimal.so",
    )
    env.pop("JITBENCH_TARGETS", None)
    return env


@dataclass
class Loop:
    repo: Path
    suite: Path  # benchmarks/, where the commands run
    env: dict[str, str]
    commits: dict[str, str]  # O, R, P, K, S -> hash
    ran: subprocess.CompletedProcess[str]  # asv run HEAD~3..HEAD
    slower: subprocess.CompletedProcess[str]  # asv continuous R P
    unchanged: subprocess.CompletedProcess[str]  # asv continuous O R
    healthy: subprocess.CompletedProcess[str]  # asv run O^!, of the step that cannot apply

    def jitbench(self, *args: str, ok: tuple[int, ...] = (0,)) -> str:
        return _run([sys.executable, "-m", "jitbench", *args], self.suite, self.env, ok).stdout


def _commit(repo: Path, env: dict[str, str], message: str) -> str:
    git = ["git", "-c", "user.name=jitbench", "-c", "user.email=jitbench@localhost"]
    _run([*git, "add", "-A"], repo, env)
    _run([*git, "commit", "-q", "-m", message], repo, env)
    return _run(["git", "rev-parse", "HEAD"], repo, env).stdout.strip()


def _bench(*names: str) -> list[str]:
    """asv's -b for exactly these rows (asv matches it against "name(params)")."""
    return ["-b", "^(" + "|".join(re.escape(name) for name in names) + ")$"]


def _project(repo: Path, *, dependencies: str, slow: bool) -> None:
    (repo / "pyproject.toml").write_text(PYPROJECT.replace("DEPENDENCIES", dependencies))
    model = MODEL.replace("CALL_PATH", SLOW_PATH if slow else "")
    (repo / "affine_pkg" / "model.py").write_text(model)


def _init(repo: Path, env: dict[str, str]) -> None:
    """``jitbench init`` (its jitbench wheel built with virtualenv's bundled setuptools), the
    environments of its asv.conf.json made by tests/asv_offline.py, and the target module."""
    from virtualenv.seed.wheels.embed import BUNDLE_FOLDER

    bundled = {**env, "PIP_FIND_LINKS": str(BUNDLE_FOLDER)}
    _run([sys.executable, "-m", "jitbench", "init", "--target", TARGET], repo, bundled)
    conf = repo / "benchmarks" / "asv.conf.json"
    text = conf.read_text()
    virtualenv = '"environment_type": "virtualenv",'
    assert text.count(virtualenv) == 1, text
    offline = '"environment_type": "offline-virtualenv", "plugins": [".asv_offline"],'
    conf.write_text(text.replace(virtualenv, offline))
    (repo / "benchmarks" / "benchmarks" / "targets.py").write_text(TARGETS)


@pytest.fixture(scope="module")
def loop(tmp_path_factory) -> Loop:
    folder = tmp_path_factory.mktemp("loop")
    repo = folder / "project"
    (repo / "affine_pkg").mkdir(parents=True)
    env = _offline(folder)
    _run(["git", "-c", "init.defaultBranch=main", "init", "-q"], repo, env)
    (repo / "wheel_backend.py").write_text(BACKEND)
    (repo / "affine_pkg" / "__init__.py").write_text("")
    commits = {}
    for name, dependencies, slow, message in [
        ("O", '"jax"', False, "the model as it is"),
        ("R", '"jax"', False, "a docstring"),
        ("P", '"jax"', True, "per-call work on the call path"),
        ("K", '"jax<0.1"', True, "a requirement no JAX release measured satisfies"),
        ("S", '"jax"', True, "the requirement undone; asv benchmarks through jitbench"),
    ]:
        _project(repo, dependencies=dependencies, slow=slow)
        if name == "R":
            (repo / "affine_pkg" / "__init__.py").write_text('"""An affine model."""\n')
        if name == "S":
            _init(repo, env)
        commits[name] = _commit(repo, env, message)

    suite = repo / "benchmarks"
    asv = [sys.executable, "-m", "jitbench", "asv"]
    _run([*asv, "machine", "--yes"], suite, env)
    ran = _run([*asv, "run", "--quick", *_bench(ROW), "HEAD~3..HEAD"], suite, env, (2,))
    continuous = [*asv, "continuous", "--factor", FACTOR, "--record-samples"]
    continuous += ["-a", "rounds=1", "-a", "repeat=10"]
    slower = _run([*continuous, *_bench(ROW), commits["R"], commits["P"]], suite, env, (1,))
    unchanged = _run([*continuous, *_bench(ROW), commits["O"], commits["R"]], suite, env)
    healthy = _run([*asv, "run", "--quick", *_bench(STEP), f"{commits['O']}^!"], suite, env)
    return Loop(repo, suite, env, commits, ran, slower, unchanged, healthy)


def _results(loop: Loop) -> dict[str, dict]:
    """Each commit's asv result file, by its letter."""
    by_hash = {}
    for path in (loop.suite / "results").glob("*/*.json"):
        if path.name not in ("machine.json", "benchmarks.json"):
            data = json.loads(path.read_text())
            by_hash[data["commit_hash"]] = data
    return {name: by_hash[h] for name, h in loop.commits.items() if h in by_hash}


def _column(result: dict, benchmark: str, column: str) -> Any:
    # asv leaves out a row's empty columns at its end.
    row = result["results"][benchmark]
    return dict(zip(result["result_columns"], row, strict=False)).get(column)


def _value(result: dict, benchmark: str, index: int = 0) -> float | None:
    """One parameter combination's value (None: failed, NaN: n/a or not run)."""
    values = _column(result, benchmark, "result")
    return None if values is None else values[index]


def test_the_range_skips_the_commit_that_cannot_be_installed_and_measures_the_rest(loop: Loop):
    output = loop.ran.stdout + loop.ran.stderr
    # One line, once: K's install. asv then marks K's rows failed, so the run exits 2.
    assert output.count(SKIPPED) == 1, output
    (line,) = (line.strip() for line in output.splitlines() if SKIPPED in line)
    assert line.startswith(f"{SKIPPED}jax {JAX}, jaxlib {JAXLIB}"), line  # the matrix's
    assert line.endswith(": affine-pkg 1.0 depends on jax<0.1"), line  # pip's reason
    measured = re.findall(r"For affine-pkg commit (\w+)", output)
    c = loop.commits
    assert measured == [c["S"][:8], c["K"][:8], c["P"][:8]], output  # P after K
    results = _results(loop)
    assert _value(results["K"], CACHED) is None  # failed: asv could not install K
    for name in ("P", "S"):  # P is older than the target module
        assert _value(results[name], CACHED) > 0, name


def test_a_step_the_target_cannot_take_is_skipped_not_failed(loop: Loop):
    # asv run O^! exited 0 (the fixture checks): the step, alone of its row's parameters, ran.
    assert AFTER_CHANGE.split(".", 1)[1] in loop.healthy.stdout
    result = _results(loop)["O"]
    index = _column(result, AFTER_CHANGE, "params")[2].index(repr(NOT_APPLICABLE))
    value = _value(result, AFTER_CHANGE, index)
    assert isinstance(value, float) and math.isnan(value), value  # n/a, not failed (None)
    assert _column(result, AFTER_CHANGE, "duration") > 0


def test_continuous_exits_1_on_the_planted_slowdown_with_its_comparison(loop: Loop):
    output = loop.slower.stdout
    assert "PERFORMANCE DECREASED." in output, output
    (row,) = (line for line in output.splitlines() if line.startswith("|") and ROW in line)
    assert row.split("|")[1].strip() == "+", output


def test_continuous_exits_0_on_an_unchanged_commit_with_its_comparison(loop: Loop):
    output = loop.unchanged.stdout
    assert "BENCHMARKS NOT SIGNIFICANTLY CHANGED." in output, output


def _marks(output: str) -> dict[str, str]:
    """compare's table as {benchmark (parameters): mark}."""
    marks = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[4].startswith("bench_"):
            marks[re.sub(r" \[.*\]$", "", cells[4])] = cells[0]
    return marks


def test_compare_flags_the_planted_slowdown_on_the_targets_cached_call(loop: Loop) -> None:
    """Marked, and shown: a time never sets compare's exit status (counts and hazards do)."""
    c = loop.commits
    output = loop.jitbench("compare", c["R"], c["P"], "--factor", FACTOR)
    assert _marks(output)[ROW] == "+", output
    assert output.splitlines()[-1].startswith("passes: "), output


def test_compare_does_not_flag_an_unchanged_commit(loop: Loop) -> None:
    c = loop.commits
    output = loop.jitbench("compare", c["O"], c["R"], "--factor", FACTOR)
    assert _marks(output)[ROW] == "~", output


@pytest.fixture(scope="module")
def html(loop: Loop) -> Path:
    """The README's publishing: asv's site, the jitbench report in it, offline files."""
    _run([sys.executable, "-m", "jitbench", "asv", "publish"], loop.suite, loop.env)
    html = loop.suite / "html"
    loop.jitbench("report", "--out", str(html / "report"))
    _run([sys.executable, "-m", "jitbench.dashboard", str(html)], loop.suite, loop.env)
    return html


def test_report_has_the_target_in_its_headline_table(html: Path) -> None:
    page = (html / "report" / "index.md").read_text()
    at_a_glance = page.split("## At a glance", 1)[1].split("\n## ", 1)[0]
    assert "### cpu, targets" in at_a_glance, at_a_glance
    table = at_a_glance.split("### cpu, targets", 1)[1]
    lines = [line for line in table.splitlines() if line.startswith("|")]
    header, row = ([c.strip() for c in line.strip("|").split("|")] for line in (lines[0], lines[2]))
    # Only the cached call was timed; no eager at the target's sizes, so no ratios.
    assert header == ["strategy", "hazard", "cached call"], header
    assert row[0] == TARGET and row[1] == "" and "n/a" not in row, row


def test_dashboard_renders_the_targets_graph(html: Path) -> None:
    if not (CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(f"headless Chromium not found at {CHROMIUM}: apt-get install chromium")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
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
            # One point per commit measured on the target's line: O, R, P and S (not K).
            points = page.evaluate(
                "() => $('#main-graph').data('plot').getData()"
                ".map(s => s.data.filter(p => p[1] !== null).length)"
            )
            assert points == [4], points
        finally:
            browser.close()
