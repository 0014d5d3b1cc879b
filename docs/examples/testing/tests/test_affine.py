"""The model's jit checks: never stale, compiles only when it should, costs what it did."""

import dataclasses

from affine import batch, make

from jitbench.testing import assert_jit_safe, compiles


def test_jit_never_returns_a_stale_result_nor_keeps_instances_alive():
    assert_jit_safe(make, inputs=batch())


def test_a_cached_call_does_not_compile():
    model, (x,) = make(), batch()
    model(x)
    with compiles(max=0):
        model(x)


def test_a_new_scale_compiles_once():
    model, (x,) = make(), batch()
    model(x)
    with compiles(exactly=1):
        dataclasses.replace(model, scale=3.0)(x)


def test_instructions_per_call(jitbench_counts):
    jitbench_counts(make, inputs=batch)
