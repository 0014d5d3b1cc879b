"""``python -m jitbench.suite.install WHEEL JITBENCH_WHEEL``: asv's install of one commit of a
project set up by ``jitbench init``.

pip installs the commit's wheel and jitbench's with every :data:`HELD` package the
environment has (asv installed it from the matrix) held at its release, so that no commit's
requirements move JAX under the results. Where a commit's requirements forbid a held release,
one line says so and the exit status is 1: asv skips that commit and goes on. Run inside
asv's environment, before jitbench's dependencies may be there: it imports the standard
library alone.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from collections.abc import Sequence

# The packages whose release every commit is measured with: JAX, and the libraries
# jitbench measures with where the project requires them (jitbench init pins each in the
# matrix).
HELD = ("jax", "jaxlib", "equinox", "flax")


def held() -> dict[str, str]:
    """The release of each :data:`HELD` package installed here."""
    found = {}
    for name in HELD:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def why_not(stderr: str) -> str:
    """pip's reason in one line: the requirements in conflict, else its last error line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if "The conflict is caused by:" in lines:
        cause = lines[lines.index("The conflict is caused by:") + 1 :]
        named = [line for line in cause if " depends on " in line]
        if named:
            return "; ".join(named)
    errors = [line for line in lines if line.startswith("ERROR:")]
    return (errors or lines or ["pip gave no reason"])[-1]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m jitbench.suite.install WHEEL JITBENCH_WHEEL", file=sys.stderr)
        return 2
    pins = held()
    command = [sys.executable, "-m", "pip", "install", "-q", *args]
    done = subprocess.run(
        command + [f"{name}=={version}" for name, version in pins.items()],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode == 0:
        return 0
    releases = ", ".join(f"{name} {version}" for name, version in pins.items())
    print(
        f"jitbench: this commit is skipped: it cannot be installed with {releases} "
        f"(the releases every commit is measured with): {why_not(done.stderr)}",
        flush=True,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
