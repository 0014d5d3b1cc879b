"""``jitbench asv``: asv itself, run in the benchmarks/ folder init wrote."""

from __future__ import annotations

import argparse

from jitbench.suite import asvcompat, scaffold


def run(args: argparse.Namespace) -> int:
    # pip's, virtualenv's and matplotlib's caches are the suite's (jitbench.cli.run).
    return asvcompat.run_asv(args.asv, str(scaffold.machine_file(".")))
