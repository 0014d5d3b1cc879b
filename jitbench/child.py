"""Child processes: the one place jitbench starts one (git, pip, asv, a fresh interpreter, a
counting or population process).

:func:`run` runs a command to its end under one rule: past its ``timeout`` it is killed and
one line says so; a process :func:`stop` ended says so; a failed one is one line of its
own last words (:meth:`Done.check`). :func:`work` is pyperf's worker protocol on top: a
Python program given a JSON request (``argv[1]``) writes its result, or a named
:class:`~jitbench.errors.NoFigure`, as JSON (``argv[2]``); :func:`serve` is its side of it.
The standard library alone: ``jitbench.suite.install`` runs before jitbench's dependencies
are installed.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from jitbench.errors import JitbenchError, NoFigure

# What a worker reads and writes: JSON's values.
Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]
REQUEST, RESULT = "request.json", "result.json"
# The last lines of a failed process's stderr that its error line quotes.
TAIL_LINES = 3


@dataclasses.dataclass(frozen=True)
class Done:
    """A finished process: its exit status, and its output where it was captured."""

    status: int
    stdout: str = ""
    stderr: str = ""

    def tail(self, skip: str | None = None) -> str:
        """Its last :data:`TAIL_LINES` non-blank lines of stderr (``skip``: leaving out those
        starting with it, a wrapper's own such as Valgrind's ``==PID==``), on one line."""
        own = [s.strip() for s in self.stderr.splitlines() if s.strip()]
        own = [s for s in own if skip is None or not s.startswith(skip)]
        return " | ".join(own[-TAIL_LINES:])

    def check(self, what: str, skip: str | None = None) -> Done:
        """Itself where it exited 0; else JitbenchError: ``what``, its status, its last words."""
        if self.status != 0:
            said = self.tail(skip)
            raise JitbenchError(f"{what} exited {self.status}" + (f": {said}" if said else ""))
        return self


# The processes running now, and those :func:`stop` ended.
_running: set[subprocess.Popen[str]] = set()
_stopped: set[subprocess.Popen[str]] = set()


def run(
    argv: Sequence[str], *, what: str, timeout: float | None = None, cwd: Path | None = None,
    env: Mapping[str, str] | None = None, capture: bool = True, log: IO[str] | None = None,
) -> Done:  # fmt: skip
    """``argv`` run to its end (``env``: its whole environment, default this process's).
    ``capture``: its stdout and stderr kept in the :class:`Done`; otherwise both go to
    ``log``, or to this process's own. Past ``timeout`` seconds, or on any exception here,
    the process is killed; JitbenchError (``what`` did not finish in so many seconds, or was
    stopped)."""
    if capture:
        out, err = subprocess.PIPE, subprocess.PIPE
    else:
        out, err = log, None if log is None else subprocess.STDOUT
    with subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err, text=True) as process:
        _running.add(process)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise JitbenchError(f"{what} did not finish in {timeout:g} s") from None
        except BaseException:
            process.kill()
            raise
        finally:
            _running.discard(process)
    if process in _stopped:
        _stopped.discard(process)
        raise JitbenchError(f"{what} was stopped")
    return Done(process.returncode, stdout or "", stderr or "")


def stop() -> None:
    """End the processes this process started that still run (a caller that no longer needs
    them); each :func:`run` waiting on one raises JitbenchError."""
    for process in list(_running):
        _stopped.add(process)
        process.kill()


def work(
    program: Sequence[str], request: Json, folder: Path, *, what: str, timeout: float,
    env: Mapping[str, str] | None = None, wrap: Callable[[list[str]], list[str]] = list,
    explain: Callable[[str], str | None] = lambda stderr: None, capture: bool = True,
) -> Json:  # fmt: skip
    """A worker's answer to ``request``: ``python PROGRAM REQUEST RESULT`` (``program``: ``-m
    MODULE`` or ``-c CODE``; ``wrap``: the command under another, e.g. callgrind), its files
    in ``folder``. Its result, or a NoFigure's JSON (:meth:`NoFigure.from_json` tells them
    apart); JitbenchError where the process failed (``explain``: a line of its stderr that
    says why, before its last words). ``capture`` False: its stdout and stderr go to this
    process's stderr as they come (a worker whose progress lines are the user's)."""
    asked, answer = folder / REQUEST, folder / RESULT
    asked.write_text(json.dumps(request))
    argv = [sys.executable, *program, str(asked), str(answer)]
    # The standard error this process started with: a stream replaced in Python (pytest's
    # capture) has no file a child can write to.
    done = run(wrap(argv), what=what, timeout=timeout, env=env, capture=capture,
               log=None if capture else sys.__stderr__)  # fmt: skip
    if done.status != 0:
        said = explain(done.stderr)
        if said is not None:
            raise JitbenchError(said)
        done.check(what, skip="==")  # Valgrind's own lines are "==PID== ..."
    return json.loads(answer.read_text())


def serve(answer: Callable[[Json], Json], argv: Sequence[str] | None = None) -> None:
    """A worker's side of :func:`work`: ``answer`` to the request in ``argv[1]`` (default
    ``sys.argv``'s) written to ``argv[2]``; a NotImplementedError or JitbenchError written as
    its NoFigure."""
    asked, answered = (sys.argv[1:] if argv is None else argv)[:2]
    request = json.loads(Path(asked).read_text())
    try:
        result = answer(request)
    except (NotImplementedError, JitbenchError) as exc:
        result = NoFigure.of(exc).to_json()
    Path(answered).write_text(json.dumps(result))
