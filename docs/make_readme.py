"""Regenerate the generated blocks of the README and docs/ pages (``nox -s readme``).

Never edit a block by hand: each sits between ``<!-- BEGIN generated: NAME -->``
and ``<!-- END generated: NAME -->`` in one of the pages of
:data:`blocks.PAGES`, which makes every block from a file a clone has
(:mod:`blocks`). This script writes the pages, runs the command lines the
pages quote as a user types them, and retakes the dashboard's screenshot. ``--check``
writes nothing and exits 1 when a page differs from what it would write.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import http.server
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

from blocks import DASHBOARD_ENV, DASHBOARD_PARAMS, DASHBOARD_PNG, generate
from blocks.runs import RESULTS, ROOT, Runs

from jitbench.report import write_report
from jitbench.suite import catalog
from jitbench.suite.asvrun import AsvConfig

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]  # fmt: skip


def cli(args: list[str], env: Mapping[str, str]) -> str:
    """What ``python -m jitbench ARGS`` prints, run from the checkout with ``env`` added."""
    return subprocess.run(
        [sys.executable, "-m", "jitbench", *args],
        capture_output=True, text=True, check=True, env={**os.environ, **env}, cwd=ROOT,
    ).stdout  # fmt: skip


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the dashboard to the browser without a log line per request."""

    def log_message(self, format: str, *args: object) -> None:
        pass


def screenshot(runs: Runs) -> None:
    """A screenshot of the dashboard of the committed results, served with the network cut.

    Without Chromium the committed screenshot stays as it is (the block's text does not
    depend on it); CI installs Chromium.
    """
    if not CHROMIUM.is_file():
        print(
            f"{DASHBOARD_PNG.relative_to(ROOT)} kept as committed: no {CHROMIUM}", file=sys.stderr
        )
        return
    from playwright.sync_api import sync_playwright  # optional: installed where CI shoots

    html = runs.tmp / "html"
    config = AsvConfig(ROOT, runs.tmp / "asv", html_dir=str(html))
    config.run("publish", "--no-pull")
    report = write_report(
        RESULTS, runs.tmp / "report", machine=runs.machine, commit=runs.commit, env=runs.env
    ).parent
    shutil.copytree(report, html / "report")
    subprocess.run([sys.executable, "-m", "jitbench.dashboard", str(html)], check=True)
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(html))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    query = "&".join([*(f"p-{k}={quote(v, safe='')}" for k, v in DASHBOARD_PARAMS.items()),
                      *(f"{k}={quote(v, safe='')}" for k, v in DASHBOARD_ENV.items())])  # fmt: skip
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
            )
            page = browser.new_page(viewport={"width": 1280, "height": 760})
            page.route(
                "**/*",
                lambda route, request: (
                    route.continue_() if request.url.startswith(base) else route.abort()
                ),
            )
            page.goto(f"{base}#{catalog.CACHED}?{query}")
            page.wait_for_selector("#main-graph .flot-overlay")
            page.wait_for_timeout(500)
            page.screenshot(path=str(DASHBOARD_PNG))
            browser.close()
    finally:
        server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; 1 if a page differs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jitbench-readme-") as tmp:
        pages, images = generate(Path(tmp), cli, shoot=None if args.check else screenshot)
        if args.check:
            differ = 0
            for page, text in pages.items():
                committed = (ROOT / page).read_text(encoding="utf-8")
                diff = difflib.unified_diff(
                    committed.splitlines(keepends=True), text.splitlines(keepends=True),
                    f"{page} (committed)", f"{page} (generated)",
                )  # fmt: skip
                shown = "".join(diff)
                differ += bool(shown)
                sys.stdout.write(shown)
            sys.exit(1 if differ else 0)
        for page, text in pages.items():
            (ROOT / page).write_text(text, encoding="utf-8")
        for dest, src in images.items():
            shutil.copyfile(src, dest)


if __name__ == "__main__":
    main()
