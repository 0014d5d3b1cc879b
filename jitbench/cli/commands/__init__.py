"""A module per ``jitbench`` command, each with ``run(args)``: loaded by
:func:`jitbench.cli.run` only once its command is chosen (the one lazy import of the CLI),
after the command's extra is checked, so that each imports what it needs at its top."""

from __future__ import annotations

import argparse


def options(args: argparse.Namespace, *left_out: str) -> dict[str, object]:
    """The parsed options as keyword arguments: each one's name is the parameter it fills."""
    return {k: v for k, v in vars(args).items() if k not in ("command", *left_out)}
