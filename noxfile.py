"""Sessions that create what they need: ``nox -s tests``, ``nox -s bench`` and the rest.

Every session installs jitbench with the ``all`` extra into its own virtualenv
(the interpreter running nox), so the only prerequisites are Python 3.11+ and
``pip install nox``. Arguments after ``--`` go to asv (bench, compare,
jax_versions) or pytest (tests).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True

# Two JAX releases from the package index for `nox -s jax_versions`.
# flax needs jax >= 0.10, so both releases must satisfy that for every strategy to run.
JAX_RELEASES = ("0.10.1", "0.10.2")
SMOKE_BENCHMARKS = r"CachedCall|Hazards\.track_stale|ColdCall\.time_first_call"


def _install(session: nox.Session) -> None:
    session.install("-e", f"{ROOT}[all]")


def _head() -> str:
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def _asv_config(**overrides: object) -> dict:
    """asv.conf.json as a dict (asv allows // comments; json does not)."""
    text = (ROOT / "asv.conf.json").read_text()
    config = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.MULTILINE))
    config.update(overrides)
    return config


def _write_config(folder: Path, config: dict) -> str:
    path = folder / "asv.conf.json"
    path.write_text(json.dumps(config, indent=2))
    return str(path)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def tests(session: nox.Session) -> None:
    """pytest, ``asv check``, and a quick asv run of a subset feeding a report."""
    _install(session)
    code = session.run("pytest", *session.posargs, success_codes=[0, 5])
    if code == 5:
        session.error("pytest collected no tests: the test suite is missing or misconfigured")
    session.run("asv", "check", "--python=same")
    with tempfile.TemporaryDirectory(prefix="jitbench-smoke-") as tmp:
        # Smoke results go to a temporary folder: results/ only gets real runs.
        folder = Path(tmp)
        config = _write_config(
            folder,
            _asv_config(
                repo=str(ROOT),
                benchmark_dir=str(ROOT / "benchmarks"),
                results_dir=str(folder / "results"),
                html_dir=str(folder / "html"),
            ),
        )
        env = {"JITBENCH_SIZES": "10,1000"}
        session.run("asv", "machine", "--yes", "--machine", "smoke", "--config", config)
        session.run(
            "asv", "run", "--config", config, "--python=same", "--quick", "--machine", "smoke",
            "--set-commit-hash", _head(), "-b", SMOKE_BENCHMARKS, "--show-stderr", env=env,
        )  # fmt: skip
        session.run(
            "jitbench", "report", "--results", str(folder / "results"), "--out",
            str(folder / "report"),
        )  # fmt: skip


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmark this machine at the current commit, then report and publish.

    ``nox -s bench -- --quick`` or ``-- -b CachedCall`` pass through to asv run.
    """
    _install(session)
    session.run("asv", "machine", "--yes")
    session.run(
        "asv", "run", "--python=same", "--set-commit-hash", _head(), "--show-stderr",
        *session.posargs,
    )  # fmt: skip
    session.run("jitbench", "report", "--results", "results", "--out", "reports")
    _publish(session)
    session.log("results: results/  report: reports/index.html  dashboard: html/ (asv preview)")


def _publish(session: nox.Session) -> None:
    import shutil

    session.run("asv", "publish")
    # The dashboard's project link (project_url in asv.conf.json) opens this copy.
    shutil.copytree(ROOT / "reports", ROOT / "html" / "report", dirs_exist_ok=True)
    # asv's page loads its scripts from CDNs: serve the copies inside jitbench from
    # html/vendor/ instead (works offline), and link the report back to the dashboard.
    session.run("python", "-m", "jitbench.dashboard", str(ROOT / "html"))


@nox.session
def publish(session: nox.Session) -> None:
    """``asv publish`` into html/ (offline-ready, report linked); view with ``asv preview``."""
    _install(session)
    session.run("jitbench", "report", "--results", "results", "--out", "reports")
    _publish(session)
    session.log("dashboard in html/: run `asv preview` and open the address it prints")


@nox.session
def compare(session: nox.Session) -> None:
    """``asv continuous BASE HEAD`` (BASE defaults to main), then ``jitbench compare``.

    ``nox -s compare -- BASE -b CachedCall`` picks another base and a subset.
    """
    _install(session)
    args = list(session.posargs)
    base = args.pop(0) if args and not args[0].startswith("-") else "main"
    session.run("asv", "machine", "--yes")
    session.run("asv", "continuous", base, "HEAD", *args, success_codes=[0, 1])
    base_hash = subprocess.run(
        ["git", "rev-parse", base], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()
    session.run("jitbench", "compare", base_hash, _head())


@nox.session
def jax_versions(session: nox.Session) -> None:
    """Run the suite (or a ``-b`` subset) under two JAX releases and compare them.

    asv builds one virtualenv per release from the package index.
    """
    _install(session)
    matrix = _asv_config()["matrix"]
    # asv pip-installs requirements one by one in this order; the JAX pins go last
    # so that installing flax or equinox cannot upgrade JAX past them.
    req = {k: v for k, v in matrix["req"].items() if k not in ("jax", "jaxlib")}
    matrix["req"] = {**req, "jax": list(JAX_RELEASES), "jaxlib": list(JAX_RELEASES)}
    # jaxlib follows jax: keep only the pairs of one release (asv matches these as regexes).
    exclude = [
        {"req": {"jax": "^" + re.escape(a) + "$", "jaxlib": "^" + re.escape(b) + "$"}}
        for a in JAX_RELEASES
        for b in JAX_RELEASES
        if a != b
    ]
    config = _write_config(
        Path(session.create_tmp()),
        _asv_config(
            repo=str(ROOT),
            benchmark_dir=str(ROOT / "benchmarks"),
            results_dir=str(ROOT / "results"),
            html_dir=str(ROOT / "html"),
            env_dir=str(ROOT / ".asv" / "env"),
            matrix=matrix,
            exclude=exclude,
        ),
    )
    session.run("asv", "machine", "--yes")
    session.run("asv", "run", "--config", config, "HEAD^!", "--show-stderr", *session.posargs)
    listed = session.run(
        "python", "-c",
        "import sys, jitbench.results as r\n"
        "print(*sorted(set(r.load('results', commit=sys.argv[1])['env'])))",
        _head(), silent=True,
    )  # fmt: skip
    # asv names an environment after its requirements, e.g. "...-jax0.9.2-jaxlib0.9.2-...".
    old, new = (next(e for e in listed.split() if f"-jax{v}-" in e) for v in JAX_RELEASES)
    # Informative, not a gate: a slower release is reported, the session still passes.
    session.run(
        "jitbench", "compare", "--by", "env", "--commit", _head(), old, new, success_codes=[0, 1]
    )  # fmt: skip


README_SIZE = "10"
README_PLOT = "docs/cached-call-vs-size-cpu.png"


@nox.session
def readme(session: nox.Session) -> None:
    """Regenerate the README's figures from committed results and a live audit.

    Every number in the README's generated blocks comes from here, never by hand.
    """
    import shutil

    _install(session)
    with tempfile.TemporaryDirectory(prefix="jitbench-readme-") as tmp:
        report = Path(tmp) / "report"
        session.run("jitbench", "report", "--results", "results", "--out", str(report))
        audit = session.run(
            "jitbench", "audit", "--format", "json", silent=True, external=False
        )  # fmt: skip
        versions = session.run(
            "python", "-c",
            "import jax, flax, equinox as e; print(jax.__version__, flax.__version__,"
            " e.__version__)",
            silent=True,
        ).split()  # fmt: skip
        (ROOT / "docs").mkdir(exist_ok=True)
        shutil.copyfile(report / "plots" / Path(README_PLOT).name, ROOT / README_PLOT)
        text = (ROOT / "README.md").read_text()
        text = _splice(text, "run", _run_block(report, versions))
        text = _splice(text, "audit", _audit_block(json.loads(audit)))
        text = _splice(text, "timing", _timing_block())
        validation = ROOT / "reports" / "validation" / "validation.md"
        if validation.exists():  # written by `nox -s validate` on this machine
            text = _splice(text, "validation", _validation_block(validation.read_text()))
        (ROOT / "README.md").write_text(text)


def _splice(text: str, name: str, body: str) -> str:
    begin, end = f"<!-- BEGIN generated: {name} -->", f"<!-- END generated: {name} -->"
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    return f"{head}{begin}\n{body.strip()}\n{end}{tail}"


def _results_file() -> tuple[dict, dict]:
    """The newest full result file of the committed results, and its machine description."""
    files = [p for p in (ROOT / "results").glob("*/*.json") if p.name != "machine.json"]
    newest = max(files, key=lambda p: json.loads(p.read_text())["date"])
    machine = json.loads((newest.parent / "machine.json").read_text())
    return json.loads(newest.read_text()), machine


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _run_block(report: Path, versions: list[str]) -> str:
    import csv
    import datetime

    result, machine = _results_file()
    date = datetime.datetime.fromtimestamp(result["date"] / 1000, datetime.UTC)
    columns = {
        "strategy": "strategy",
        "hazard": "hazard",
        "first_call_s": "cold first call",
        "first_call_fresh_process_s": "first call, fresh process",
        "first_call_warm_disk_s": "same, warm disk cache",
        "cached_call_s": "cached call",
        "dispatch_s": "dispatch only",
        "cached_x_eager": "cached / eager",
        "break_even_calls": "break-even calls",
    }
    with open(report / "tables" / f"summary-cpu-size{README_SIZE}.csv") as f:
        table = list(csv.DictReader(f))
    shown = [c for c in columns if c in table[0]]
    rows = [[_human(c, row[c]) for c in shown] for row in table]
    return "\n".join(
        [
            f"A real run of the default grid (`nox -s bench`) on machine **{machine['machine']}**"
            f" ({machine['cpu']}, {machine['num_cpu']} cores, "
            f"{int(machine['ram']) / 2**30:.0f} GiB), commit `{result['commit_hash'][:8]}`, "
            f"{date:%Y-%m-%d}, JAX {versions[0]}, flax {versions[1]}, equinox {versions[2]}. "
            f"Device `cpu`, {int(README_SIZE):,} float32 elements (from "
            f"`reports/tables/summary-cpu-size{README_SIZE}.csv`; every size and device is in "
            "the report):",
            "",
            _markdown_table([columns[c] for c in shown], rows),
            "",
            "⚠ marks a strategy with a hazard (stale results, leaked instances or a compile on"
            " every call); break-even is the number of cached calls after which jit's first"
            " call has paid for itself against `eager`.",
            "",
            f"![cached call against array size, one line per strategy]({README_PLOT})",
        ]
    )


def _human(column: str, value: str) -> str:
    if column == "hazard":
        return value
    if not column.endswith("_s") or value in ("", "nan"):
        if column.endswith("_x_eager") and value not in ("", "nan"):
            return f"{float(value):.2f}"
        return value or "n/a"
    seconds = float(value)
    for unit, scale in (("s", 1), ("ms", 1e-3), ("μs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _audit_block(audit: list[dict]) -> str:
    steps = [step["name"] for step in audit[0]["steps"]]
    rows = [
        [row["strategy"]]
        + [f"{s['traces']}/{s['compiles']}{'' if s['correct'] else ' !'}" for s in row["steps"]]
        + [str(row["stale_results"]), str(row["leaked_instances"])]
        for row in audit
    ]
    return f"`jitbench audit` (device `cpu`, size {audit[0]['size']}):\n\n" + _markdown_table(
        ["strategy", *steps, "stale", "leaked"], rows
    )


def _timing_block() -> str:
    import statistics

    result, machine = _results_file()
    described = json.loads((ROOT / "results" / "benchmarks.json").read_text())
    columns = result["result_columns"]
    rows, total = [], 0.0
    for name, values in sorted(result["results"].items()):
        entry = dict(zip(columns, values, strict=False))  # asv drops trailing empty columns
        bench = described.get(name, {})
        timed = bench.get("type") == "time"
        # asv stores the samples each parameter row got; the median tells the repeat in use.
        repeats = [r for r in entry.get("stats_repeat") or [] if r]
        total += entry.get("duration") or 0.0
        rows.append(
            [
                f"`{name}`",
                str(bench.get("number", "")) if timed else "",
                f"{statistics.median(repeats):g}" if timed and repeats else "",
                str(bench.get("rounds", "")) if timed else "",
                f"{entry.get('duration') or 0:.0f} s",
            ]
        )
    return "\n".join(
        [
            f"Timing settings and the seconds each benchmark took in the run above "
            f"(machine {machine['machine']}; {total / 60:.1f} minutes of benchmarking in all,"
            " asv's own start-up not included):",
            "",
            _markdown_table(
                ["benchmark", "calls a sample", "samples (median)", "rounds", "took"], rows
            ),
        ]
    )


def _validation_block(report: str) -> str:
    """The first line and the summary table of ``jitbench validate``'s report."""
    lines = report.splitlines()
    start = lines.index("## Summary") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("## "))
    return "\n".join([lines[2], *lines[start:end]])


@nox.session
def validate(session: nox.Session) -> None:
    """How far the suite's figures drift here, and the smallest slowdown it catches.

    Writes reports/validation/validation.md (see ``jitbench validate --help``).
    """
    _install(session)
    # Exit 1 means a target was missed; the report says which and why.
    session.run("jitbench", "validate", *session.posargs, success_codes=[0, 1])
