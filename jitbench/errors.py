"""Errors that the command line turns into one line and exit status 2, any exception as one
line, and rows without a figure."""

from __future__ import annotations

import dataclasses
import os
import sys
import sysconfig
import traceback
from typing import NoReturn


def error_text(exc: BaseException) -> str:
    """An exception as one line: its type and its message (if any), whitespace folded; a
    traceback inside the message (JAX's "The error was: Traceback ...") reduced to the error
    it ends in; past 300 characters cut after its last whole sentence there (at a word where
    none ends), marked with "..."."""
    text = str(exc)
    head, found, tail = text.partition("Traceback (most recent call last):")
    if found:  # the embedded error: the first unindented line after the frames
        lines = [line for line in tail.splitlines() if line.strip() and not line[0].isspace()]
        text = f"{head.rstrip()} {lines[0].strip() if lines else ''}"
    text = " ".join(text.split())
    if len(text) > 300:
        head = text[:300]
        end = head.rfind(". ")
        text = head[: end + 1] if end > 40 else head.rsplit(" ", 1)[0]
        text += " ..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


# Frames that are not where a user's or a library's code raised: JAX's, jitbench's, Python's.
_NOT_ORIGIN = ("jax", "jaxlib", "jitbench")


def origin(exc: BaseException) -> str:
    """Where ``exc`` was raised, outside JAX, jitbench and Python's own library: the innermost
    such frame as ``path:line in function``, its path from its package (``jax_cosmo/core.py``)
    or the working directory; "" where every frame is theirs."""
    stdlib = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep
    skipped = []
    for name in _NOT_ORIGIN:
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            skipped.append(os.path.dirname(os.path.realpath(module.__file__)) + os.sep)
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        path = os.path.realpath(frame.filename)
        python = path.startswith(stdlib) and "-packages" + os.sep not in path[len(stdlib) :]
        if frame.filename.startswith("<") or python or path.startswith(tuple(skipped)):
            continue
        return f"{_short(path)}:{frame.lineno} in {frame.name}"
    return ""


def _short(path: str) -> str:
    """``path`` from the folder of installed packages it is in, else from the working
    directory where it is under it, else as it is."""
    for root in sys.path:
        root = os.path.realpath(root) + os.sep if root else ""
        if root and "-packages" in root and path.startswith(root):
            return path[len(root) :]
    cwd = os.path.realpath(os.getcwd()) + os.sep
    return path[len(cwd) :] if path.startswith(cwd) else path


def opted_in(env: str) -> bool:
    """Whether ``env`` is ``1``: a family that measures for minutes does only when asked."""
    return os.environ.get(env, "").strip() == "1"


class JitbenchError(Exception):
    """Bad input from a user: the message names the bad value and the valid choices."""


class DeviceUnavailable(NotImplementedError):
    """A device spec this host cannot serve.

    A subclass of NotImplementedError so that asv records the parameter
    combination as skipped (n/a) instead of failed.
    """


class StrategyUnavailable(NotImplementedError):
    """A strategy whose optional package is not installed (asv skips it)."""


@dataclasses.dataclass(frozen=True)
class NoFigure:
    """Why a row has no figure: not applicable here (asv records n/a), or it failed.

    What a measurement returns in place of its figure when it has none, so that the
    reason travels (between processes too, as JSON) and is raised where asv reads it.
    """

    reason: str
    failed: bool = False

    @classmethod
    def of(cls, exc: BaseException) -> NoFigure:
        """A NotImplementedError is not applicable; anything else failed."""
        text = str(exc)
        if not isinstance(exc, NotImplementedError | JitbenchError):
            text = f"{type(exc).__name__}: {exc}"
        return cls(text, failed=not isinstance(exc, NotImplementedError))

    def throw(self) -> NoReturn:
        """Raise it as asv reads it: NotImplementedError (n/a) or JitbenchError (failed)."""
        raise (JitbenchError if self.failed else NotImplementedError)(self.reason)

    def to_json(self) -> dict[str, str]:
        return {"failed" if self.failed else "not_applicable": self.reason}

    @classmethod
    def from_json(cls, data: object) -> NoFigure | None:
        """The NoFigure that :meth:`to_json` wrote, or None for anything else."""
        if isinstance(data, dict) and len(data) == 1:
            ((key, reason),) = data.items()
            if key in ("failed", "not_applicable"):
                return cls(reason, failed=key == "failed")
        return None
