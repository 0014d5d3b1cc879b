"""Observations that depend on the JAX release: pick the range the running JAX is in.

Tables of observations are lists of ``(first, end, value)``: ``value`` holds
for every release ``first <= release < end`` (``end`` None: up to the newest).
A release no range covers fails the test that asks, naming the release, so a
new JAX is pinned on purpose and never matched by accident.

A strategy that declares a minimum release of a package (``flax>=0.12.1``) is
unavailable by design where an older one is installed, as on the oldest JAX
releases, which admit no such flax: tests of it are skipped there
(:func:`runnable`), and only there.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import pytest
from packaging.version import Version

import jitbench

T = TypeVar("T")
Release = tuple[int, ...]

JAX: Release = Version(importlib.metadata.version("jax")).release


def in_range(first: Release, end: Release | None, release: Release = JAX) -> bool:
    return first <= release and (end is None or release < end)


def for_release(ranges: Sequence[tuple[Release, Release | None, T]], release: Release = JAX) -> T:
    """The value of the range ``release`` falls in; a failed test when none covers it."""
    for first, end, value in ranges:
        if in_range(first, end, release):
            return value
    version = ".".join(map(str, release))
    pytest.fail(f"nothing pinned for JAX {version}: observe it and add its range")


def below_minimum(name: str) -> str | None:
    """Why strategy ``name`` cannot run here by its own declaration, or None when it can.

    Only an installed package older than the strategy's declared minimum counts;
    a missing package is no design: the test environment installs them all.
    """
    strategy = jitbench.get_strategy(name)
    for requirement in strategy.requires:
        package, _, minimum = requirement.partition(">=")
        try:
            installed = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
        if minimum and Version(installed) < Version(minimum):
            return strategy.unavailable_reason
    return None


def needs(name: str) -> pytest.MarkDecorator:
    """A mark skipping a test of strategy ``name`` where :func:`below_minimum` rules it out."""
    reason = below_minimum(name)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


def runnable(names: Iterable[str]) -> list[Any]:
    """``names`` as pytest parameters, skipping those :func:`below_minimum` rules out."""
    return [
        pytest.param(name, marks=pytest.mark.skip(reason=reason))
        if (reason := below_minimum(name))
        else name
        for name in names
    ]
