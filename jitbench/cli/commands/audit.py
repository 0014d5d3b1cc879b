"""``jitbench audit``: the cache audit's scenario per strategy, or on the user's object."""

from __future__ import annotations

import argparse

from jitbench.auditing.audit import audit_subject
from jitbench.cli import render
from jitbench.cli.commands.subjects import strategies, target
from jitbench.errors import JitbenchError
from jitbench.options import DEFAULT_SIZE


def run(args: argparse.Namespace) -> int:
    if args.target is not None and args.strategy:
        raise JitbenchError(f"give a TARGET ({args.target!r}) or --strategy, not both")
    own = args.target is not None
    where, subjects = (None, [target(args)]) if own else strategies(args)
    results = [audit_subject(s, fields=args.fields, verdict=own) for s in subjects]
    if args.format == "json":
        render.as_json([r.to_dict() for r in results])
    elif args.format == "csv":
        render.audit_csv(results)
    elif own:
        (subject,) = subjects
        title = f"{subject.name} ({type(subject.target.obj).__name__}, call "
        render.object_audit(results[0], f"{title}{subject.target.call_name})", args.explain)
    else:
        assert where is not None
        render.strategy_audits(results, where.spec, args.size or DEFAULT_SIZE, args.explain)
    return 0
