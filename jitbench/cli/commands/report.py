"""``jitbench report``: tables and plots from asv results."""

from __future__ import annotations

import argparse

from jitbench.cli.commands import options
from jitbench.report import headline, write_report


def run(args: argparse.Namespace) -> int:
    index = write_report(args.results, **options(args, "results"))
    print(*headline(index), index, sep="\n")  # the answer first; the runs chosen are in the page
    return 0
