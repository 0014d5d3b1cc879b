"""What the dashboard test needs around the browser: real asv results, publishing, a server.

The results come from one quick ``asv run --python=same`` of one benchmark,
written again as two asv environments that differ only in their ``jax``
requirement (as ``nox -s jax_versions`` makes them), so the dashboard has a
JAX release to choose. Publishing is what ``nox -s publish`` does: ``asv
publish``, the jitbench report copied to ``html/report/``, then ``python -m
jitbench.dashboard html``.
"""

from __future__ import annotations

import functools
import importlib.metadata
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
# Flags this machine's Chromium needs: no sandbox as root, and no background
# connections. The resolver rule makes sure no host name but the loopback
# address is ever looked up, whatever asks for it; the test's request handler
# aborts every request the page makes to anything else.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]

BENCHMARK = "bench_cached.CachedCall.time_cached_call"
MACHINE = "dashtest"
# The installed JAX measured the run; the second environment claims another release and
# twice the times, so the two lines on the graph differ.
JAX_MEASURED = importlib.metadata.version("jax")
JAX_OTHER = "0.4.30" if JAX_MEASURED != "0.4.30" else "0.4.31"
OTHER_FACTOR = 2.0

# asv.js's time units: (short name, long name, seconds).
_TIME_UNITS = [
    ("ps", "picoseconds", 1e-12),
    ("ns", "nanoseconds", 1e-9),
    ("μs", "microseconds", 1e-6),
    ("ms", "milliseconds", 1e-3),
    ("s", "seconds", 1.0),
    ("m", "minutes", 60.0),
]


@dataclass
class Published:
    html: Path  # the published site
    head: str  # the commit measured
    results: dict[str, Path]  # JAX release -> its asv result file
    project_url: str  # asv.conf.json's, as the dashboard's header link


def pretty_seconds(seconds: float) -> tuple[str, str]:
    """asv.js's rendering of a time: ("182.430μs", "microseconds") for 1.8243e-4."""
    for (short, long, scale), (_, _, next_scale) in itertools.pairwise(_TIME_UNITS):
        if abs(seconds) < next_scale:
            return f"{seconds / scale:.3f}{short}", long
    raise ValueError(f"{seconds} s is beyond the units this test knows")


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> None:
    """Run a command; on failure, show its output (asv explains itself there)."""
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        output = done.stdout[-4000:] + done.stderr[-4000:]
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}:\n{output}")


def _as_jax_environment(result: Path, jax: str, factor: float) -> Path:
    """``result`` written again as a virtualenv asv built for JAX ``jax``; times x ``factor``.

    asv names such environments after their requirements and stores the matrix
    values in ``params`` and ``requirements``; ``asv publish`` turns every
    ``params`` key with several values into a selector on the graph page.
    """
    data = json.loads(result.read_text())
    requirements = {**data["requirements"], "jax": jax, "jaxlib": jax}
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    data["env_name"] = f"virtualenv-py{python}-" + "-".join(
        f"{name}{version}" for name, version in sorted(requirements.items())
    )
    data["python"] = python
    data["requirements"] = requirements
    data["params"] = {**data["params"], "python": python, **requirements}
    column = data["result_columns"].index("result")
    for row in data["results"].values():
        row[column] = [
            value * factor if isinstance(value, float) and math.isfinite(value) else value
            for value in row[column]
        ]
    target = result.with_name(f"{data['commit_hash'][:8]}-{data['env_name']}.json")
    # asv writes bare NaN tokens; json.dumps writes them the same way.
    target.write_text(json.dumps(data))
    return target


def publish_quick_results(folder: Path) -> Published:
    """A one-commit copy of the suite, a quick asv run of one benchmark, published.

    HOME points into ``folder`` so ``asv machine`` leaves the user's
    ~/.asv-machine.json alone.
    """
    project = folder / "project"
    project.mkdir()
    shutil.copy2(ROOT / "asv.conf.json", project)
    shutil.copytree(
        ROOT / "benchmarks", project / "benchmarks", ignore=shutil.ignore_patterns("__pycache__")
    )
    env = dict(os.environ, HOME=str(folder), JITBENCH_SIZES="10,1000")
    git = ["git", "-c", "user.name=jitbench", "-c", "user.email=jitbench@localhost"]
    # The branch must be asv.conf.json's "main" for asv publish to graph it.
    _run([*git, "-c", "init.defaultBranch=main", "init", "-q"], project, env)
    _run([*git, "add", "-A"], project, env)
    _run([*git, "commit", "-q", "-m", "dashboard test"], project, env)
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=project, capture_output=True, text=True, check=True
    ).stdout.strip()
    asv = [sys.executable, "-m", "asv"]
    _run([*asv, "machine", "--yes", "--machine", MACHINE], project, env)
    # asv matches -b against "name(param, ...)" for parameterized benchmarks,
    # so the pattern ends at the parenthesis, not at "$".
    _run(
        [
            *asv, "run", "--python=same", "--quick", "--machine", MACHINE,
            "--set-commit-hash", head, "-b", "^" + re.escape(BENCHMARK) + r"\(",
        ],
        project,
        env,
    )  # fmt: skip
    (measured,) = (
        path
        for path in (project / "results" / MACHINE).glob("*.json")
        if path.name != "machine.json"
    )
    results = {
        JAX_MEASURED: _as_jax_environment(measured, JAX_MEASURED, 1.0),
        JAX_OTHER: _as_jax_environment(measured, JAX_OTHER, OTHER_FACTOR),
    }
    measured.unlink()  # "existing-py_...": its jax requirement is "" (whatever is installed)

    # What noxfile.py's _publish does, in this project.
    _run([*asv, "publish"], project, env)
    _run(
        [sys.executable, "-m", "jitbench", "report", "--results", "results", "--out", "reports"],
        project,
        env,
    )
    html = project / "html"
    shutil.copytree(project / "reports", html / "report", dirs_exist_ok=True)
    _run([sys.executable, "-m", "jitbench.dashboard", str(html)], project, env)

    config = json.loads((html / "index.json").read_text())
    return Published(html, head, results, config["project_url"])


def first_measurement(results: Path) -> tuple[dict[str, str], int, float]:
    """The first parameter combination with a number: ({name: repr}, flat index, seconds)."""
    data = json.loads(results.read_text())
    columns = data["result_columns"]
    row = data["results"][BENCHMARK]
    values, params = row[columns.index("result")], row[columns.index("params")]
    described = json.loads((results.parent.parent / "benchmarks.json").read_text())
    names = described[BENCHMARK]["param_names"]
    for index, combo in enumerate(itertools.product(*params)):
        if isinstance(values[index], float) and math.isfinite(values[index]):
            return dict(zip(names, combo, strict=True)), index, values[index]
    raise AssertionError(f"{results} holds no measured value for {BENCHMARK}: {values}")


class _QuietHandler(SimpleHTTPRequestHandler):
    """Static files without a log line per request in the test output."""

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(directory: Path) -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1 (a free port) from a thread; yields the base URL."""
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(directory))
    )
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
