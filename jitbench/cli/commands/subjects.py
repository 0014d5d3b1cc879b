"""What ``jitbench audit``, ``time`` and ``advise`` measure: ``--device`` as a placement,
``--strategy``'s subjects, or TARGET's."""

from __future__ import annotations

import argparse

from jitbench.devices import Placement, default_placement, resolve, use_device
from jitbench.errors import JitbenchError
from jitbench.options import DEFAULT_SIZE
from jitbench.targets import load_target
from jitbench.ways.registry import STRATEGIES, get_strategy, load_plugins
from jitbench.ways.subject import Generated, Subject, subject_of


def placement(args: argparse.Namespace) -> Placement:
    """Where ``--device`` says, else JAX's default device (every command's default)."""
    return default_placement() if args.device is None else resolve(args.device)


def strategies(args: argparse.Namespace) -> tuple[Placement, list[Subject]]:
    """Where ``--strategy``'s subjects run, and the subjects (every strategy available here
    without it)."""
    load_plugins()
    names = args.strategy or [s.name for s in STRATEGIES.values() if s.available]
    chosen = [get_strategy(name) for name in names]
    for strategy in chosen:
        strategy.check_available()
    where = placement(args)
    return where, [Generated(s, where, args.size or DEFAULT_SIZE) for s in chosen]


def target(args: argparse.Namespace) -> Subject:
    """TARGET's subject, its factory run on ``--device`` where given."""
    if args.size is not None:
        raise JitbenchError(
            f"--size {args.size} applies to --strategy; a TARGET's arrays are what its factory "
            "builds"
        )
    if args.device is not None:
        try:
            use_device(resolve(args.device))  # the factory builds there, as advise's does
        except NotImplementedError as exc:
            raise JitbenchError(f"--device {args.device!r}: {exc}") from None
    return subject_of(load_target(args.target, call=args.call, inputs=args.inputs))
