"""The compile counter's exact counts on a toy function, and cold caches."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jitbench.measure import aot_stage_times, clear_caches, count_compiles


def _toy(x):
    return jnp.sin(x) * 2.0


def _ones(n, dtype=np.float32):
    # Host arrays: building them with jax.numpy would itself compile.
    return np.ones(n, dtype)


def test_counts_one_trace_lowering_compile_then_none():
    f = jax.jit(_toy)
    with count_compiles() as first:
        f(_ones(3)).block_until_ready()
    with count_compiles() as again:
        f(_ones(3)).block_until_ready()
    assert (first.traces, first.lowerings, first.compiles) == (1, 1, 1)
    assert first.trace_seconds > 0 and first.compile_seconds > 0
    assert (again.traces, again.lowerings, again.compiles) == (0, 0, 0)


def test_new_shape_and_dtype_compile_again():
    f = jax.jit(_toy)
    f(_ones(3))
    with count_compiles() as stats:
        f(_ones(4))
        f(_ones(4, np.int32))
        f(_ones(4))
    assert stats.compiles == 2


def test_clear_caches_makes_the_next_call_compile():
    f = jax.jit(_toy)
    f(_ones(3))
    clear_caches()
    with count_compiles() as stats:
        f(_ones(3))
    assert stats.compiles == 1
    assert not jax.config.jax_enable_compilation_cache


def test_blocks_nest_and_listeners_register_once():
    from jax._src import monitoring

    before = len(monitoring.get_event_duration_listeners())
    f = jax.jit(_toy)
    with count_compiles() as outer:
        f(_ones(5))
        with count_compiles() as inner:
            f(_ones(6))
    assert (outer.compiles, inner.compiles) == (2, 1)
    with count_compiles():
        pass
    assert len(monitoring.get_event_duration_listeners()) == before


def test_counter_closed_on_exception():
    f = jax.jit(_toy)
    with pytest.raises(RuntimeError), count_compiles():
        raise RuntimeError("boom")
    with count_compiles() as stats:
        f(_ones(7))
    assert stats.compiles == 1


def test_aot_stage_times_are_positive_and_cold():
    f = jax.jit(_toy)
    f(_ones(8))
    with count_compiles() as stats:
        stages = aot_stage_times(f, _ones(8))
    assert stats.compiles == 1
    assert stages.trace > 0 and stages.lower > 0 and stages.compile > 0
