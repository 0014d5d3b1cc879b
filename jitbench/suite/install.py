"""``python -m jitbench.suite.install WHEEL JITBENCH_WHEEL SUITE``: asv's install of one commit
of a project set up by ``jitbench init``.

pip installs the commit's wheel (the distribution installed before it taken out first) and
jitbench's with every :data:`HELD` package the matrix pins held at the release asv installed
from it, so that no commit's requirements move JAX under the results; then a new process
builds each target of the suite package ``SUITE`` at this commit and makes its call once.
Where a commit's requirements forbid a held release, or a target cannot be built there (a
class it predates) or its call fails under the held releases (a JAX function it calls was
removed), one line says why and the exit status is 1: asv skips that commit and goes on.
Run inside asv's environment, before jitbench's dependencies may be there: this module
imports the standard library alone (and :mod:`jitbench.child`, which does too).
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from jitbench import child

# The packages whose release every commit is measured with: JAX, and the libraries
# jitbench measures with where the project requires them (jitbench init pins each in the
# matrix).
HELD = ("jax", "jaxlib", "equinox", "flax")


def held(config: Path) -> dict[str, str]:
    """The release installed here of each :data:`HELD` package that the matrix of asv's
    ``config`` pins (asv installed it from there): what every commit is measured with. A
    package one commit's requirements brought in is not held for the next."""
    # asv's config may hold // comments (asv's own reader skips them; this module may not
    # import it): whole-line ones are what jitbench init writes.
    text = "\n".join(line for line in config.read_text().splitlines()
                     if not line.lstrip().startswith("//"))  # fmt: skip
    matrix = json.loads(text).get("matrix", {})
    pinned = matrix.get("req", matrix)
    found = {}
    for name in HELD:
        if name not in pinned:
            continue
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return found


def distribution(wheel: str) -> str:
    """The distribution a wheel holds, from its file name (``name-version-...-tag.whl``)."""
    return Path(wheel).name.split("-")[0]


def why_not(output: str) -> str:
    """pip's reason in one line: what the commit requires in conflict (the held packages'
    own requirements left out), else pip's last error line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if "The conflict is caused by:" in lines:
        cause = lines[lines.index("The conflict is caused by:") + 1 :]
        named = [
            line for line in cause
            if " depends on " in line and line.partition(" ")[0].lower() not in HELD
        ]  # fmt: skip
        if named:
            return "; ".join(named)
    errors = [line for line in lines if line.startswith("ERROR:")]
    return (errors or lines or ["pip gave no reason"])[-1]


# Run in a new process once the commit is installed (jitbench's dependencies are there then):
# builds every target of the suite folder argv[1] and makes its call once, one line per target
# that cannot be built or called (argv[2]: the releases held, named in that line).
CHECK = """\
import sys
from jitbench.measure.case import targets_built
sys.exit(targets_built(sys.argv[1], sys.argv[2]))
"""


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 3:
        print("usage: python -m jitbench.suite.install WHEEL JITBENCH_WHEEL SUITE", file=sys.stderr)
        return 2
    *wheels, suite = args
    pins = held(Path(suite).resolve().parent / "asv.conf.json")
    # The commit's distribution out first: pip takes a wheel of the release already installed
    # (the commit before, of the same version) as satisfied and installs nothing, and asv's
    # uninstall names asv.conf.json's "project", which a setup.py project's may not be.
    child.run([sys.executable, "-m", "pip", "uninstall", "-y", distribution(wheels[0])],
              what="pip uninstall")  # fmt: skip
    # Not quiet: pip names the requirements in conflict only in its full output.
    command = [sys.executable, "-m", "pip", "install", *wheels]
    done = child.run(command + [f"{name}=={version}" for name, version in pins.items()],
                     what="pip install")  # fmt: skip
    releases = ", ".join(f"{name} {version}" for name, version in pins.items())
    if done.status == 0:
        built = child.run([sys.executable, "-c", CHECK, suite, releases],
                          what="the targets' build and call", capture=False)  # fmt: skip
        return 0 if built.status == 0 else 1
    print(
        f"jitbench: this commit is skipped: it cannot be installed with {releases} "
        f"(the releases every commit is measured with): {why_not(done.stdout + done.stderr)}",
        flush=True,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())
