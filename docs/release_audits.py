"""``jitbench audit`` under every JAX release of the history, kept as committed JSON.

The README's history page shows, step by step, what the audit finds under each
release in ``JAX_HISTORY`` (noxfile.py). asv's own environments are not part of
a clone, so this builds one virtualenv per release (jax, jaxlib, flax and
equinox pinned as ``JAX_HISTORY`` pins them) under ``.asv/audit-envs/``,
installs jitbench from this repository into it, and writes
``docs/history/audit-jax<release>.json``: the release's pins, the jitbench
commit, the date and the whole ``jitbench audit --format json`` (JAX's
explanations without paths of the virtualenv, object ids, addresses or trace
times, so that a rerun changes only what the audit found).

Usage: ``python docs/release_audits.py [--envs DIR] [--python PYTHON]``;
``nox -s jax_history`` runs it at its end. An environment whose pins match is
reused, so a rerun costs the audits and one reinstall of jitbench each.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "history"
ENVS = ROOT / ".asv" / "audit-envs"
# pip downloads wheels of hundreds of megabytes: two at a time is enough.
PARALLEL_INSTALLS = 2


def history() -> dict[str, dict[str, str]]:
    """``JAX_HISTORY`` as noxfile.py defines it, read without importing nox."""
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    names: dict[str, object] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id in ("_EQX", "JAX_HISTORY"):
            names[target.id] = eval(
                compile(ast.Expression(node.value), "noxfile.py", "eval"), {}, names
            )
    return names["JAX_HISTORY"]  # type: ignore[return-value]


def requirements(release: str, pins: dict[str, str]) -> list[str]:
    """The pinned packages of one release; an empty pin leaves the package out."""
    packages = {**{k: v for k, v in pins.items() if v}, "jax": release}
    return [f"{name}=={version}" for name, version in sorted(packages.items())]


def wheel(folder: Path) -> Path:
    """A wheel of this checkout's jitbench, built once for every environment."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
         "-w", str(folder), str(ROOT)],
        check=True, capture_output=True,
    )  # fmt: skip
    return next(folder.glob("jitbench-*.whl"))


def build(env: Path, python: str, wanted: list[str], jitbench: Path) -> None:
    """A virtualenv at ``env`` with ``wanted`` and jitbench's dependencies, reused if complete."""
    marker = env / "jitbench-pins.json"
    if marker.is_file() and json.loads(marker.read_text()) == wanted:
        return
    subprocess.run([python, "-m", "venv", "--clear", str(env)], check=True)
    pip = [str(env / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    # jitbench with its dependencies, in the same resolve as the pins: nothing moves them.
    subprocess.run([*pip, *wanted, str(jitbench)], check=True)
    marker.write_text(json.dumps(wanted))


def audit(env: Path, jitbench: Path) -> list[dict]:
    """``jitbench audit --format json`` in ``env``, with this checkout's jitbench installed."""
    python = str(env / "bin" / "python")
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
         "--force-reinstall", str(jitbench)],
        check=True, capture_output=True,
    )  # fmt: skip
    # A fixed hash seed: explanations print sets, whose order follows string hashes.
    out = subprocess.run(
        [python, "-m", "jitbench", "audit", "--format", "json"],
        check=True, capture_output=True, text=True, cwd=env,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )  # fmt: skip
    audits = json.loads(out.stdout)
    for step in (step for strategy in audits for step in strategy["steps"]):
        step["explanations"] = [stable(text) for text in step["explanations"]]
    return audits


def stable(explanation: str) -> str:
    """JAX's explanation without what changes between runs and checkouts: the virtualenv's
    path (files are named from site-packages on), object ids and addresses, and the
    milliseconds a trace cost (some releases give them)."""
    explanation = re.sub(r"/\S*?/site-packages/", "", explanation)
    return re.sub(r" id=\d+| at 0x[0-9a-f]+| costing [\d.]+ ms", "", explanation)


def installed(env: Path) -> dict[str, str]:
    """The versions of Python and of the pinned packages that ``env`` holds."""
    code = (
        "import importlib.metadata as m, json, platform\n"
        "found = {'python': platform.python_version()}\n"
        "for name in ('jax', 'jaxlib', 'flax', 'equinox'):\n"
        "    try:\n"
        "        found[name] = m.version(name)\n"
        "    except m.PackageNotFoundError:\n"
        "        found[name] = ''\n"
        "print(json.dumps(found))\n"
    )
    out = subprocess.run([str(env / "bin" / "python"), "-c", code], check=True,
                         capture_output=True, text=True)  # fmt: skip
    return json.loads(out.stdout)


def commit() -> str:
    """This checkout's commit, marked ``+changes`` where jitbench/ differs from it."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True,
                              text=True).stdout.strip()  # fmt: skip

    dirty = git("status", "--porcelain", "--", "jitbench", "pyproject.toml")
    return git("rev-parse", "HEAD") + ("+changes" if dirty else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=Path, default=ENVS, help="folder of the virtualenvs")
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter the envs are made from"
    )
    args = parser.parse_args()
    releases = history()
    envs = {release: args.envs / release for release in releases}
    with tempfile.TemporaryDirectory(prefix="jitbench-wheel-") as tmp:
        jitbench = wheel(Path(tmp))
        with ThreadPoolExecutor(PARALLEL_INSTALLS) as pool:
            jobs = [
                pool.submit(build, envs[r], args.python, requirements(r, p), jitbench)
                for r, p in releases.items()
            ]
            for job in jobs:
                job.result()
        OUT.mkdir(parents=True, exist_ok=True)
        measured_by = commit()
        for release, env in envs.items():
            record = {
                **installed(env),
                "jitbench_commit": measured_by,
                "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
                "audit": audit(env, jitbench),
            }
            path = OUT / f"audit-jax{release}.json"
            path.write_text(json.dumps(record, indent=1) + "\n")
            print(f"{path.relative_to(ROOT)}: jax {record['jax']}", file=sys.stderr)


if __name__ == "__main__":
    main()
