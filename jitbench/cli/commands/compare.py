"""``jitbench compare``: two commits, envs or machines; exit 1 on a regression."""

from __future__ import annotations

import argparse

from jitbench.cli.commands import options
from jitbench.results.compare import run_compare


def run(args: argparse.Namespace) -> int:
    return run_compare(**options(args))
