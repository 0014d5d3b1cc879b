"""Compile accounting through ``jax.monitoring``, and cold-cache control.

JAX reports every trace, MLIR lowering and backend compile as a duration
event; :func:`count_compiles` sums them inside a block. The listeners are
registered once per process and feed whichever counters are open, because
JAX keeps every registered listener for the life of the process.

Before JAX 0.10 a trace event also fires for each jitted function traced
inside another trace (jax.numpy's own), and ends inside the outer event:
those count as traces, but their seconds, already part of the outer
event's, are not added again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Iterator
from typing import Any

TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
LOWER_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
CACHE_HIT_EVENT = "/jax/compilation_cache/cache_hits"
CACHE_MISS_EVENT = "/jax/compilation_cache/cache_misses"


@dataclasses.dataclass
class CompileStats:
    """What JAX traced, lowered and compiled inside one :func:`count_compiles` block."""

    traces: int = 0
    lowerings: int = 0
    compiles: int = 0
    trace_seconds: float = 0.0
    lower_seconds: float = 0.0
    compile_seconds: float = 0.0
    persistent_cache_hits: int = 0
    persistent_cache_misses: int = 0


_open: list[CompileStats] = []
_registered = False
# (end, seconds) of the trace events not yet found inside a later one; cleared
# when no block is open.
_traces: list[tuple[float, float]] = []

_DURATION_FIELDS = {
    TRACE_EVENT: ("traces", "trace_seconds"),
    LOWER_EVENT: ("lowerings", "lower_seconds"),
    COMPILE_EVENT: ("compiles", "compile_seconds"),
}
_EVENT_FIELDS = {
    CACHE_HIT_EVENT: "persistent_cache_hits",
    CACHE_MISS_EVENT: "persistent_cache_misses",
}


def _outer_seconds(duration: float) -> float:
    """A trace event's seconds less those of the trace events that ended inside it."""
    end = time.perf_counter()
    inner = 0.0
    while _traces and _traces[-1][0] > end - duration:
        inner += _traces.pop()[1]
    _traces.append((end, duration))
    return duration - inner


def _on_duration(event: str, duration: float, **_: Any) -> None:
    fields = _DURATION_FIELDS.get(event)
    if fields is None or not _open:
        return
    count, seconds = fields
    added = _outer_seconds(duration) if event == TRACE_EVENT else duration
    for stats in _open:
        setattr(stats, count, getattr(stats, count) + 1)
        setattr(stats, seconds, getattr(stats, seconds) + added)


def _on_event(event: str, **_: Any) -> None:
    field = _EVENT_FIELDS.get(event)
    if field is None:
        return
    for stats in _open:
        setattr(stats, field, getattr(stats, field) + 1)


def _register_listeners() -> None:
    global _registered
    if _registered:
        return
    from jax import monitoring

    monitoring.register_event_duration_secs_listener(_on_duration)
    monitoring.register_event_listener(_on_event)
    _registered = True


@contextlib.contextmanager
def count_compiles() -> Iterator[CompileStats]:
    """Count traces, lowerings and backend compiles (and their seconds) in the block.

    Blocks nest: an event counts in every block open when it fires.
    """
    _register_listeners()
    stats = CompileStats()
    _open.append(stats)
    try:
        yield stats
    finally:
        _open.remove(stats)
        if not _open:
            _traces.clear()


def disable_persistent_cache() -> None:
    """Turn JAX's on-disk compilation cache off so that a cold call really compiles."""
    import jax

    if jax.config.jax_enable_compilation_cache:
        use_persistent_cache(None)


def use_persistent_cache(path: str | None) -> None:
    """Read and write JAX's on-disk compilation cache at ``path`` (None: switch it off).

    The thresholds are lowered so that every program is written, small ones
    included (by default only compiles over one second are). JAX decides
    once per process whether the cache is in use; ``reset_cache`` (public,
    in ``jax.experimental.compilation_cache``) makes it decide again.
    """
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    if path is None:
        jax.config.update("jax_enable_compilation_cache", False)
    else:
        jax.config.update("jax_enable_compilation_cache", True)
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    compilation_cache.reset_cache()


def clear_memory_caches() -> None:
    """Drop every in-memory compilation and tracing cache (the disk cache stays as set).

    ``jax.clear_caches`` empties jit's C++ and tracing caches for every jitted
    function (equinox's and nnx's wrappers included, since both jit through
    ``jax.jit``). Tests check that a call after this compiles again.
    """
    import jax

    jax.clear_caches()


def clear_caches() -> None:
    """Make the next call cold: in-memory caches dropped and the on-disk cache off."""
    disable_persistent_cache()
    clear_memory_caches()


def block(value: Any) -> Any:
    """Wait for every array in ``value`` (a pytree) to be computed."""
    import jax

    return jax.block_until_ready(value)


# JAX logs each tracing-cache miss to one of these, at WARNING, when
# jax_explain_cache_misses is on: jax._src.pjit up to 0.8, partial_eval since 0.9.
EXPLAIN_LOGGERS = ("jax._src.pjit", "jax._src.interpreters.partial_eval")


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def explain_misses() -> Iterator[list[str]]:
    """Collect JAX's explanation of every tracing-cache miss in the block (none are printed).

    With ``jax_explain_cache_misses`` on, JAX's messages ("TRACING CACHE
    MISS at ...") go to a logger that
    this block captures and keeps from propagating. JAX explains misses of
    functions defined outside its own package only (eager primitives get
    none), and its explanations are heuristics: the closest earlier key
    decides what is named. Capturing costs microseconds per call: never
    around a timed call.
    """
    import jax

    collector = _Collector()
    loggers = [logging.getLogger(name) for name in EXPLAIN_LOGGERS]
    saved = [(logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(collector)
        logger.propagate = False
        if not logger.isEnabledFor(logging.WARNING):
            logger.setLevel(logging.WARNING)
    # jax.config.update rather than the jax.explain_cache_misses context, which
    # JAX 0.4.30 does not export; the audit that uses this runs on one thread.
    previous = jax.config.jax_explain_cache_misses
    jax.config.update("jax_explain_cache_misses", True)
    try:
        yield collector.messages
    finally:
        jax.config.update("jax_explain_cache_misses", previous)
        for logger, (level, propagate) in zip(loggers, saved, strict=True):
            logger.removeHandler(collector)
            logger.setLevel(level)
            logger.propagate = propagate
