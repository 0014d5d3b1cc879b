"""``jitbench advise``: every way of jitting the user's object's call, measured alike."""

from __future__ import annotations

import argparse

from jitbench.advise import advise_object
from jitbench.cli import render
from jitbench.errors import JitbenchError


def run(args: argparse.Namespace) -> int:
    if args.target is None:
        raise JitbenchError("give a TARGET: package.module:factory returning your object")
    # The device by its spec: the ways are measured in a process of their own, which opens it.
    advice = advise_object(
        args.target, call=args.call, inputs=args.inputs, fields=args.fields,
        repeat=args.repeat, instructions=not args.no_count, device=args.device,
    )  # fmt: skip
    render.advice(advice, args.format)
    return 0
