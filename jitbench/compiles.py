"""Compile accounting through ``jax.monitoring`` (:func:`count_compiles`), JAX's explanations
of cache misses, and cold-cache control. Design notes: docs/design.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import importlib
import logging
import tempfile
import time
from collections.abc import Iterator
from typing import TypeVar

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
# (end, seconds) of the trace events not yet found inside a later one; cleared
# when no block is open.
_traces: list[tuple[float, float]] = []

# Each event's count and, for an event with a duration, its seconds.
_FIELDS = {
    TRACE_EVENT: ("traces", "trace_seconds"),
    LOWER_EVENT: ("lowerings", "lower_seconds"),
    COMPILE_EVENT: ("compiles", "compile_seconds"),
    CACHE_HIT_EVENT: ("persistent_cache_hits", ""),
    CACHE_MISS_EVENT: ("persistent_cache_misses", ""),
}


def _outer_seconds(duration: float) -> float:
    """A trace event's seconds less those of the trace events that ended inside it."""
    end = time.perf_counter()
    inner = 0.0
    while _traces and _traces[-1][0] > end - duration:
        inner += _traces.pop()[1]
    _traces.append((end, duration))
    return duration - inner


def _on_event(event: str, duration: float = 0.0, **_: object) -> None:
    """Both listeners: the event counted, and its seconds added, in every open block."""
    fields = _FIELDS.get(event)
    if fields is None or not _open:
        return
    count, seconds = fields
    added = _outer_seconds(duration) if event == TRACE_EVENT else duration
    for stats in _open:
        setattr(stats, count, getattr(stats, count) + 1)
        if seconds:
            setattr(stats, seconds, getattr(stats, seconds) + added)


@functools.cache  # once per process: JAX keeps every listener for good
def _register_listeners() -> None:
    from jax import monitoring

    monitoring.register_event_duration_secs_listener(_on_event)
    monitoring.register_event_listener(_on_event)


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
        # By identity: two blocks that counted the same events are equal dataclasses.
        del _open[next(i for i, s in enumerate(_open) if s is stats)]
        if not _open:
            _traces.clear()


def use_persistent_cache(path: str | None) -> None:
    """Read and write JAX's on-disk compilation cache at ``path`` (None: switch it off),
    every program written, small ones included (how: docs/design.md)."""
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
    """Drop every in-memory compilation and tracing cache, equinox's and nnx's wrappers'
    included (the disk cache stays as set)."""
    import jax

    jax.clear_caches()


def clear_caches() -> None:
    """Make the next call cold: in-memory caches dropped and the on-disk cache off (inside
    :func:`read_back`, on in its folder)."""
    import jax

    if _read_back:
        use_persistent_cache(_read_back[-1])
    elif jax.config.jax_enable_compilation_cache:
        use_persistent_cache(None)
    clear_memory_caches()


# JAX's trace of a jit, private: read by release_failed_traces alone, guarded.
TRACE_CLASS = ("jax._src.interpreters.partial_eval", "DynamicJaxprTrace")


def release_failed_traces(existing: set[int]) -> int:
    """Release what each trace that raised keeps, of the traces not among ``existing`` (ids
    of objects alive before): how many were released. JAX ends a trace by clearing its
    equations and constants (``DynamicJaxprTrace.invalidate``, called after the traced
    function returns), but not where it raises: each constant's finalizer then holds the
    trace, and the trace the constant, for ever (JAX 0.12.1: an array a jit closes over
    outlives a trace that raised; tests/test_audit.py). The audit's steps whose change the
    call cannot take raise inside the trace: without this, what they closed over (the
    object's arrays, a jit made for each object) would read as the object's leak. Where
    JAX's trace is not as expected, nothing is released."""
    try:
        trace_class = getattr(importlib.import_module(TRACE_CLASS[0]), TRACE_CLASS[1])
    except (ImportError, AttributeError):
        return 0
    released = 0
    for obj in gc.get_objects():
        if not isinstance(obj, trace_class) or id(obj) in existing:
            continue
        frame = getattr(obj, "frame", None)
        # A trace that ended was invalidated: its equations and constants are empty.
        held = getattr(frame, "tracing_eqns", None) or getattr(frame, "constvar_to_val", None)
        if held and callable(getattr(obj, "invalidate", None)):
            obj.invalidate()
            released += 1
    return released


# The folder of each open read_back block, innermost last.
_read_back: list[str] = []


@contextlib.contextmanager
def read_back(folder: str | None = None) -> Iterator[str]:
    """JAX's persistent compilation cache on for the block, in ``folder`` (None: a temporary
    folder, removed after; the folder of an enclosing block where there is one), every program
    written there, and kept on by :func:`clear_caches`: what a cleared cache makes JAX compile
    again (the eager operations of a call without jit, a new instance's initialisers, a way's
    program the audit compiled) is read back from disk instead (about 4x faster here on the
    CPU, more on a TPU). The counts do not change: JAX times a program read back as its
    backend compile (pxla wraps compile_or_get_cached in BACKEND_COMPILE_EVENT), so it
    counts as a compile, as an in-memory miss should (test_audit pins equal counts). Nothing
    timed runs inside it (:func:`as_the_user_runs`)."""
    with contextlib.ExitStack() as stack:
        if folder is None:
            folder = _read_back[-1] if _read_back else stack.enter_context(
                tempfile.TemporaryDirectory(prefix="jitbench-compilation-cache-")
            )  # fmt: skip
        _read_back.append(folder)
        use_persistent_cache(folder)
        try:
            yield folder
        finally:
            _read_back.pop()
            use_persistent_cache(_read_back[-1] if _read_back else None)


@contextlib.contextmanager
def as_the_user_runs() -> Iterator[None]:
    """JAX's persistent compilation cache off for the block, inside :func:`read_back` too: a
    call timed there that compiles (one that jits at every call) compiles as in the user's
    own process, rather than reading its program back."""
    saved = _read_back[:]
    _read_back.clear()
    use_persistent_cache(None)
    try:
        yield
    finally:
        _read_back[:] = saved
        use_persistent_cache(saved[-1] if saved else None)


T = TypeVar("T")


def block(value: T) -> T:
    """Wait for every array in ``value`` (a pytree) to be computed."""
    import jax

    return jax.block_until_ready(value)


# JAX logs a host callback's exception with its traceback before it raises it (equinox's
# runtime checks raise through one); the scenario records the error itself.
CALLBACK_LOGGER = "jax._src.callback"


@contextlib.contextmanager
def quiet_callback_errors() -> Iterator[None]:
    """Silence JAX's log of a failing host callback in the block (the exception still rises)."""
    logger = logging.getLogger(CALLBACK_LOGGER)
    saved, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = saved


# Where JAX logs each tracing-cache miss, at WARNING (which release uses which: docs/design.md).
EXPLAIN_LOGGERS = ("jax._src.pjit", "jax._src.interpreters.partial_eval")
# Where JAX logs each persistent-cache miss and write, at WARNING while it explains misses
# with that cache on (read_back): not the user's to read, nor an explanation.
PERSISTENT_CACHE_LOGGERS = ("jax._src.compiler", "jax._src.compilation_cache")


def _from_error(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.ERROR


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def explain_misses() -> Iterator[list[str]]:
    """Collect JAX's explanation of every tracing-cache miss in the block (none are printed);
    never around a timed call (why, and what JAX explains: docs/design.md)."""
    import jax

    collector = _Collector()
    loggers = [logging.getLogger(name) for name in EXPLAIN_LOGGERS]
    quiet = [logging.getLogger(name) for name in PERSISTENT_CACHE_LOGGERS]
    for logger in quiet:
        logger.addFilter(_from_error)
    saved = [(logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.addHandler(collector)
        logger.propagate = False
        if not logger.isEnabledFor(logging.WARNING):
            logger.setLevel(logging.WARNING)
    # Not JAX's context manager (docs/design.md); the audit that uses this runs on one thread.
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
        for logger in quiet:
            logger.removeFilter(_from_error)


# The modules of lax's control flow: under jax.disable_jit() they run a cond's one branch and
# a scan's loop as Python, skipping the checks their tracing makes (without_jit). JAX's private
# modules, read here alone, each guarded: where one is not as expected, without_jit says so.
CONTROL_FLOW_MODULES = (
    "jax._src.lax.control_flow.conditionals",
    "jax._src.lax.control_flow.loops",
)


class _JitOn:
    """``disable_jit`` as lax's control flow reads it inside :func:`without_jit`: off."""

    value = False


class _ControlFlowConfig:
    """JAX's config module as a control-flow module reads it inside :func:`without_jit`."""

    def __init__(self, config: object) -> None:
        self._config = config

    def __getattr__(self, name: str) -> object:
        return _JitOn if name == "disable_jit" else getattr(self._config, name)


@contextlib.contextmanager
def without_jit() -> Iterator[bool]:
    """Every jit in the block called as the Python function it wraps (``jax.disable_jit()``),
    while lax's conds, switches, scans and loops are traced as they are outside it, so that
    their checks (a branch's output type, a scan's carry) are made: the plain call of a call
    whose jit cannot be taken off it (made inside it: ``jax.jit(env.step)(state, action)``).
    Yields whether it could (False: JAX's control flow is not where this reads it; the block
    then runs under ``jax.disable_jit()`` alone). The audit that uses it runs on one thread."""
    import jax

    modules = []
    for name in CONTROL_FLOW_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            modules = []
            break
        config = getattr(module, "config", None)
        if not hasattr(getattr(config, "disable_jit", None), "value"):
            modules = []
            break
        modules.append((module, config))
    with jax.disable_jit():
        for module, config in modules:
            module.config = _ControlFlowConfig(config)
        try:
            yield bool(modules)
        finally:
            for module, config in modules:
                module.config = config
