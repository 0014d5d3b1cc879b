"""The changes a user makes to an object, shared by the audit and the after-change benchmark."""

from __future__ import annotations

import numpy as np
import pytest
from jax_releases import runnable

import jitbench
from jitbench import changes
from jitbench.codegen import DEFAULT_SHAPE, Shape, arrays_of, fields_of, statics_of
from jitbench.devices import resolve

NAMES = list(jitbench.STRATEGIES)


def test_the_tables():
    assert list(changes.CHANGES) == [
        "new_static",
        "seen_static",
        "same_shape_array",
        "new_shape_array",
        "equal_instance",
        "other_instance",
    ]
    assert changes.SCENARIO == ("first_call", "repeat_call", *changes.CHANGES)
    assert list(changes.DESCRIPTIONS) == list(changes.SCENARIO)
    assert changes.TIMED_CHANGES == tuple(changes.CHANGES)[:-1]
    assert changes.PREREQUISITES == {"seen_static": ("new_static",)}
    assert changes.NEW_STATIC == 2


@pytest.mark.parametrize("device", ["cpu", "cpu-sharded"])
@pytest.mark.parametrize("name", runnable(NAMES))
def test_changes_in_scenario_order(name, device):
    strategy = jitbench.get_strategy(name)
    placement = resolve(device)
    subject = changes.Subject.build(strategy, 10, placement, DEFAULT_SHAPE)
    length = placement.round_size(10)
    assert subject.y.shape == (length,)
    # The subject's call is the method on its argument: NumPy's result for its fields.
    expected = jitbench.reference_calc(
        arrays_of(subject.obj), statics_of(subject.obj), subject.y, DEFAULT_SHAPE.n_ops
    )
    np.testing.assert_allclose(subject.call(), expected, rtol=1e-5, atol=1e-5)
    (first,) = arrays_of(subject.obj)

    def apply(change):
        before = subject.obj
        old = fields_of(before)
        changes.apply(subject, change)
        # Frozen styles build a new object, the others change it in place; the
        # new-instance steps always build one.
        new_object = strategy.frozen or change.endswith("_instance")
        assert (subject.obj is not before) == new_object, change
        assert type(subject.obj) is type(before)
        return old, fields_of(subject.obj)

    old, new = apply("new_static")
    assert (old["s0"], new["s0"]) == (1, 2) and new["a0"] is old["a0"]
    old, new = apply("seen_static")
    assert new["s0"] == 1
    old, new = apply("same_shape_array")
    assert new["a0"].shape == (length,) and not np.array_equal(new["a0"], old["a0"])
    old, new = apply("new_shape_array")
    assert new["a0"].shape == (2, length)
    assert len(new["a0"].sharding.device_set) == placement.n_devices
    old, new = apply("equal_instance")
    assert all(new[k] is old[k] for k in old)  # the same values: an equal instance
    old, new = apply("other_instance")
    assert statics_of(subject.obj) == [2] and new["a0"].shape == (length,)
    assert not np.array_equal(new["a0"], first)  # other values


def test_only_the_first_field_changes():
    shape = Shape(n_arrays=2, n_static=2)
    subject = changes.Subject.build(
        jitbench.get_strategy("helper_function"), 8, resolve("cpu"), shape
    )
    before = fields_of(subject.obj)
    changes.apply(subject, "new_static")
    changes.apply(subject, "same_shape_array")
    after = fields_of(subject.obj)
    assert (after["s0"], after["s1"]) == (2, 1)
    assert after["a1"] is before["a1"] and after["a0"] is not before["a0"]


def test_probe_follows_the_subject():
    strategy = jitbench.get_strategy("pytree_class")
    subject = changes.Subject.build(strategy, 8, resolve("cpu"), DEFAULT_SHAPE, probe=True)
    changes.apply(subject, "other_instance")
    assert type(subject.obj) is strategy.make_class(probe=True)
