"""``jitbench asv``: asv itself, run in the benchmarks/ folder init wrote."""

from __future__ import annotations

import argparse
import os

from jitbench.suite import asvcompat, scaffold


def run(args: argparse.Namespace) -> int:
    machines = scaffold.machine_file(".")
    # pip's, virtualenv's and matplotlib's caches in the suite's own folder, not the home one.
    os.environ.update(scaffold.suite_environment(".", os.environ))
    return asvcompat.run_asv(args.asv, str(machines))
