"""The ``jitbench`` command: strategies, audit, report, compare and validate.

Bad input ends in one line on stderr that names the bad value and the valid
choices, and exit status 2; nothing is written in that case.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import sys
from collections.abc import Sequence

from jitbench.errors import JitbenchError

FORMATS = ("table", "json", "csv")


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line (argparse prints usage first)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"size must be a positive integer, got {text!r}")
    return value


def _cmd_strategies(args: argparse.Namespace) -> int:
    from jitbench.strategies import STRATEGIES

    rows = [
        (s.name, s.mechanism, "yes" if s.available else f"no: {s.unavailable_reason}")
        for s in STRATEGIES.values()
    ]
    _print_table(("strategy", "mechanism", "available"), rows)
    return 0


def _print_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [list(map(str, header))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def _cmd_audit(args: argparse.Namespace) -> int:
    from jitbench.audit import STEPS, audit
    from jitbench.devices import resolve
    from jitbench.strategies import STRATEGIES, get_strategy

    names = args.strategy or [s.name for s in STRATEGIES.values() if s.available]
    strategies = [get_strategy(name) for name in names]
    for strategy in strategies:
        strategy.check_available()
    resolve(args.device)
    results = [audit(s, size=args.size, device=args.device) for s in strategies]
    if args.format == "json":
        json.dump([r.to_dict() for r in results], sys.stdout, indent=2)
        print()
        return 0
    totals = ("compiles", "traces", "stale_results", "leaked_instances", "repeat_call_compiles")
    if args.format == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(["strategy", "device", "size", "step", "traces", "compiles", "correct"])
        for r in results:
            for step in r.steps:
                writer.writerow(
                    [
                        r.strategy,
                        r.device,
                        r.size,
                        step.name,
                        step.traces,
                        step.compiles,
                        step.correct,
                    ]
                )
        return 0
    print(f"cache audit on {args.device}, size {results[0].size if results else args.size}")
    print("each step: traces/compiles, '!' marks a stale (wrong) result\n")
    rows = [
        [r.strategy]
        + [f"{s.traces}/{s.compiles}{'' if s.correct else '!'}" for s in r.steps]
        + [getattr(r, t) for t in totals]
        for r in results
    ]
    _print_table(["strategy", *STEPS, "compiles", "traces", "stale", "leaked", "repeat"], rows)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from jitbench import report

    return report.run(args)


def _cmd_compare(args: argparse.Namespace) -> int:
    from jitbench import compare

    return compare.run(args)


def _cmd_validate(args: argparse.Namespace) -> int:
    from jitbench import validate

    return validate.run(args)


def _build_parser(command: str | None) -> argparse.ArgumentParser:
    from jitbench.devices import DEVICE_SPECS

    parser = _Parser(prog="jitbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("strategies", help="list the strategies and whether each can run here")
    p = sub.add_parser("audit", help="run the cache audit scenario per strategy")
    p.add_argument("--strategy", action="append", help="a strategy name (repeatable)")
    p.add_argument("--size", type=_positive_int, default=64, help="array length (default 64)")
    p.add_argument("--device", default="cpu", help=f"one of {', '.join(DEVICE_SPECS)}")
    p.add_argument("--format", default="table", help=f"one of {', '.join(FORMATS)}")
    for name, text in (
        ("report", "tables and plots from asv results"),
        ("compare", "compare two commits, envs or machines; exit 1 on a regression"),
        ("validate", "measure the suite's accuracy, noise and regression sensitivity here"),
    ):
        p = sub.add_parser(name, help=text)
        if command == name:
            # These bring pandas; their arguments live beside their code and
            # are only loaded when that command runs.
            importlib.import_module(f"jitbench.{name}").add_arguments(p)
    return parser


_COMMANDS = {
    "strategies": _cmd_strategies,
    "audit": _cmd_audit,
    "report": _cmd_report,
    "compare": _cmd_compare,
    "validate": _cmd_validate,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``jitbench`` console script and ``python -m jitbench``."""
    from jitbench.devices import ensure_host_devices

    argv = list(sys.argv[1:] if argv is None else argv)
    # cpu-sharded needs several host devices, and XLA reads the count once.
    ensure_host_devices()
    parser = _build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    if getattr(args, "format", "table") not in FORMATS:
        print(
            f"jitbench: error: unknown format {args.format!r}; valid: {', '.join(FORMATS)}",
            file=sys.stderr,
        )
        return 2
    try:
        return _COMMANDS[args.command](args)
    except (JitbenchError, NotImplementedError) as exc:
        print(f"jitbench: error: {exc}", file=sys.stderr)
        return 2
