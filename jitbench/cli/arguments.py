"""The argument types of the ``jitbench`` command: each bad value is one line.

argparse turns an ``ArgumentTypeError`` into ``jitbench CMD: error: argument ...:
MESSAGE`` and exit status 2; :class:`Parser` keeps that to one line (argparse prints
its usage first).
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Sequence
from typing import TypeVar


class Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line (argparse prints usage first)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _number(text: str, ok: Callable[[float], bool], wanted: str) -> float:
    """``text`` as a float where ``ok`` holds it, else the one-line error ``wanted``."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and ok(value)):
        raise argparse.ArgumentTypeError(f"{wanted}, got {text!r}")
    return value


def factor(text: str) -> float:
    return _number(text, lambda v: v >= 1, "must be a finite number >= 1 such as 1.05")


def fraction(text: str) -> float:
    return _number(text, lambda v: v >= 0, "must be a finite fraction >= 0 such as 0.01")


T = TypeVar("T")


def items(parse: Callable[[str], T]) -> Callable[[str], list[T]]:
    """A comma-separated list whose items each go through ``parse``."""

    def parse_list(text: str) -> list[T]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
        return [parse(item) for item in items]

    return parse_list


def choice(what: str, valid: Sequence[str]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in valid:
            raise argparse.ArgumentTypeError(f"unknown {what} {text!r}; valid: {', '.join(valid)}")
        return text

    return parse


def percent(text: str) -> float:
    return _number(text, lambda v: 0 < v < 1000, "a slowdown in percent such as 10")


def machine_name(text: str) -> str:
    """A machine name: the folder of results/ its runs go in."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", text):
        raise argparse.ArgumentTypeError(
            f"machine name {text!r} must be letters, digits, '.', '_' or '-' (a folder name)"
        )
    return text
