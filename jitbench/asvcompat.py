"""The private parts of asv that jitbench relies on, all here and each guarded.

asv has no public API for judging one pair of results (``asv compare`` decides
its marks with two private functions: Mann-Whitney U on the samples, else
overlapping 99% intervals; then the factor) nor for reading a result's
requirements. Calling asv's own code keeps every mark exactly asv's; since it
is private, the asv release is pinned (pyproject.toml's ``report`` extra) and
an asv release that moved one of these stops the command with one line naming
what moved and the release that has it, instead of a traceback or every
result file reported unreadable.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Sequence
from typing import Any

from jitbench import extras
from jitbench.errors import JitbenchError


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
    stats_a: dict[str, Any],
    stats_b: dict[str, Any],
) -> bool:
    """asv compare's significance test of two results (``asv._stats.is_different``)."""
    return bool(private("asv._stats", "is_different")(samples_a, samples_b, stats_a, stats_b))


def is_result_better(
    a: float,
    b: float,
    a_ss: tuple[dict[str, Any] | None, list[float] | None],
    b_ss: tuple[dict[str, Any] | None, list[float] | None],
    factor: float,
) -> bool:
    """Whether asv compare calls ``a`` better than ``b`` (significant and beyond ``factor``)."""
    better = private("asv.commands.compare", "_is_result_better")
    return bool(better(a, b, a_ss, b_ss, factor))


def result_requirements(result: Any) -> dict[str, str]:
    """The requirements an asv ``Results`` was run with (``Results._requirements``)."""
    try:
        found = result._requirements
    except AttributeError:
        raise moved("asv.results.Results._requirements") from None
    return dict(found or {})
