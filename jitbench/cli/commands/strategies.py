"""``jitbench strategies``: the strategies and whether each can run here."""

from __future__ import annotations

import argparse

from jitbench.cli.render import table
from jitbench.ways.registry import STRATEGIES, load_plugins


def run(args: argparse.Namespace) -> int:
    load_plugins()
    rows = [
        (s.name, s.summary, "yes" if s.available else f"no: {s.unavailable_reason}")
        for s in STRATEGIES.values()
    ]
    table(rows, ("strategy", "what the user writes", "available"))
    return 0
