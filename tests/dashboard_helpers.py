"""What the dashboard test needs around the browser: real asv results, a server, offline scripts.

asv 0.6.6's ``index.html`` loads jQuery, flot, bootstrap and three small
plugins from public CDNs. Tests never leave 127.0.0.1, so the browser's
requests for those addresses are answered from the same releases installed
with npm (``ASV_WWW_NPM_COMMAND``); nothing else outside the loopback server
is answered at all.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
# Flags this machine's Chromium needs: no sandbox as root, and no background
# connections, which the closed network would refuse. The resolver rule makes
# sure no host name but the loopback address is ever looked up.
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

# The releases asv 0.6.6's index.html asks for (stupidtable 1.0.1 is not on
# npm; 1.1.3 has the same jQuery API, and only the list pages use it).
ASV_WWW_PACKAGES = {
    "jquery": "3.3.1",
    "flot": "0.8.3",
    "flot-orderbars": "1.0.0",
    "stupid-table-plugin": "1.1.3",
    "blueimp-md5": "2.19.0",
    "bootstrap": "3.1.1",
}
ASV_WWW_LIBS = Path(
    os.environ.get(
        "JITBENCH_ASV_WWW_LIBS", Path.home() / ".cache" / "jitbench" / "asv-www" / "node_modules"
    )
)
ASV_WWW_NPM_COMMAND = f"npm install --no-save --prefix {ASV_WWW_LIBS.parent} " + " ".join(
    f"{name}@{version}" for name, version in ASV_WWW_PACKAGES.items()
)
# CDN address -> file under node_modules; jsdelivr's /npm/ addresses map by rule.
_CDN_FILES = {
    "https://code.jquery.com/jquery-3.3.1.min.js": "jquery/dist/jquery.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.min.js": "flot/jquery.flot.js",
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.time.min.js": (
        "flot/jquery.flot.time.js"
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.selection.min.js": (
        "flot/jquery.flot.selection.js"
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.categories.min.js": (
        "flot/jquery.flot.categories.js"
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/stupidtable/1.0.1/stupidtable.min.js": (
        "stupid-table-plugin/stupidtable.min.js"
    ),
    "https://cdnjs.cloudflare.com/ajax/libs/blueimp-md5/2.19.0/js/md5.min.js": (
        "blueimp-md5/js/md5.min.js"
    ),
}
_JSDELIVR_NPM = re.compile(r"https://cdn\.jsdelivr\.net/npm/([^@/]+)@[^/]+/([^?#]+)")
_SRI = re.compile(r'(?:src|href)="([^"]+)"(\s+integrity="[^"]*")')

# asv.js's time units: (short name, long name, seconds).
_TIME_UNITS = [
    ("ps", "picoseconds", 1e-12),
    ("ns", "nanoseconds", 1e-9),
    ("μs", "microseconds", 1e-6),
    ("ms", "milliseconds", 1e-3),
    ("s", "seconds", 1.0),
    ("m", "minutes", 60.0),
]


def missing_www_libs() -> list[str]:
    """The npm packages (name@version) the dashboard needs that are not installed."""
    missing = []
    for name, version in ASV_WWW_PACKAGES.items():
        manifest = ASV_WWW_LIBS / name / "package.json"
        installed = json.loads(manifest.read_text()).get("version") if manifest.is_file() else None
        if installed != version:
            missing.append(f"{name}@{version}")
    return missing


def local_copy(url: str) -> Path | None:
    """The installed file that stands in for a CDN address, or None for any other address."""
    if url in _CDN_FILES:
        path = ASV_WWW_LIBS / _CDN_FILES[url]
    elif match := _JSDELIVR_NPM.fullmatch(url):
        path = ASV_WWW_LIBS / match[1] / match[2]
    else:
        return None
    return path if path.is_file() else None


def drop_cdnjs_integrity(html: str) -> str:
    """Drop the ``integrity`` attributes of the files cdnjs minified itself, and only those.

    npm ships flot and stupidtable as other bytes than cdnjs serves, so no local
    copy can match their hashes. The other checks stay: the browser refuses a
    jQuery, bootstrap, md5 or orderBars that is not the exact release asv asks for.
    """

    def drop(match: re.Match[str]) -> str:
        rebuilt = match[1] in _CDN_FILES and _CDN_FILES[match[1]].startswith(("flot/", "stupid"))
        return match[0].replace(match[2], "") if rebuilt else match[0]

    return _SRI.sub(drop, html)


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


def publish_quick_results(folder: Path) -> tuple[Path, Path, str]:
    """A one-commit copy of the suite, a quick asv run of one benchmark, and ``asv publish``.

    HOME points into ``folder`` so ``asv machine`` leaves the user's
    ~/.asv-machine.json alone. Returns (results JSON, html dir, commit hash).
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
    _run([*asv, "publish"], project, env)
    (results,) = (
        path
        for path in (project / "results" / MACHINE).glob("*.json")
        if path.name != "machine.json"
    )
    return results, project / "html", head


def first_measurement(results: Path) -> tuple[dict[str, str], int, float]:
    """The first parameter combination with a number: ({name: repr}, flat index, seconds)."""
    data = json.loads(results.read_text())
    columns = data["result_columns"]
    row = data["results"][BENCHMARK]
    values, params = row[columns.index("result")], row[columns.index("params")]
    names = ["strategy", "size", "device"]
    for index, combo in enumerate(itertools.product(*params)):
        if isinstance(values[index], float):
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
