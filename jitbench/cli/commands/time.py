"""``jitbench time``: a strategy's or the user's object's call, timed as the suite does."""

from __future__ import annotations

import argparse

from jitbench.cli import render
from jitbench.cli.commands.subjects import strategies, target
from jitbench.errors import JitbenchError
from jitbench.measure.case import Row
from jitbench.measure.timing import time_subject


def run(args: argparse.Namespace) -> int:
    if (args.target is None) == (args.strategy is None):
        raise JitbenchError(
            "give a TARGET (package.module:factory) or --strategy NAME, one of them"
        )
    if args.target is not None:
        subject = target(args)
        row = Row(args.target, subject.device, call=args.call, inputs=args.inputs)
    else:
        args.strategy = [args.strategy]
        (subject,) = strategies(args)[1]
        row = Row(args.strategy[0], subject.device, subject.size)
    # The row: what a fresh process builds for the first call with the cache filled.
    result = time_subject(subject, repeat=args.repeat, fields=args.fields, row=row)
    render.timings(result, args.format, args.repeat)
    return 0
