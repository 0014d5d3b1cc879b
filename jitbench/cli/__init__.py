"""The ``jitbench`` command: every argument is parsed here, and nowhere else.

Subcommands call library functions with typed keyword arguments; bad input is one line on
stderr naming the bad value and the valid choices, exit status 2, nothing written (README.md).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jitbench import extras
from jitbench.cli import arguments
from jitbench.cli.arguments import Parser, choice, factor, fraction, items, percent, positive_int
from jitbench.devices import DEVICE_SPECS
from jitbench.errors import JitbenchError
from jitbench.options import (
    COMPARE_BY,
    COUNT_TOLERANCE,
    DEFAULT_ARRAYS,
    DEFAULT_FIELDS,
    DEFAULT_PHASES,
    DEFAULT_SIZE,
    DEFAULT_VALUES,
    FORMATS,
    REPEAT,
    VALIDATE_PHASES,
)  # fmt: skip


def _cmd_strategies(args: argparse.Namespace) -> int:
    from jitbench.cli.render import table
    from jitbench.strategies import STRATEGIES, load_plugins

    load_plugins()
    rows = [
        (s.name, s.summary, "yes" if s.available else f"no: {s.unavailable_reason}")
        for s in STRATEGIES.values()
    ]
    table(rows, ("strategy", "what the user writes", "available"))
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from jitbench.strategies import get_strategy, load_plugins
    from jitbench.strategies.codegen import Shape

    load_plugins()
    strategy = get_strategy(args.strategy)
    print(strategy.source(Shape(args.n_arrays, args.n_static, args.n_ops, args.depth)), end="")
    return 0


def _strategies(args: argparse.Namespace) -> list[Any]:
    """The subjects of ``--strategy`` (every one available here without it)."""
    from jitbench.auditing.subject import Generated
    from jitbench.devices import resolve
    from jitbench.strategies import STRATEGIES, get_strategy, load_plugins

    load_plugins()
    names = args.strategy or [s.name for s in STRATEGIES.values() if s.available]
    strategies = [get_strategy(name) for name in names]
    for strategy in strategies:
        strategy.check_available()
    placement = resolve(args.device or "cpu")
    return [Generated(strategy, placement, args.size or DEFAULT_SIZE) for strategy in strategies]


def _target(args: argparse.Namespace) -> Any:
    from jitbench.auditing.subject import subject_of
    from jitbench.targets import load_target

    if args.size is not None:
        raise JitbenchError(
            f"--size {args.size} applies to --strategy; a TARGET's arrays are what its factory "
            "builds"
        )
    if args.device is not None:
        from jitbench.measure.case import use_device

        try:
            use_device(args.device)  # the factory builds there, as advise's does
        except NotImplementedError as exc:
            raise JitbenchError(f"--device {args.device!r}: {exc}") from None
    return subject_of(load_target(args.target, call=args.call, inputs=args.inputs))


def _cmd_audit(args: argparse.Namespace) -> int:
    from jitbench.auditing.audit import audit_subject
    from jitbench.cli import render

    if args.target is not None and args.strategy:
        raise JitbenchError(f"give a TARGET ({args.target!r}) or --strategy, not both")
    target = args.target is not None
    subjects = [_target(args)] if target else _strategies(args)
    results = [audit_subject(s, fields=args.fields, verdict=target) for s in subjects]
    if args.format == "json":
        render.as_json([r.to_dict() for r in results])
    elif args.format == "csv":
        render.audit_csv(results)
    elif target:
        (subject,) = subjects
        title = f"{subject.name} ({type(subject.target.obj).__name__}, call "
        render.object_audit(results[0], f"{title}{subject.target.call_name})", args.explain)
    else:
        render.strategy_audits(
            results, args.device or "cpu", args.size or DEFAULT_SIZE, args.explain
        )
    return 0


def _cmd_time(args: argparse.Namespace) -> int:
    from jitbench.cli import render
    from jitbench.measure.timing import time_subject

    if (args.target is None) == (args.strategy is None):
        raise JitbenchError(
            "give a TARGET (package.module:factory) or --strategy NAME, one of them"
        )
    if args.target is not None:
        subject = _target(args)
    else:
        args.strategy = [args.strategy]
        (subject,) = _strategies(args)
    result = time_subject(subject, repeat=args.repeat, fields=args.fields)
    render.timings(result, args.format, args.repeat)
    return 0


def _cmd_advise(args: argparse.Namespace) -> int:
    from jitbench.advise import advise_object
    from jitbench.cli import render

    if args.target is None:
        raise JitbenchError("give a TARGET: package.module:factory returning your object")
    advice = advise_object(
        args.target, call=args.call, inputs=args.inputs, fields=args.fields,
        repeat=args.repeat, instructions=not args.no_count, device=args.device,
    )  # fmt: skip
    render.advice(advice, args.format)
    return 0


def _options(args: argparse.Namespace, *left_out: str) -> dict[str, Any]:
    """The parsed options as keyword arguments: each one's name is the parameter it fills."""
    return {k: v for k, v in vars(args).items() if k not in ("command", "run", *left_out)}


def _cmd_report(args: argparse.Namespace) -> int:
    extras.require("report", "report")  # before anything imports pandas or asv
    from jitbench.report import headline, write_report

    index = write_report(args.results, **_options(args, "results"))
    print(*headline(index), index, sep="\n")  # the answer first; the runs chosen are in the page
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    extras.require("report", "compare")  # before anything imports pandas or asv
    from jitbench.results.compare import run_compare

    return run_compare(**_options(args))


def _cmd_validate(args: argparse.Namespace) -> int:
    extras.require("report", "validate")  # before anything imports pandas or asv
    from jitbench.validate import run_validation

    return run_validation(
        args.out,
        repetitions=args.repetitions,
        slowdowns=tuple(sorted(set(args.slowdowns))),
        factor=args.factor,
        sizes=tuple(sorted(set(args.sizes))),
        phases=tuple(args.phases),
        cpu_affinity=",".join(args.cpu_affinity) if args.cpu_affinity else None,
    )


def _cmd_init(args: argparse.Namespace) -> int:
    from jitbench.suite import scaffold

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


def _cmd_asv(args: argparse.Namespace) -> int:
    extras.require("report", "asv")
    from jitbench.suite import asvcompat, scaffold

    return asvcompat.run_asv(args.asv, str(scaffold.machine_file(".")))


def _cmd_device_run(args: argparse.Namespace) -> int:
    from jitbench.suite.devicerun import run_device_rows

    print(run_device_rows(args.machine, args.asv))
    return 0


def _target_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "target", nargs="?", metavar="TARGET",
        help="your object: package.module:factory (a callable returning it, or a jitbench.Target)",
    )  # fmt: skip
    parser.add_argument(
        "--call",
        help="TARGET's method to call (default __call__), or package.module:function(obj, *inputs)",
    )
    parser.add_argument(
        "--inputs", help="package.module:function returning TARGET's call arguments"
    )
    parser.add_argument(
        "--fields", metavar="PATTERN",
        help="TARGET's fields to change: a path prefix (layers[0].), glob (*.weight) or regex; "
        f"default: {DEFAULT_FIELDS.format(values=DEFAULT_VALUES, arrays=DEFAULT_ARRAYS)}",
    )  # fmt: skip


def _results_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--results",
        type=Path,
        help="asv results dir (default: asv.conf.json's results_dir here, else results)",
    )
    parser.add_argument("--machine", help="only this machine")
    parser.add_argument("--env", help="only this asv environment")
    parser.add_argument(
        "--skip-bad", action="store_true", help="warn about unreadable result files, load the rest"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="jitbench", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    p = sub.add_parser("strategies", help="list the strategies and whether each can run here")
    p.set_defaults(run=_cmd_strategies)
    # Options several commands share. audit's and time's --size and --device stay None where
    # not given: a TARGET refuses a size and keeps JAX's default device.
    device = choice("device", DEVICE_SPECS)
    repeat = {"type": positive_int, "default": REPEAT}
    output_format = {"type": choice("format", FORMATS), "default": "table", "help": "output format"}

    p = sub.add_parser("show", help="print the generated source of a strategy's class")
    p.set_defaults(run=_cmd_show)
    p.add_argument("strategy", help="a strategy name (see jitbench strategies)")
    for knob, what in (("arrays", "array fields"), ("static", "static fields"), ("ops", "stages")):
        p.add_argument(f"--n-{knob}", type=positive_int, default=1, help=f"{what} (default 1)")
    p.add_argument(
        "--depth",
        type=positive_int,
        default=0,
        help="nested layers, each a sub-object with a weight, a bias and a flag (default: flat)",
    )

    p = sub.add_parser("audit", help="run the cache audit scenario per strategy, or on your object")
    p.set_defaults(run=_cmd_audit)
    _target_options(p)
    p.add_argument("--strategy", action="append", help="a strategy name (repeatable)")
    p.add_argument("--size", type=positive_int, help=f"array length (default {DEFAULT_SIZE})")
    p.add_argument("--device", type=device, help="device spec, or where TARGET's factory builds")
    p.add_argument("--format", **output_format)
    p.add_argument(
        "--explain", action="store_true", help="under the table, JAX's reason for every trace"
    )

    p = sub.add_parser("time", help="time a strategy's or your object's call, as the suite does")
    p.set_defaults(run=_cmd_time)
    _target_options(p)
    p.add_argument("--strategy", help="a strategy name (instead of TARGET)")
    p.add_argument("--size", type=positive_int, help="--strategy's array length")
    p.add_argument(
        "--device", type=device, help="--strategy's device, or where TARGET's factory builds"
    )
    p.add_argument("--repeat", **repeat, help=f"samples per figure (default {REPEAT})")
    p.add_argument("--format", **output_format)

    p = sub.add_parser(
        "advise", help="every way of jitting your object's call, measured alike, and the best"
    )
    p.set_defaults(run=_cmd_advise)
    _target_options(p)
    p.add_argument(
        "--device",
        type=device,
        help="the device TARGET's factory builds on (made JAX's default; default: JAX's own)",
    )
    p.add_argument("--repeat", **repeat, help=f"samples per timing ({REPEAT})")
    p.add_argument("--format", **output_format)
    p.add_argument(
        "--no-count", action="store_true",
        help="no instruction counts (Valgrind, a minute or more), rank by time",
    )  # fmt: skip

    p = sub.add_parser("report", help="tables and plots from asv results")
    p.set_defaults(run=_cmd_report)
    _results_options(p)
    p.add_argument(
        "--commit",
        help="this commit or hash prefix (default: the main line's newest, in a project set up "
        "by jitbench init; the complete run per machine, in jitbench's own)",
    )
    p.add_argument("--out", type=Path, default=Path("reports"), help="output dir (default reports)")
    p.add_argument(
        "--audit-json", type=Path, help="output of 'jitbench audit --format json' (JAX's reasons)"
    )

    p = sub.add_parser(
        "compare", help="compare two commits, envs or machines; exit 1 on regression"
    )
    p.set_defaults(run=_cmd_compare)
    p.add_argument(
        "base", metavar="BASE", help="reference commit (hash prefix or git's name), env or machine"
    )
    p.add_argument("head", metavar="HEAD", help="commit, env or machine to judge")
    _results_options(p)
    p.add_argument("--commit", help="commit of both sides (--by env or machine)")
    p.add_argument(
        "--by", type=choice("comparison", COMPARE_BY), default="commit", help="what BASE/HEAD name"
    )
    p.add_argument("--factor", type=factor, default=1.1, help="ratio that counts (default 1.1)")
    p.add_argument(
        "--count-tolerance",
        type=fraction,
        default=COUNT_TOLERANCE,
        help=f"instruction counts: the change that counts (default {COUNT_TOLERANCE:g})",
    )
    p.add_argument("--only-changed", action="store_true", help="list significant changes only")
    p.add_argument(
        "--any-jax",
        action="store_true",
        help="compare sides that ran different JAX releases (refused without it; --by env "
        "compares releases on purpose)",
    )
    p.add_argument(
        "--noise",
        type=Path,
        metavar="NOISE_CSV",
        help="jitbench validate's noise.csv: a change within a row's measured noise is marked ~",
    )

    p = sub.add_parser("device-run", help="every strategy on this host's devices into results/")
    p.set_defaults(run=_cmd_device_run)
    p.add_argument(
        "--machine", type=arguments.machine_name, default=platform.node(), help="results/ folder"
    )
    p.add_argument("asv", nargs="*", metavar="ASV_ARG", help="after --: more asv run options")

    p = sub.add_parser("init", help="write asv's config and benchmarks into another project")
    p.set_defaults(run=_cmd_init)
    p.add_argument("dir", nargs="?", type=Path, default=Path("."), help="its git repository")
    p.add_argument(
        "--target",
        action="append",
        metavar="MODULE:FACTORY",
        help="a factory of an object with a jitted method (repeatable), e.g. "
        "benchmarks.targets:make",
    )
    p.add_argument(
        "--jax", metavar="RELEASE", help="the JAX release every commit is measured with "
        "(default: the one installed here)",
    )  # fmt: skip
    p.add_argument(
        "--python", metavar="X.Y", help="the Python of asv's environments (default: this one)"
    )
    p.add_argument(
        "--wheel", action="store_true",
        help="only build the jitbench wheel again (a fresh clone of a project set up by init)",
    )  # fmt: skip

    p = sub.add_parser(
        "asv", help="asv itself, run in the benchmarks/ folder init wrote: its machine file "
        "kept in benchmarks/.jitbench/ rather than your home folder", add_help=False,
    )  # fmt: skip
    p.set_defaults(run=_cmd_asv)
    p.add_argument("asv", nargs=argparse.REMAINDER, metavar="ASV_ARG", help="asv's arguments")

    p = sub.add_parser("validate", help="measure the suite's fidelity, accuracy, noise here")
    p.set_defaults(run=_cmd_validate)
    p.add_argument("--out", type=Path, default=Path("reports/validation"), help="report folder")
    p.add_argument("--repetitions", type=positive_int, default=3, help="pairs per slowdown")
    p.add_argument(
        "--slowdowns", type=items(percent), default=[5.0, 10.0, 20.0], help="percent, e.g. 5,10"
    )
    p.add_argument("--factor", type=factor, default=1.05, help="compare's factor (default 1.05)")
    p.add_argument("--sizes", type=items(positive_int), default=[10, 1_000_000], help="array sizes")
    p.add_argument(
        "--phases",
        type=items(choice("phase", VALIDATE_PHASES)),
        default=list(DEFAULT_PHASES),
        help=f"checks to run (default {','.join(DEFAULT_PHASES)}; counts needs Valgrind)",
    )
    # sched_getaffinity is Linux's; elsewhere every CPU the OS counts may be named.
    allowed = getattr(os, "sched_getaffinity", lambda pid: range(os.cpu_count() or 1))(0)
    host_cpus = [str(cpu) for cpu in sorted(allowed)]
    p.add_argument(
        "--cpu-affinity",
        metavar="CPUS",
        type=items(choice("CPU", host_cpus)),
        help="pin the asv phases' processes, e.g. 1",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``jitbench`` console script and ``python -m jitbench``."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return args.run(args)
    except (JitbenchError, NotImplementedError) as exc:
        print(f"jitbench: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader closed the pipe (`jitbench compare ... | head`): stop quietly, as a
        # program SIGPIPE ends does (128 + 13), with stdout pointed at /dev/null so that the
        # interpreter's last flush does not raise again (Python's signal docs' recipe).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
