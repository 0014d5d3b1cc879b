"""``jitbench device-run``: the device rows of this host into ``results/<machine>/``, through
asv, from the Python and JAX this command runs under (no environment built: an accelerator
host often has no network, and its JAX comes with the host).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from jitbench.devices import host_devices
from jitbench.errors import JitbenchError
from jitbench.measure import device_rows
from jitbench.suite import asvrun, catalog, grid
from jitbench.suite.asvcompat import describe_machine
from jitbench.suite.asvrun import AsvConfig, checkout, load_config

# How to bring asv onto a host without network: docs/running.md.
RECIPE = "docs/running.md#an-accelerator-host"


def _head(root: Path) -> str:
    """HEAD's hash; a checkout with uncommitted changes to tracked files outside results/ is
    refused, since its rows are filed under HEAD."""

    def git(*args: str) -> str:
        return asvrun.git(root, *args, failure=f"git {' '.join(args)} failed in {root}")

    # results/ is what runs write (asv rewrites results/benchmarks.json at each run), not code.
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!results")
    changed = changed.splitlines()
    if changed:
        first = changed[0][3:]
        raise JitbenchError(
            f"the checkout has uncommitted changes ({first} and others may be): commit them "
            "first, since the rows are filed under HEAD"
        )
    # asv refuses a run whose configured branch is absent ("Unknown branch main in
    # configuration"), as in a clone of a bundle made from HEAD alone.
    branches = git("for-each-ref", "--format=%(refname:short)", "refs/heads").split()
    for branch in load_config(root).get("branches", []):
        if branch not in branches:
            raise JitbenchError(
                f"asv.conf.json names branch {branch!r}, which this checkout lacks: "
                f"git branch {branch} HEAD (or clone with -b {branch})"
            )
    return git("rev-parse", "HEAD")


def run_device_rows(machine: str, asv_args: Sequence[str] = ()) -> Path:
    """Measure the device rows of every strategy on every unsharded device of this host with
    asv (``asv run --environment existing``) into the checkout's ``results/<machine>/``."""
    missing = [m for m in ("asv", "asv_runner") if importlib.util.find_spec(m) is None]
    if missing:
        raise JitbenchError(
            f"jitbench device-run needs {' and '.join(missing)}, not importable here: "
            f"pip install asv==0.6.6 asv_runner==0.3.2 (offline: {RECIPE})"
        )
    root = checkout()
    head = _head(root)
    devices = [d for d in host_devices() if not d.endswith("-sharded")]
    describe_machine(machine)
    # ASV_PYTHONPATH, the checkout's jitbench first (why: docs/design.md).
    path = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH", "")) if p)
    env = {
        **os.environ,
        "ASV_PYTHONPATH": path,
        device_rows.OPT_IN_ENV: "1",
        grid.DEVICES_ENV: os.environ.get(grid.DEVICES_ENV) or ",".join(devices),
    }
    with tempfile.TemporaryDirectory(prefix="jitbench-device-run-") as folder:
        config = AsvConfig(root, Path(folder))
        config.run(
            "run",
            f"--environment=existing:{sys.executable}",
            f"--set-commit-hash={head}",
            f"--machine={machine}",
            "-b", catalog.regex(*catalog.DEVICE_ROWS),
            *asv_args,
            env=env,
        )  # fmt: skip
    folder = config.results / machine
    _stamp(folder, head)
    return folder


def _stamp(folder: Path, head: str) -> None:
    """Add the JAX and jaxlib releases to the results this run wrote: asv's existing
    environment records no requirements, and the report names a run's JAX from them."""
    import jax
    import jaxlib

    releases = {"jax": jax.__version__, "jaxlib": jaxlib.__version__}
    for path in folder.glob(f"{head[:8]}-existing-*.json"):
        data = json.loads(path.read_text())
        if data.get("commit_hash") != head or data.get("python") != os.path.abspath(sys.executable):
            continue
        data["requirements"] = {**data.get("requirements", {}), **releases}
        data["params"] = {**data.get("params", {}), **releases}
        path.write_text(json.dumps(data))
