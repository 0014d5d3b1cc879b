"""``jitbench validate``: the suite's fidelity, accuracy and noise on this host."""

from __future__ import annotations

import argparse

from jitbench.validate import run_validation


def run(args: argparse.Namespace) -> int:
    return run_validation(
        args.out,
        repetitions=args.repetitions,
        slowdowns=tuple(sorted(set(args.slowdowns))),
        factor=args.factor,
        sizes=tuple(sorted(set(args.sizes))),
        phases=tuple(args.phases),
        cpu_affinity=",".join(args.cpu_affinity) if args.cpu_affinity else None,
    )
