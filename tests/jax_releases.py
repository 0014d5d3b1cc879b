"""Observations that depend on the JAX release: pick the range the running JAX is in.

Tables of observations are lists of ``(first, end, value)``: ``value`` holds
for every release ``first <= release < end`` (``end`` None: up to the newest).
A release no range covers fails the test that asks, naming the release, so a
new JAX is pinned on purpose and never matched by accident.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from typing import TypeVar

import pytest
from packaging.version import Version

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
