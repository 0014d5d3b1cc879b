"""``jitbench init``: asv's config and benchmarks written into another project."""

from __future__ import annotations

import argparse
import sys

from jitbench.errors import JitbenchError
from jitbench.suite import scaffold


def run(args: argparse.Namespace) -> int:
    if args.wheel:
        chosen = [o for o in ("target", "jax", "python") if getattr(args, o) is not None]
        if chosen:
            raise JitbenchError(f"--wheel rebuilds the wheel alone; drop --{chosen[0]}")
        print(*scaffold.init_wheel(args.dir), sep="\n")
        return 0
    written = scaffold.init_project(args.dir, args.target, jax=args.jax, python=args.python)
    print(*written, sep="\n")
    for note in scaffold.target_notes(args.dir, args.target or []):
        print(f"note: {note}", file=sys.stderr)
    conf = scaffold.read_conf(args.dir / scaffold.SUITE)
    held = ", ".join(f"{k} {v[0]}" for k, v in conf["matrix"]["req"].items() if k in scaffold.HELD)
    print(f"every commit measured with Python {conf['pythons'][0]}, {held}", file=sys.stderr)
    hooks, why = scaffold.counting_hooks()
    print(f"instruction counts: {'on' if hooks else 'off'}: {why}", file=sys.stderr)
    return 0
