"""The ``jitbench`` command: every argument is parsed here, and nowhere else.

Each subcommand is a module of :mod:`jitbench.cli.commands`, loaded once chosen; each calls
library functions with typed keyword arguments; bad input is one line on
stderr naming the bad value and the valid choices, exit status 2, nothing written (README.md).
What a user reads (``jitbench --help``, each command's ``--help``) is :data:`ABOUT` and
:data:`COMMANDS`, in plain words.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

from jitbench import extras
from jitbench.cli import arguments
from jitbench.cli.arguments import Parser, choice, factor, fraction, items, percent, positive_int
from jitbench.devices import DEVICE_SPECS
from jitbench.errors import JitbenchError
from jitbench.options import (
    CI_PROVIDERS,
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
from jitbench.suite import caches

# What jitbench is for, and the command to try first: the top of ``jitbench --help``, in
# lines of ABOUT_WIDTH at most, as each command's own --help.
ABOUT_WIDTH = 88
ABOUT = """\
Measure what it costs to jax.jit a method of your own class, and whether the way it is
jitted can return stale results, raise, recompile or keep objects alive: for the suite's
built-in strategies (an asv benchmark suite) and for your own objects.

Start with your own object: a factory returning it, the method, its inputs:
  jitbench audit mypkg.models:make --call calc --inputs mypkg.models:batch"""

# Each command: what it does in a user's words (its line in jitbench --help) and the one
# command to try first (under its own --help).
COMMANDS = {
    "strategies": (
        "list the built-in ways of jitting a method that the suite measures, and whether "
        "each can run here",
        "jitbench strategies",
    ),
    "show": (
        "print the class the suite generates for a built-in strategy, as a user would write it",
        "jitbench show helper_function",
    ),
    "audit": (
        "play a scripted scenario on your object (or a built-in strategy): change its fields "
        "as its users do and report stale results, errors, recompiles and objects kept alive",
        "jitbench audit mypkg.models:make --call calc --inputs mypkg.models:batch",
    ),
    "time": (
        "time your object's call (or a built-in strategy's): first call, a restarted script's "
        "first call, dispatch, cached call, loop per call and the call after each change",
        "jitbench time mypkg.models:make --call calc --inputs mypkg.models:batch",
    ),
    "advise": (
        "build every other way of jitting your call from your own object, measure each alike, "
        "and recommend the cheapest that is never stale, with the code to write",
        "jitbench advise mypkg.models:make --call calc --inputs mypkg.models:batch",
    ),
    "report": (
        "write tables and plots of the asv results in results/ (reports/index.html)",
        "jitbench report",
    ),
    "compare": (
        "compare two commits (or environments, or machines); exit 1 where an instruction "
        "count rose, a row newly fails or a hazard appeared (times shown, never judged)",
        "jitbench compare main HEAD",
    ),
    "device-run": (
        "measure every built-in strategy on this host's accelerator and its CPU, in one "
        "process, into results/",
        "python -m jitbench device-run",
    ),
    "init": (
        "set up an asv suite in your own repository that measures your objects at every "
        "commit, optionally with a CI workflow that gates pull requests",
        "jitbench init --target benchmarks.targets:make",
    ),
    "asv": (
        "run asv itself in the suite folder init wrote (its machine file kept there, not in "
        "your home folder)",
        "jitbench asv run HEAD~5..HEAD",
    ),
    "validate": (
        "measure how far this machine's figures can be trusted: the generated classes against "
        "hand-written ones, drift between runs, the smallest slowdown caught",
        "jitbench validate",
    ),
}


def _command(
    sub: argparse._SubParsersAction[Parser], name: str, **kwargs: object
) -> argparse.ArgumentParser:
    """The subcommand ``name``, its help and the command to try first from :data:`COMMANDS`."""
    said, first = COMMANDS[name]
    what = textwrap.fill(f"{said[0].upper()}{said[1:]}.", ABOUT_WIDTH)
    return sub.add_parser(
        name, help=said, description=f"{what}\n\nTry first:\n  {first}",
        formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs,
    )  # fmt: skip


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
    parser = Parser(prog="jitbench", description=ABOUT,
                    formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    p = _command(sub, "strategies")
    # Options several commands share. --size and --device stay None where not given: a TARGET
    # refuses a size; without --device every command measures on JAX's default device.
    device = choice("device", DEVICE_SPECS)
    repeat = {"type": positive_int, "default": REPEAT}
    output_format = {"type": choice("format", FORMATS), "default": "table", "help": "output format"}

    p = _command(sub, "show")
    p.add_argument("strategy", help="a strategy name (see jitbench strategies)")
    for knob, what in (("arrays", "array fields"), ("static", "static fields"), ("ops", "stages")):
        p.add_argument(f"--n-{knob}", type=positive_int, default=1, help=f"{what} (default 1)")
    p.add_argument(
        "--depth",
        type=positive_int,
        default=0,
        help="nested layers, each a sub-object with a weight, a bias and a flag (default: flat)",
    )

    p = _command(sub, "audit")
    _target_options(p)
    p.add_argument("--strategy", action="append", help="a strategy name (repeatable)")
    p.add_argument("--size", type=positive_int, help=f"array length (default {DEFAULT_SIZE})")
    p.add_argument(
        "--device", type=device,
        help="device spec, or where TARGET's factory builds (default: JAX's default device)",
    )  # fmt: skip
    p.add_argument("--format", **output_format)
    p.add_argument(
        "--explain", action="store_true", help="under the table, JAX's reason for every trace"
    )

    p = _command(sub, "time")
    _target_options(p)
    p.add_argument("--strategy", help="a strategy name (instead of TARGET)")
    p.add_argument("--size", type=positive_int, help="--strategy's array length")
    p.add_argument(
        "--device",
        type=device,
        help="--strategy's device, or where TARGET's factory builds (default: JAX's default)",
    )
    p.add_argument("--repeat", **repeat, help=f"samples per figure (default {REPEAT})")
    p.add_argument("--format", **output_format)

    p = _command(sub, "advise")
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

    p = _command(sub, "report")
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

    p = _command(sub, "compare")
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
    p.add_argument(
        "--summary",
        type=Path,
        metavar="FILE",
        help="also append the comparison to FILE as Markdown (a CI job's $GITHUB_STEP_SUMMARY)",
    )
    p.add_argument(
        "--require-counts",
        action="store_true",
        help="exit 2 where no instruction count was measured on either side (a gate)",
    )

    p = _command(sub, "device-run")
    p.add_argument(
        "--machine", type=arguments.machine_name, default=platform.node(), help="results/ folder"
    )
    p.add_argument("asv", nargs="*", metavar="ASV_ARG", help="after --: more asv run options")

    p = _command(sub, "init")
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
        "--ci", type=choice("CI", CI_PROVIDERS), metavar="PROVIDER",
        help="also write a CI workflow: a gate on every pull request (instruction counts and "
        "hazards), the dashboard published from the main line (github)",
    )  # fmt: skip
    p.add_argument(
        "--with", action="append", metavar="PACKAGE",
        help="a package every commit's environment installs, one the project imports without "
        "declaring it (repeatable): six, or six==1.17.0",
    )  # fmt: skip
    p.add_argument(
        "--folder", metavar="NAME",
        help="the suite's folder at the repository's root, where the project's own benchmarks/ "
        "is taken (default: benchmarks): e.g. asv_bench; its targets stay "
        "benchmarks.targets:make",
    )  # fmt: skip
    p.add_argument(
        "--wheel", action="store_true",
        help="only build the jitbench wheel again (a fresh clone of a project set up by init)",
    )  # fmt: skip

    p = _command(sub, "asv", add_help=False)
    p.add_argument("asv", nargs=argparse.REMAINDER, metavar="ASV_ARG", help="asv's arguments")

    p = _command(sub, "validate")
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


# The commands on asv results check the report extra before anything imports pandas or asv.
EXTRA = {"report": "report", "compare": "report", "validate": "report", "asv": "report"}


def run(args: argparse.Namespace) -> int:
    """Run ``args.command``: its module of :mod:`jitbench.cli.commands`, imported only now
    (the CLI's one lazy import: each command's own imports load with it, and no other's)."""
    if args.command in EXTRA:
        extras.require(EXTRA[args.command], args.command)
    # In a suite folder of init's, what pip, virtualenv and matplotlib cache stays in it.
    os.environ.update(caches.suite_environment(Path.cwd(), os.environ))
    name = args.command.replace("-", "_")
    return importlib.import_module(f"jitbench.cli.commands.{name}").run(args)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``jitbench`` console script and ``python -m jitbench``."""
    args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return run(args)
    except (JitbenchError, NotImplementedError) as exc:
        print(f"jitbench: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader closed the pipe (`jitbench compare ... | head`): stop quietly, as a
        # program SIGPIPE ends does (128 + 13), with stdout pointed at /dev/null so that the
        # interpreter's last flush does not raise again (Python's signal docs' recipe).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
