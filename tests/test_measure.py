"""The compile counter's exact counts on a toy function, cold caches, and explanations."""

from __future__ import annotations

import logging
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import monitoring
from jax_releases import for_release

from jitbench import compiles as measure
from jitbench.compiles import (
    EXPLAIN_LOGGERS,
    PERSISTENT_CACHE_LOGGERS,
    block,
    clear_caches,
    count_compiles,
    explain_misses,
    quiet_callback_errors,
    read_back,
    use_persistent_cache,
)


def _toy(x):
    return jnp.sin(x) * 2.0


def _ones(n, dtype=np.float32):
    # Host arrays: building them with jax.numpy would itself compile.
    return np.ones(n, dtype)


def _counts(stats):
    return stats.traces, stats.lowerings, stats.compiles


# The toy's trace events: its first call, and its two new signatures (one program each).
# Before 0.10 jax.monitoring also counts the traces of jnp's own jitted functions inside
# the toy's, and 0.9.0/0.9.0.1 one their tracing cache served too (ranges as test_audit's).
TOY_TRACES = [
    ((0, 4, 30), (0, 4, 36), (3, 5)),
    ((0, 9), (0, 9, 1), (3, 6)),
    ((0, 9, 1), (0, 10), (3, 5)),
    ((0, 10), None, (1, 2)),
]
# How JAX's explanation names the toy's argument after its shape changed from 12 to 13.
SHAPE_WORDS = [
    ((0, 4, 30), (0, 4, 36), ("seen f32[12], but now given f32[13]",)),
    ((0, 9), None, ("now f32[13]", "before f32[12]")),
]


def test_counts_one_trace_lowering_compile_then_none():
    f = jax.jit(_toy)
    with count_compiles() as first:
        block(f(_ones(3)))
    with count_compiles() as again:
        block(f(_ones(3)))
    assert _counts(first) == (for_release(TOY_TRACES)[0], 1, 1)
    assert first.trace_seconds > 0 and first.lower_seconds > 0 and first.compile_seconds > 0
    assert _counts(again) == (0, 0, 0)
    assert again.trace_seconds == again.lower_seconds == again.compile_seconds == 0.0


def test_new_shape_and_dtype_compile_again():
    f = jax.jit(_toy)
    f(_ones(3))
    with count_compiles() as stats:
        f(_ones(4))
        f(_ones(4, np.int32))
        f(_ones(4))
    assert _counts(stats) == (for_release(TOY_TRACES)[1], 2, 2)
    assert (stats.persistent_cache_hits, stats.persistent_cache_misses) == (0, 0)


def test_clear_caches_makes_the_next_call_compile():
    f = jax.jit(_toy)
    f(_ones(3))
    clear_caches()
    with count_compiles() as stats:
        f(_ones(3))
    assert _counts(stats) == (for_release(TOY_TRACES)[0], 1, 1)
    assert not jax.config.jax_enable_compilation_cache


def test_blocks_nest():
    f = jax.jit(_toy)
    with count_compiles() as outer:
        f(_ones(5))
        with count_compiles() as inner:
            f(_ones(6))
            assert measure._open == [outer, inner]
        f(_ones(7))
    assert (outer.compiles, inner.compiles) == (3, 1)
    assert outer.compile_seconds > inner.compile_seconds > 0
    assert measure._open == []


def test_nested_trace_seconds_count_once():
    # Before JAX 0.10 a trace event fires for each jnp function traced inside another trace,
    # and ends inside it: its seconds are already part of the outer event's.
    with count_compiles() as stats:
        measure._on_event(measure.TRACE_EVENT, 0.25)
        measure._on_event(measure.TRACE_EVENT, 10.0)  # began before the first ended
        assert (stats.traces, stats.trace_seconds) == (2, 10.0)
        time.sleep(0.02)
        measure._on_event(measure.TRACE_EVENT, 0.01)  # began after the others ended
        assert stats.trace_seconds == pytest.approx(10.01)
        measure._on_event(measure.TRACE_EVENT, 100.0)  # holds all three
        assert (stats.traces, stats.trace_seconds) == (4, pytest.approx(100.0))
    assert measure._traces == []


def test_listeners_register_once():
    with count_compiles():
        pass
    durations = list(monitoring.get_event_duration_listeners())
    events = list(monitoring.get_event_listeners())
    assert durations.count(measure._on_event) == 1
    assert events.count(measure._on_event) == 1
    for _ in range(3):
        with count_compiles(), count_compiles():
            pass
    measure._register_listeners()
    assert list(monitoring.get_event_duration_listeners()) == durations
    assert list(monitoring.get_event_listeners()) == events


def test_counter_closed_on_exception():
    f = jax.jit(_toy)
    with pytest.raises(RuntimeError, match="boom"), count_compiles() as failed:
        f(_ones(8))
        raise RuntimeError("boom")
    assert measure._open == []
    assert failed.compiles == 1
    with count_compiles() as stats:
        f(_ones(9))
    assert stats.compiles == 1
    assert failed.compiles == 1  # closed: the later compile did not count there


def test_events_outside_any_block_count_nowhere():
    f = jax.jit(_toy)
    with count_compiles() as closed:
        pass
    f(_ones(10))
    assert _counts(closed) == (0, 0, 0)


@jax.jit
def _long(m):
    # A few hundred milliseconds of work: the call returns long before it is done.
    return jax.lax.fori_loop(0, 100, lambda _, acc: jnp.tanh(acc @ acc), m)


def test_block_waits_for_a_pytree():
    m = np.full((400, 400), 1 / 400, np.float32)
    block(_long(m))  # compiled, so what follows only dispatches
    tree = {"a": _long(m), "b": [_long(m + 1)]}
    assert block(tree) is tree
    # Every leaf, in the nested list too, is computed when block returns.
    assert [leaf.is_ready() for leaf in jax.tree.leaves(tree)] == [True, True]


def test_persistent_cache_switch(tmp_path):
    try:
        use_persistent_cache(str(tmp_path))
        assert jax.config.jax_enable_compilation_cache
        assert jax.config.jax_compilation_cache_dir == str(tmp_path)
        assert jax.config.jax_persistent_cache_min_compile_time_secs == 0.0
        assert jax.config.jax_persistent_cache_min_entry_size_bytes == -1
        measure.clear_memory_caches()
        with count_compiles() as stats:
            block(jax.jit(_toy)(_ones(11)))
        assert (stats.persistent_cache_hits, stats.persistent_cache_misses) == (0, 1)
        assert list(tmp_path.iterdir())  # written
    finally:
        use_persistent_cache(None)
    assert not jax.config.jax_enable_compilation_cache


def test_explain_misses_captures_and_restores(capfd, caplog):
    logger = logging.getLogger(EXPLAIN_LOGGERS[-1])
    logger.setLevel(logging.ERROR)
    saved = (logger.level, logger.propagate, list(logger.handlers))

    def fresh(x):  # a function JAX has never seen
        return jnp.cos(x)

    f = jax.jit(fresh)
    try:
        with caplog.at_level(logging.DEBUG), explain_misses() as messages:
            assert jax.config.jax_explain_cache_misses
            f(_ones(12))
            f(_ones(13))
            f(_ones(13))
        assert len(messages) == 2
        assert all(m.startswith("TRACING CACHE MISS") for m in messages)
        assert "never seen function" in messages[0]
        assert all(words in messages[1] for words in for_release(SHAPE_WORDS)), messages[1]
        assert (logger.level, logger.propagate, list(logger.handlers)) == saved
        assert not jax.config.jax_explain_cache_misses
        out, err = capfd.readouterr()
        assert out == "" and err == ""
        assert not [r for r in caplog.records if r.name in EXPLAIN_LOGGERS]
    finally:
        logger.setLevel(logging.NOTSET)


def test_explain_misses_with_the_persistent_cache_on_prints_none_of_its_lines(capfd, caplog):
    """Inside read_back (advise's audits), JAX logs each persistent-cache miss and write at
    WARNING while it explains misses: none reaches the user, nor the explanations."""

    def unseen(x):  # a function JAX has never seen
        return jnp.sin(x) * 3

    with read_back(), caplog.at_level(logging.DEBUG), explain_misses() as messages:
        jax.jit(unseen)(_ones(14))
    assert len(messages) == 1 and messages[0].startswith("TRACING CACHE MISS")
    err = capfd.readouterr().err
    assert "PERSISTENT" not in err and "persistent compilation cache" not in err
    assert not [r for r in caplog.records if "persistent compilation cache" in r.getMessage()
                or "PERSISTENT" in r.getMessage()]  # fmt: skip
    for name in PERSISTENT_CACHE_LOGGERS:
        assert not logging.getLogger(name).filters


def test_a_failing_callback_raises_without_jax_s_logged_traceback(caplog):
    """equinox's runtime checks raise through a host callback; JAX logs its traceback first."""

    def check(x):
        raise ValueError("a runtime check failed")

    @jax.jit
    def checked(x):
        return jax.pure_callback(check, jax.ShapeDtypeStruct(x.shape, x.dtype), x)

    def logged() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == measure.CALLBACK_LOGGER]

    with pytest.raises(Exception, match="a runtime check failed"), quiet_callback_errors():
        checked(_ones(3)).block_until_ready()
    assert logged() == []
    assert not logging.getLogger(measure.CALLBACK_LOGGER).disabled
    with pytest.raises(Exception, match="a runtime check failed"):  # what it silences
        checked(_ones(3)).block_until_ready()
    assert logged() == ["jax.pure_callback failed"]


def test_explain_misses_restores_after_an_exception():
    logger = logging.getLogger(EXPLAIN_LOGGERS[-1])
    saved = (logger.level, logger.propagate, list(logger.handlers))
    with pytest.raises(ValueError), explain_misses():
        raise ValueError
    assert (logger.level, logger.propagate, list(logger.handlers)) == saved
    assert not jax.config.jax_explain_cache_misses


def test_a_default_device_leaves_absl_flag_parsing_working():
    # flax's examples call jax.config.parse_flags_with_absl() at import; a Device object as
    # jax_default_device made it raise IllegalFlagValueError in every counted process.
    import subprocess
    import sys

    code = (
        "import sys, jax\n"
        "from jitbench.devices import resolve, use_device\n"
        "use_device(resolve('cpu'))\n"
        "sys.argv = ['x']\n"
        "jax.config.parse_flags_with_absl()\n"
        "print(jax.numpy.ones(1).devices())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-500:]
    assert "CpuDevice(id=0)" in done.stdout
