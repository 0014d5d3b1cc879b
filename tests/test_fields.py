"""The field walk: what it finds on real models, and that each change is made their way."""

from __future__ import annotations

import numpy as np
import user_models

from jitbench.targets import fields, values


def _paths(obj):
    found, skipped = fields.walk(obj)
    return [(f.path, f.kind, f.how) for f in found], dict((s.path, s.reason) for s in skipped)


def test_plain_class_and_registered_dataclass():
    found, skipped = _paths(user_models.custom_class())
    assert found == [("x", "array", "setattr"), ("mul", "static", "setattr")] and skipped == {}
    found, _ = _paths(user_models.scaled())
    assert found == [
        ("x", "array", "dataclasses.replace"),
        ("mul", "static", "dataclasses.replace"),
    ]
    _, skipped = _paths(user_models.precompiled())
    assert skipped == {"_compiled": "private attribute"}


def test_nnx_linear():
    found, skipped = _paths(user_models.linear())
    assert found == [
        ("kernel", "array", "Variable.set_value"),
        ("bias", "array", "Variable.set_value"),
        ("in_features", "static", "setattr"),
        ("out_features", "static", "setattr"),
        ("use_bias", "static", "setattr"),
    ]
    assert skipped["param_dtype"] == "a type (float32): not a value to change"
    assert skipped["dot_general"].startswith("a function")


def test_equinox_mlp_nested_layers():
    found, skipped = _paths(user_models.mlp())
    assert found[:3] == [
        ("layers[0].weight", "array", "eqx.tree_at"),
        ("layers[0].bias", "array", "eqx.tree_at"),
        ("layers[0].in_features", "static", fields.EQX_STATIC),
    ]
    assert len([f for f in found if f[1] == "array"]) == 6 and len(found) == 22
    assert set(skipped) == {"activation", "final_activation"}


def test_each_change_is_made_the_objects_way():
    rng = np.random.default_rng(0)
    plain = user_models.custom_class()
    (_, mul), _ = fields.walk(plain)
    assert fields.set_field(plain, mul, False) is plain and plain.mul is False  # in place
    frozen = user_models.scaled()
    (_, fmul), _ = fields.walk(frozen)
    new = fields.set_field(frozen, fmul, False)
    assert new is not frozen and (frozen.mul, new.mul) == (True, False)  # a new object
    mlp = user_models.mlp()
    found, _ = fields.walk(mlp)
    by_path = {f.path: f for f in found}
    wide = values.new_array(mlp.layers[1].bias, rng, (2, 8))
    changed = fields.set_field(mlp, by_path["layers[1].bias"], wide)
    assert changed is not mlp and changed.layers[1].bias.shape == (2, 8)
    assert mlp.layers[1].bias.shape == (8,)  # eqx.tree_at leaves the original as it was
    static = fields.set_field(mlp, by_path["layers[2].out_features"], 5)
    assert (static.layers[2].out_features, mlp.layers[2].out_features) == (5, 4)
    linear = user_models.linear()
    found, _ = fields.walk(linear)
    kernel = linear.kernel
    new = values.new_array(fields.get_field(linear, found[0]), rng)
    assert fields.set_field(linear, found[0], new) is linear
    assert linear.kernel is kernel and linear.kernel.get_value() is new  # the same Variable


def test_choose_caps_arrays_and_matches_patterns():
    found, _ = fields.walk(user_models.mlp())
    played, left = fields.choose(found)
    assert [f.path for f in played if f.kind == "array"] == [
        "layers[0].weight", "layers[0].bias", "layers[1].weight",
    ]  # fmt: skip
    assert len(played) == 19 and {s.reason for s in left} == {
        "past the first 3 array fields (--fields PATTERN plays others)"
    }
    played, left = fields.choose(found, "*.weight")
    assert [f.path for f in played] == [f"layers[{i}].weight" for i in range(3)]
    played, _ = fields.choose(found, r"^(depth|scan)$")  # no glob characters: a regex
    assert [f.path for f in played] == ["depth", "scan"]


def test_new_values():
    assert [values.new_value(v) for v in (True, 3, 1.5, "relu", (3, 3), None, ())] == [
        False, 4, 2.5, "relu_changed", (4, 3), None, None,
    ]  # fmt: skip
    x = user_models.vector()
    same = values.new_array(x, np.random.default_rng(0))
    assert same.shape == x.shape and same.dtype == x.dtype and not np.allclose(same, x)
    assert same.committed == x.committed
    assert values.new_shape(x) == (2, 64)
