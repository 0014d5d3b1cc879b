"""The registry, the generated classes and their results."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import jitbench
from jitbench.strategies import Strategy

NAMES = [
    "eager",
    "bound_method_jit",
    "helper_function",
    "static_self_id_hash",
    "static_self_value_hash",
    "pytree_class",
    "pytree_dataclass",
    "jit_per_call",
    "equinox_filter_jit",
    "flax_struct_dataclass",
    "flax_nnx_jit",
]
PYTREES = ["pytree_class", "pytree_dataclass", "equinox_filter_jit", "flax_struct_dataclass"]


def test_registry_has_exactly_the_public_names():
    assert list(jitbench.STRATEGIES) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_every_strategy_is_available_in_the_test_environment(name):
    # The test environment installs equinox and flax, so nothing may be skipped.
    assert jitbench.STRATEGIES[name].available, jitbench.STRATEGIES[name].unavailable_reason


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("device", ["cpu", "cpu-sharded"])
def test_first_result_matches_reference(name, device):
    obj, y = jitbench.make_instance(name, 10, device=device, n_arrays=3, n_static=2, n_ops=4)
    result = np.asarray(obj.calc(y))
    expected = jitbench.reference_calc(jitbench.arrays_of(obj), jitbench.statics_of(obj), y, 4)
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", NAMES)
def test_update_follows_the_style(name):
    strategy = jitbench.STRATEGIES[name]
    obj, _ = jitbench.make_instance(name, 4)
    changed = strategy.update(obj, s0=5)
    assert changed.s0 == 5
    if strategy.frozen:
        assert changed is not obj and obj.s0 == 1
    else:
        assert changed is obj


def test_update_rejects_unknown_fields():
    obj, _ = jitbench.make_instance("pytree_class", 4)
    with pytest.raises(jitbench.JitbenchError, match="unknown field"):
        jitbench.STRATEGIES["pytree_class"].update(obj, nope=1)


@pytest.mark.parametrize("name", NAMES)
def test_one_class_per_shape(name):
    assert jitbench.make_class(name, n_arrays=2) is jitbench.make_class(name, n_arrays=2)
    assert jitbench.make_class(name, n_arrays=2) is not jitbench.make_class(name, n_arrays=3)


@pytest.mark.parametrize("name", PYTREES)
@pytest.mark.parametrize("n_arrays", [1, 7])
def test_width_knob_sets_pytree_leaves(name, n_arrays):
    obj, _ = jitbench.make_instance(name, 5, n_arrays=n_arrays, n_static=3)
    leaves = jax.tree_util.tree_leaves(obj)
    assert len(leaves) == n_arrays
    assert all(leaf.shape == (5,) for leaf in leaves)
    assert jitbench.statics_of(obj) == [1, 1, 1]


def test_ops_knob_grows_the_traced_program():
    def n_eqns(n_ops):
        obj, y = jitbench.make_instance("eager", 4, n_ops=n_ops)
        return len(jax.make_jaxpr(obj.calc)(y).eqns)

    # Each extra stage is one cos and one add.
    assert n_eqns(10) - n_eqns(1) == 2 * 9
    assert n_eqns(100) - n_eqns(1) == 2 * 99


def test_unknown_strategy_lists_valid_names():
    with pytest.raises(jitbench.JitbenchError, match="unknown strategy 'nope'; valid: eager"):
        jitbench.make_instance("nope", 4)


@pytest.mark.parametrize("size", [0, -3, 2.5, True])
def test_bad_size(size):
    with pytest.raises(jitbench.JitbenchError, match="size must be a positive integer"):
        jitbench.make_instance("eager", size)


def test_missing_package_is_listed_with_reason_and_raises_on_use():
    ghost = Strategy(
        "ghost",
        "needs a package that is not installed",
        "none",
        jitbench.STRATEGIES["eager"].build,
        requires=("no_such_package_jitbench",),
        extra="ghost",
    )
    assert not ghost.available
    assert "no_such_package_jitbench" in ghost.unavailable_reason
    assert "jitbench[ghost]" in ghost.unavailable_reason
    with pytest.raises(jitbench.StrategyUnavailable, match="no_such_package_jitbench"):
        ghost.make_class()
    assert issubclass(jitbench.StrategyUnavailable, NotImplementedError)


def test_register_strategy(monkeypatch):
    monkeypatch.setattr(jitbench.strategies, "STRATEGIES", dict(jitbench.STRATEGIES))
    custom = Strategy(
        "my_pytree", "a copy of pytree_class", "pytree", jitbench.STRATEGIES["pytree_class"].build
    )
    jitbench.strategies.register_strategy(custom)
    obj, y = jitbench.make_instance("my_pytree", 6)
    assert obj.calc(y).shape == (6,)
    with pytest.raises(jitbench.JitbenchError, match="already registered"):
        jitbench.strategies.register_strategy(custom)
