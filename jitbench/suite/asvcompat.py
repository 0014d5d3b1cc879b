"""The private parts of asv that jitbench relies on, all here and each guarded: a name the
installed asv lacks is one line naming it and the pinned release (docs/design.md)."""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from jitbench import extras
from jitbench.errors import JitbenchError
from jitbench.jsondata import JsonObject

if TYPE_CHECKING:
    from asv.results import Results


def moved(what: str) -> JitbenchError:
    """The error for a private asv name that the installed asv lacks."""
    pin = extras.pinned("asv")
    try:
        installed = importlib.metadata.version("asv")
    except importlib.metadata.PackageNotFoundError:
        installed = "(version unknown)"
    if pin is None:
        return JitbenchError(
            f"the installed asv {installed} lacks {what}: install the asv release that "
            "jitbench's report extra pins"
        )
    return JitbenchError(
        f"asv {pin} provides {what}; the installed asv {installed} lacks it: install asv=={pin}"
    )


def private(module: str, name: str) -> Any:
    """``module.name`` of asv, or :func:`moved`'s error when that release does not have it."""
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise moved(f"{module}.{name}") from None


def is_different(
    samples_a: Sequence[float] | None,
    samples_b: Sequence[float] | None,
    stats_a: JsonObject,
    stats_b: JsonObject,
) -> bool:
    """asv compare's significance test of two results (``asv._stats.is_different``)."""
    return bool(private("asv._stats", "is_different")(samples_a, samples_b, stats_a, stats_b))


def is_result_better(
    a: float,
    b: float,
    a_ss: tuple[JsonObject | None, list[float] | None],
    b_ss: tuple[JsonObject | None, list[float] | None],
    factor: float,
) -> bool:
    """Whether asv compare calls ``a`` better than ``b`` (significant and beyond ``factor``)."""
    better = private("asv.commands.compare", "_is_result_better")
    return bool(better(a, b, a_ss, b_ss, factor))


def result_requirements(result: Results) -> dict[str, str]:
    """The requirements an asv ``Results`` was run with (``Results._requirements``)."""
    try:
        found = result._requirements
    except AttributeError:
        raise moved("asv.results.Results._requirements") from None
    return dict(found or {})


def describe_machine(name: str) -> JsonObject:
    """Record this host in asv's machine file under ``name``, its hardware as asv detects it
    (``Machine.get_defaults``) where the file lacks it; the entry. Why: docs/design.md."""
    machine = private("asv.machine", "Machine")
    collection = private("asv.machine", "MachineCollection")
    user_error = private("asv.util", "UserError")
    try:
        known = collection.load(name)
    except user_error:
        known = {}
    entry = {**machine.get_defaults(), **{k: v for k, v in known.items() if v}, "machine": name}
    collection.save(name, entry)
    return entry


def run_asv(args: Sequence[str], machine_file: str) -> int:
    """asv's own command line with ``args``, its machine file at ``machine_file`` instead of
    ``~/.asv-machine.json`` (``MachineCollection.get_machine_file_path``); asv's exit status.
    A command asv runs itself that fails (git, on a range that names no commit) is one line,
    not asv's traceback."""
    collection = private("asv.machine", "MachineCollection")
    if not hasattr(collection, "get_machine_file_path"):
        raise moved("asv.machine.MachineCollection.get_machine_file_path")
    collection.get_machine_file_path = staticmethod(lambda: machine_file)
    process_error = private("asv.util", "ProcessError")
    from asv.main import main as asv_main

    sys.argv = ["asv", *args]
    # asv's main gives the root logger its own handler, printing every record's bare message
    # to stdout at INFO: JAX's log lines would follow into whatever this process runs next.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        asv_main()
    except SystemExit as exc:  # asv's main ends in sys.exit, as its console script does
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except process_error as exc:
        said = [line.strip() for line in (exc.stderr or "").splitlines() if line.strip()]
        command = " ".join(str(a) for a in exc.args)
        raise JitbenchError(
            f"asv's command {command!r} failed: {said[0] if said else f'exit {exc.retcode}'}"
        ) from None
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m jitbench.suite.asvcompat describe-machine NAME`` (:func:`describe_machine`)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2 or args[0] != "describe-machine":
        print("usage: python -m jitbench.suite.asvcompat describe-machine NAME", file=sys.stderr)
        return 2
    try:
        entry = describe_machine(args[1])
    except JitbenchError as exc:
        print(f"jitbench: error: {exc}", file=sys.stderr)
        return 2
    print(", ".join(f"{k} {v}" for k, v in entry.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
