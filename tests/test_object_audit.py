"""The audit of users' own objects: real classes of JAX, equinox and flax users, pinned step
by step against the built-in strategy each behaves like (whose rows test_audit pins)."""

from __future__ import annotations

import contextlib
import functools
import gc
import io

import jax
import numpy as np
import pytest
import user_models
from jax_releases import for_release, runnable
from test_audit import NAMES, _audit, cells_of, expected_rows, observed

import jitbench
from jitbench.auditing.audit import audit_object, audit_subject
from jitbench.auditing.scenario import FED_BACK, SCENARIO, Play
from jitbench.auditing.verdict import hazards
from jitbench.cli import render
from jitbench.devices import resolve
from jitbench.targets import Target, load_target
from jitbench.ways.agreement import leaves_off, tolerance
from jitbench.ways.subject import Generated, Walked

VECTOR = "user_models:vector"


@functools.cache
def _target_audit(spec: str, call: str | None = None, inputs: str | None = VECTOR, **kw):
    return audit_object(load_target(spec, call=call, inputs=inputs), **kw)


def _cell(step) -> tuple[int, int, str]:
    return step.traces, step.compiles, step.outcome


def _pinned(strategy: str) -> list[str]:
    cells, _ = expected_rows()[strategy]
    return cells_of(cells)


def _agrees(step, pinned: str) -> bool:
    """A target's step against a pinned built-in cell: compiles and outcome always, traces
    where the release counts no nested traces and the pin is not '?'."""
    outcome = "stale" if pinned.endswith("!") else "error" if pinned.endswith(" E") else "correct"
    traces, compiles = pinned.rstrip("! E").split("/")
    same = step.compiles == int(compiles) and step.outcome == outcome
    if traces != "?" and not observed().nested_traces:
        same = same and step.traces == int(traces)
    return same


def _agrees_step_by_step(result, strategy: str) -> None:
    pinned = dict(zip(SCENARIO, _pinned(strategy), strict=True))
    for step in result.steps:
        if step.outcome != "n/a":
            assert _agrees(step, pinned[step.name]), (step, pinned[step.name])


# --- The five users' objects ------------------------------------------------------------------


def test_seed_class_with_identity_hash_is_stale_and_leaks_like_static_self_id_hash():
    result = _target_audit("user_models:custom_class", "calc")
    assert result.matches == "static_self_id_hash"
    assert [s.name for s in result.steps] == list(SCENARIO)
    assert [(s.field, s.how) for s in result.steps[2:6]] == [("mul", "setattr")] * 2 + [
        ("x", "setattr")
    ] * 2
    _agrees_step_by_step(result, "static_self_id_hash")
    assert result.step("new_static").outcome == "stale"
    assert result.leaked_instances == expected_rows()["static_self_id_hash"][1] == 3
    assert result.verdict[0] == (
        "`mul` set to a new value in place is not seen: jit keeps returning results for the "
        "old values"
    )
    assert result.verdict[-1].startswith(
        "behaves like the built-in strategy static_self_id_hash (partial(jax.jit, "
        "static_argnums=0) with the default identity hash): self is static and hashed by id"
    )
    # The three instances, and the arrays they hold, all kept by jit's cache.
    assert result.leaked_arrays == 3
    assert result.verdict[-2].startswith("3 objects and 3 arrays the scenario built stay alive")


# The value-hashed class as the JAX docs write it: stale from 0.9 to 0.10.2, then correct.
VALUE_HASH_STALE = [((0, 9), (0, 11), 4), ((0, 11), None, 0)]


def test_a_method_that_jits_nothing_behaves_like_eager_not_a_jitted_strategy():
    # A pytree dataclass with its float a leaf plays no flag: only the misses JAX does not
    # explain (its own operations, one by one) tell it from pytree_dataclass.
    result = _target_audit("user_models:unjitted", "calc")
    assert result.matches == "eager"
    assert result.verdict[0].startswith("the call is not jitted: JAX compiles each operation")
    assert not result.step("first_call").explanations and result.step("first_call").compiles > 1
    assert (
        _target_audit("user_models:net_state", "user_models:predict").verdict[0]
        != (result.verdict[0])
    )


def test_a_library_s_jitted_function_is_not_taken_for_op_by_op_dispatch():
    """JAX explains no miss of a function in files flax excludes from tracebacks: flax's own
    ``jax.jit(model.apply)`` compiles one program unexplained, as its linen docs call it (once)
    and made at every call (a new program each time): neither is eager."""
    once = _target_audit("user_models:linen_params", inputs=None)
    assert not once.step("first_call").explanations and once.step("first_call").compiles == 1
    assert not once.verdict[0].startswith("the call is not jitted")
    assert once.matches != "eager"
    per_call = _target_audit("user_models:linen_jit_per_call", inputs=None)
    assert not per_call.verdict[0].startswith("the call is not jitted")
    assert per_call.matches == "jit_per_call"
    # One operation dispatched on its own compiles one program too: the match tells it apart.
    one = _target_audit("user_models:one_op", "calc")
    assert one.step("first_call").compiles == 1 and one.matches == "eager"
    assert one.verdict[0].startswith("the call is not jitted: JAX compiles each operation")


def test_a_call_that_compiles_at_every_call_says_its_later_recompiles_once():
    """A jit made at every call compiles for a number's value back too, and at every step
    after: one line says so, the steps counted by what each was (a value set back, not a new
    value), not a line per step that repeats what the first says."""
    result = _target_audit("user_models:jit_per_call_module")
    number = [(s.name, s.cell) for s in result.steps if s.field == "scale"]
    assert number == [("same_shape_array", "1/1"), ("seen_static", "1/1")]
    assert result.recompiles == 5
    assert result.verdict[0] == (
        "the same call again, nothing changed, compiles again: at every call, so every later "
        "step where nothing new was seen compiles again too (4 steps: new values of the same "
        "shape, a value set back, an equal instance)"
    )
    assert not any(line.startswith("`scale`") for line in result.verdict)


def test_a_linen_module_as_a_static_argument_is_changed_with_clone_and_hashed_by_value():
    result = _target_audit("user_models:linen_mlp", inputs=None)
    assert {(s.field, s.how) for s in result.steps[2:6]} == {
        ("use_bias", ".clone"), ("scale", ".clone")
    }  # fmt: skip
    assert result.stale_results == 0
    if for_release(VALUE_HASH_STALE) == 0:  # a fresh module is never stale; the built-in was
        assert result.matches == "static_self_value_hash"
    # Without arrays to change, the other instance takes values no step has set.
    other = result.step("other_instance")
    assert (other.how, other.compiles) == ("the factory's, new values in use_bias, scale", 1)


def test_a_state_holding_inf_and_nan_is_audited():
    result = _target_audit("user_models:search", "user_models:tell")
    assert result.stale_results == result.errors == 0
    assert [s.field for s in result.steps if s.name == "same_shape_array"] == [
        "mean", "best_fitness", "best"
    ]  # fmt: skip


def test_a_typed_prng_key_is_played_given_new_key_data_and_compared_by_it():
    result = _target_audit("user_models:noisy", "user_models:sample")
    assert result.stale_results == result.errors == 0
    step = next(s for s in result.steps if s.field == "key" and s.name == "same_shape_array")
    assert (step.traces, step.compiles, step.outcome) == (0, 0, "correct")


def test_a_dict_inside_a_namedtuple_state_is_rebuilt_not_changed_in_place():
    import user_models

    before = dict(user_models.POSITION)
    result = _target_audit("user_models:sampler_state", "user_models:density")
    assert user_models.POSITION == before  # the user's own dict, which the state holds
    assert {s.how for s in result.steps if s.field.startswith("position")} == {
        "a new container", "a new container (position['loc'] back to its shape)"
    }  # fmt: skip
    assert result.leaked_arrays == 0 and result.stale_results == 0


def test_a_static_field_holding_the_same_object_as_a_leaf_is_static():
    # Flattened without keys, a child is found by identity: the static True is the leaf's.
    result = _target_audit("user_models:gate", "user_models:gated")
    roles = {s.field: s.role for s in result.steps if s.field}
    assert roles == {"strict": "static", "open_": "traced number", "x": "traced"}
    # Its traced open_ compiles nothing when set anew, where pytree_dataclass's flag compiles:
    # a cell no built-in has, so no analogy.
    assert result.matches == "" and "recompile" not in result.hazards()
    assert result.step("new_static").cell == "0/0" and not result.verdict[-1].startswith("behaves")


def test_a_change_that_leaves_the_result_as_it_was_is_not_judged():
    result = _target_audit("user_models:bounded", "calc")
    step = result.step("new_static")
    assert (step.field, step.cell, result.step("seen_static").cell) == ("limit", "0/0 ?", "0/0 ?")
    # The most severe finding first (x's stale result); the change not judged last. No
    # built-in has a '?' cell: no analogy.
    assert result.verdict[0].startswith("`x` given new values of the same shape in place is not")
    assert result.matches == "" and result.verdict[-1] == (
        "`limit` set to a new value in place: the result without jit is what it was, so whether "
        "jit sees it is not known; jit did not trace again, so a value that changes the result "
        "would be stale"
    )
    obj, y = user_models.bounded(), user_models.vector()
    obj.calc(y)
    obj.limit = 0.01  # one that changes it: stale, as the verdict warns
    assert not np.allclose(obj.calc(y), user_models.Bounded.calc.__wrapped__(obj, y))


def test_seed_class_with_value_hash_matches_static_self_value_hash():
    result = _target_audit("user_models:value_hash_target", inputs=None)
    assert result.matches == "static_self_value_hash"
    _agrees_step_by_step(result, "static_self_value_hash")
    assert result.stale_results == for_release(VALUE_HASH_STALE)
    assert result.leaked_instances == 2


def test_equinox_mlp_through_filter_jit_matches_equinox_filter_jit():
    result = _target_audit("user_models:mlp", "user_models:forward")
    assert result.matches == "equinox_filter_jit"
    _agrees_step_by_step(result, "equinox_filter_jit")
    # One field of each group plays (the same field across the layers once), and the
    # final activation, a function: a rebuilt MLP holds a new one, which compiles again.
    statics = [s.field for s in result.steps if s.name == "new_static"]
    assert statics == [
        "layers[0].in_features", "layers[0].out_features", "layers[0].use_bias",
        "final_activation", "use_bias", "use_final_bias", "in_size", "out_size", "width_size",
        "depth", "scan",
    ]  # fmt: skip
    arrays = [s.field for s in result.steps if s.name == "same_shape_array"]
    assert arrays == ["layers[0].weight", "layers[0].bias"]
    # n/a: a batch axis the model cannot take, and scan=True over layers of unequal shapes.
    na = [(s.name, s.field) for s in result.steps if s.outcome == "n/a"]
    assert na == [("new_static", "scan")] + [("new_shape_array", f) for f in arrays]
    assert dict(result.skipped)["activation"].startswith("a jitted function or a library's")
    assert dict(result.skipped)["layers[1].bias"] == (
        "the same field as layers[0].bias (plays once)"
    )
    assert result.leaked_instances == 0 and result.stale_results == result.errors == 0
    assert result.leaked_arrays == 0  # the oracle's copies of the modules are let go


def test_nnx_linear_behind_nnx_jit_matches_flax_nnx_jit():
    result = _target_audit("user_models:linear", "user_models:apply")
    assert result.matches == "flax_nnx_jit"
    _agrees_step_by_step(result, "flax_nnx_jit")
    changed = {s.field: s.how for s in result.steps}
    assert changed["kernel"] == "Variable.set_value" and changed["use_bias"] == "setattr"
    # Its constructor's annotations declare a dtype and a Precision: played, each compiles.
    cells = {s.field: s.cell for s in result.steps if s.name == "new_static"}
    assert cells["dtype"] == cells["precision"] == cells["param_dtype"] == "1/1"
    assert result.step("new_shape_array").outcome == "n/a"


def test_registered_dataclass_matches_pytree_dataclass():
    result = _target_audit("user_models:scaled")
    assert result.matches == "pytree_dataclass"
    _agrees_step_by_step(result, "pytree_dataclass")
    assert {s.how for s in result.steps[2:6]} == {"dataclasses.replace"}
    assert result.verdict[0].startswith("no hazard")


# --- Errors, n/a, leaks that cannot be checked ----------------------------------------------


@pytest.mark.parametrize(
    ("spec", "call", "inputs"),
    [("user_models:dropped", "user_models:apply", VECTOR), ("user_models:training", None, None)],
)
def test_a_call_that_changes_the_models_state_is_judged_from_where_it_started(spec, call, inputs):
    """A dropout advancing its key, a training step its weights and optimizer: the call
    without jit starts from the state the jitted call started from, and they agree."""
    result = _target_audit(spec, call, inputs)
    assert result.stale_results == result.errors == 0
    assert [s.name for s in result.steps if s.correct][:2] == ["first_call", "repeat_call"]
    assert result.matches == "flax_nnx_jit"


def test_a_new_optimizer_held_by_a_static_self_is_stale():
    """A new learning rate is a new optax optimizer, its functions' closures holding the new
    rate: jit keyed on the object by identity keeps the old one's program."""
    result = _target_audit("user_models:trainer", inputs=None)
    stale = [(s.name, s.field) for s in result.steps if s.outcome == "stale"]
    assert stale == [("new_static", "tx.update")]
    # tx.init's new function changes no result ('?'): static_self_id_hash, whose every other
    # cell it has, is not named for cells it does not share.
    assert result.step("new_static").cell == "0/0 ?" and result.matches == ""
    # Inside a self jit keys by identity, the optimizer's functions are attributes it never
    # looks at, though the optimizer is a pytree of its own.
    assert {s.role for s in result.steps if s.field.startswith("tx.")} == {"attribute"}


def test_a_model_a_state_holds_by_its_bound_method_leaks():
    """A flax.struct state holding a model's bound method, as a TrainState holds
    ``module.apply``: jit's cache keeps the model of every new instance alive."""
    result = _target_audit("user_models:net_state", "user_models:predict")
    assert result.hazards() == {"leak": 2, "recompile": 1}  # the equal instance
    # The first instance's model, held by its program's key, is no set equal instances share.
    assert result.first_held == 1 and not any("does not grow" in v for v in result.verdict)
    assert any(v.startswith("1 object inside the first instance") and v.endswith(
        "an equal instance compiles again under a key of its own, so each new instance keeps "
        "its own alive too") for v in result.verdict)  # fmt: skip


def test_arrays_a_static_arguments_closures_hold_leak():
    """A NamedTuple of closures (blackjax's samplers) as a static argument: jit's cache keeps
    every new one, and the array each closure holds, alive."""
    result = _target_audit("user_models:algorithm", "user_models:run_algorithm")
    assert result.leaked_instances is None  # a NamedTuple takes no weak reference
    assert result.leaked_arrays == 3  # each instance's, held by its closure
    assert result.hazards()["leak"] == 3


def test_arrays_alone_left_alive_are_a_leak_everywhere_it_is_counted():
    """A NamedTuple of arrays a library keeps (a history of states): no weak reference reaches
    the states, so their arrays tell the leak, in the hazards, the verdict's words and the
    built-in match alike (it had matched pytree_class, which leaks nothing)."""
    result = _target_audit("user_models:point", "user_models:kept_scale")
    assert result.leaked_instances is None and result.leaked_arrays > 0
    assert result.leaks == result.hazards()["leak"] == result.leaked_arrays
    assert f"{result.leaked_arrays} arrays the scenario built stay alive" in result.verdict[0]
    assert result.matches == "" and not any("behaves" in line for line in result.verdict)
    # Why no object's leak is checked, from the try: weakref.ref refuses a NamedTuple.
    assert result.verdict[-1] == (
        "leaks checked through the arrays only: a Point takes no weak reference (weakref.ref "
        "raised TypeError)"
    )


def test_a_nested_objects_leaves_flattened_as_the_parents_own_are_traced():
    """A distribution flattened as distrax's are: its base's array is a child of its own,
    without a key, so the base is no auxiliary data and its array is traced."""
    result = _target_audit("user_models:shifted", "user_models:log_density")
    roles = {s.field: s.role for s in result.steps if s.field}
    assert roles == {"_base._loc": "traced", "_base._scale": "static", "_shift": "static"}
    assert result.hazards() == {} and result.matches == "pytree_class"


def test_instances_no_weak_reference_reaches_are_counted_by_class():
    """The seed's class with ``__slots__`` alone leaks as many instances as the seed's; one
    calling a module-level jitted function, none."""
    helper = _target_audit("user_models:slotted")
    assert helper.leaked_instances == 0 and helper.matches == "helper_function"
    slotted = _target_audit("user_models:slotted_custom", inputs=None)
    seed = _target_audit("user_models:custom_class_target", inputs=None)
    assert slotted.leaked_instances == seed.leaked_instances > 0
    assert slotted.hazards() == seed.hazards()


def test_the_oracles_copy_keeps_identity_tags():
    """The copy the call without jit runs on shares a frozenset: its items are keys."""
    result = _target_audit("user_models:tagged", "user_models:forward")
    assert result.step("first_call").outcome == "correct"
    assert result.stale_results == result.errors == 0
    # The tags play as a static: without its one tag the call raises without jit too.
    tags = [(s.name, s.outcome) for s in result.steps if s.field == "tags"]
    assert tags == [("new_static", "n/a"), ("seen_static", "correct")]
    assert result.not_applicable == 1


def test_the_oracles_copy_of_an_nnx_model_shares_its_arrays():
    """New Variables holding the same arrays: nnx's own deepcopy copies every array, a deep
    model's size again at every step."""
    from jitbench.targets.kinds import variable_value
    from jitbench.targets.snapshot import snapshot

    model = user_models.dropped()
    copied = snapshot(model)
    assert copied.linear.kernel is not model.linear.kernel
    assert variable_value(copied.linear.kernel) is variable_value(model.linear.kernel)
    model.linear.kernel.set_value(variable_value(model.linear.kernel) * 2)  # the copy keeps its own
    assert variable_value(copied.linear.kernel) is not variable_value(model.linear.kernel)


def test_layers_in_nnx_containers_are_played():
    result = _target_audit("user_models:stack", "user_models:apply")
    played = {s.field for s in result.steps}
    assert {"layers[0].use_tanh", "layers[0].linear.kernel"} <= played
    flag = [s for s in result.steps if s.field == "layers[0].use_tanh"]
    assert [(s.name, s.compiles, s.outcome) for s in flag] == [
        ("new_static", 1, "correct"), ("seen_static", 0, "correct")
    ]  # fmt: skip


@pytest.mark.parametrize("spec", ["user_models:frozen_scale", "user_models:halved"])
def test_frozen_classes_are_audited_without_a_crash(spec):
    """attrs.frozen changed with attrs.evolve; a derived field left to __post_init__."""
    result = _target_audit(spec)
    assert result.stale_results == result.errors == result.not_applicable == 0
    assert result.step("new_static").compiles == 1


def test_a_call_that_raises_under_jit_only_is_an_error():
    result = _target_audit("user_models:best_row")
    errors = [s.name for s in result.steps if s.outcome == "error"]
    assert errors == ["new_shape_array"]  # the equal instance takes the old shape back
    assert result.step("equal_instance").how.endswith(
        "(x back to its shape: the call cannot take it)"
    )
    assert result.step("new_shape_array").error.startswith("ConcretizationTypeError")
    assert result.verdict[0].startswith(
        "`x` given an array of a new shape with dataclasses.replace makes the jitted call raise, "
        "the call without jit does not: ConcretizationTypeError"
    )


def test_a_new_shape_the_call_as_written_refuses_too_is_not_applicable():
    """jit traces both branches of a lax.cond and raises on the one the new shape breaks;
    under jax.disable_jit() only the taken branch runs and passes, but the call as written,
    the user's jit taken off, traces both too and raises the same: the change is one the call
    does not take (n/a), not an error of jit's, and the reason says where it raised."""
    result = _target_audit("user_models:switched", "user_models:switch")
    new_shapes = [s for s in result.steps if s.name == "new_shape_array"]
    assert [(s.field, s.cell) for s in new_shapes] == [("x", "1/0 n/a"), ("bias", "1/0 n/a")]
    assert all(s.error.startswith("TypeError: cond branches must have equal output types")
               and s.error.endswith("(outside jax.disable_jit(), which lets it through)")
               for s in new_shapes)  # fmt: skip
    assert result.hazards() == {}
    assert result.verdict[1].startswith(
        "not applicable: an array field replaced by one of a new shape (`x`, `bias`): the call "
        "raises without jit too: TypeError: "
    )


def test_a_jit_made_inside_the_call_is_taken_off_for_the_plain_call():
    """No jit wrapper comes off a call that jits inside itself (``jax.jit(env.step)(state,
    action)``): its plain call is the call as written with every jit run as Python and lax's
    control flow traced as outside disable_jit. The cond both branches of which it traces
    refuses the new shape there too: n/a, as for the jitted function; a Python int of a
    traced value it holds concrete there: jit's own error still."""
    made_inside = _target_audit("user_models:switched", "user_models:switch_each_call")
    new_shapes = [s for s in made_inside.steps if s.name == "new_shape_array"]
    assert [(s.field, s.cell) for s in new_shapes] == [("x", "1/0 n/a"), ("bias", "1/0 n/a")]
    assert all(s.error.startswith("TypeError: cond branches must have equal output types")
               and s.error.endswith("(outside jax.disable_jit(), which lets it through)")
               for s in new_shapes)  # fmt: skip
    assert made_inside.errors == 0
    best = _target_audit("user_models:best_row", "user_models:best_row_each_call")
    assert [s.name for s in best.steps if s.outcome == "error"] == ["new_shape_array"]
    assert best.step("new_shape_array").error.startswith("ConcretizationTypeError")


def test_without_jit_runs_every_jit_as_python_and_traces_control_flow():
    """The plain call's switch: a jit made inside runs its function as Python (a traced value's
    bool, which jit refuses, runs), while a cond traces both branches (one of another type
    raises, which jax.disable_jit() alone lets through); JAX is itself again after it."""
    import jax
    import jax.numpy as jnp

    from jitbench.compiles import without_jit

    def branchy(x):
        return x if x > 0 else -x  # a Python bool of x: jit's error alone

    def mismatched(x):
        return jax.lax.cond(x > 0, lambda: x, lambda: jnp.ones(2))

    with without_jit() as plain:
        assert plain and float(jax.jit(branchy)(jnp.float32(-2.0))) == 2.0
        with pytest.raises(TypeError, match="cond branches must have equal output types"):
            jax.jit(mismatched)(jnp.float32(1.0))
    with jax.disable_jit():
        assert float(mismatched(jnp.float32(1.0))) == 1.0
    with pytest.raises(jax.errors.TracerBoolConversionError):
        jax.jit(branchy)(jnp.float32(-2.0))


@pytest.mark.parametrize(
    "spec, call",
    [
        ("user_models:weights", "user_models:descend"),
        ("user_models:linear", "user_models:donated_step"),
    ],
)
def test_a_call_that_donates_the_object_is_refused_in_one_line(spec, call):
    # The first call deletes the arrays it was passed (CPU donates too; nnx puts new ones in the
    # model): the steps after it, and the oracle, would read deleted arrays.
    with pytest.raises(jitbench.JitbenchError) as info:
        _target_audit(spec, call)
    assert str(info.value) == (
        f"the call of {spec!r} donates its arguments (donate_argnums): their arrays are deleted "
        "by the first call, and every step calls on them again; audit it without donation, "
        "which changes no cache key"
    )


def test_an_equal_instance_is_judged_where_every_field_change_raises():
    """Every new value of the one field raises without jit too (lineax's operator checks): the
    field is set back before the equal instance, which is judged on values the call takes
    (it had raised with the rejected values, and no change could be judged)."""
    result = _target_audit("user_models:rotation", "user_models:rotate", verdict=True)
    outcomes = {s.name: s.outcome for s in result.steps[2:]}
    assert outcomes == {
        "same_shape_array": "n/a", "new_shape_array": "n/a", "equal_instance": "correct",
        "other_instance": "n/a",  # no other field to give new values
    }  # fmt: skip
    assert result.step("equal_instance").how.endswith(
        "(m back to its values: the call cannot take new ones)"
    )
    assert result.matches == "equinox_filter_jit"


def test_new_values_the_call_rejects_are_their_fields_own_outcome():
    """New values of ``m`` raise with jit and without (the library rejects them): ``m``'s steps
    are not applicable, and ``m`` is set back before ``b`` plays, so ``b``'s steps and the
    instances are judged on values the call takes."""
    result = _target_audit("user_models:checked_shift", "user_models:shift", verdict=True)
    outcomes = [(s.name, s.field, s.outcome) for s in result.steps[2:]]
    assert outcomes == [
        ("same_shape_array", "m", "n/a"), ("new_shape_array", "m", "n/a"),
        ("same_shape_array", "b", "correct"), ("new_shape_array", "b", "correct"),
        ("equal_instance", "", "correct"), ("other_instance", "", "correct"),
    ]  # fmt: skip
    assert result.step("new_shape_array").how == "eqx.tree_at"
    assert next(s.how for s in result.steps if s.field == "b") == (
        "eqx.tree_at (m back to its values: the call cannot take new ones)"
    )
    assert result.step("other_instance").how == "the factory's, new values in b"
    not_applicable = [line for line in result.verdict if line.startswith("not applicable")]
    assert len(not_applicable) == 2 and all("(`m`)" in line for line in not_applicable)
    assert result.matches == "equinox_filter_jit"


def _loop(result) -> list[str]:
    return [s.cell for s in result.steps if s.name in FED_BACK]


def test_a_state_fed_back_with_a_drifting_weak_type_compiles_once_more():
    # A loop's second step: t was a Python float (weak), the step returns a float32 array.
    result = _target_audit("user_models:trajectory", inputs=None)
    assert _loop(result) == ["1/1", "0/0"] and result.hazards() == {"recompile": 1}
    assert result.verdict[0] == (
        "the object the call returns, called in turn as a loop does (state = step(state, x)), "
        "compiles again once: what it returns differs from what it was first passed (`t`: "
        "float32[] weak-typed → float32[]); build it with typed values (jnp.float32(0.0), not "
        "0.0)"
    )
    assert (
        result.steps[-2].how
        == "the object the call returned (`t`: float32[] weak-typed → float32[])"
    )
    # No built-in's call returns its object: no built-in has a loop's cells, so no analogy.
    assert result.matches == "" and not any("built-in" in line for line in result.verdict)
    # Typed from the start, the loop reuses its program.
    assert _loop(_target_audit("user_models:typed_trajectory", inputs=None)) == ["0/0", "0/0"]


def test_a_drifting_weak_array_is_named_by_what_the_call_was_passed_not_jaxs_closest_key():
    # t, a weak-typed 0-d array, is played at a new shape: JAX's closest key for the fed-back
    # state is that step's (f32[2]), not what the loop was passed (gymnax's Pendulum state).
    result = _target_audit("user_models:weak_array_trajectory", inputs=None, fields="*")
    assert _loop(result) == ["1/1", "0/0"]
    assert "JAX:" not in result.verdict[0] and result.verdict[0].endswith(
        "(`t`: float32[] weak-typed → float32[]); build it with typed values (jnp.float32(0.0), "
        "not 0.0)"
    )


def test_a_state_that_grows_at_every_step_compiles_at_every_step():
    result = _target_audit("user_models:history", inputs=None)
    assert _loop(result) == ["1/1", "1/1"] and result.hazards() == {"recompile": 2}
    assert "compiles again at every step" in result.verdict[0]


def test_a_training_step_returning_the_model_is_judged_and_fed_back():
    # The returned model holds its activation (a custom_jvp) as a leaf: compared by identity.
    result = _target_audit("user_models:eqx_training", inputs=None, fields="layers[0].weight")
    assert _loop(result) == ["0/0", "0/0"] and result.hazards() == {}
    # A loop's steps are cells no built-in has: no analogy, even where every other cell is
    # equinox_filter_jit's.
    assert result.stale_results == result.errors == 0 and result.matches == ""


def test_only_a_result_of_the_objects_type_and_structure_is_fed_back():
    # A call returning an array plays no loop; optax's (updates, state) feeds back the state.
    assert _loop(_target_audit("user_models:mlp", "user_models:forward")) == []
    obj = (np.zeros(2), {"a": np.ones(1)})
    play = Play.__new__(Play)
    play.obj = obj
    state = (np.ones(2), {"a": np.zeros(1)})
    assert play.fed(({"w": np.ones(2)}, state)) is state
    assert play.fed((state[1], obj)) is None  # the object itself is no new state
    assert play.fed(np.ones(2)) is None
    # Of the object's class, a state may drift in its static data or in its shapes (a loop's
    # hazard); in both, it is an operation's output, of other static data and other shapes.
    import jax

    @jax.tree_util.register_pytree_node_class
    class Tagged:
        def __init__(self, tag: str, values: np.ndarray) -> None:
            self.tag, self.values = tag, values

        def tree_flatten(self):
            return (self.values,), self.tag

        @classmethod
        def tree_unflatten(cls, tag, children):
            return cls(tag, *children)

    play.obj = Tagged("a", np.zeros(4))
    for tag, size, fed in [("b", 4, True), ("a", 10, True), ("b", 10, False)]:
        found = Tagged(tag, np.zeros(size))
        assert (play.fed(found) is found) is fed, (tag, size)


def test_the_first_call_must_run_with_and_without_jit():
    with pytest.raises(jitbench.JitbenchError) as info:
        _target_audit("user_models:mlp", "user_models:forward", inputs="user_models:scalar")
    assert str(info.value).startswith(
        "the first call of target 'user_models:mlp': the call without jit (the oracle) raises: "
    )
    with pytest.raises(jitbench.JitbenchError) as info:
        _target_audit("user_models:precompiled")
    assert str(info.value) == (
        "the first call of target 'user_models:precompiled': the call without jit (the oracle) "
        "raises: ValueError: Disable jit is not supported in the AOT path since the function is "
        "not available for (jit(_scale))"
    )


def test_a_first_call_only_jit_raises_on_is_the_error_hazard_and_the_last_step():
    result = _target_audit("user_models:returns_function", inputs=None, verdict=True)
    assert [s.cell for s in result.steps] == ["1/0 E"] and result.hazards() == {"error": 1}
    assert result.step("first_call").error.startswith("TypeError: ")
    assert result.verdict == (
        "the first call raises under jit, the call without jit does not: "
        f"{result.step('first_call').error}; no later step could be played",
    )


def test_a_first_call_differing_on_some_leaves_leaves_them_out_and_judges_the_rest():
    # The second output is 1 under jit and 0 without it: no change can be judged on it.
    noted = (
        "result[1]",
        "under jit and without it, differs at the first call, where nothing can be stale yet, "
        "by up to 1 (floating point): not compared",
    )
    result = _target_audit("user_models:marked_module")
    assert result.stale_results == result.errors == 0 and noted in result.skipped
    # Left out of the comparison, that output does not hide the bound method's stale results.
    result = _target_audit("user_models:marked_bound", inputs=None)
    assert noted in result.skipped
    assert [s.name for s in result.steps if s.outcome == "stale"] == [
        "same_shape_array", "new_shape_array"
    ]  # fmt: skip


def test_a_first_call_differing_everywhere_is_judged_by_compiles_alone_and_says_why():
    # A call that samples differs from the call without jit on every leaf: no result can be
    # compared, so no step is stale; compiles and reuse still are counted.
    result = _target_audit("user_models:marked_only", inputs=None)
    why = (
        "no result is compared: at the first call, under jit and without it, it differs on "
        "every leaf (result by up to 1): a call that samples, or computes another result "
        "under jit; compiles, reuse and leaks are judged"
    )
    assert result.steps[0].outcome == "correct"
    assert {(s.outcome, s.error) for s in result.steps[1:]} == {("unjudged", why)}
    assert result.step("new_shape_array").compiles == 1 and result.stale_results == 0
    assert result.verdict[0] == why and not result.matches
    assert "no change could be judged, so no built-in is matched" in result.verdict


def test_a_step_jit_compiled_afresh_is_never_stale():
    # The new flag compiles: the output that differs from the call without jit was computed
    # for the new value, so it is no stale result (the bound method's old-value reuse is).
    result = _target_audit("user_models:flag_marked")
    step = result.step("new_static")
    assert (step.field, step.traces, step.compiles, step.outcome) == ("on", 1, 1, "correct")
    assert result.stale_results == 0


def test_a_flax_train_step_with_batchnorm_and_adam_is_audited_without_a_false_stale():
    # The bias before the BatchNorm gets gradients of 1e-9 of either sign, which Adam's first
    # step turns into +-lr: jit and the call without jit differ there, both right.
    result = _target_audit(
        "user_models:bn_state", "user_models:bn_train_step", inputs="user_models:bn_batch",
        verdict=False,
    )  # fmt: skip
    assert result.stale_results == result.errors == 0
    assert result.step("same_shape_array").field == "step"  # a traced number, then arrays
    noisy = [reason for path, reason in result.skipped if path.startswith("result")]
    assert all("(floating point): not compared" in reason for reason in noisy)


def test_fields_pattern_plays_only_what_matches():
    result = _target_audit("user_models:mlp", "user_models:forward", fields="layers[2].")
    played = {s.field for s in result.steps if s.field}
    assert played == {"layers[2].weight", "layers[2].bias", "layers[2].in_features",
                      "layers[2].out_features", "layers[2].use_bias"}  # fmt: skip
    with pytest.raises(jitbench.JitbenchError, match=r"^the fields pattern 'nothing' matches "):
        _target_audit("user_models:mlp", "user_models:forward", fields="nothing")


def test_an_object_handed_over_without_factory_is_played_on_a_copy():
    obj = user_models.custom_class()
    before = np.asarray(obj.x).copy()
    result = audit_object(Target(obj, (user_models.vector(),), call="calc"), verdict=False)
    assert obj.mul is True and np.array_equal(obj.x, before)  # the user's object is untouched
    assert (
        " ".join(s.cell for s in result.steps)
        == " ".join(s.cell for s in _audit("static_self_id_hash", "cpu").steps)
        or observed().nested_traces
    )


def test_json_carries_fields_verdict_and_match():
    data = _target_audit("user_models:custom_class", "calc").to_dict()
    assert (data["steps"][2]["field"], data["steps"][2]["how"]) == ("mul", "setattr")
    assert data["matches"] == "static_self_id_hash" and data["verdict"][0].startswith("`mul`")
    assert data["not_applicable"] == 0 and data["leaked_instances"] == 3


# --- The oracle checked against the built-ins' independent reference --------------------------


@pytest.mark.parametrize("name", runnable(NAMES))
def test_builtins_through_the_object_path(name):
    """A generated instance handed over as a user's object is its strategy's subject (its
    fields, its reference oracle): the audit prints the very rows of the built-in audit,
    the nnx fast paths' and the AOT executable's stale flags included."""
    strategy = jitbench.get_strategy(name)
    target = Generated(strategy, resolve("cpu")).target
    mine = audit_object(Target(target.obj, target.inputs, "calc", "mine", target.factory))
    builtin = _audit(name, "cpu")
    assert mine.leaked_instances == builtin.leaked_instances
    assert [_row(s) for s in mine.steps] == [_row(s) for s in builtin.steps]
    assert mine.subject == "mine" and not mine.builtin and mine.verdict


# Generated classes whose call the call without jit judges as the reference does (not the
# nnx fast paths' cached graphs, nor an AOT executable, which disable_jit does not bypass).
JUDGED_ALIKE = [
    "helper_function", "static_self_id_hash", "pytree_class", "pytree_dataclass",
    "flax_struct_dataclass", "equinox_filter_jit", "flax_nnx_jit", "nnx_tree_mode",
]  # fmt: skip


def _printed(result) -> list[str]:
    """``jitbench audit``'s page of a result, as it prints a user's object's audit."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        render.object_audit(result, "the class", explain=False)
    return out.getvalue().splitlines()


def _changes(result) -> list[tuple]:
    """The steps that change a field: which, as jit sees it, how, and the cell."""
    return [(s.name, s.field, s.role, s.how, s.cell) for s in result.steps if s.field]


@pytest.mark.parametrize("name", runnable(NAMES))
def test_a_builtin_and_its_class_as_a_target_print_the_same_steps(name):
    """One way to change a field: a built-in strategy's fields are walked and changed as a
    user's object's are, so its audit and its generated class audited as a target print the
    same page, 'jit sees it as' and 'change made with' included; and a user's own audit of
    that class (its factory, the call without jit as the oracle) changes the same fields the
    same way, with the same cells where that oracle judges as the reference does."""
    target = Generated(jitbench.get_strategy(name), resolve("cpu")).target
    as_target = Target(target.obj, target.inputs, "calc", "mine", target.factory)
    builtin = _audit(name, "cpu")
    assert _printed(audit_object(as_target, verdict=False)) == _printed(builtin)
    assert all(s.how and s.role for s in builtin.steps if s.field)
    if name in JUDGED_ALIKE:
        assert _changes(audit_subject(Walked(as_target))) == _changes(builtin)


# How the verdict's words name each hazard that assert_jit_safe and advise count.
WORDED = {
    "stale": ("is not seen", "computed for other values"),
    "error": ("makes the jitted call raise",),
    "leak": ("stay alive after it dropped them",),
    "recompile": ("compiles again", "compile again"),
}


@pytest.mark.parametrize("name", runnable(NAMES))
def test_a_hazard_is_counted_exactly_where_the_verdict_words_it(name):
    """assert_jit_safe fails on, and advise's row lists, the hazards the verdict names."""
    result = _audit(name, "cpu")
    words = " ".join(hazards(result))
    worded = {name for name, marks in WORDED.items() if any(m in words for m in marks)}
    assert set(result.hazards()) == worded


def _row(step) -> tuple:
    return step.name, step.field, step.how, step.traces, step.compiles, step.outcome, step.error


# --- The tolerance ------------------------------------------------------------------------------


@jax.tree_util.register_pytree_with_keys_class
class _Tagged:
    def __init__(self, data, name="n"):
        self.data, self.name = data, name

    def tree_flatten_with_keys(self):
        return ((jax.tree_util.GetAttrKey("data"), self.data),), (self.name, object())

    def tree_flatten(self):
        return (self.data,), (self.name, object())

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(children[0], aux[0])


def test_results_compare_within_the_dtype_s_tolerance():
    import jax.numpy as jnp

    x = np.linspace(1, 2, 8, dtype=np.float32)
    assert tolerance(np.float32) == pytest.approx(3.45e-4, rel=1e-2)
    assert tolerance(np.int32) == 0.0 and tolerance(jnp.bfloat16) == pytest.approx(0.088, rel=1e-2)
    assert leaves_off(x, x * (1 + 1e-5)) == {}
    assert leaves_off(x, x * (1 + 1e-2)) == {"result": pytest.approx(0.02, rel=1e-3)}
    assert leaves_off(np.arange(3), np.arange(3) + 1) == {"result": 1.0}
    assert leaves_off(np.arange(3), np.arange(3)) == {}
    assert leaves_off(x, x[None]) == "in the shape of result: (8,), not (1, 8)"
    assert leaves_off((x, x), [x, x]) == "in structure: PyTreeDef((*, *)), not PyTreeDef([*, *])"
    # A node whose aux data holds an object compared by identity alone, made anew at each
    # flatten (jax-cfd's GridArray so changed): the same structure, its leaves compared.
    assert leaves_off(_Tagged(x), _Tagged(x)) == {}
    assert leaves_off(_Tagged(x), _Tagged(-x)) == {"result.data": pytest.approx(4.0)}
    assert leaves_off(_Tagged(x, "a"), _Tagged(x, "b")).startswith("in structure: ")
    assert leaves_off({"a": jnp.asarray(x), "b": x}, {"a": x, "b": -x}) == {
        "result['b']": pytest.approx(4.0)
    }


def test_an_object_built_at_a_freed_objects_address_is_tracked():
    from jitbench.auditing.audit import _Alive

    class Model:
        pass

    with _Alive() as alive:  # closed: what it froze thawed for the tests after this one
        for _ in range(100):  # CPython gives a freed object's memory to the next of its size
            first = Model()
            alive.track(first)
            freed = id(first)
            del first
            kept = Model()
            if id(kept) == freed:
                break
        assert id(kept) == freed
        alive.track(kept)
        assert alive.alive()[0] == 1
    assert gc.get_freeze_count() == 0


def test_a_change_the_objects_class_refuses_is_skipped_not_a_crash():
    # e3nn-jax's IrrepsArray raised out of the audit: its irreps set to 2x0e no longer fit its
    # array. A new size, and a new shape of x, are refused as Sized is built.
    result = _target_audit("user_models:sized", "user_models:times_sized", fields="*")
    assert [(s.name, s.field) for s in result.steps if s.field] == [("same_shape_array", "x")]
    skipped = dict(result.skipped)
    assert skipped["size"] == (
        "64: a new value is refused: ValueError: x of shape (64,) does not hold 128 values"
    )
    assert skipped["x"].startswith("an array of a new shape is refused: ValueError: x of shape")
    assert result.stale_results == result.errors == 0


def test_the_metadata_of_a_state_jit_returns_is_no_leak():
    # The returned state's units are the compiled program's output structure, one per program:
    # a loop of a thousand steps holds no more of them (e3nn-jax's IrrepsArray, its irreps).
    result = _target_audit("user_models:measured", inputs=None)
    assert _loop(result) == ["0/0", "0/0"]
    assert result.leaked_instances == 0 and result.hazards() == {}


def test_an_audited_object_of_a_librarys_own_type_is_tracked_for_leaks():
    # equinox's State is a library's own object: inside a model it is bookkeeping, but audited
    # itself it is the user's, and the log that keeps every state is a leak.
    result = _target_audit("user_models:logged_state", inputs=None)
    assert result.leaked_instances is not None and result.leaked_instances > 0
    assert not any("cannot be weakly referenced" in line for line in result.verdict)


def test_an_other_instance_with_no_field_played_says_none_differs():
    """With no field to play (a shape alone, skipped), the other instance is the factory's
    as built: its step says that no value differs, not that it has new values in nothing."""
    import jax

    class Shaped:
        def __init__(self) -> None:
            self.shape = (3,)

        def calc(self, y):
            return y.reshape(self.shape) * 2.0

    def bound(obj, y):
        return jax.jit(obj.calc)(y)

    target = jitbench.Target(Shaped(), (jax.numpy.ones(3),), call=bound, factory=Shaped)
    result = audit_object(target)
    assert not any(s.field for s in result.steps) and dict(result.skipped)["shape"]
    assert result.step("other_instance").how == (
        "the factory's, as built: no field is played, so no value differs"
    )


def test_a_number_is_not_read_as_hashed_where_the_call_compiles_at_every_call():
    """A call that makes its jit inside compiles after a new number as after nothing: that
    compile says nothing of hashing, so the number stays a traced one, in both its steps
    (flowjax's log_prob called without a jit of the user's: its scan compiled every call)."""
    import equinox as eqx
    import jax

    class Tempered(eqx.Module):
        x: jax.Array
        t: float

        def __call__(self, y):
            return self.x * y / self.t

    def each_call(model, y):
        return jax.jit(lambda m, y: m(y))(model, y)

    def make():
        return Tempered(jax.numpy.arange(3.0), 2.0)

    target = jitbench.Target(make(), (jax.numpy.ones(3),), call=each_call, factory=make)
    result = audit_object(target)
    assert result.step("repeat_call").compiles == 1
    roles = {(s.name, s.role) for s in result.steps if s.field == "t"}
    assert roles == {("same_shape_array", "traced number"), ("seen_static", "traced number")}


def test_a_library_s_strategy_is_named_only_for_an_object_that_uses_the_library():
    """equinox_filter_jit's own audit, judged as an object's: named for an eqx.Module, never
    for a pytree that uses no equinox (an analogy it does not share), which gets one of its
    own kind whose every cell it has."""
    from jitbench.auditing.audit import builtin_audits
    from jitbench.auditing.verdict import closest

    builtins = builtin_audits("cpu")
    audit = builtins["equinox_filter_jit"]
    assert closest(audit, "eqx.Module", builtins, frozenset({"equinox", "jax"})) == (
        "equinox_filter_jit"
    )
    assert closest(audit, "pytree", builtins, frozenset({"jax"})) == "pytree_class"
    assert closest(audit, "pytree dataclass", builtins, frozenset({"jax"})) == "pytree_dataclass"
    # A @flax.struct.dataclass has no base class of flax's: its kind says flax made it.
    assert closest(audit, "flax.struct dataclass", builtins, frozenset({"jax"})) == (
        "flax_struct_dataclass"
    )


def test_an_analogy_is_named_only_where_every_cell_is_the_built_ins():
    """One cell the built-in does not have, and no built-in is named: a '?' (not known
    either way), a loop's step (no built-in loops), leaks not checked, a first call JAX
    explained (a jit: never eager's); a step the call cannot take without jit (n/a) says
    nothing of jit and is left out."""
    import dataclasses

    from jitbench.auditing.audit import builtin_audits
    from jitbench.auditing.result import Step
    from jitbench.auditing.verdict import closest
    from jitbench.vocabulary import Outcome, StepName

    builtins = builtin_audits("cpu")
    base = builtins["pytree_class"]
    uses = frozenset({"jax"})

    def changed(index: int, **kw) -> object:
        steps = list(base.steps)
        steps[index] = dataclasses.replace(steps[index], **kw)
        return dataclasses.replace(base, steps=tuple(steps))

    assert closest(base, "pytree", builtins, uses) == "pytree_class"
    assert closest(changed(4, outcome=Outcome.UNJUDGED), "pytree", builtins, uses) == ""
    assert closest(changed(5, compiles=0, outcome=Outcome.NOT_APPLICABLE), "pytree", builtins,
                   uses) == "pytree_class"  # fmt: skip
    looped = dataclasses.replace(base, steps=(*base.steps, Step(StepName.FED_BACK, 0, 0,
                                                                 Outcome.CORRECT)))  # fmt: skip
    assert closest(looped, "pytree", builtins, uses) == ""
    assert closest(dataclasses.replace(base, leaked_instances=None), "pytree", builtins, uses) == ""
    # eager's own cells, its first call explained as a jit's is: eager is not named for it.
    eager = builtins["eager"]
    jitted = dataclasses.replace(eager.steps[0], explanations=("TRACING CACHE MISS ...",))
    assert closest(eager, "plain object", builtins, uses) == "eager"
    assert closest(dataclasses.replace(eager, steps=(jitted, *eager.steps[1:])),
                   "plain object", builtins, uses) != "eager"  # fmt: skip


def test_each_not_applicable_line_quotes_the_error_its_own_steps_raised():
    """Two new shapes refused without jit, each by its own ValueError (the interpolator's
    fill_value by broadcasting, its grid by a 1-d check): a line each, never one field given
    another's error, as the steps (and the JSON) have them."""
    from jitbench.auditing.result import AuditResult, Step
    from jitbench.vocabulary import Outcome, StepName

    fill = "ValueError: Incompatible shapes for broadcasting: shapes=[(3,), (2,), (3,)]"
    grid = "ValueError: a should be 1-dimensional"
    steps = (
        Step(StepName.FIRST_CALL, 1, 1, Outcome.CORRECT),
        Step(StepName.REPEAT_CALL, 0, 0, Outcome.CORRECT),
        Step(StepName.NEW_SHAPE_ARRAY, 1, 0, Outcome.NOT_APPLICABLE, fill, field="fill_value"),
        Step(StepName.NEW_SHAPE_ARRAY, 1, 0, Outcome.NOT_APPLICABLE, grid, field="grid[0]"),
        Step(StepName.NEW_SHAPE_ARRAY, 1, 0, Outcome.NOT_APPLICABLE, grid, field="grid[1]"),
    )
    lines = hazards(AuditResult("interpolator", "cpu", 5, steps, 0))
    refused = "not applicable: an array field replaced by one of a new shape"
    assert [line for line in lines if line.startswith("not applicable")] == [
        f"{refused} (`fill_value`): the call raises without jit too: {fill}",
        f"{refused} (`grid[0]`, `grid[1]`): the call raises without jit too: {grid}",
    ]


def test_how_jit_flattens_an_object_is_tried_not_read_off_its_kind():
    import dataclasses

    import jax

    @functools.partial(jax.tree_util.register_dataclass, data_fields=["w"], meta_fields=["n"])
    @dataclasses.dataclass(frozen=True)
    class InCpp:
        w: object
        n: int

    @dataclasses.dataclass(frozen=True)
    class InPython:
        w: object
        n: int

    jax.tree_util.register_pytree_node(
        InPython, lambda o: ((o.w,), o.n), lambda n, children: InPython(children[0], n)
    )
    from jitbench.targets.kinds import flattened_in_python

    assert flattened_in_python(InCpp(np.ones(2), 1)) is False
    assert flattened_in_python(InPython(np.ones(2), 1)) is True
    assert flattened_in_python({"w": np.ones(2)}) is False
    assert flattened_in_python(np.ones(2)) is None


def test_an_all_static_struct_matches_its_built_in_though_its_other_instance_compiles():
    """A flax struct whose every field is static (xminigrid's EnvParams, jax.jit(env.step)):
    its other instance has new values in its flags, which compile, where the built-in's has
    new arrays: not the same change, left out of the match, so it is named as the pattern it
    is."""
    import flax.struct
    import jax

    class Params(flax.struct.PyTreeNode):
        height: int = flax.struct.field(pytree_node=False, default=5)
        max_steps: int = flax.struct.field(pytree_node=False, default=10)

    @jax.jit
    def step(params, x):
        return x[: params.height].sum() * params.max_steps

    target = jitbench.Target(Params(), (jax.numpy.arange(8.0),), call=step, factory=Params)
    result = audit_object(target)
    assert result.step("other_instance").cell == "1/1" and result.hazards() == {}
    assert result.matches == "flax_struct_dataclass"
    assert result.verdict[-1].startswith("behaves like the built-in strategy flax_struct_dataclass")


@pytest.mark.parametrize("frozen_before", [False, True])
def test_the_leak_check_counts_alike_whether_or_not_the_process_froze_objects(frozen_before):
    """The audit freezes what exists when it starts (the collector then walks what it built
    alone) and thaws it after; in a process that froze objects of its own it lists every
    object instead and leaves the process's freeze as it was: the same three instances kept
    alive either way."""
    if frozen_before:
        gc.freeze()
    try:
        count = gc.get_freeze_count()
        result = _target_audit("user_models:custom_class", "calc")
        # Frozen objects freed by their reference count leave the count: it may fall, never
        # rise (the audit froze more) nor reach 0 where the process had frozen objects.
        after = gc.get_freeze_count()
        assert (0 < after <= count) if frozen_before else after == 0
    finally:
        gc.unfreeze()
    assert result.leaked_instances == 3 and result.step("new_static").outcome == "stale"
