"""Instructions executed by chosen stretches of a Python process, counted by Valgrind's
callgrind between client requests issued through pytest-codspeed's compiled hooks; the
deterministic environment of the counted process (see docs/counting.md).
"""

from __future__ import annotations

import ctypes.util
import dataclasses
import importlib
import os
import platform
import re
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType

from jitbench.errors import JitbenchError

HOOKS_MODULE = "pytest_codspeed.instruments.hooks.dist_instrument_hooks"
HOOKS_PACKAGE = "pytest-codspeed>=5,<6"
OUT_NAME = "callgrind.out"
# The options every counting process runs with (why: docs/counting.md, "Why callgrind");
# the last two: no per-instruction or jump data to write.
OPTIONS = (
    "--tool=callgrind",
    "--instr-atstart=no",
    "--separate-threads=yes",
    "--dump-instr=no",
    "--collect-jumps=no",
)
# The thread Valgrind numbers 1 is the process's main thread: the one that calls.
CALLING_THREAD = 1


def valgrind() -> str | None:
    """The ``valgrind`` executable on PATH, or None."""
    return shutil.which("valgrind")


def unavailable_reason() -> str | None:
    """Why this process cannot count (not Linux, no Valgrind, tcmalloc or hooks), or None."""
    reason = machine_reason()
    if reason is not None:
        return reason
    try:
        _hooks()
    except JitbenchError as exc:
        return str(exc)
    return None


def machine_reason() -> str | None:
    """Why this machine cannot count (not Linux, no Valgrind or tcmalloc), or None: what every
    Python environment of the machine shares (the hooks are each environment's own)."""
    if not sys.platform.startswith("linux"):
        return f"instruction counts need Valgrind on Linux; this is {sys.platform}"
    if valgrind() is None:
        return "valgrind is not on PATH (Debian/Ubuntu: apt-get install valgrind)"
    try:
        allocator()
    except JitbenchError as exc:
        return str(exc)
    return None


def _hooks() -> ModuleType:
    try:
        return importlib.import_module(HOOKS_MODULE)
    except ImportError:
        pass
    try:
        importlib.import_module("pytest_codspeed")
    except ImportError:
        raise JitbenchError(
            "instruction counts need CodSpeed's instrument hooks: "
            f"pip install '{HOOKS_PACKAGE}' (or jitbench[instructions])"
        ) from None
    raise JitbenchError(
        f"this pytest-codspeed has no {HOOKS_MODULE} (moved in a new release?); "
        f"install {HOOKS_PACKAGE!r}"
    )


def undecoded(stderr: str) -> str | None:
    """Where Valgrind stopped a process on an instruction it cannot decode, as one line (its
    version, the function and library holding the instruction), or None if it did not."""
    found = re.search(r"Unrecognised instruction at address \S+\n==\d+==\s+at \S+: (.*)", stderr)
    if found is None:
        return None
    version = re.search(r"Using (Valgrind-\S+)", stderr)
    # "XXH3_hashLong_64b(unsigned char const*, ...) (in /x/libjax_common.so)", or "???"
    place = re.fullmatch(r"(.*?)(?:\(.*\))? \(in (.*)\)", found.group(1).strip())
    where = f"{place.group(1)} ({Path(place.group(2)).name})" if place else "code outside a library"
    return (
        f"{version.group(1) if version else 'Valgrind'} cannot decode an instruction of {where}"
        " and stopped the counting process: count with a newer Valgrind "
        "(docs/counting.md#a-newer-valgrind)"
    )


# What the counted process's environment fixes so that two runs of the same code execute
# the same instructions: the hash seed, and memory (Python's objects from malloc, malloc
# from tcmalloc). Why, with the spread each left: docs/counting.md.
ALLOCATOR_ENV = "JITBENCH_TCMALLOC"
ALLOCATOR = "tcmalloc_minimal"
ALLOCATOR_PACKAGE = "libtcmalloc-minimal4"
DETERMINISTIC_ENV = {"PYTHONHASHSEED": "0", "PYTHONMALLOC": "malloc"}


def allocator() -> str:
    """The tcmalloc library the counted process preloads: ``JITBENCH_TCMALLOC``, or the system's
    (JitbenchError, one line, where there is none or the path set does not exist)."""
    chosen = _chosen()
    if chosen:
        if not Path(chosen).is_file():
            raise JitbenchError(
                f"{ALLOCATOR_ENV}={chosen!r} is not a file: set it to a libtcmalloc_minimal.so "
                "or unset it to use the system's"
            )
        return chosen
    found = ctypes.util.find_library(ALLOCATOR)
    if found is None:
        raise JitbenchError(
            f"instruction counts are taken under tcmalloc, which is not installed "
            f"(Debian/Ubuntu: apt-get install {ALLOCATOR_PACKAGE}; or set {ALLOCATOR_ENV})"
        )
    return found


def _chosen() -> str:
    return os.environ.get(ALLOCATOR_ENV, "").strip()


def environment(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with :data:`DETERMINISTIC_ENV` set and tcmalloc preloaded first (its
    ``malloc`` is the one the process uses; libraries ``base`` preloads follow)."""
    preload = " ".join(p for p in (allocator(), base.get("LD_PRELOAD", "").strip()) if p)
    return {**base, **DETERMINISTIC_ENV, "LD_PRELOAD": preload}


def check_allocator(maps: Path = Path("/proc/self/maps")) -> None:
    """Inside the counted process: JitbenchError unless tcmalloc is loaded (a preload that
    the loader skipped would leave glibc's malloc counting, silently)."""
    if ALLOCATOR not in maps.read_text():
        raise JitbenchError(
            f"the counting process runs without tcmalloc: LD_PRELOAD="
            f"{os.environ.get('LD_PRELOAD', '')!r} did not load it"
        )


def command(out_dir: Path, argv: Sequence[str]) -> list[str]:
    """The command line that runs ``argv`` under callgrind, its files written to ``out_dir``."""
    exe = valgrind()
    if exe is None:
        raise JitbenchError(unavailable_reason() or "valgrind is not on PATH")
    counted = [exe, *OPTIONS, f"--callgrind-out-file={out_dir / OUT_NAME}.%p", *argv]
    # Address-space randomisation off where util-linux's setarch can (docs/counting.md).
    setarch = shutil.which("setarch")
    return [setarch, platform.machine(), "-R", *counted] if setarch else counted


class Counter:
    """Counted stretches of this process, inside callgrind only (:func:`command`): each
    :meth:`start` ... :meth:`stop` dumps its counts under a label (:func:`read_dumps`)."""

    def __init__(self) -> None:
        self._module = _hooks()
        self._hooks = self._module.instrument_hooks_init()
        if self._hooks is None or not self._module.instrument_hooks_is_instrumented(self._hooks):
            raise JitbenchError("this process is not running under Valgrind: nothing to count")
        check_allocator()

    def start(self) -> None:
        """Zero the counts and instrument from here on."""
        self._module.instrument_hooks_start_benchmark(self._hooks)

    def stop(self, label: str) -> None:
        """Stop instrumenting and dump the counts since :meth:`start` under ``label``."""
        self._module.instrument_hooks_stop_benchmark(self._hooks)
        self._module.instrument_hooks_set_executed_benchmark(
            self._hooks, os.getpid(), label.encode("ascii")
        )


# The function in which the calling thread runs a compiled program on the CPU (XLA's thunk
# executor, jaxlib's CPU runtime): what its top-level calls count is the program's own run,
# which XLA may share with its worker threads; the rest of the thread's count is the host's
# (docs/counting.md, "A compute-heavy model"). Callgrind names a recursive call "...'2".
PROGRAM_RUN = "xla::cpu::ThunkExecutor::Execute(xla::cpu::Thunk::ExecuteParams const&)"


@dataclasses.dataclass(frozen=True)
class Dump:
    """One dump of one thread: its label (the client request's) and instructions executed;
    read whole (:func:`read_dumps` with ``programs``), also the instructions of its top-level
    :data:`PROGRAM_RUN` calls and how many there were."""

    label: str
    thread: int
    instructions: int
    program: int = 0
    runs: int = 0


_TRIGGER = re.compile(r"^desc: Trigger: Client Request: (.*)$", re.M)
_THREAD = re.compile(r"^thread: (\d+)$", re.M)
_TOTALS = re.compile(r"^totals: (\d+)", re.M)
# "fn=(12) name", "cfn=(12)" (a name given once, then its number), or "cfn=name".
_NAME = re.compile(r"^c?fn=(?:\((\d+)\))? ?(.*)$")
# A dump is read at both ends only, unless its program runs are asked for (why:
# docs/counting.md, "Why callgrind").
_HEAD = _TAIL = 4096


def read_dumps(
    out_dir: Path, label: str | None = None, *, programs: bool = False
) -> Iterator[Dump]:
    """Every labelled dump callgrind wrote to ``out_dir`` (with ``label``, that label's only);
    a dump without ``totals`` counts zero, one without a thread is a JitbenchError.
    ``programs`` reads each dump whole for its :data:`PROGRAM_RUN` calls."""
    for path in sorted(out_dir.glob(f"{OUT_NAME}.*")):
        with path.open("rb") as file:
            head = file.read(_HEAD).decode(errors="replace")
            trigger = _TRIGGER.search(head)
            if trigger is None or (label is not None and trigger[1] != label):
                continue
            thread = _THREAD.search(head)
            if thread is None:
                raise JitbenchError(f"{path} has no 'thread:' line: not written with {OPTIONS[2]}")
            file.seek(max(0, path.stat().st_size - _TAIL))
            totals = _TOTALS.search(file.read().decode(errors="replace"))
        dump = Dump(trigger[1], int(thread[1]), int(totals[1]) if totals else 0)
        yield dataclasses.replace(dump, **program_runs(path)) if programs else dump


def program_runs(path: Path) -> dict[str, int]:
    """The instructions of a dump's calls of :data:`PROGRAM_RUN` (inclusive: what they and
    every function they call executed on the thread) as ``program``, and their number as
    ``runs``. A call's lines: ``cfn=`` (the function called), ``calls=N ...``, then its
    position and instructions."""
    names: dict[str, str] = {}
    called = ""
    program = runs = 0
    with path.open(errors="replace") as lines:
        for line in lines:
            found = _NAME.match(line) if line[0] in "cf" else None
            if found is not None:  # a function's block (fn=) or the function it calls (cfn=)
                number, name = found[1], found[2].rstrip("\n")
                if number is not None:
                    name = names.setdefault(number, name) if name else names.get(number, "")
                called = name if line[0] == "c" else ""
            elif line.startswith("calls=") and called == PROGRAM_RUN:
                cost = next(lines).split()
                program += int(cost[1]) if len(cost) > 1 else 0
                runs += int(line[6:].split()[0])
    return {"program": program, "runs": runs}


def calling_thread(dumps: Iterable[Dump], label: str) -> int:
    """The instructions of the calling thread's dumps under ``label``."""
    return sum(d.instructions for d in dumps if d.thread == CALLING_THREAD and d.label == label)


def main() -> int:
    """``python -m jitbench.measure.counting.callgrind``: whether counting can run here, in
    one line; exit 2 if not."""
    reason = unavailable_reason()
    if reason is not None:
        print(f"jitbench: error: {reason}", file=sys.stderr)
        return 2
    print(f"instruction counts: {valgrind()} with {HOOKS_MODULE}, malloc from {allocator()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
