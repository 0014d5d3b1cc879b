"""``jitbench show``: the generated source of a strategy's class."""

from __future__ import annotations

import argparse

from jitbench.strategies.codegen import Shape
from jitbench.ways.registry import get_strategy, load_plugins


def run(args: argparse.Namespace) -> int:
    load_plugins()
    strategy = get_strategy(args.strategy)
    print(strategy.source(Shape(args.n_arrays, args.n_static, args.n_ops, args.depth)), end="")
    return 0
