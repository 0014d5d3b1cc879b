"""The workflow's nox sessions exist under the names the README gives."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SESSIONS = {"lint", "tests", "bench", "publish", "compare", "jax_versions", "readme", "validate"}


def test_every_documented_session_is_defined():
    out = subprocess.run(
        [sys.executable, "-m", "nox", "--list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    listed = {
        line[2:].split(" -> ")[0] for line in out.stdout.splitlines() if line[:2] in ("* ", "- ")
    }
    assert listed == SESSIONS
    readme = (ROOT / "README.md").read_text()
    for name in ("bench", "tests", "compare", "jax_versions", "publish", "validate"):
        assert f"nox -s {name}" in readme
