"""``jitbench advise``: every way of jitting the user's object's call, measured alike."""

from __future__ import annotations

import argparse

from jitbench.advise import advise_object
from jitbench.cli import render
from jitbench.devices import resolve
from jitbench.errors import JitbenchError


def run(args: argparse.Namespace) -> int:
    if args.target is None:
        raise JitbenchError("give a TARGET: package.module:factory returning your object")
    device = None if args.device is None else resolve(args.device)
    advice = advise_object(
        args.target, call=args.call, inputs=args.inputs, fields=args.fields,
        repeat=args.repeat, instructions=not args.no_count, device=device,
    )  # fmt: skip
    render.advice(advice, args.format)
    return 0
