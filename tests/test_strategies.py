"""The registry, the generated instances, their results, and how users change them."""

from __future__ import annotations

import importlib.metadata
import sys

import jax
import numpy as np
import pytest
from jax_releases import below_minimum, needs, runnable
from packaging.version import Version

import jitbench
from jitbench.devices import resolve
from jitbench.strategies.codegen import DEFAULT_SHAPE, Shape, fields_of
from jitbench.strategies.instances import DEFAULT_STATIC, make_instance, random_array
from jitbench.targets import load_target
from jitbench.targets.fields import EQX_STATIC
from jitbench.targets.kinds import object_kind
from jitbench.ways import registry
from jitbench.ways.catalog import kind_of, ways_for, ways_of
from jitbench.ways.registry import Strategy, get_strategy
from jitbench.ways.subject import Generated

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
    "aot_compiled",
    "equinox_module_jax_jit",
    "nnx_cached_partial",
    "nnx_split_merge",
    "nnx_tree_mode",
    "nnx_jit_partial",
    "jit_function",
]
# The nnx strategies that need a newer flax than the oldest JAX release admits: flax's
# performance guide (Variable.set_value, 0.12.1), tree mode with its graph_updates
# switch (0.12.6), and jit_partial's flatten-once path (0.12.8).
FLAX_MINIMUM = {
    "nnx_cached_partial": "0.12.1",
    "nnx_split_merge": "0.12.1",
    "nnx_tree_mode": "0.12.6",
    "nnx_jit_partial": "0.12.8",
}
# The strategies whose instance is itself a pytree with the arrays as its leaves.
PYTREES = [
    "pytree_class",
    "pytree_dataclass",
    "equinox_filter_jit",
    "flax_struct_dataclass",
    "equinox_module_jax_jit",
]
# How the audit changes each strategy's flag s0 and array a0, as it changes a user's object
# (jitbench.targets.edit): setattr elsewhere.
CHANGES = {
    "pytree_dataclass": ("dataclasses.replace", "dataclasses.replace"),
    "equinox_filter_jit": (EQX_STATIC, "eqx.tree_at"),
    "equinox_module_jax_jit": (EQX_STATIC, "eqx.tree_at"),
    "flax_struct_dataclass": (".replace", ".replace"),
    **dict.fromkeys(
        ["flax_nnx_jit", "nnx_cached_partial", "nnx_split_merge", "nnx_tree_mode",
         "nnx_jit_partial"],
        ("setattr", "Variable.set_value"),
    ),
}  # fmt: skip
# The strategies whose change builds a new object (the others change it in place).
FROZEN = set(PYTREES) - {"pytree_class"}
CPU = resolve("cpu")


def _instance(name, size=4, placement=CPU, shape=DEFAULT_SHAPE, **kwargs):
    return jitbench.make_instance(get_strategy(name), size, placement, shape, **kwargs)


def test_registry_has_exactly_the_public_names():
    assert list(jitbench.STRATEGIES) == NAMES
    assert jitbench.STRATEGIES is registry.STRATEGIES


@pytest.mark.parametrize("name", NAMES)
def test_every_strategy_is_available_in_the_test_environment(name):
    # The test environment installs equinox and flax, so nothing may be skipped, except
    # the nnx strategies by design where the flax the JAX release admits is older than
    # they need (flax 0.9.0 with JAX 0.4.30, 0.12.6 with JAX 0.9).
    strategy = get_strategy(name)
    flax = importlib.metadata.version("flax")
    minimum = FLAX_MINIMUM.get(name)
    if minimum and Version(flax) < Version(minimum):
        reason = f"strategy {name!r} needs flax>={minimum}, found flax {flax}"
        assert strategy.unavailable_reason == below_minimum(name) == reason
        assert not strategy.available
    else:
        assert strategy.available, strategy.unavailable_reason
        assert strategy.unavailable_reason is None


@pytest.mark.parametrize("device", ["cpu", "cpu-sharded"])
@pytest.mark.parametrize("name", runnable(NAMES))
def test_first_result_matches_reference(name, device):
    placement = resolve(device)
    obj, y = _instance(name, 10, placement, Shape(n_arrays=3, n_static=2, n_ops=4))
    result = np.asarray(obj.calc(y))
    arrays, statics = jitbench.arrays_of(obj), jitbench.statics_of(obj)
    assert len(arrays) == 3 and statics == [DEFAULT_STATIC] * 2
    assert result.shape == (placement.round_size(10),) == y.shape
    expected = jitbench.reference_calc(arrays, statics, y, 4)
    np.testing.assert_allclose(result, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("name", runnable(NAMES))
def test_fields_change_as_a_user_s_object_does(name):
    """A generated instance is walked and changed as a user's object is: its own fields, on
    the object holding them, each changed the way its kind's users change it."""
    strategy = get_strategy(name)
    subject = Generated(strategy, CPU, 4)
    obj = subject.new()
    found = subject.fields(obj)[0]
    owner = f"{strategy.holder}." if strategy.holder else ""
    assert [(f.path, f.kind) for f in found] == [(owner + "a0", "array"), (owner + "s0", "static")]
    static, array = sorted(found, key=lambda f: f.kind != "static")
    assert (static.how, array.how) == CHANGES.get(name, ("setattr", "setattr"))
    old_array = fields_of(obj)["a0"]
    new_array = random_array(CPU, (4,), np.random.default_rng(5))
    changed = subject.set(subject.set(obj, static, 5), array, new_array)
    assert fields_of(changed)["s0"] == 5 and fields_of(changed)["a0"] is new_array
    assert type(changed) is type(obj)
    if name in FROZEN:
        assert changed is not obj
        assert fields_of(obj)["s0"] == 1 and fields_of(obj)["a0"] is old_array
    else:
        assert changed is obj


@needs("nnx_cached_partial")
def test_a_variable_keeps_its_identity_through_a_change():
    # nnx users set a new value into the Variable the jitted call already shares.
    subject = Generated(get_strategy("nnx_cached_partial"), CPU, 4)
    obj = subject.new()
    variable = obj.model.a0
    new_array = random_array(CPU, (4,), np.random.default_rng(5))
    (array,) = [f for f in subject.fields(obj)[0] if f.kind == "array"]
    subject.set(obj, array, new_array)
    assert obj.model.a0 is variable and fields_of(obj)["a0"] is new_array


@pytest.mark.parametrize("name", runnable(NAMES))
def test_one_class_per_shape(name):
    strategy = get_strategy(name)
    wide = strategy.make_class(Shape(n_arrays=2))
    assert strategy.make_class(Shape(n_arrays=2)) is wide
    assert strategy.make_class(Shape(n_arrays=3)) is not wide
    assert strategy.make_class(Shape(n_arrays=2), probe=True) is not wide
    assert jitbench.shape_of(wide) == Shape(n_arrays=2)
    obj, _ = _instance(name, shape=Shape(n_arrays=2))
    assert type(obj) is wide


@pytest.mark.parametrize("name", PYTREES)
@pytest.mark.parametrize("n_arrays", [1, 7])
def test_width_knob_sets_pytree_leaves(name, n_arrays):
    obj, _ = _instance(name, 5, shape=Shape(n_arrays=n_arrays, n_static=3))
    leaves = jax.tree_util.tree_leaves(obj)
    assert len(leaves) == n_arrays
    assert all(leaf.shape == (5,) for leaf in leaves)
    assert jitbench.statics_of(obj) == [1, 1, 1]


@pytest.mark.parametrize("name", runnable(NAMES))
def test_fields_are_named_and_ordered(name):
    obj, _ = _instance(name, 5, shape=Shape(n_arrays=3, n_static=2), statics=3)
    fields = fields_of(obj)
    assert list(fields) == ["a0", "a1", "a2", "s0", "s1"]
    assert [fields["s0"], fields["s1"]] == [3, 3]
    assert all(fields[a].shape == (5,) for a in ("a0", "a1", "a2"))
    # Each array is drawn separately: three different arrays.
    assert len({np.asarray(fields[a]).tobytes() for a in ("a0", "a1", "a2")}) == 3


def test_instances_are_reproducible_from_the_seed():
    first, y1 = _instance("helper_function", 6, seed=3)
    again, y2 = _instance("helper_function", 6, seed=3)
    other, _ = _instance("helper_function", 6, seed=4)
    np.testing.assert_array_equal(first.a0, again.a0)
    np.testing.assert_array_equal(y1, y2)
    assert not np.array_equal(first.a0, other.a0)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_dtype_is_applied(dtype):
    obj, y = _instance("pytree_class", 4, dtype=dtype)
    assert str(obj.a0.dtype) == dtype and str(y.dtype) == dtype


def test_unknown_dtype_lists_valid_ones():
    with pytest.raises(jitbench.JitbenchError, match="unknown dtype 'int8'; valid: float32"):
        _instance("eager", dtype="int8")


def test_ops_knob_grows_the_traced_program():
    def n_eqns(n_ops):
        obj, y = _instance("eager", shape=Shape(n_ops=n_ops))
        return len(jax.make_jaxpr(obj.calc)(y).eqns)

    # x * y, then * y and + s0 for the odd flag; each extra stage is one cos and one add.
    assert n_eqns(1) == 3
    assert n_eqns(10) - n_eqns(1) == 2 * 9
    assert n_eqns(100) - n_eqns(1) == 2 * 99


def test_unknown_strategy_lists_valid_names():
    with pytest.raises(
        jitbench.JitbenchError, match="unknown strategy 'nope'; valid: eager, bound_method_jit, "
    ):
        get_strategy("nope")


@pytest.mark.parametrize("size", [0, -3, 2.5, True, "4"])
def test_bad_size(size):
    with pytest.raises(jitbench.JitbenchError, match="size must be a positive integer, got "):
        _instance("eager", size)


def test_numpy_integer_size_is_accepted():
    obj, y = _instance("eager", np.int64(3))
    assert y.shape == (3,) and obj.a0.shape == (3,)


def test_missing_package_is_listed_with_reason_and_raises_on_use():
    ghost = Strategy(
        "ghost",
        "needs a package that is not installed",
        "none",
        get_strategy("eager").render,
        requires=("no_such_package_jitbench",),
        extra="ghost",
    )
    assert not ghost.available
    assert ghost.unavailable_reason == (
        "strategy 'ghost' needs package 'no_such_package_jitbench' (pip install 'jitbench[ghost]')"
    )
    with pytest.raises(jitbench.StrategyUnavailable, match="no_such_package_jitbench"):
        ghost.make_class()
    with pytest.raises(jitbench.StrategyUnavailable):
        jitbench.make_instance(ghost, 4, CPU)
    assert issubclass(jitbench.StrategyUnavailable, NotImplementedError)


def test_register_strategy(monkeypatch):
    monkeypatch.setattr(registry, "STRATEGIES", dict(registry.STRATEGIES))
    base = get_strategy("pytree_class")
    custom = Strategy("my_pytree", "pytree_class's recipe as is", "pytree", base.render)
    assert registry.register_strategy(custom) is custom
    assert get_strategy("my_pytree") is custom
    with pytest.raises(jitbench.JitbenchError, match="strategy 'my_pytree' is already registered"):
        registry.register_strategy(custom)
    # The class must be named after the strategy: a recipe reused as is renders PytreeClass.
    with pytest.raises(
        jitbench.JitbenchError, match="strategy 'my_pytree' rendered no class named 'MyPytree'"
    ):
        custom.make_class()

    def render(t):
        return base.render(t).replace("class PytreeClass", "class MyPytree")

    replacement = Strategy("my_pytree", "pytree_class renamed", "pytree", render)
    registry.register_strategy(replacement, replace=True)
    assert get_strategy("my_pytree") is replacement
    obj, y = jitbench.make_instance(replacement, 6, CPU)
    np.testing.assert_allclose(
        obj.calc(y), jitbench.reference_calc([obj.a0], [obj.s0], y), rtol=1e-5, atol=1e-5
    )
    # A class of its own, named after the strategy, not pytree_class's.
    assert type(obj).__name__ == "MyPytree" and type(obj) is not base.make_class()


def test_load_plugins(monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "STRATEGIES", dict(registry.STRATEGIES))
    (tmp_path / "jb_plugin_a.py").write_text(
        "from jitbench import register_strategy, get_strategy, Strategy\n"
        "register_strategy(Strategy('plug_a', 's', 'm', get_strategy('helper_function').render))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "jb_plugin_a", raising=False)
    monkeypatch.setenv("JITBENCH_PLUGINS", " jb_plugin_a , ")
    assert registry.load_plugins() == ["jb_plugin_a"]
    assert list(registry.STRATEGIES)[-1] == "plug_a"
    monkeypatch.setenv("JITBENCH_PLUGINS", "jb_plugin_a,no_such_module_jb")
    with pytest.raises(
        jitbench.JitbenchError,
        match="cannot import JITBENCH_PLUGINS module 'no_such_module_jb': No module named",
    ):
        registry.load_plugins()
    monkeypatch.delenv("JITBENCH_PLUGINS")
    assert registry.load_plugins() == []


@pytest.mark.parametrize(
    ("requires", "message"),
    [
        ("flax", "strategy 'bad': requires must be a tuple of requirement specifiers such as "
                 "('flax>=0.12.1',), got 'flax'"),
        (["flax"], "strategy 'bad': requires must be a tuple of requirement specifiers such as "
                   "('flax>=0.12.1',), got ['flax']"),
        (("flax>>1",), "strategy 'bad' requires 'flax>>1', which is not a requirement specifier; "
                       "expected a tuple of requirement specifiers such as ('flax>=0.12.1',)"),
        ((3,), "strategy 'bad' requires 3, which is not a requirement specifier; expected a tuple "
               "of requirement specifiers such as ('flax>=0.12.1',)"),
    ],
    ids=["string", "list", "bad-operator", "not-text"],
)  # fmt: skip
def test_bad_requires_is_refused_at_construction(monkeypatch, requires, message):
    # Refused here, not later inside unavailable_reason (jitbench strategies, asv discovery).
    monkeypatch.setattr(registry, "STRATEGIES", dict(registry.STRATEGIES))
    render = get_strategy("eager").render
    with pytest.raises(jitbench.JitbenchError) as error:
        registry.register_strategy(Strategy("bad", "s", "m", render, requires=requires))
    assert str(error.value) == message
    assert "bad" not in registry.STRATEGIES


def test_plugin_raising_while_imported_names_module_and_error(monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "STRATEGIES", dict(registry.STRATEGIES))
    monkeypatch.syspath_prepend(str(tmp_path))
    cases = {
        "jb_syntax": ("def f(:\n", "SyntaxError: invalid syntax (jb_syntax.py, line 1)"),
        "jb_twice": (
            "from jitbench import register_strategy, get_strategy\n"
            "register_strategy(get_strategy('eager'))\n",
            "JitbenchError: strategy 'eager' is already registered",
        ),
    }
    for name, (source, error) in cases.items():
        (tmp_path / f"{name}.py").write_text(source)
        monkeypatch.delitem(sys.modules, name, raising=False)
        monkeypatch.setenv("JITBENCH_PLUGINS", name)
        with pytest.raises(jitbench.JitbenchError) as raised:
            registry.load_plugins()
        assert str(raised.value) == f"cannot import JITBENCH_PLUGINS module {name!r}: {error}"


def test_a_builtin_and_the_same_way_chosen_by_advise_are_one_catalog_entry():
    """advise's ways for a user's object are the suite's strategies where they are the same
    way: one record, so its name, recipe, code and hazards cannot drift apart."""
    target = load_target("user_models:custom_class_target")
    chosen = {way.label: way for way in ways_of(target)}
    assert chosen["pytree registration"] is get_strategy("pytree_class")
    assert chosen["helper function"] is get_strategy("helper_function")
    assert chosen["static self, value hash"] is get_strategy("static_self_value_hash")
    assert kind_of(target.obj) == "plain class"
    by_kind = {
        "eqx.Module": {"eqx.filter_jit": "equinox_filter_jit"},
        "nnx.Module": {
            "nnx.jit": "flax_nnx_jit",
            "nnx.jit(graph=False)": "nnx_tree_mode",
            "nnx.jit_partial": "nnx_jit_partial",
            "nnx.cached_partial": "nnx_cached_partial",
            "jax.jit over nnx.split": "nnx_split_merge",
        },
    }
    for kind, shared in by_kind.items():
        ways = {way.label: way for way in ways_for(kind)}
        for label, name in shared.items():
            assert ways[label] is get_strategy(name), label
            assert ways[label].render is not None and ways[label].snippet


@pytest.mark.parametrize("name", NAMES)
def test_a_catalog_entry_declares_the_kind_its_class_is(name):
    """The kind the verdict compares a user's object with is the generated class's own."""
    strategy = get_strategy(name)
    if not strategy.available:
        pytest.skip(strategy.unavailable_reason)
    obj, _ = make_instance(strategy, 4, resolve("cpu"))
    assert strategy.kind == object_kind(obj)
