"""JAX's on-disk compilation cache, seen from a new process: filled, hit, or cold (see
docs/benchmarks.md)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from jitbench.auditing.subject import Subject
from jitbench.compiles import block, clear_memory_caches, count_compiles, use_persistent_cache
from jitbench.measure.case import Row

Key = tuple[str, int, str]


def fill(subject: Subject, path: str) -> None:
    """Compile the first call of ``subject`` with JAX's on-disk cache at ``path`` (created)."""
    hits(subject, path)


def fill_all(strategies: list[str], sizes: list[int], specs: list[str]) -> dict[Key, str]:
    """A filled cache directory (under the working directory) per combination this host runs."""
    filled = {}
    for spec in specs:
        for name in strategies:
            for size in sizes:
                try:
                    subject = Row(name, spec, size).load()
                except NotImplementedError:
                    continue
                path = str(Path.cwd() / "jax-disk-cache" / f"{name}-{size}-{spec}")
                fill(subject, path)
                filled[name, size, spec] = path
    return filled


def first_call(subject: Subject, path: str) -> Callable[[], object]:
    """The first call of a new instance with the on-disk cache at ``path`` (empty or filled)."""
    os.makedirs(path, exist_ok=True)
    call = subject.call(subject.new())
    use_persistent_cache(path)
    return lambda: block(call())


def hits(subject: Subject, path: str) -> int:
    """On-disk cache hits (``jax.monitoring``) of a cold first call against ``path``."""
    call = first_call(subject, path)
    clear_memory_caches()
    try:
        with count_compiles() as stats:
            call()
    finally:
        use_persistent_cache(None)
    return stats.persistent_cache_hits
