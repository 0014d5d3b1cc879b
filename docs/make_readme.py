"""Regenerate the README's generated blocks (``nox -s readme``); never edit them by hand.

Each block sits between ``<!-- BEGIN generated: NAME -->`` and
``<!-- END generated: NAME -->``. The figures come from the committed asv
results, through ``jitbench report`` (whose Markdown tables are quoted as
they are) and ``jitbench.results`` (asv's own reader); the audit rows of
each JAX release come from the environments ``nox -s jax_history`` built;
the code listings and the audit from the installed jitbench and JAX.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd

from jitbench import catalog, results
from jitbench.report import write_report

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RESULTS = ROOT / "results"
ENVS = ROOT / ".asv" / "env"
RUN_SIZE = 10
# The releases on each side of every change the history shows, for the evidence rows.
EDGE_STRATEGY = "static_self_value_hash"


def splice(text: str, name: str, body: str) -> str:
    """``text`` with the generated block ``name`` replaced by ``body``."""
    begin, end = f"<!-- BEGIN generated: {name} -->", f"<!-- END generated: {name} -->"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), flags=re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"README.md has no generated block {name!r}")
    return pattern.sub(lambda _: f"{begin}\n{body.strip()}\n{end}", text)


def section(markdown: str, heading: str) -> str:
    """The body of the report section titled ``heading`` (up to its CSV link or next heading)."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip("#").strip() == heading)
    body = []
    for line in lines[start + 1 :]:
        if line.startswith("#") or line.startswith("CSV:"):
            break
        body.append(line)
    return "\n".join(body).strip()


class Runs:
    """The committed results: the newest full run, and the newest JAX history.

    The full run is the (machine, commit, environment) that measured the most
    (benchmark, strategy) pairs (an older run with fewer strategies loses,
    whatever its grid of sizes), the newest of equals; the history the newest
    (machine, commit) with results from two JAX releases or more.
    """

    def __init__(self) -> None:
        frame = results.load(RESULTS)
        measured = frame[frame["value"].notna()]
        pair = measured["benchmark"] + " " + measured["strategy"].astype(str)
        measured = measured.assign(pair=pair)
        groups = measured.groupby(["machine", "commit", "env"]).agg(
            pairs=("pair", "nunique"), date=("date", "max")
        )
        self.machine, self.commit, self.env = groups.sort_values(["pairs", "date"]).index[-1]
        self.full = results.select(frame, machine=self.machine, commit=self.commit, env=self.env)
        releases = frame.groupby(["machine", "commit"]).agg(
            jax=("jax", "nunique"), date=("date", "max")
        )
        history = releases[releases["jax"] > 1].sort_values("date")
        if history.empty:
            raise SystemExit("the committed results hold no JAX history: run nox -s jax_history")
        self.history_machine, self.history_commit = history.index[-1]
        self.tmp = Path(tempfile.mkdtemp(prefix="jitbench-readme-"))
        self.report = write_report(
            RESULTS, self.tmp / "full", machine=self.machine, commit=self.commit, env=self.env
        ).parent
        self.releases = write_report(
            RESULTS, self.tmp / "history", machine=self.history_machine,
            commit=self.history_commit,
        ).parent  # fmt: skip

    @property
    def jax(self) -> str:
        return str(self.full["jax"].iloc[0])


def run_block(runs: Runs) -> str:
    machine = json.loads((RESULTS / runs.machine / "machine.json").read_text())
    date = runs.full["date"].iloc[0]
    index = (runs.report / "index.md").read_text()
    table = section(index, f"cpu, size {RUN_SIZE}")
    plot = runs.report / "plots" / "cached-call-vs-size-cpu.png"
    shutil.copyfile(plot, DOCS / plot.name)
    return "\n".join(
        [
            f"A real run of the default grid (`nox -s bench`) on machine **{runs.machine}** "
            f"({machine['cpu']}, {machine['num_cpu']} cores, "
            f"{int(machine['ram']) / 2**30:.0f} GiB), commit `{runs.commit[:8]}`, "
            f"{date:%Y-%m-%d}, JAX {runs.jax}, env `{runs.env}`. Device `cpu`, "
            f"{RUN_SIZE} float32 elements (the report has every size and device):",
            "",
            table,
            "",
            f"![cached call against array size, one line per strategy](docs/{plot.name})",
        ]
    )


def findings_block(runs: Runs) -> str:
    """What the ecosystem's fixes buy, with the figures of the run above."""
    rows = runs.full[(runs.full["device"] == "cpu") & (runs.full["size"] == RUN_SIZE)]
    value = rows.set_index(["benchmark", "strategy"])["value"]

    def us(benchmark: str, strategy: str) -> float:
        return float(value[benchmark, strategy]) * 1e6

    def pair(base: str, other: str, what: str) -> str:
        a, b = us(catalog.DISPATCH, base), us(catalog.DISPATCH, other)
        return f"`{other}` dispatches in {b:.1f} μs against {a:.1f} μs for `{base}` ({what})"

    lines = [
        f"What the ecosystem's recommended fixes buy (dispatch only, `cpu`, size {RUN_SIZE}, "
        f"JAX {runs.jax}, from the run above):",
        "",
        "- " + pair("flax_nnx_jit", "nnx_cached_partial", "flax's `nnx.cached_partial`"),
        "- " + pair("flax_nnx_jit", "nnx_split_merge", "`jax.jit` over `nnx.split` state"),
        "- " + pair("equinox_filter_jit", "equinox_module_jax_jit", "plain `jax.jit`, same module"),
        "- " + pair("helper_function", "aot_compiled", "the executable called, no cache lookup"),
        "- " + pair("pytree_class", "pytree_dataclass", "C++ flattening instead of Python"),
    ]
    return "\n".join(lines)


def history_block(runs: Runs) -> str:
    text = (runs.releases / "releases.md").read_text()
    table = section(text, "Hazards per JAX release: cpu")
    plot = next((runs.releases / "releases" / "plots").glob("*cached_call.png"))
    target = DOCS / "cached-call-vs-jax-release.png"
    shutil.copyfile(plot, target)
    return "\n".join(
        [
            f"`nox -s jax_history` at commit `{runs.history_commit[:8]}` on machine "
            f"{runs.history_machine}, device `cpu`.",
            "",
            table,
            "",
            f"![cached call against JAX release, one line per strategy](docs/{target.name})",
            "",
            evidence_block(),
        ]
    )


def evidence_block() -> str:
    """``static_self_value_hash``'s audit rows in each history environment, oldest first."""
    rows = []
    for python in sorted(ENVS.glob("*/bin/python")):
        out = subprocess.run(
            [str(python), "-m", "jitbench", "audit", "--strategy", EDGE_STRATEGY,
             "--format", "json"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        version = subprocess.run(
            [str(python), "-c", "import jax; print(jax.__version__)"],
            capture_output=True, text=True, check=False,
        ).stdout.strip()  # fmt: skip
        if out.returncode != 0 or not version:
            continue
        audit = json.loads(out.stdout)[0]
        cells = [f"{s['traces']}/{s['compiles']}" + _mark(s["outcome"]) for s in audit["steps"]]
        rows.append((results.release_key(version), [version, *cells]))
    if not rows:
        raise SystemExit(f"no environments of nox -s jax_history under {ENVS}")
    steps = [s["name"] for s in audit["steps"]]
    # Two environments of one release (a history one and a bench one) give one row when they agree.
    table = pd.DataFrame([r for _, r in sorted(rows)], columns=["jax", *steps]).drop_duplicates()
    return "\n".join(
        [
            f"`{EDGE_STRATEGY}` step by step in each of those environments (`jitbench audit "
            f"--strategy {EDGE_STRATEGY}`, run by `nox -s readme` in asv's environment of "
            "each release; `!` = stale):",
            "",
            table.to_markdown(index=False, disable_numparse=True),
        ]
    )


def _mark(outcome: str) -> str:
    return {"correct": "", "stale": " !", "error": " E"}[outcome]


def timing_block(runs: Runs) -> str:
    from asv.results import Results

    path = next(
        p
        for p in (RESULTS / runs.machine).glob(f"{runs.commit[:8]}-*.json")
        if Results.load(str(p)).env_name == runs.env
    )
    result = Results.load(str(path))
    described = json.loads((RESULTS / "benchmarks.json").read_text())
    rows, total = [], 0.0
    for name in catalog.ALL:
        seconds = result.duration.get(name)
        if seconds is None:
            continue
        total += seconds
        bench = described.get(name, {})
        timed = bench.get("type") == "time"
        rows.append(
            [
                f"`{name}`",
                str(bench.get("number", "")) if timed else "",
                str(bench.get("repeat", "")) if timed else "",
                str(bench.get("rounds", "")),
                f"{seconds:.0f} s",
            ]
        )
    caches = {k: v for k, v in result.duration.items() if k.startswith("<setup_cache")}
    total += sum(caches.values())
    table = pd.DataFrame(rows, columns=["benchmark", "calls a sample", "samples", "rounds", "took"])
    return "\n".join(
        [
            f"Timing settings and the seconds each benchmark took in the run above ("
            f"{total / 60:.1f} minutes of benchmarking in all, {sum(caches.values()):.0f} s of "
            "them in `setup_cache`; asv's own start-up and environment build not included):",
            "",
            table.to_markdown(index=False, disable_numparse=True),
            "",
            stages_sentence(runs),
        ]
    )


def stages_sentence(runs: Runs) -> str:
    """How the stages of the run above compare with the cold first calls, on cpu."""
    cpu = runs.full[runs.full["device"] == "cpu"]
    value = cpu.pivot_table(index=["strategy", "size"], columns="benchmark", values="value")
    stages = value[[catalog.TRACE, catalog.LOWER, catalog.COMPILE]].sum(axis=1, min_count=3)

    def shares(whole: str) -> tuple[pd.Series, str]:
        share = (stages / value[whole]).dropna()
        over = share[share > 1]
        text = f"{share.min():.0%}-{share.max():.0%} (median {share.median():.0%})"
        if not over.empty:
            worst = over.idxmax()
            text += (
                f", more than all of it in {len(over)} rows (most: `{worst[0]}` at size "
                f"{worst[1]:,}, {over.max():.2f}x)"
            )
        return share, text

    own, own_text = shares(catalog.STAGE_CALL)
    _, cold_text = shares(catalog.COLD)
    agree = (value[catalog.STAGE_CALL] / value[catalog.COLD]).dropna()
    return (
        f"In that run the three stages make up {own_text} of the cold first call they were "
        f"measured in (`Stages.track_call_seconds`; {len(own)} strategy and size rows on "
        f"`cpu`), and {cold_text} of `ColdCall`'s median for the same row. That median comes "
        f"from other processes, and the stages' own call is {agree.min():.0%}-{agree.max():.0%} "
        "of it: on this machine a compile takes a different time from one process to the next."
    )


def validation_block() -> str:
    report = ROOT / "reports" / "validation" / "validation.md"
    if not report.is_file():
        raise SystemExit(f"{report} is missing: run nox -s validate on this machine first")
    lines = report.read_text().splitlines()
    start = lines.index("## Summary") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("## "))
    return "\n".join([lines[2], *lines[start:end]])


def strategies_block() -> str:
    """The generated source of every built-in strategy at the default shape."""
    from jitbench.strategies import STRATEGIES

    parts = []
    for strategy in STRATEGIES.values():
        parts += [
            f"<details><summary><code>{strategy.name}</code>: {strategy.summary}</summary>",
            "",
            "```python",
            strategy.source().rstrip(),
            "```",
            "</details>",
            "",
        ]
    return "\n".join(parts)


def audit_block() -> str:
    """``jitbench audit`` on this machine's JAX, as a Markdown table."""
    import jax

    from jitbench import cache_audit
    from jitbench.changes import SCENARIO
    from jitbench.devices import resolve
    from jitbench.strategies import STRATEGIES

    placement = resolve("cpu")
    header = ["strategy", *SCENARIO, "stale", "errors", "leaked"]
    rows = []
    for strategy in STRATEGIES.values():
        result = cache_audit.audit(strategy, placement)
        cells = [f"{s.traces}/{s.compiles}{_mark(s.outcome)}" for s in result.steps]
        totals = [result.stale_results, result.errors, result.leaked_instances]
        rows.append([f"`{strategy.name}`", *cells, *map(str, totals)])
    table = pd.DataFrame(rows, columns=header)
    return "\n".join(
        [
            f"`jitbench audit` (JAX {jax.__version__}, device `cpu`, size {result.size}):",
            "",
            table.to_markdown(index=False, disable_numparse=True),
        ]
    )


def explain_block() -> str:
    """``jitbench audit --explain`` for one strategy: why each recompile happened."""
    command = ["audit", "--strategy", "pytree_dataclass", "--explain"]
    out = subprocess.run(
        [sys.executable, "-m", "jitbench", *command], capture_output=True, text=True, check=True
    ).stdout
    # Object ids change from run to run and say nothing here.
    out = re.sub(r" id=\d+", "", out)
    return "```\n$ jitbench " + " ".join(command) + "\n" + out.strip() + "\n```"


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]  # fmt: skip
DASHBOARD_PNG = DOCS / "dashboard.png"
DASHBOARD_PARAMS = {"strategy": "'helper_function'", "size": "10", "device": "'cpu'"}


def dashboard_block(runs: Runs) -> str:
    """A screenshot of the dashboard of the committed results, served with the network cut."""
    import functools
    import http.server
    import threading
    from urllib.parse import quote

    from playwright.sync_api import sync_playwright

    from jitbench.asvrun import AsvConfig

    html = runs.tmp / "html"
    config = AsvConfig(ROOT, runs.tmp / "asv", html_dir=str(html))
    config.run("publish", "--no-pull")
    shutil.copytree(runs.releases, html / "report")
    subprocess.run([sys.executable, "-m", "jitbench.dashboard", str(html)], check=True)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(html))
    handler.log_message = lambda *args: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    query = "&".join(f"p-{k}={quote(v, safe='')}" for k, v in DASHBOARD_PARAMS.items())
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
    return (
        f"![the dashboard of the committed results: {catalog.CACHED} for helper_function, "
        f"size 10, cpu, one point per JAX release](docs/{DASHBOARD_PNG.name})"
    )


def main() -> None:
    runs = Runs()
    blocks = {
        "run": lambda: run_block(runs),
        "findings": lambda: findings_block(runs),
        "strategies": strategies_block,
        "audit": audit_block,
        "explain": explain_block,
        "history": lambda: history_block(runs),
        "timing": lambda: timing_block(runs),
        "validation": validation_block,
        "dashboard": lambda: dashboard_block(runs),
    }
    text = README.read_text()
    for name, make in blocks.items():
        text = splice(text, name, make())
        print(f"README: {name} block regenerated", file=sys.stderr)
    README.write_text(text)
    shutil.rmtree(runs.tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
