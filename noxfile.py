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
JAX_RELEASES = ("0.9.2", "0.10.2")
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


@nox.session
def publish(session: nox.Session) -> None:
    """``asv publish`` into html/ with the jitbench report linked; view with ``asv preview``."""
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
    matrix["req"]["jax"] = list(JAX_RELEASES)
    matrix["req"]["jaxlib"] = list(JAX_RELEASES)
    # jaxlib follows jax: keep only the pairs of one release.
    matrix["exclude"] = [
        {"req": {"jax": a, "jaxlib": b}} for a in JAX_RELEASES for b in JAX_RELEASES if a != b
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
        ),
    )
    session.run("asv", "machine", "--yes")
    session.run("asv", "run", "--config", config, "HEAD^!", "--show-stderr", *session.posargs)
    old, new = (f"jax{v}" for v in JAX_RELEASES)
    session.run("jitbench", "compare", "--by", "env", "--commit", _head(), old, new)
