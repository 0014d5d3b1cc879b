"""JAX's on-disk compilation cache, seen from a new process: filled, hit, or cold (see
docs/benchmarks.md); a first call as a restarted script makes it, in a fresh process
(:func:`restarted`, ``python -m jitbench.measure.diskcache REQUEST RESULT``)."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from jitbench import child
from jitbench.child import Json
from jitbench.compiles import block, clear_memory_caches, count_compiles, use_persistent_cache
from jitbench.errors import JitbenchError, NoFigure
from jitbench.measure.case import Row
from jitbench.measure.sampling import Spread
from jitbench.targets import child_environment
from jitbench.ways.subject import Subject

Key = tuple[str, int, str]
# A fresh process per first call: its start, JAX's import, the device opened (seconds on a
# TPU) and the target built, then the call.
RESTART = ("-m", "jitbench.measure.diskcache")
RESTART_TIMEOUT_S = 600


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


def restarted(
    rows: Sequence[Row], folder: str, say: Callable[[int, str], None] | None = None
) -> list[Spread | NoFigure]:
    """Each row's first call as a restarted script makes it: in a fresh process of its own,
    one at a time (none shares the machine, or a device, with another), with JAX's persistent
    compilation cache at ``folder``, filled by a process before it; its seconds, or why there
    are none (``say(index, name)`` before each)."""
    found: list[Spread | NoFigure] = []
    for index, row in enumerate(rows):
        name = row.way or row.subject
        if say is not None:
            say(index, name)
        env = {**os.environ, **child_environment(row.specs)}
        with tempfile.TemporaryDirectory(prefix="jitbench-restart-") as work:
            try:
                answer = child.work(RESTART, {"row": row.to_json(), "folder": folder},
                                    Path(work), what=f"the fresh process of {name}",
                                    timeout=RESTART_TIMEOUT_S, env=env)  # fmt: skip
            except JitbenchError as exc:
                found.append(NoFigure(str(exc), failed=True))
                continue
        missing = NoFigure.from_json(answer)
        if missing is None:
            assert isinstance(answer, dict) and isinstance(answer["seconds"], float)
        found.append(missing or Spread.of([answer["seconds"]]))
    return found


def restart(request: Json) -> Json:
    """A fresh process's side of :func:`restarted`: JAX's persistent cache on at the request's
    folder from the start (as a script sets it before anything else), the row's object built,
    and its first call timed; NotImplementedError where the call compiled a program the cache
    did not hold (its figure would be a compile's)."""
    assert isinstance(request, dict)
    folder = str(request["folder"])
    use_persistent_cache(folder)
    call = first_call(Row.from_json(request["row"]).load(checked=False), folder)
    with count_compiles() as stats:
        start = time.perf_counter()
        call()
        seconds = time.perf_counter() - start
    if stats.persistent_cache_misses:
        raise NotImplementedError(
            f"{stats.persistent_cache_misses} of its programs were not in the cache the "
            "process before filled: its first call compiled them"
        )
    return {"seconds": seconds}


def main() -> None:
    child.serve(restart)


if __name__ == "__main__":
    main()
