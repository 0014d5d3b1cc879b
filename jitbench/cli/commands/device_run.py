"""``jitbench device-run``: every strategy on this host's devices, into results/."""

from __future__ import annotations

import argparse

from jitbench.suite.devicerun import run_device_rows


def run(args: argparse.Namespace) -> int:
    print(run_device_rows(args.machine, args.asv))
    return 0
