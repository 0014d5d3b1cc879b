"""``jitbench init``: asv's config and benchmarks written into another project."""

from __future__ import annotations

import argparse
import sys

from jitbench.errors import JitbenchError
from jitbench.suite import scaffold


def run(args: argparse.Namespace) -> int:
    suite = scaffold.suite_folder(args.folder)
    if args.wheel:
        chosen = [o for o in ("target", "jax", "python", "ci", "with") if getattr(args, o)]
        if chosen:
            raise JitbenchError(f"--wheel rebuilds the wheel alone; drop --{chosen[0]}")
        print(*scaffold.init_wheel(args.dir, suite), sep="\n")
        return 0
    written = scaffold.init_project(
        args.dir, args.target, jax=args.jax, python=args.python, ci=args.ci,
        packages=getattr(args, "with"), suite=suite,
    )  # fmt: skip
    print(*written, sep="\n")
    for note in scaffold.target_notes(args.dir, args.target or []):
        print(f"note: {note}", file=sys.stderr)
    conf = scaffold.read_conf(args.dir / suite)
    req = conf["matrix"]["req"]
    held = ", ".join(f"{k} {v[0]}" for k, v in req.items() if k in scaffold.HELD)
    print(f"every commit measured with Python {conf['pythons'][0]}, {held}", file=sys.stderr)
    added = [k for k in req if k not in (*scaffold.HELD, "asv_runner", "pytest-codspeed")]
    words = ", ".join(f"{k} {req[k][0] or '(newest)'}" for k in added) or "none"
    print(
        f"packages added to every commit's environment: {words} (a package the project "
        f'imports without declaring it: one line of "req" in {suite}/asv.conf.json, '
        '"six": [""], or --with six)',
        file=sys.stderr,
    )
    hooks, why = scaffold.counting_hooks(args.ci is not None)
    print(f"instruction counts: {'on' if hooks else 'off'}: {why}", file=sys.stderr)
    if args.ci is not None:
        print(
            f"CI: {scaffold.ci_module.WORKFLOW} gates every pull request and publishes the "
            "dashboard from the main line (GitHub Pages: Settings > Pages > Source: GitHub "
            "Actions)",
            file=sys.stderr,
        )
    return 0
