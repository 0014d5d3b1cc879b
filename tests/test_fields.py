"""The field walk: what it finds on real models, how jit sees each value, and that each
change is made the object's way with a value its users would set."""

from __future__ import annotations

import dataclasses
import enum
import functools
import typing
from collections.abc import Mapping

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import user_models
from flax import struct

from jitbench import Target, audit_object
from jitbench.targets import declared, edit, fields, values
from jitbench.ways.subject import Walked


def _paths(obj, filtered=False):
    found, skipped = fields.walk(obj, filtered)
    return [(f.path, f.kind, f.how) for f in found], dict((s.path, s.reason) for s in skipped)


def _roles(obj, filtered=False):
    return {f.path: f.role for f in fields.walk(obj, filtered)[0]}


def test_plain_class_and_registered_dataclass():
    found, skipped = _paths(user_models.custom_class())
    assert found == [("x", "array", "setattr"), ("mul", "static", "setattr")] and skipped == {}
    assert _roles(user_models.custom_class()) == {"x": "plain", "mul": "plain"}
    found, _ = _paths(user_models.scaled())
    assert found == [
        ("x", "array", "dataclasses.replace"),
        ("mul", "static", "dataclasses.replace"),
    ]
    assert _roles(user_models.scaled()) == {"x": "traced", "mul": "aux"}
    # Private attributes are walked too: None has no other value to set.
    _, skipped = _paths(user_models.precompiled())
    assert skipped == {"_compiled": "None: no other valid value known"}


def test_nnx_linear():
    found, skipped = _paths(user_models.linear())
    assert found[:5] == [
        ("kernel", "array", "Variable.set_value"),
        ("bias", "array", "Variable.set_value"),
        ("in_features", "static", "setattr"),
        ("out_features", "static", "setattr"),
        ("use_bias", "static", "setattr"),
    ]
    # A function held as a field is a static: a rebuilt module holds another.
    assert ("dot_general", "static", "setattr") in found
    # A dtype is a value its users set (Linear(..., param_dtype=jnp.bfloat16)).
    assert ("param_dtype", "static", "setattr") in found and "param_dtype" not in skipped
    roles = _roles(user_models.linear())
    assert roles["kernel"] == "traced" and roles["in_features"] == "aux"


def test_nnx_containers_are_walked_item_by_item():
    found, _ = _paths(user_models.stack())
    assert ("layers[0].use_tanh", "static", "setattr") in found
    assert ("layers[1].linear.kernel", "array", "Variable.set_value") in found
    assert ("heads['out'].kernel", "array", "Variable.set_value") in found
    roles = _roles(user_models.stack())
    # nnx.Dict's items are keyed by jit as attributes: the same children, not static data.
    assert roles["heads['out'].kernel"] == "traced" and roles["heads['out'].in_features"] == "aux"
    assert roles["layers[0].linear.kernel"] == "traced"


def test_frozen_attrs_classes_and_derived_fields_are_changed_as_their_users_do():
    obj = user_models.frozen_scale()
    found, _ = _paths(obj)
    assert found == [("scale", "static", "attrs.evolve"), ("act", "static", "attrs.evolve")]
    scale = fields.walk(obj)[0][0]
    changed = edit.set_field(obj, scale, 3.0)
    assert (changed.scale, changed.act, obj.scale) == (3.0, "relu", 2.0)
    found, skipped = _paths(user_models.halved())
    assert found == [("scale", "static", "dataclasses.replace")]
    assert skipped == {
        "half": "computed from the other fields (init=False): a new instance recomputes it"
    }


def test_equinox_mlp_nested_layers():
    found, skipped = _paths(user_models.mlp())
    assert found[:3] == [
        ("layers[0].weight", "array", "eqx.tree_at"),
        ("layers[0].bias", "array", "eqx.tree_at"),
        ("layers[0].in_features", "static", fields.EQX_STATIC),
    ]
    assert len([f for f in found if f[1] == "array"]) == 6
    assert skipped["activation"].startswith("a jitted function or a library's callable")
    assert ("final_activation", "static", "eqx.tree_at") in found  # equinox's identity


class Point(typing.NamedTuple):
    x: jax.Array
    scale: float


@struct.dataclass
class Hyper:
    w: jax.Array
    lr: float = 0.1  # a leaf: jit traces it
    depth: int = struct.field(pytree_node=False, default=2)  # auxiliary data: static


class Smooth(eqx.Module):
    w: jax.Array
    rtol: float = 1e-3


def test_python_numbers_are_traced_where_they_are_leaves():
    assert _roles(Hyper(jnp.ones(3))) == {"w": "traced", "lr": "number", "depth": "aux"}
    found, _ = fields.walk(Hyper(jnp.ones(3)))
    assert [f.kind for f in found] == ["array", "number", "static"]
    # eqx.filter_jit hashes every non-array leaf; its numbers are still played as numbers (a
    # new value, then the old one back), whichever way jit sees them.
    assert _roles(Smooth(jnp.ones(3))) == {"w": "traced", "rtol": "number"}
    filtered = fields.walk(Smooth(jnp.ones(3)), filtered=True)[0]
    assert [(f.path, f.kind, f.role) for f in filtered] == [
        ("w", "array", "traced"), ("rtol", "number", "hashed"),
    ]  # fmt: skip
    # A NamedTuple's fields by name, changed with _replace; inside auxiliary data all static.
    found, _ = _paths(Point(jnp.ones(2), 2.0))
    assert found == [("x", "array", "._replace"), ("scale", "number", "._replace")]


@dataclasses.dataclass
class Registry(Mapping):
    """A mutable dataclass that is a Mapping, as ``@chex.dataclass`` makes one."""

    x: jax.Array
    lr: float = 0.5

    def __getitem__(self, key):
        return getattr(self, key)

    def __iter__(self):
        return iter(["x", "lr"])

    def __len__(self):
        return 2

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


jax.tree_util.register_dataclass(Registry, data_fields=["x", "lr"], meta_fields=[])


def test_each_change_is_made_the_objects_way():
    rng = np.random.default_rng(0)
    plain = user_models.custom_class()
    (_, mul), _ = fields.walk(plain)
    assert edit.set_field(plain, mul, False) is plain and plain.mul is False  # in place
    frozen = user_models.scaled()
    (_, fmul), _ = fields.walk(frozen)
    new = edit.set_field(frozen, fmul, False)
    assert new is not frozen and (frozen.mul, new.mul) == (True, False)  # a new object
    mlp = user_models.mlp()
    by_path = {f.path: f for f in fields.walk(mlp)[0]}
    wide = values.new_array(mlp.layers[1].bias, rng, (2, 8))
    changed = edit.set_field(mlp, by_path["layers[1].bias"], wide)
    assert changed is not mlp and changed.layers[1].bias.shape == (2, 8)
    assert mlp.layers[1].bias.shape == (8,)  # eqx.tree_at leaves the original as it was
    static = edit.set_field(mlp, by_path["layers[2].out_features"], 5)
    assert (static.layers[2].out_features, mlp.layers[2].out_features) == (5, 4)
    linear = user_models.linear()
    found, _ = fields.walk(linear)
    kernel = linear.kernel
    new = values.new_array(edit.get_field(linear, found[0]), rng)
    assert edit.set_field(linear, found[0], new) is linear
    assert linear.kernel is kernel and linear.kernel.get_value() is new  # the same Variable
    # A Mapping dataclass (chex's kind) is set through its fields, with its .replace.
    registry = Registry(jnp.ones(3))
    found, _ = fields.walk(registry)
    assert [(f.path, f.how) for f in found] == [("x", ".replace"), ("lr", ".replace")]
    assert edit.set_field(registry, found[1], 0.25).lr == 0.25
    point = edit.set_field(Point(jnp.ones(2), 2.0), fields.walk(Point(jnp.ones(2), 2.0))[0][1], 4.0)
    assert point.scale == 4.0 and isinstance(point, Point)


def test_choose_plays_one_field_of_each_group_and_matches_patterns():
    found, _ = fields.walk(user_models.mlp())
    played, left = fields.choose(found)
    assert [f.path for f in played if f.kind == "array"] == ["layers[0].weight", "layers[0].bias"]
    reasons = {s.path: s.reason for s in left}
    assert reasons["layers[1].weight"] == "the same field as layers[0].weight (plays once)"
    assert "layers[1].in_features" in reasons and "layers[0].in_features" not in reasons
    played, left = fields.choose(found, "*.weight")
    assert [f.path for f in played] == [f"layers[{i}].weight" for i in range(3)]
    played, _ = fields.choose(found, r"^(depth|scan)$")  # no glob characters: a regex
    assert [f.path for f in played] == ["depth", "scan"]


class Mode(enum.Enum):
    FAST = 1
    SAFE = 2


@dataclasses.dataclass(frozen=True)
class Declared:
    method: typing.Literal["zoom", "backtracking"] = "zoom"
    name: str = "free text"
    mode: Mode = Mode.FAST


def test_private_fields_in_jit_s_key_play_and_the_others_where_no_other_field_does():
    class Hidden:
        def __init__(self):
            self._loc, self._scale = jnp.zeros(2), jnp.ones(2)

    found, _ = fields.walk(Hidden())
    assert [(f.path, f.private) for f in found] == [("_loc", True), ("_scale", True)]
    assert [f.path for f in fields.choose(found)[0]] == ["_loc", "_scale"]
    mixed = [*found, fields.Field("w", (("attr", "w"),), "array", "setattr", "plain")]
    played, left = fields.choose(mixed)
    assert [f.path for f in played] == ["w"]
    assert {s.reason for s in left} == {
        "a private attribute jit never sees (a fields pattern plays it)"
    }
    assert [f.path for f in fields.choose(mixed, "_loc")[0]] == ["_loc"]

    # sympy2jax keeps its parameters in private attributes its pytree flattens: in jit's
    # key, they play beside a public flag, before it takes the limit.
    @jax.tree_util.register_pytree_node_class
    class Term:
        def __init__(self, value, flag=True):
            self._value, self.flag = value, flag

        def tree_flatten(self):
            return (self._value,), (self.flag,)

        @classmethod
        def tree_unflatten(cls, aux, children):
            return cls(*children, *aux)

    played, left = fields.choose(fields.walk(Term(jnp.ones(2)))[0])
    assert [(f.path, f.role) for f in played] == [("_value", "traced"), ("flag", "aux")]
    assert left == []


def test_new_values_are_those_users_set():
    assert [values.new_value(v) for v in (True, 3, 0, 1.5, 1e-5, -4.0, "relu", None)] == [
        False, 6, 1, 3.0, 5e-6, -8.0, None, None,
    ]  # fmt: skip
    found, skipped = _paths(Declared())
    assert ("method", "static", "dataclasses.replace") in found
    choices = {f.path: f.choices for f in fields.walk(Declared())[0]}
    assert choices == {"method": ("zoom", "backtracking"), "mode": (Mode.FAST, Mode.SAFE)}
    assert values.new_value("zoom", ("zoom", "backtracking")) == "backtracking"
    assert values.new_value(Mode.FAST) is Mode.SAFE
    assert skipped["name"].endswith(
        "(no Literal, Enum or check of its constructor declares its choices)"
    )
    # A function: a fresh one of the same code, a partial's and a bound method's too.
    square = functools.partial(lambda x, p: x**p, p=2)
    fresh = values.new_value(square)
    assert fresh is not square and fresh != square and fresh(3) == 9
    bound = Declared().__repr__
    assert values.new_value(jnp.tanh) is None  # a jitted/library callable: no copy
    refreshed = values.fresh_function(bound)
    assert refreshed.__self__ is bound.__self__ and refreshed.__func__ is not bound.__func__
    # The floats its closure holds are new, through the functions and tuples it holds (what a
    # new learning rate makes of an optimizer's functions); a recursive one still recurses.

    def scale_by(rate):
        return lambda x: x * rate

    chained = (lambda fns: lambda x: fns[1](fns[0](x)))((scale_by(0.1), scale_by(4.0)))
    assert values.new_value(scale_by(0.1))(1.0) == 0.05
    assert values.new_value(chained)(1.0) == pytest.approx(0.05 * 8.0)
    assert chained(1.0) == pytest.approx(0.4)  # the old one is left as it was

    def power(n):
        return 1.0 if n == 0 else 0.5 * power(n - 1)

    fresh_power = values.new_value(power)
    assert fresh_power is not power and fresh_power(2) == 0.25  # its code's constants stay


@dataclasses.dataclass(frozen=True)
class Layer:
    """A layer declaring its values as flax's do: a Precision, a dtype annotated, one held."""

    precision: jax.lax.Precision | None = None
    dtype: jax.typing.DTypeLike | None = None
    compute: typing.Any = jnp.float32
    features: int | typing.Literal["scalar"] = 4


def test_values_declared_by_an_enum_or_a_dtype_in_the_annotation_are_played():
    choices = {f.path: f.choices for f in fields.walk(Layer())[0]}
    # An enum an Optional names; JAX's floating dtypes, narrower first (float64 with x64).
    assert choices["precision"] == tuple(jax.lax.Precision)
    assert choices["dtype"] == choices["compute"] == (jnp.bfloat16, jnp.float16)
    # A Literal of another type than the value's declares none of its values: 4 doubles.
    assert choices["features"] == () and values.new_value(4, choices["features"]) == 8
    # A dtype keeps its form: a np.dtype gives np.dtypes; a 16-bit one widens first.
    assert declared.float_dtypes(jnp.dtype("float32")) == (jnp.dtype("bfloat16"),
                                                          jnp.dtype("float16"))  # fmt: skip
    assert declared.float_dtypes(jnp.bfloat16) == (jnp.float32, jnp.float16)
    assert declared.float_dtypes(jnp.int32) == ()


METHODS = {"linear": None, "cubic": None}


class Interp:
    """A class whose constructor checks its arguments, as JAX's RegularGridInterpolator does."""

    def __init__(self, values, method="linear", order=1, kind="lu", low=0, high=1, name="a"):
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}")
        if name == "":
            raise ValueError("a name is needed")
        self.name = name
        self.values, self.method, self.order = values, method, order
        if self.order < 1:
            raise ValueError("order must be at least 1")
        if kind == "lu":
            pass
        elif kind == "qr":
            pass
        else:
            raise ValueError(f"no solver {kind}")
        self.kind = kind
        if low > high:  # reads two arguments: not run on one alone
            raise ValueError("low above high")
        self.low, self.high = low, high


@dataclasses.dataclass
class Schedule:
    """A mutable dataclass checking itself after __init__, changed in place."""

    steps: int = 10

    def __post_init__(self):
        if self.steps < 1:
            raise ValueError("steps must be at least 1")


def test_a_constructors_checks_declare_values_and_refuse_others():
    interp = Interp(jnp.ones(3))
    # The values it compares the argument with: a module's constant (a dict's keys) or strings.
    assert declared.choices(interp, "method", "linear") == ("linear", "cubic")
    assert declared.choices(interp, "kind", "lu") == ("lu", "qr")
    assert declared.choices(interp, "order", 1) == ()
    assert declared.choices(interp, "name", "a") == ()  # "" is compared with, to be refused
    refuses = "Interp's constructor refuses "
    assert declared.refusal(interp, "method", "nearest") == (
        f"{refuses}method='nearest': ValueError: unknown method 'nearest'"
    )
    assert declared.refusal(interp, "order", 0) == (
        f"{refuses}order=0: ValueError: order must be at least 1"
    )
    assert (
        declared.refusal(interp, "kind", "svd") == f"{refuses}kind='svd': ValueError: no solver svd"
    )
    assert declared.refusal(interp, "order", 2) == declared.refusal(interp, "kind", "qr") == ""
    # A check reading another argument is not run on one value; a try of the constructor, with
    # every other argument from the field of its name, refuses it.
    assert declared.refusal(interp, "low", 5) == ""
    assert declared.tried(interp, "low", 5, {}) == f"{refuses}low=5: ValueError: low above high"
    assert declared.tried(interp, "low", -1, {}) == ""
    assert declared.refusal(Schedule(), "steps", 0) == (
        "Schedule's constructor refuses steps=0: ValueError: steps must be at least 1"
    )
    # JAX's own: the methods its constructor lists, and bounds_error=True it refuses; not
    # tried (its points are no field: grid holds them).
    from jax.scipy.interpolate import RegularGridInterpolator

    grid = RegularGridInterpolator((jnp.linspace(0.0, 1.0, 3),), jnp.ones(3))
    assert declared.choices(grid, "method", "linear") == ("linear", "nearest")
    assert declared.refusal(grid, "bounds_error", True) == (
        "RegularGridInterpolator's constructor refuses bounds_error=True: "
        "NotImplementedError: `bounds_error` takes no effect under JIT"
    )
    assert declared.tried(grid, "bounds_error", True, {}) == ""


def test_numbers_are_tried_from_the_scaled_one_to_the_least_of_their_sign():
    assert values.numbers(4000) == [8000, 2000, 1] and values.numbers(12) == [24, 6, 1]
    assert values.numbers(1) == [2] and values.numbers(0) == [1] and values.numbers(-3) == [-6, -1]
    assert values.numbers(0.5) == [0.25, 1.0] and values.numbers(1e-5) == [5e-6, 2e-5]
    assert values.numbers(True) == [False]
    assert values.candidates(jax.lax.Precision.DEFAULT) == [jax.lax.Precision.HIGH,
                                                           jax.lax.Precision.HIGHEST]  # fmt: skip
    # The other instance's value: the played one's own next, not the original again.
    assert values.unseen(4000, (), pick=2) == 2 and values.unseen(True) is False


class Episode:
    """An environment whose step ends an episode at its time limit (jumanji's Snake), jitted
    once and kept: a bound method, the limit baked into its trace."""

    def __init__(self, time_limit=4000):
        self.time_limit = time_limit
        self.step = jax.jit(self._step)

    def _step(self, count):
        return jnp.where(count + 1 >= self.time_limit, 0.0, 1.0)


def test_a_value_that_changes_the_result_without_jit_is_looked_for():
    target = Target(Episode(), (jnp.asarray(0),), call="step", factory=Episode)
    subject = Walked(target)
    obj = subject.new()
    asked = []
    subject.differs = lambda o: asked.append(o) or Walked.differs(subject, o)
    (field,), _ = subject.playable(obj, fields.walk(obj)[0])
    assert (field.path, field.pick) == ("time_limit", 2)
    assert field.played == " (1 played; 8000 and 2000 change nothing without jit)"
    assert obj.time_limit == 4000  # set back after each try
    # advise's ways walk one object: what it plays is chosen once, no call made again.
    assert subject.playable(obj, fields.walk(obj)[0])[0] == [field] and len(asked) == 1
    result = audit_object(target)
    step = result.step("new_static")
    assert (step.field, step.cell) == ("time_limit", "0/0!")
    assert step.how == "setattr (1 played; 8000 and 2000 change nothing without jit)"
    # Where no value changes it, the first plays, said so: the step is unjudged.
    result = audit_object(Target(Episode(), (jnp.asarray(-9000),), call="step", factory=Episode))
    step = result.step("new_static")
    assert step.cell == "0/0 ?" and step.how.endswith("(8000 played; 8000, 2000 and 1 change "
                                                      "nothing without jit)")  # fmt: skip


@jax.tree_util.register_pytree_node_class
class Strict:
    """A pytree whose unflatten runs its constructor, which refuses strict=True (as JAX's
    RegularGridInterpolator refuses bounds_error=True)."""

    def __init__(self, values, strict=False):
        self.strict = strict
        if self.strict:
            raise NotImplementedError("strict takes no effect under jit")
        self.values = values

    def tree_flatten(self):
        return (self.values,), (self.strict,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, *aux)


@jax.jit
def scaled(obj, x):
    return obj.values * x


def test_a_value_set_in_place_that_the_constructor_refuses_is_not_applicable():
    result = audit_object(lambda: Strict(jnp.ones(3)), call=scaled, inputs=(jnp.arange(3.0),))
    step = result.step("new_static")
    assert (step.field, step.cell) == ("strict", "1/0 n/a")
    assert step.error == (
        "Strict's constructor refuses strict=True: NotImplementedError: strict takes no "
        "effect under jit"
    )
    assert result.errors == 0 and "error" not in result.hazards()
    assert any("(`strict`): Strict's constructor refuses strict=True" in v for v in result.verdict)


class Tags(eqx.Module):
    """Tags as lineax's operators hold them: a frozenset in a static field, or in a leaf."""

    w: jax.Array
    tags: frozenset = eqx.field(static=True)
    options: frozenset = frozenset()


def test_a_set_of_tags_is_a_static_played_without_one_tag():
    obj = Tags(jnp.ones(2), frozenset({user_models.SYMMETRIC, "psd"}), frozenset({"fast"}))
    found, skipped = _paths(obj)
    assert found == [
        ("w", "array", "eqx.tree_at"), ("tags", "static", fields.EQX_STATIC),
        ("options", "static", "eqx.tree_at"),
    ]  # fmt: skip
    # A static field is auxiliary data; a leaf eqx.filter_jit hashes, as any non-array leaf.
    assert _roles(obj, filtered=True) == {"w": "traced", "tags": "aux", "options": "hashed"}
    # One item dropped (the same one at every run: the last by type and repr, an address left
    # out): a value its users build; an empty set has no other value known, no item made up.
    assert values.new_value(frozenset({"psd", "symmetric"})) == frozenset({"psd"})
    assert values.new_value({"fast"}) == set() and type(values.new_value({"fast"})) is set
    assert values.unseen(frozenset({"psd", "symmetric"})) == frozenset()
    _, skipped = _paths(Tags(jnp.ones(2), frozenset()))
    assert skipped["tags"] == "frozenset(): no other valid value known"
    # Rebuilt without the tag, and back: jit hashes the set as a whole, by its items.
    tags = fields.walk(obj)[0][1]
    changed = edit.set_field(obj, tags, values.new_value(obj.tags))
    assert changed.tags == frozenset({user_models.SYMMETRIC}) and "psd" in obj.tags
    structure = jax.tree_util.tree_structure
    assert structure(changed) != structure(obj)
    assert structure(edit.set_field(changed, tags, obj.tags)) == structure(obj)


def test_new_arrays_keep_range_dtype_placement_and_weak_type():
    x = user_models.vector()
    same = values.new_array(x, np.random.default_rng(0))
    assert same.shape == x.shape and same.dtype == x.dtype and not np.allclose(same, x)
    assert same.committed == x.committed
    assert float(same.min()) >= float(x.min()) and float(same.max()) <= float(x.max())
    positive = values.new_array(jnp.full(4, 3.0, dtype=jnp.float32), np.random.default_rng(0))
    assert float(positive.min()) > 0  # a constant varies around its value, its sign kept
    weak = jnp.asarray(1.5)
    assert weak.weak_type and values.new_array(weak, np.random.default_rng(0)).weak_type
    assert values.new_shape(x) == (2, 64)


def test_new_values_of_inf_and_nan_are_finite():
    # An optimizer's best fitness before any is found (evosax's state: inf, its best solution
    # nan): a user sets a number.
    assert [values.new_number(v) for v in (np.inf, -np.inf, np.nan)] == [1.0, -1.0, 1.0]
    assert type(values.new_number(np.float32(np.inf))) is np.float32
    rng = np.random.default_rng(0)
    new = np.asarray(values.new_array(jnp.asarray([np.inf, 1.0, np.nan, 3.0]), rng))
    assert np.isfinite(new).all() and new.min() >= 1.0 and new.max() <= 3.0  # the finite range
    assert np.isfinite(np.asarray(values.new_array(jnp.full(3, np.nan), rng))).all()


def test_new_values_of_a_grid_keep_its_order():
    # An interpolator's knots (interpax's Interpolator1D.x): unsorted ones make every result
    # NaN, after which no other change shows.
    rng = np.random.default_rng(0)
    rising = np.asarray(values.new_array(jnp.linspace(0.0, 6.0, 20), rng))
    assert (np.diff(rising) > 0).all() and not np.allclose(rising, np.linspace(0.0, 6.0, 20))
    falling = np.asarray(values.new_array(jnp.linspace(1.0, 0.0, 8).reshape(1, 8), rng))
    assert (np.diff(falling, axis=-1) < 0).all()
    wide = np.asarray(values.new_array(jnp.arange(5.0), rng, (2, 5)))
    assert (np.diff(wide, axis=-1) > 0).all()
    unordered = np.asarray(values.new_array(user_models.vector(), rng))
    assert not (np.diff(unordered) > 0).all()


def test_new_values_of_a_covariance_keep_it_positive_definite():
    # A solver's operator (lineax) or a covariance: values that are not positive definite
    # make every result NaN or raise, and no change could be judged.
    rng = np.random.default_rng(0)
    cov = jnp.asarray([[3.0, 1.0], [1.0, 2.0]])
    for shape in (None, (2, 2, 2)):
        new = np.asarray(values.new_array(cov, rng, shape))
        assert np.allclose(new, np.swapaxes(new, -1, -2)) and not np.allclose(new, cov)
        assert (np.linalg.eigvalsh(new) > 0).all()
    symmetric = jnp.asarray([[0.0, 2.0], [2.0, 0.0]])  # indefinite: symmetric is all it keeps
    new = np.asarray(values.new_array(symmetric, rng))
    assert np.allclose(new, new.T) and not np.allclose(new, symmetric)


class _OneSlot:
    __slots__ = "scale"  # one slot, named as a string

    def __init__(self) -> None:
        self.scale = 2.0


class _Holder:
    def __init__(self) -> None:
        self.part = _OneSlot()


def test_a_slot_named_as_a_string_is_one_field():
    found, _ = _paths(_Holder())
    assert found == [("part.scale", "static", "setattr")]


class _Engine:
    """A library's strategy object with no fields (gpjax's DenseKernelComputation)."""


@jax.tree_util.register_pytree_node_class
class _Kernel:
    def __init__(self, amplitude, engine=None):
        self._amplitude, self.engine = amplitude, engine or _Engine()

    def tree_flatten(self):
        return (self._amplitude,), (self.engine,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, *aux)


@jax.tree_util.register_pytree_node_class
class _Process:
    """As TFP's GaussianProcess: its kernel kept in ``_parameters``, which its pytree never
    reads, before ``_kernel``, which it flattens."""

    def __init__(self, kernel, jitter=1e-6):
        self._parameters = {"kernel": kernel, "jitter": jitter}
        self._kernel, self._jitter = kernel, jitter

    def tree_flatten(self):
        return (self._kernel,), (self._jitter,)

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children, *aux)


def test_an_object_is_reached_by_its_path_in_jit_s_key_and_the_other_said():
    found, skipped = fields.walk(_Process(_Kernel(jnp.ones(2))))
    roles = {f.path: f.role for f in found}
    assert roles == {
        "_parameters['jitter']": "plain", "_kernel._amplitude": "traced", "_jitter": "aux",
    }  # fmt: skip
    reasons = {s.path: s.reason for s in skipped}
    assert reasons["_parameters['kernel']"] == "the same object as _kernel"
    # In jit's key, compared by identity, with nothing to change: listed, not left out silently.
    assert reasons["_kernel.engine"] == (
        "an _Engine with no field to change, static data in jit's key (compared by identity): "
        "not played"
    )
    played, left = fields.choose(found)
    assert [f.path for f in played] == ["_kernel._amplitude", "_jitter"]
    assert [(s.path, s.reason) for s in left] == [
        ("_parameters['jitter']", "a private attribute jit never sees (a fields pattern plays it)")
    ]
