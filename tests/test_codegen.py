"""Generated classes: the source a user would write, rendered once per (strategy, shape)."""

from __future__ import annotations

import ast
import inspect
import linecache
import math
import pickle
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax_releases import needs, runnable
from test_audit import observed

import jitbench
from jitbench.auditing.audit import audit
from jitbench.cli import main
from jitbench.devices import resolve
from jitbench.strategies import codegen
from jitbench.strategies.codegen import PROBES, Shape, Template, class_name, fields_of, shape_of
from jitbench.strategies.computation import compute, reference_calc, render_body
from jitbench.ways import registry
from jitbench.ways.registry import Strategy, get_strategy

ROOT = Path(__file__).resolve().parents[1]
NAMES = list(jitbench.STRATEGIES)
SHAPES = [Shape(), Shape(n_arrays=3, n_static=2, n_ops=4), Shape(n_arrays=10, n_static=3)]
CPU = resolve("cpu")

HELPER_FUNCTION_SOURCE = """\
from functools import partial

import jax


@partial(jax.jit, static_argnums=(0,))
def _calc(s0, a0, y):
    acc = a0 * y
    acc = acc * y + s0 if s0 % 2 else acc + s0
    return acc


class HelperFunction:
    def __init__(self, a0, s0):
        self.a0 = a0
        self.s0 = s0

    def calc(self, y):
        return _calc(self.s0, self.a0, y)
"""


def test_show_prints_what_a_jax_user_writes(capsys):
    assert main(["show", "helper_function"]) == 0
    out = capsys.readouterr().out
    assert out == HELPER_FUNCTION_SOURCE
    assert out == get_strategy("helper_function").source()


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_generated_modules_use_every_name_they_import(name, shape):
    """No import a user (or a linter) would remove: jnp only where the body calls it."""
    tree = ast.parse(get_strategy(name).source(shape))
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert imported <= used, imported - used
    assert ("jnp" in imported) == (shape.n_ops > 1)


def test_show_follows_the_shape(capsys):
    args = ["show", "helper_function", "--n-arrays", "2", "--n-static", "2", "--n-ops", "2"]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    for line in (
        "@partial(jax.jit, static_argnums=(0, 1))",
        "def _calc(s0, s1, a0, a1, y):",
        "    x = a0 + a1",
        "    acc = x * y",
        "    acc = jnp.cos(acc) + x",
        "    acc = acc * y + s1 if s1 % 2 else acc + s1",
        "    def __init__(self, a0, a1, s0, s1):",
        "        return _calc(self.s0, self.s1, self.a0, self.a1, y)",
    ):
        assert line in lines


def _loops(tree: ast.AST) -> list[str]:
    kinds = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp)
    return [type(n).__name__ for n in ast.walk(tree) if isinstance(n, (*kinds, ast.GeneratorExp))]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", NAMES)
def test_generated_source_is_plain_straight_line_code(name, shape):
    strategy = get_strategy(name)
    text = strategy.source(shape)
    tree = ast.parse(text)
    compile(text, "<test>", "exec")
    # Nothing of jitbench in the module, and no loop anywhere (so none on the call path).
    assert _loops(tree) == []
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert not names & {"arrays_of", "statics_of", "fields_of", "getattr", "setattr"}
    imported = [
        alias.name if isinstance(node, ast.Import) else node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    ]
    assert not [m for m in imported if m.startswith("jitbench")]
    # Every field by name: a0.. and s0.. appear in the source, none beyond the shape.
    for field in shape.fields:
        assert f"self.{field}" in text
    assert f"a{shape.n_arrays}" not in text and f"s{shape.n_static}" not in text
    assert text.count("jnp.cos(") == shape.n_ops - 1


@pytest.mark.parametrize("shape", SHAPES[:2], ids=str)
@pytest.mark.parametrize("name", runnable(NAMES))
def test_class_source_is_registered(name, shape):
    strategy = get_strategy(name)
    cls = strategy.make_class(shape)
    text = strategy.source(shape)
    module = sys.modules[cls.__module__]
    assert module.__file__ == inspect.getsourcefile(cls)
    assert linecache.getlines(module.__file__) == text.splitlines(True)
    class_text = inspect.getsource(cls)
    assert class_text in text
    first = class_text.lstrip().splitlines()
    assert f"class {class_name(name)}" in "\n".join(first[:3])
    assert cls.__name__ == class_name(name)
    assert shape_of(cls) == shape


def test_class_names():
    assert class_name("helper_function") == "HelperFunction"
    assert class_name("aot_compiled") == "AotCompiled"
    assert class_name("nnx_split_merge") == "NnxSplitMerge"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_arrays": 0}, "n_arrays must be a positive integer, got 0"),
        ({"n_static": -1}, "n_static must be a positive integer, got -1"),
        ({"n_ops": True}, "n_ops must be a positive integer, got True"),
        ({"n_arrays": 1.5}, "n_arrays must be a positive integer, got 1.5"),
        ({"n_ops": "2"}, "n_ops must be a positive integer, got '2'"),
    ],
)
def test_shape_validation(kwargs, message):
    with pytest.raises(jitbench.JitbenchError, match=f"^{message}$"):
        Shape(**kwargs)


def test_shape_fields():
    assert Shape() == codegen.DEFAULT_SHAPE == Shape(1, 1, 1)
    shape = Shape(n_arrays=3, n_static=2)
    assert shape.array_fields == ("a0", "a1", "a2")
    assert shape.static_fields == ("s0", "s1")
    assert shape.fields == ("a0", "a1", "a2", "s0", "s1")
    assert hash(Shape(2)) == hash(Shape(2)) and Shape(2) != Shape(3)


def test_template_pieces():
    one = Template(Shape()).pieces
    assert one["self_arrays_tuple"] == "(self.a0,)" and one["static_argnums"] == "(0,)"
    two = Template(Shape(n_arrays=2, n_static=2)).pieces
    assert two["params"] == "a0, a1, s0, s1"
    assert two["self_statics"] == "self.s0, self.s1"
    assert two["self_arrays_tuple"] == "(self.a0, self.a1)"
    assert two["other_statics_tuple"] == "(other.s0, other.s1)"
    assert two["static_argnums"] == "(0, 1)"
    assert two["init"] == (
        "self.a0 = a0\n        self.a1 = a1\n        self.s0 = s0\n        self.s1 = s1"
    )
    assert Template(Shape(n_arrays=2)).fields("jax.Array", "eqx.field(static=True)") == (
        "a0: jax.Array\n    a1: jax.Array\n    s0: int = eqx.field(static=True)"
    )
    assert Template(Shape(), probe=True).pieces["body"].startswith("_probe()\n    acc = a0 * y")


@pytest.mark.parametrize("name", runnable(NAMES))
def test_one_class_per_strategy_and_shape(name):
    strategy = get_strategy(name)
    classes = {strategy.make_class(Shape(n_arrays=n)) for n in (1, 2, 1, 2)}
    assert len(classes) == 2
    assert strategy.make_class(Shape(n_arrays=1)) is strategy.make_class()
    # Another shape object equal to the first is the same class.
    assert strategy.make_class(Shape(1, 1, 1)) is strategy.make_class(codegen.DEFAULT_SHAPE)


def test_make_class_entry_points_agree(monkeypatch):
    strategy = get_strategy("helper_function")
    cls = strategy.make_class(Shape())
    # A second class would take the first one's module in sys.modules (pickle then fails).
    monkeypatch.setitem(sys.modules, cls.__module__, sys.modules[cls.__module__])
    assert codegen.make_class(strategy, Shape()) is cls


def test_shape_of_rejects_other_classes():
    with pytest.raises(jitbench.JitbenchError, match="int is not a class generated by jitbench"):
        shape_of(3)


@needs("nnx_split_merge")
def test_fields_read_through_the_holder():
    obj, _ = jitbench.make_instance(get_strategy("nnx_split_merge"), 4, CPU, Shape(n_static=2))
    fields = fields_of(obj)
    assert list(fields) == ["a0", "s0", "s1"]
    assert fields["a0"] is obj.model.a0.get_value() and fields["s1"] == 1


@pytest.mark.parametrize("name", ["helper_function", "pytree_dataclass", "flax_struct_dataclass"])
def test_generated_instances_pickle(name):
    # The module is registered in sys.modules, where pickle looks the class up.
    obj, y = jitbench.make_instance(get_strategy(name), 4, CPU)
    again = pickle.loads(pickle.dumps(obj))
    assert type(again) is type(obj)
    np.testing.assert_array_equal(again.calc(y), obj.calc(y))


def test_probe_counts_body_runs():
    # Under jit the body runs once per trace; without jit at every call.
    for name, runs in (("helper_function", 1), ("eager", 3)):
        strategy = get_strategy(name)
        obj, y = jitbench.make_instance(strategy, 4, CPU, probe=True)
        assert type(obj) is strategy.make_class(probe=True) is not strategy.make_class()
        before = PROBES[type(obj)].runs
        for _ in range(3):
            obj.calc(y)
        assert PROBES[type(obj)].runs - before == runs
    assert "_probe" not in get_strategy("helper_function").source()


# --- A plugin strategy rendered from a Template --------------------------------------------------

CLOSURE_PER_FLAGS = """
import functools

import jax
import jax.numpy as jnp


@functools.cache
def _compiled({statics}):
    @jax.jit
    def calc({arrays}, y):
        {inner}

    return calc


class ClosurePerFlags:
    def __init__(self, {params}):
        {init}

    def calc(self, y):
        return _compiled({self_statics})({self_arrays}, y)
"""


def render_closure(t: Template) -> str:
    """One jitted closure per combination of flags: the README's example, as a recipe."""
    inner = t.computation(list(t.shape.array_fields), list(t.shape.static_fields), 8)
    return t.render(CLOSURE_PER_FLAGS, inner=inner)


def test_plugin_rendered_from_a_template(monkeypatch):
    monkeypatch.setattr(registry, "STRATEGIES", dict(registry.STRATEGIES))
    strategy = registry.register_strategy(
        Strategy("closure_per_flags", "a closure per flags", "functools.cache", render_closure)
    )
    shape = Shape(n_arrays=2, n_static=2, n_ops=3)
    assert "def _compiled(s0, s1):" in strategy.source(shape)
    obj, y = jitbench.make_instance(get_strategy("closure_per_flags"), 8, CPU, shape)
    assert type(obj).__name__ == "ClosurePerFlags" and inspect.getsource(type(obj))
    expected = reference_calc([obj.a0, obj.a1], [obj.s0, obj.s1], y, 3)
    np.testing.assert_allclose(obj.calc(y), expected, rtol=1e-4, atol=1e-4)
    result = audit(strategy, CPU)
    assert " ".join(s.cell for s in result.steps) == observed().correct


def _readme_plugin() -> str:
    text = (ROOT / "docs" / "own-objects.md").read_text()
    section = text.split("## Adding your own strategy", 1)[1]
    return section.split("```python", 1)[1].split("```", 1)[0]


def test_readme_plugin_example_works(tmp_path):
    (tmp_path / "my_strategies.py").write_text(_readme_plugin())
    code = (
        "import jitbench\n"
        "jitbench.load_plugins()\n"
        "s = jitbench.get_strategy('closure_per_flags')\n"
        "obj, y = jitbench.make_instance(s, 4, jitbench.resolve('cpu'))\n"
        "print(obj.calc(y).shape)\n"
    )
    env = {"JITBENCH_PLUGINS": "my_strategies", "PYTHONPATH": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(4,)"


# --- The computation, checked by hand --------------------------------------------------------


def test_render_body_lines():
    assert render_body(["a0"], ["s0"], 1) == [
        "acc = a0 * y",
        "acc = acc * y + s0 if s0 % 2 else acc + s0",
        "return acc",
    ]
    assert render_body(["a0", "a1"], ["s0", "s1"], 2, xp="np") == [
        "x = a0 + a1",
        "acc = x * y",
        "acc = np.cos(acc) + x",
        "acc = acc * y + s0 if s0 % 2 else acc + s0",
        "acc = acc * y + s1 if s1 % 2 else acc + s1",
        "return acc",
    ]


@pytest.mark.parametrize("xp", [np, jnp], ids=["numpy", "jax.numpy"])
def test_compute_by_hand(xp):
    a0, a1, y = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([2.0, 3.0])
    # x = a0 + a1 = [4, 6]; acc = x * y = [8, 18]; s0 = 1 is odd: acc * y + 1 = [17, 55].
    np.testing.assert_allclose(compute(xp, [a0, a1], [1], y, 1), [17.0, 55.0], rtol=1e-6)
    # s0 = 2 is even: acc + 2 = [10, 20]; then s1 = 3 is odd: acc * y + 3 = [23, 63].
    np.testing.assert_allclose(compute(xp, [a0, a1], [2, 3], y, 1), [23.0, 63.0], rtol=1e-6)
    # n_ops = 2: x = [0, 1], acc = x * y = [0, 2], acc = cos(acc) + x = [1, cos(2) + 1],
    # s0 = 2 is even: + 2.
    got = compute(xp, [np.array([0.0, 1.0])], [2], np.array([1.0, 2.0]), 2)
    np.testing.assert_allclose(got, [3.0, math.cos(2.0) + 3.0], rtol=1e-6)


def test_compute_without_flags():
    x = np.array([1.0, 2.0])
    np.testing.assert_array_equal(compute(np, [x], [], x, 1), [1.0, 4.0])


def test_reference_is_float64():
    x = np.array([1.0, 2.0], np.float32)
    result = reference_calc([x], [1], x)
    assert result.dtype == np.float64
    np.testing.assert_array_equal(result, [2.0, 9.0])  # x * x * x + 1


# --- Nested shapes: layers of sub-objects ----------------------------------------------------

NESTED = Shape(depth=4)
# How each strategy's users nest, and so what the generated Layer must be.
LAYER_KINDS = {
    "pytree_class": "register_pytree_node_class",
    "pytree_dataclass": "register_dataclass",
    "equinox_filter_jit": "eqx.Module",
    "equinox_module_jax_jit": "eqx.Module",
    "flax_struct_dataclass": "struct.dataclass",
    **{name: "nnx.Module" for name in NAMES if name.startswith(("flax_nnx", "nnx_"))},
}


@pytest.mark.parametrize("name", NAMES)
def test_nested_source_holds_layers_of_its_own_kind(name):
    text = get_strategy(name).source(NESTED)
    tree = ast.parse(text)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    assert "Layer" in classes
    layer = ast.get_source_segment(text, classes["Layer"])
    decorated = "".join(ast.unparse(d) for d in classes["Layer"].decorator_list)
    kind = LAYER_KINDS.get(name)
    if kind is None:  # a plain object, as the plain-class strategies hold their fields
        assert not classes["Layer"].bases and not classes["Layer"].decorator_list
    else:
        assert kind in decorated + "".join(ast.unparse(b) for b in classes["Layer"].bases)
    assert "jnp.tanh(y) if self.act else y" in layer
    assert text.count("class Layer") == 1
    assert "self.layers" in text and "a0" not in text and "s0" not in text
    # Every import used, jnp (the layers' tanh) included.
    imported = {
        (alias.asname or alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert "jnp" in imported


def test_show_prints_the_nested_class(capsys):
    assert main(["show", "helper_function", "--depth", "4"]) == 0
    out = capsys.readouterr().out
    assert out == get_strategy("helper_function").source(NESTED)
    for line in (
        "def _calc(acts, params, y):",
        "    for (weight, bias), act in zip(params, acts):",
        "class Layer:",
        "class HelperFunction:",
        "    def __init__(self, layers):",
    ):
        assert line in out.splitlines(), line


def _layers(obj):
    owner = codegen.field_owner(obj)
    return list(owner.layers)


@pytest.mark.parametrize("depth", [1, 4])
@pytest.mark.parametrize("name", runnable(NAMES))
def test_nested_instances_compute_the_reference(name, depth):
    from jitbench.strategies.computation import reference_layers

    obj, y = jitbench.make_instance(get_strategy(name), 8, CPU, Shape(depth=depth))
    layers = _layers(obj)
    assert len(layers) == depth and len({id(layer) for layer in layers}) == depth
    values = [
        (codegen.field_value(layer.weight), codegen.field_value(layer.bias), layer.act)
        for layer in layers
    ]
    assert len({id(w) for w, _, _ in values} | {id(b) for _, b, _ in values}) == 2 * depth
    expected = reference_layers(values, y)
    np.testing.assert_allclose(obj.calc(y), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(obj.calc(y), expected, rtol=1e-5, atol=1e-6)


PYTREES = ["pytree_class", "pytree_dataclass", "flax_struct_dataclass", "equinox_module_jax_jit"]


@pytest.mark.parametrize("name", runnable(PYTREES))
def test_nested_pytrees_have_two_leaves_a_layer_and_flags_in_the_treedef(name):
    obj, _ = jitbench.make_instance(get_strategy(name), 8, CPU, NESTED)
    leaves = jax.tree_util.tree_leaves(obj)
    assert len(leaves) == 2 * NESTED.depth
    layer = _layers(obj)[0]
    flipped = type(layer)(layer.weight, layer.bias, not layer.act)
    assert jax.tree_util.tree_structure(flipped) != jax.tree_util.tree_structure(layer)


@pytest.mark.parametrize("name", runnable(["flax_nnx_jit", "nnx_tree_mode", "nnx_split_merge"]))
def test_nested_nnx_modules_hold_their_params_in_sub_modules(name):
    from flax import nnx

    obj, _ = jitbench.make_instance(get_strategy(name), 8, CPU, NESTED)
    params = nnx.state(codegen.field_owner(obj), nnx.Param)
    assert len(jax.tree_util.tree_leaves(params)) == 2 * NESTED.depth
    assert all(isinstance(layer, nnx.Module) for layer in _layers(obj))


@pytest.mark.parametrize("name", runnable([n for n in NAMES if n not in ("eager", "jit_per_call")]))
def test_a_nested_instance_compiles_once_then_hits_the_cache(name):
    from jitbench.compiles import count_compiles

    obj, y = jitbench.make_instance(get_strategy(name), 8, CPU, Shape(depth=3))
    with count_compiles() as first:
        obj.calc(y).block_until_ready()
    with count_compiles() as again:
        for _ in range(3):
            obj.calc(y).block_until_ready()
    assert (first.compiles, again.compiles) == (1, 0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"depth": -1}, "depth must be a non-negative integer, got -1"),
        ({"depth": 2, "n_arrays": 3}, "a nested shape (depth 2) has fixed layers"),
        ({"depth": 1, "n_ops": 2}, "a nested shape (depth 1) has fixed layers"),
    ],
)
def test_nested_shape_validation(kwargs, message):
    with pytest.raises(jitbench.JitbenchError, match=f"^{re.escape(message)}"):
        Shape(**kwargs)


def test_nested_shape_fields_and_tag():
    assert NESTED.fields == ("layers",)
    assert NESTED.array_fields == () == NESTED.static_fields
    assert (NESTED.tag, Shape().tag) == ("4deep", "1a1s1ops")
    assert Shape(depth=4) != Shape(depth=16)


def test_a_recipe_without_a_layer_cannot_render_a_nested_shape():
    text = "class FlatOnly:\n    def __init__(self, {params}):\n        {init}\n"
    flat_only = Strategy("flat_only", "a plugin's recipe", "flat", lambda t: t.render(text))
    assert "class FlatOnly" in flat_only.source()
    with pytest.raises(jitbench.JitbenchError, match="cannot render a nested shape"):
        flat_only.source(NESTED)
