"""The audit of objects from libraries the project does not own, each verdict pinned.

Every object is built and jitted as its library's docs do (``tests/gallery_models.py``
names the source of each). The pins were checked against independent scripts that
jit the call, change a field as each library's users do, compare with
``jax.disable_jit()`` and count compiles. The libraries are the ``gallery`` extra;
the module is skipped, with the reason, where they are not installed. Slow: one
audit of each object (the deep MLP's takes about half a minute).
"""

from __future__ import annotations

import pytest

pytest.importorskip("chex", reason="the gallery's libraries: pip install 'jitbench[gallery]'")

from jitbench import audit_object, load_target
from jitbench.targets import fields
from jitbench.testing import assert_jit_safe

pytestmark = [pytest.mark.slow, pytest.mark.spread]


def _audit(name: str, **kwargs):
    # Loaded as the command line loads it: the factory builds each new instance.
    return audit_object(load_target(f"gallery_models:{name}"), **kwargs)


def _cells(result) -> list[tuple[str, str, str]]:
    return [(s.name, s.field, s.cell) for s in result.steps]


def _no_stale_words(result) -> None:
    assert not any("not seen" in line or "other values" in line for line in result.verdict)


def test_a_chex_dataclass_plays_its_fields_through_replace():
    # chex's default dataclass is a Mapping that is no MutableMapping.
    result = _audit("chex_parameters")
    assert _cells(result)[2:6] == [
        ("same_shape_array", "lr", "0/0"), ("seen_static", "lr", "0/0"),
        ("same_shape_array", "x", "0/0"), ("new_shape_array", "x", "1/1"),
    ]  # fmt: skip
    assert result.step("same_shape_array").role == "traced number"
    assert {s.how.split(" (")[0] for s in result.steps if s.field} == {".replace"}
    assert result.stale_results == result.errors == 0 and result.leaked_instances == 0
    # chex registers it with Python callbacks (register_pytree_with_keys), as pytree_class.
    assert result.matches == "pytree_class" and "C++" not in result.verdict[-1]
    _no_stale_words(result)


def test_optax_state_is_a_pytree_of_named_fields():
    result = _audit("optax_state")
    assert [s.field for s in result.steps if s.name == "same_shape_array"] == [
        "[0].count", "[0].mu['w']", "[0].nu['w']",
    ]  # fmt: skip
    assert result.leaked_instances is None and result.leaked_arrays == 0  # a tuple root
    assert result.unreferenced == ("tuple",)  # weakref.ref refused it: said so, not guessed
    # A '?', a loop's steps and leaks not checked: cells no built-in has, so no analogy.
    assert result.matches == "" and result.stale_results == 0


def test_a_train_state_compiles_again_for_every_new_instance():
    # optax.adam(...) makes new closures at every TrainState.create: a new cache key.
    result = _audit("train_state_")
    assert result.step("equal_instance").cell == "1/1"
    # A traced Python int the step returns nothing of (Adam counts its own steps).
    assert ("same_shape_array", "step", "0/0 ?") in _cells(result)
    statics = [(s.field, s.cell) for s in result.steps if s.name == "new_static"]
    assert statics == [("apply_fn", "1/1"), ("tx.init", "1/1"), ("tx.update", "1/1")]
    assert any("compiles again: nothing compiled before" in line for line in result.verdict)
    assert result.stale_results == 0 and result.matches == ""
    _no_stale_words(result)


def test_numbers_a_distribution_keeps_as_leaves_are_traced():
    result = _audit("numpyro_normal")
    assert _cells(result)[2:6] == [
        ("same_shape_array", "loc", "0/0"), ("seen_static", "loc", "0/0"),
        ("same_shape_array", "scale", "0/0"), ("seen_static", "scale", "0/0"),
    ]  # fmt: skip
    assert {s.role for s in result.steps if s.field} == {"traced number"}
    assert result.matches == "pytree_class" and result.verdict[0].startswith("no hazard")


def test_a_tinygp_kernel_behind_jax_jit_is_never_stale():
    result = _audit("tinygp_kernel")
    assert [s.cell for s in result.steps] == ["1/1"] + ["0/0"] * 7
    assert result.stale_results == result.errors == 0
    _no_stale_words(result)


def test_an_evosax_strategy_is_stale_and_kept_alive():
    # ask is jitted with a static self hashed by identity (evosax/algorithms/base.py).
    result = _audit("evosax_cma_es")
    assert ("new_static", "population_size", "0/0!") in _cells(result)
    assert result.stale_results == 1 and result.leaked_instances == 3
    assert result.step("equal_instance").cell == "1/1"
    assert result.verdict[0].startswith("`population_size` set to a new value in place is not seen")
    assert result.matches != "eager"


def test_diffrax_hashes_its_controllers_numbers():
    # diffeqsolve is eqx.filter_jit'ed inside diffrax: a controller's floats are static. Each
    # new value compiles once and its old value back reuses its program: an option, no
    # recompile (eqx.filter_jit over the same call gets the same steps and label). Three of
    # its eight numbers: each value played compiles the whole solver again.
    result = _audit("diffrax_controller", fields="^(rtol|atol|pcoeff)$")
    hashed = [s for s in result.steps if s.name == "same_shape_array"]
    assert [s.field for s in hashed] == ["rtol", "atol", "pcoeff"]
    assert {(s.cell, s.role) for s in hashed} == {("1/1", "static (hashed leaf)")}
    back = {s.field: s.cell for s in result.steps if s.name == "seen_static"}
    assert {back[s.field] for s in hashed} == {"0/0"}
    assert "recompile" not in result.hazards()
    assert result.verdict[0].startswith("no hazard")
    assert result.verdict[1].startswith(
        "`rtol`, `atol`, `pcoeff`: a number the call hashes: each new "
        "value compiles once, and a value seen before reuses its program"
    )
    assert result.stale_results == 0
    _no_stale_words(result)


def test_a_jaxlie_transform_behaves_like_a_registered_dataclass():
    result = _audit("jaxlie_se3")
    assert _cells(result) == [
        ("first_call", "", "1/1"), ("repeat_call", "", "0/0"),
        ("same_shape_array", "wxyz_xyz", "0/0"), ("new_shape_array", "wxyz_xyz", "1/1"),
        ("equal_instance", "", "0/0"), ("other_instance", "", "0/0"),
    ]  # fmt: skip
    # A jax_dataclasses class: flattened by Python callbacks, as pytree_class.
    assert result.matches == "pytree_class" and "C++" not in result.verdict[-1]


def test_a_pytreeclass_tree_frozen_once_built_is_changed_as_at_set_changes_it():
    """TreeClass refuses setattr once built; its users change a field with .at[...].set,
    which returns a new tree: jit sees each change (an independent script: a new value of
    `a`, new values of `c`, compile 0 times; a new Tree() 0)."""
    result = _audit("pytreeclass_tree")
    assert _cells(result) == [
        ("first_call", "", "1/1"), ("repeat_call", "", "0/0"),
        ("same_shape_array", "a", "0/0"), ("seen_static", "a", "0/0"),
        ("same_shape_array", "c", "0/0"), ("new_shape_array", "c", "1/1"),
        ("equal_instance", "", "0/0"), ("other_instance", "", "0/0"),
    ]  # fmt: skip
    assert {s.how for s in result.steps if s.field} == {".at[...].set"}
    assert result.stale_results == 0
    _no_stale_words(result)


def test_haiku_params_are_a_dict_of_arrays():
    result = _audit("haiku_params")
    assert result.step("same_shape_array").field == "['mlp/~/linear_0']['w']"
    assert result.step("new_shape_array").outcome == "n/a"  # haiku's own shape check
    # Every step's cell is pytree_class's, but a dict takes no weak reference: its objects'
    # leak is not checked, a cell no built-in has, so no analogy.
    assert result.unreferenced == ("dict",) and result.stale_results == 0
    assert result.matches == "" and result.verdict[1] == (
        "leaks checked through the arrays only: a dict takes no weak reference (weakref.ref "
        "raised TypeError)"
    )


def test_a_kept_jit_of_a_jaxopt_solver_misses_an_option_set_in_place():
    result = _audit("jaxopt_lbfgs")
    assert ("new_static", "maxiter", "0/0!") in _cells(result)
    assert result.stale_results == 1 and result.leaked_instances == 3
    # Its functions set anew change no result ('?'): no analogy, though every other cell is
    # static_self_id_hash's.
    assert result.matches == "" and ("new_static", "fun", "0/0 ?") in _cells(result)
    # A string option with no declared choices is left alone, never given a made-up value.
    assert dict(result.skipped)["linesearch"].endswith(
        "(no Literal, Enum or check of its constructor declares its choices)"
    )


def test_a_deep_mlp_audits_one_field_of_each_layer_group():
    # eqx.nn.MLP(depth=99): 200 arrays, about 300 static ints; one of each group plays.
    result = _audit("deep_mlp")
    played = [s.field for s in result.steps if s.field]
    assert len(set(played)) <= 14 and "layers[1].weight" not in played
    # Its first layer's new values of the same shape change no result at the input played
    # ('?'): no analogy.
    assert result.stale_results == 0 and result.matches == ""
    assert any(
        p == "layers[1].weight" and r.startswith("the same field as layers[0].weight")
        for p, r in result.skipped
    )


def test_an_attribute_numpyros_flatten_leaves_out_is_one_jit_never_sees():
    import jax.numpy as jnp
    import numpyro.distributions as ndist

    # numpyro caches covariance_matrix on the object; its flatten keeps loc and scale_tril.
    d = ndist.MultivariateNormal(jnp.zeros(3), covariance_matrix=jnp.eye(3))
    roles = {f.path: f.role for f in fields.walk(d)[0]}
    assert roles == {"covariance_matrix": "plain", "scale_tril": "traced", "loc": "traced"}


def test_a_distrax_distribution_compiles_again_for_every_equal_instance():
    # README, "Jitting Distrax": DiagLinear's auxiliary data holds bound methods of its inner
    # Block, compared by identity: every new instance is a new key, and jit's caches keep its
    # Blocks (and their arrays) alive.
    result = _audit("distrax_mvn_diag")
    assert result.step("first_call").cell == "1/1" and result.step("repeat_call").cell == "0/0"
    statics = [(s.name, s.cell) for s in result.steps if s.name.endswith("_static")]
    assert statics == [("new_static", "1/1"), ("seen_static", "0/0")] * 12
    # The arrays it keeps twice (its own _loc beside the inner Normal's): KL reads the outer.
    arrays = [(s.field, s.cell) for s in result.steps if s.name.endswith("_array")]
    assert arrays == [
        ("_distribution._distribution._loc", "0/0 ?"), ("_distribution._distribution._loc", "1/1"),
        ("_distribution._distribution._scale", "0/0 ?"),
        ("_distribution._distribution._scale", "1/1"),
        ("_bijector._bijectors[0]._bijector._shift", "0/0 ?"),
        ("_bijector._bijectors[0]._bijector._shift", "1/1"),
    ]  # fmt: skip
    assert result.step("equal_instance").cell == result.step("other_instance").cell == "1/1"
    assert result.hazards() == {"leak": 4, "recompile": 1} and result.leaked_arrays == 6
    assert result.first_held == 2 and not any("does not grow" in v for v in result.verdict)
    assert result.stale_results == result.errors == 0 and result.matches == ""


def test_distreqx_the_same_distribution_in_equinox_reuses_its_program():
    # distreqx's README MultivariateNormalDiag under eqx.filter_jit: what distrax recompiles
    # and leaks for, an equal instance, reuses its program; an int leaf is hashed.
    # Every field in jit's key plays, its bijectors' private flags included: each compiles
    # when flipped and reuses its program when set back.
    result = _audit("distreqx_mvn_diag")
    flags = [
        f"{owner}_is_constant_{what}"
        for owner in ("scale._bijector.bijector.", "scale._bijector.", "scale.",
                      "bijector.bijectors[0].bijector.")
        for what in ("jacobian", "log_det")
    ] + ["bijector.bijectors[0]._is_constant_jacobian"]  # fmt: skip
    played = [(n, f, c) for f in flags for n, c in (("new_static", "1/1"), ("seen_static", "0/0"))]
    assert _cells(result) == [
        ("first_call", "", "1/1"), ("repeat_call", "", "0/0"), *played,
        ("same_shape_array", "scale._bijector.ndims", "1/1"),
        ("seen_static", "scale._bijector.ndims", "0/0"),
        ("same_shape_array", "scale.event_dims", "1/1"), ("seen_static", "scale.event_dims", "0/0"),
        ("same_shape_array", "bijector.bijectors[0].ndims", "1/0 n/a"),
        ("seen_static", "bijector.bijectors[0].ndims", "0/0"),
        ("same_shape_array", "loc", "0/0 ?"), ("new_shape_array", "loc", "1/1"),
        ("same_shape_array", "scale.diag", "0/0 ?"), ("new_shape_array", "scale.diag", "1/1"),
        ("same_shape_array", "distribution.distribution.loc", "0/0"),
        ("new_shape_array", "distribution.distribution.loc", "1/1"),
        ("equal_instance", "", "0/0"), ("other_instance", "", "0/0"),
    ]  # fmt: skip
    assert result.step("same_shape_array").role == "static (hashed leaf)"
    assert result.hazards() == {} and result.leaked_instances == result.leaked_arrays == 0
    assert any(
        v.startswith("`scale._bijector.ndims`, `scale.event_dims`: a number the call hashes")
        for v in result.verdict
    )


def test_lineax_tags_are_a_static_set_its_solve_hashes():
    # lineax docs, "Tags": without positive_semidefinite_tag the default solver is LU, not
    # Cholesky: linear_solve's eqx.filter_jit compiles once, and the tag back reuses its program.
    result = _audit("lineax_psd_operator")
    assert _cells(result) == [
        ("first_call", "", "2/2"), ("repeat_call", "", "0/0"),
        ("new_static", "tags", "1/1"), ("seen_static", "tags", "0/0"),
        ("same_shape_array", "matrix", "0/0"), ("new_shape_array", "matrix", "1/0 n/a"),
        ("equal_instance", "", "0/0"), ("other_instance", "", "0/0"),
    ]  # fmt: skip
    assert result.step("new_static").role == "static" and result.skipped == ()
    assert result.hazards() == {} and result.leaked_instances == 0
    assert result.matches == "equinox_filter_jit" and result.verdict[0].startswith("no hazard")


def test_a_flowjax_flow_compiles_again_for_every_new_flow():
    # coupling_flow's transformer_constructor is a closure made for each flow: eqx.filter_jit
    # hashes it by identity, so an equal flow compiles again and jit's caches keep it alive.
    result = _audit("flowjax_coupling")
    assert result.step("first_call").cell == "1/1" and result.step("repeat_call").cell == "0/0"
    statics = [(s.name, s.cell) for s in result.steps if s.name.endswith("_static")]
    assert statics[:20] == [("new_static", "1/1"), ("seen_static", "0/0")] * 10
    assert result.steps[2].field.endswith("bijections[0].transformer_constructor")
    assert result.steps[2].role == "static (hashed leaf)"
    assert result.step("equal_instance").cell == "1/1"
    assert result.hazards() == {"leak": 4, "recompile": 1} and result.leaked_arrays == 3
    assert result.first_held == 2 and not any("does not grow" in v for v in result.verdict)
    assert result.stale_results == result.errors == 0 and result.matches == ""


def test_an_ott_geometry_behind_a_jit_made_at_each_call_is_never_stale():
    # ott-jax README: jax.jit(linear.solve)(geom, a, b); the new wrapper shares the function's
    # programs. The first call compiles eager operations too, run while solve is traced.
    result = _audit("ott_point_cloud")
    first = result.step("first_call")
    assert first.outcome == "correct" and first.compiles > first.traces > 1
    # Its private settings in jit's key play too: a new cost scaling compiles, an epsilon
    # of the same shape is traced.
    assert _cells(result)[1:] == [
        ("repeat_call", "", "0/0"),
        ("new_static", "_scale_cost", "1/1"), ("seen_static", "_scale_cost", "0/0"),
        ("same_shape_array", "_epsilon_init", "0/0"), ("seen_static", "_epsilon_init", "0/0"),
        ("same_shape_array", "x", "0/0"), ("new_shape_array", "x", "1/0 n/a"),
        ("same_shape_array", "y", "0/0"), ("new_shape_array", "y", "1/0 n/a"),
        ("equal_instance", "", "0/0"), ("other_instance", "", "0/0"),
    ]  # fmt: skip
    assert result.hazards() == {} and result.leaked_instances == 0
    assert result.matches == "pytree_class"
    _no_stale_words(result)


def test_jax_cosmo_s_own_unflatten_raising_under_jit_alone_is_an_error():
    # Cosmology.tree_unflatten pops from list(...).reverse(), None, where gamma_growth is set:
    # only jit unflattens the object. Raised under jit and not without it: an error, where it
    # was raised named, failing assert_jit_safe as the hazard allow= accepts.
    result = _audit("cosmo_planck15_gamma")
    assert [s.cell for s in result.steps] == ["1/0 E"] and result.hazards() == {"error": 1}
    assert result.verdict[0].startswith(
        "the first call raises under jit, the call without jit does not: AttributeError: "
        "'NoneType' object has no attribute 'pop' (raised at jax_cosmo/core.py:"
    )
    # One field played: the first call raises before any is changed (and every field's values
    # are tried without jit first, a jax_cosmo call of seconds each).
    target = load_target("gallery_models:cosmo_planck15_gamma")
    with pytest.raises(AssertionError, match=r"is not jit-safe: error \(1\); allowed: none"):
        assert_jit_safe(target, fields="_flags")
    assert assert_jit_safe(target, fields="_flags", allow="error").errors == 1
    # The flag set in place, as the audit plays it: the steps jit unflattens it at raise.
    flags = _audit("cosmo_planck15", fields="_flags")
    assert [(s.name, s.cell) for s in flags.steps if s.hazard] == [
        ("new_static", "1/0 E"), ("other_instance", "1/0 E"),
    ]  # fmt: skip
    assert not any(line.startswith("not applicable") for line in flags.verdict)


def test_a_tfp_gaussian_process_is_walked_where_jit_flattens_it_and_leaks_its_arrays():
    # TFP keeps its kernel in _parameters (which its pytree never reads) and in _kernel (which
    # it flattens); its aux data holds closures made for each GP, which jit's cache keeps with
    # an array each: every new GP compiles again and stays alive by its arrays.
    result = _audit("tfp_gaussian_process")
    roles = {s.field: s.role for s in result.steps if s.field}
    assert roles["_kernel._amplitude"] == roles["_index_points"] == "traced"
    assert "attribute" not in roles.values()
    skipped = dict(result.skipped)
    assert skipped["_parameters['kernel']"] == "the same object as _kernel"
    assert skipped["_parameters['jitter']"].startswith("a private attribute jit never sees")
    assert result.step("equal_instance").cell == "1/1"
    assert (result.leaked_instances, result.leaked_arrays) == (0, 3)
    assert result.hazards() == {"leak": 3, "recompile": 1}
    assert result.to_dict()["leaked_arrays"] == 3  # the JSON counts them too
    assert result.verdict[0].startswith("a new instance built from the same field values compiles")
    assert result.verdict[1].startswith("3 arrays the scenario built stay alive")
    assert result.matches == "" and not any("built-in" in line for line in result.verdict)
    # A change neither jit nor the call reads (`?`) is said after the hazards, in an
    # assert_jit_safe failure too.
    target = load_target("gallery_models:tfp_gaussian_process")
    with pytest.raises(AssertionError) as failed:
        assert_jit_safe(target, fields=r"^_parameters\['jitter'\]$|^_jitter$")
    lines = str(failed.value).split("verdict:\n")[1].splitlines()
    assert lines[0].startswith("  - a new instance built from the same field values compiles")
    unknown = [n for n, line in enumerate(lines) if "whether jit sees them is not known" in line]
    assert unknown and unknown[0] > 1


def test_gpjax_s_library_objects_in_jit_s_key_are_listed_not_left_out():
    # RBF's compute_engine and Gaussian's integrator are aux data compared by identity, with
    # no field to change: listed with why. The posterior, an nnx.Module under jax.jit.
    result = _audit("gpjax_posterior")
    skipped = dict(result.skipped)
    for path, name in (("prior.kernel.compute_engine", "a DenseKernelComputation"),
                       ("likelihood.integrator", "an AnalyticalGaussianIntegrator")):  # fmt: skip
        assert skipped[path] == (
            f"{name} with no field to change, static data in jit's key (compared by "
            "identity): not played"
        )
    assert {s.role for s in result.steps if s.field} == {"static", "traced"}
    assert result.hazards() == {} and result.verdict[0].startswith("no hazard")
    assert result.matches == "flax_nnx_jit"


def test_sympy2jax_s_private_parameters_play_by_default():
    # SymbolicModule keeps its parameters (1.0, 2.0) in private attributes its pytree
    # flattens: in jit's key, they play by default, one of each group.
    result = _audit("sympy2jax_module")
    played = {s.field: s.role for s in result.steps if s.field}
    assert played["nodes[0]._args[0]._value"] == "traced"
    assert played["has_extra_funcs"] == "static"
    assert dict(result.skipped)["nodes[1]._args[0]._value"] == (
        "the same field as nodes[0]._args[0]._value (plays once)"
    )
    assert result.hazards() == {} and result.matches == "equinox_filter_jit"


def test_an_interpax_interpolator_hashes_its_extrap_bool_under_filter_jit():
    # Interpolator1D(x, f, method="cubic"): extrap=False is a bool leaf eqx.filter_jit hashes
    # (True compiles once, False back reuses its program); the knots and values are traced.
    # Its method, a static field, plays one of the methods its constructor checks it against
    # (METHODS): the three first, cubic ones, change nothing without jit (the derivatives are
    # computed when it is built), so the first plays, said so; a static field, it compiles.
    result = _audit("interpax_interpolator")
    assert _cells(result)[:6] == [
        ("first_call", "", "1/1"), ("repeat_call", "", "0/0"),
        ("new_static", "method", "1/1"), ("seen_static", "method", "0/0"),
        ("new_static", "extrap", "1/1"), ("seen_static", "extrap", "0/0"),
    ]  # fmt: skip
    assert result.step("new_static").how == (
        f"{fields.EQX_STATIC} ('cubic2' played; 'cubic2', 'cardinal' and 'catmull-rom' change "
        "nothing without jit)"
    )
    roles = {s.field: s.role for s in result.steps if s.field}
    assert roles["extrap"] == "static (hashed leaf)" and roles["x"] == roles["f"] == "traced"
    assert result.step("equal_instance").cell == result.step("other_instance").cell == "0/0"
    assert result.hazards() == {} and result.leaked_instances == result.leaked_arrays == 0
    assert result.matches == "equinox_filter_jit" and result.verdict[0].startswith("no hazard")


def test_a_blackjax_nuts_state_is_a_named_tuple_of_traced_arrays():
    # README "Quickstart": jax.jit(nuts.step)(key, state); the state fed back reuses its program.
    result = _audit("blackjax_nuts_state")
    assert [(s.field, s.cell) for s in result.steps if s.name == "same_shape_array"] == [
        ("position['loc']", "0/0"), ("logdensity", "0/0 ?"), ("logdensity_grad['loc']", "0/0"),
    ]  # fmt: skip
    assert result.step("equal_instance").cell == result.step("other_instance").cell == "0/0"
    assert result.hazards() == {} and result.leaked_instances is None
    assert result.unreferenced == ("HMCState",)  # a NamedTuple: weakref.ref refuses it
    assert result.matches == "" and result.verdict[0].startswith("no hazard")  # a '?' cell


def test_a_dynamax_shape_error_its_own_jit_raises_is_no_jit_hazard():
    # initial.probs of a new shape: hmm_filter (jitted inside dynamax) refuses the scan carry
    # of a new shape with or without the user's jit; only jax.disable_jit(), which runs the
    # scan as a Python loop, lets it through: n/a, not an error of jit's.
    result = _audit("dynamax_hmm_params", fields=r"^initial\.probs$")
    assert _cells(result) == [
        ("first_call", "", "1/1"), ("repeat_call", "", "0/0"),
        ("same_shape_array", "initial.probs", "0/0 ?"),
        ("new_shape_array", "initial.probs", "1/0 n/a"),
        ("equal_instance", "", "0/0"), ("other_instance", "", "0/0"),
    ]  # fmt: skip
    assert result.hazards() == {} and result.errors == 0
    assert result.verdict[0].startswith("no hazard")
    assert any("TypeError: scan body function carry input and" in v for v in result.verdict)


def test_a_penzai_state_variable_the_call_updates_is_traced_and_written_back():
    # pz.variable_jit traces both Variables' values and writes the counter back: each new
    # value reuses the program, a new shape compiles once (an independent script agrees).
    result = _audit("penzai_counted")
    assert _cells(result) == [
        ("first_call", "", "1/1"), ("repeat_call", "", "0/0"),
        ("same_shape_array", "scale.value", "0/0"), ("new_shape_array", "scale.value", "1/1"),
        ("same_shape_array", "count.value", "0/0"), ("new_shape_array", "count.value", "1/1"),
        ("equal_instance", "", "0/0"), ("other_instance", "", "0/0"),
    ]  # fmt: skip
    assert {s.role for s in result.steps if s.field} == {"traced"}
    assert result.hazards() == {} and result.leaked_instances == result.leaked_arrays == 0


def test_a_penzai_layer_behind_variable_jit_is_never_stale():
    # pz.variable_jit passes the Parameter's value to jax.jit: new values reuse the program.
    result = _audit("penzai_linear")
    assert [s.cell for s in result.steps] == ["1/1", "0/0", "1/0 n/a", "0/0", "1/0 n/a", "0/0",
                                              "0/0", "1/0 n/a", "0/0", "0/0"]  # fmt: skip
    # The weight by its public path (a Parameter's .value), traced: variable_jit passes it.
    assert result.step("same_shape_array").field == "weights.value.data_array"
    assert result.step("same_shape_array").role == "traced"
    # Its named axes are in jit's key (a new one traces again): not an "attribute".
    assert result.step("new_static").role == "static"
    assert result.hazards() == {} and result.leaked_instances == result.leaked_arrays == 0
    assert result.verdict[0].startswith("no hazard")


def test_penzai_s_two_ways_are_offered_for_a_model_holding_variables():
    """penzai documents pz.variable_jit and jax.jit on frozen variables: advise builds both
    (the one the call is written with named so), neither stale; a call that writes a
    StateVariable gets no frozen way (what it writes would be lost)."""
    from jitbench import advise_object

    def advise(name: str, **kwargs):
        # without the cache-filled first calls' fresh processes (tests/test_advise.py's)
        return advise_object(f"gallery_models:{name}", repeat=1, cold_calls=1,
                             instructions=False, restarts=False, **kwargs)  # fmt: skip

    written = advise("penzai_linear")
    assert written.kind == "penzai model (with Variables)"
    assert [r.way for r in written.rows] == ["as written", "pz.variable_jit",
                                              "jax.jit, frozen variables"]  # fmt: skip
    assert written.row("pz.variable_jit").reason == (
        "the call as written already jits with pz.variable_jit"
    )
    frozen = written.row("jax.jit, frozen variables")
    assert frozen.built and frozen.hazards == () and frozen.compiles == 1
    assert "pz.freeze_variables(model)" in frozen.code
    eager = advise("penzai_linear", call="__call__")
    assert all(r.built and r.hazards == () for r in eager.rows)
    assert eager.recommended in ("pz.variable_jit", "jax.jit, frozen variables")
    counted = advise("penzai_counted")
    assert counted.row("jax.jit, frozen variables").reason.startswith(
        "the call writes into the object without jit (`count.value`)"
    )


def test_a_jumanji_env_resized_in_place_is_refused_by_its_plain_step_too():
    # Snake's step samples a fruit in a lax.cond branch: jit (made at every call, as the
    # README writes jax.jit(env.step)) traces both branches and the board of the old size no
    # longer fits num_rows * num_cols; so does env.step with no jit at all (an independent
    # script agrees): only jax.disable_jit(), running the one branch taken, lets it through.
    # Not jit's error: n/a, and assert_jit_safe fails on what is jit's alone.
    from jitbench.ways.subject import LETS_THROUGH

    result = _audit("jumanji_snake")
    refused = [s for s in result.steps if s.outcome == "n/a"]
    assert [(s.field, s.cell) for s in refused] == [
        ("num_rows", "1/0 n/a"),
        ("num_cols", "1/0 n/a"),
    ]
    assert all(s.error.startswith("ValueError: p must be None or a 1D vector with the same size")
               and s.error.endswith(LETS_THROUGH) for s in refused)  # fmt: skip
    assert result.errors == 0 and result.hazards() == {"recompile": 5}
    assert result.verdict[0].startswith(
        "the same call again, nothing changed, compiles again: at every call, so every later "
        "step where nothing new was seen compiles again too (4 steps: "
    )
    assert result.matches == "jit_per_call"
    target = load_target("gallery_models:jumanji_snake")
    with pytest.raises(AssertionError, match=r"is not jit-safe: recompile \(5\); allowed: none"):
        assert_jit_safe(target)
    assert assert_jit_safe(target, allow="recompile").errors == 0


def test_an_interpolator_s_text_verdict_quotes_each_field_s_own_error(capsys):
    # Its fill_value and grid[0] of a new shape both raise a ValueError without jit, each its
    # own: the text's line for each quotes the error its step (and --format json) records.
    from jitbench.cli import render

    result = _audit("grid_interpolator")
    refused = {s["field"]: s["error"] for s in result.to_dict()["steps"] if s["outcome"] == "n/a"}
    assert refused == {
        "fill_value": "ValueError: Incompatible shapes for broadcasting: shapes=[(3,), (2,), (3,)]",
        "grid[0]": "ValueError: a should be 1-dimensional",
        # set in place, a value no user can build: the constructor's own words, not the call's
        "bounds_error": "RegularGridInterpolator's constructor refuses bounds_error=True: "
        "NotImplementedError: `bounds_error` takes no effect under JIT",
    }
    render.object_audit(result, "grid_interpolator", explain=False)
    lines = capsys.readouterr().out.splitlines()
    for field, error in refused.items():
        (line,) = [x for x in lines if x.startswith("  - not applicable") and f"`{field}`" in x]
        said = error if field == "bounds_error" else f"the call raises without jit too: {error}"
        assert line.endswith(f"(`{field}`): {said}")
    assert result.matches == ""  # an error, a '?': cells no built-in has


@pytest.mark.parametrize("name", ["gymnax_cartpole_params", "pgx_state"])
def test_a_call_jitted_once_is_likened_to_no_built_in_whose_cells_it_lacks(name):
    # Both jitted once (gymnax's params into CartPole's step, pgx's README loop): the first
    # call one explained program, the repeat 0/0. Never eager (no jit, nothing cached); and
    # their '?' steps (a change that leaves the result as it was) and pgx's loop steps are
    # cells no built-in has: no analogy at all.
    result = _audit(name)
    assert result.step("first_call").cell == "1/1" and result.step("first_call").explanations
    assert result.step("repeat_call").cell == "0/0"
    assert any(s.outcome == "unjudged" for s in result.steps)
    assert result.matches == "" and not any("built-in" in line for line in result.verdict)
    assert result.verdict[0].startswith("no hazard") and result.leaked_instances == 0


def test_a_users_flax_struct_dataclass_behaves_like_flax_struct_dataclass():
    # A @flax.struct.dataclass has no base class of flax's: its kind says flax made it, and
    # flax_struct_dataclass, of its kind, has every cell of its audit.
    result = _audit("flax_struct_affine")
    assert [s.cell for s in result.steps] == ["1/1", "0/0", "1/1", "0/0", "0/0", "1/1", "0/0",
                                              "1/1", "0/0", "0/0"]  # fmt: skip
    assert result.matches == "flax_struct_dataclass"
    assert result.verdict[-1].startswith("behaves like the built-in strategy flax_struct_dataclass")


def test_a_sparse_bcoo_matrix_is_a_pytree_whose_leak_is_checked():
    # BCOO has a shape and a dtype, yet jax.tree_util flattens it into its data and indices:
    # no array. A weak reference reaches it, so its instances' leak is checked (none).
    from jitbench.targets import kinds

    target = load_target("gallery_models:sparse_bcoo")
    assert not kinds.is_array(target.obj) and kinds.object_kind(target.obj) == "pytree"
    result = _audit("sparse_bcoo")
    assert result.leaked_instances == result.leaked_arrays == 0 and result.unreferenced == ()
    assert not any("weak" in line for line in result.verdict)
    assert result.verdict[0].startswith("no hazard") and result.matches == "pytree_class"


def test_gymnax_s_catch_is_registered_as_shipped_and_its_code_runs():
    """gymnax jits Catch's step with a static self: stale for a field set in place, every env
    kept. Its two ints are static data: registered as a pytree (the class as shipped, its step
    reached through the jit's __wrapped__) or passed to a helper, it is never stale and keeps
    none; the recommended code, run as printed in a fresh process, agrees."""
    from jitbench import advise_object

    advice = advise_object("gallery_models:gymnax_catch", repeat=1, cold_calls=1,
                           instructions=False, restarts=False)  # fmt: skip
    rows = {r.way: r for r in advice.rows}
    assert {"stale", "leak"} <= set(rows["as written"].hazards)
    assert rows["pytree registration"].hazards == rows["helper function"].hazards == ()
    assert "leak" in rows["static self, value hash"].hazards
    assert advice.recommended in ("pytree registration", "helper function")
    code = rows[advice.recommended].code
    assert code.startswith("from gymnax.environments import Catch\n\n")
    assert "Catch.step.__wrapped__" in code and "Catch.__" not in code
    assert "in its place" not in code and "decorator removed" not in code
    assert "jax.tree_util.register_pytree_node(Catch, lambda o: ((), (o.rows, o.columns))" in (
        rows["pytree registration"].code
    )
    assert advice.refused == () and advice.checks == (
        f"{advice.recommended}: its code, run as printed in a fresh process on a new object "
        "and audited: never stale, never raising, nothing kept alive",
    )


def test_quax_s_lora_is_judged_against_its_quaxified_call():
    """jax.jit(quax.quaxify(run)): the oracle is the call without the jit alone, quaxify kept
    (run alone cannot multiply a LoraArray), and the audit names the call it audits."""
    from jitbench.ways.calls import unjitted
    from jitbench.ways.names import names_of

    target = load_target("gallery_models:quax_lora")
    assert type(unjitted(target)).__name__ == "_Quaxify"
    assert target.call_name == "gallery_models.lora_call"
    names = names_of(target, unjitted(target))
    assert (names.fn, names.unjitted) == ("lora_call.__wrapped__", "lora_call without its jit")
    # A library's function jitted in the user's module is read through that jit, by the name
    # the user's module gives it (jax_cosmo's own module names the raw function alike).
    cosmo = load_target("gallery_models:cosmo_planck15")
    assert names_of(cosmo, unjitted(cosmo)).fn == "angular_diameter_distance.__wrapped__"
    result = _audit("quax_lora")
    assert result.hazards() == {} and result.step("first_call").cell == "1/1"
    assert result.step("repeat_call").cell == "0/0"


def test_a_jumanji_time_limit_is_played_at_a_value_that_changes_the_step():
    # jax.jit(env.step) made once and kept: time_limit=8000 and 2000 leave the first step as
    # it was; 1 ends the episode there (step_type LAST without jit), which the kept step never
    # sees: its trace keeps 4000. As the README writes it, at the call, it compiles at every
    # call and sees it.
    result = _audit("jumanji_snake_kept", fields="time_limit")
    step = result.step("new_static")
    assert (step.field, step.cell) == ("time_limit", "0/0!")
    assert step.how == "setattr (1 played; 8000 and 2000 change nothing without jit)"
    assert result.verdict[0].startswith("`time_limit` set to a new value in place is not seen")
    written = _audit("jumanji_snake", fields="time_limit")
    assert [s.cell for s in written.steps][1:4] == ["1/1", "1/1", "1/1"]
    assert written.step("new_static").outcome == "correct"


def test_a_value_the_interpolators_constructor_refuses_is_not_applicable():
    # JAX's RegularGridInterpolator: its constructor compares method with ("linear",
    # "nearest") and refuses bounds_error=True. "nearest" plays (aux data: it compiles); True
    # set in place raises under jit alone (its unflatten runs the constructor), but no user
    # can build it: n/a with the constructor's words, no error to trade speed for.
    result = _audit("grid_interpolator")
    statics = {s.field: s for s in result.steps if s.name == "new_static"}
    assert statics["method"].cell == "1/1" and statics["method"].outcome == "correct"
    assert statics["bounds_error"].cell == "1/0 n/a"
    assert statics["bounds_error"].error == (
        "RegularGridInterpolator's constructor refuses bounds_error=True: "
        "NotImplementedError: `bounds_error` takes no effect under JIT"
    )
    assert result.errors == result.stale_results == 0
    assert any(line.startswith("not applicable: a flag set to a value not seen before "
                               "(`bounds_error`): RegularGridInterpolator's constructor refuses")
               for line in result.verdict)  # fmt: skip


def test_a_linen_dense_plays_its_dtype_and_precision():
    # nn.Dense's annotations declare a dtype (numpy.dtype in the union) and jax.lax.Precision:
    # bfloat16 and Precision.DEFAULT play; the module is static, so each compiles.
    result = _audit("linen_dense")
    statics = [(s.field, s.cell) for s in result.steps if s.name == "new_static"]
    assert [f for f, _ in statics] == ["features", "use_bias", "dtype", "param_dtype",
                                       "precision", "kernel_init", "bias_init",
                                       "promote_dtype"]  # fmt: skip
    assert dict(statics)["dtype"] == dict(statics)["precision"] == "1/1"
    assert result.step("new_static").outcome == "n/a"  # features: the params have 4 columns
    assert result.stale_results == result.errors == 0
    assert not any(field in ("dtype", "precision", "param_dtype") for field, _ in result.skipped)


def test_an_operation_returning_another_irreps_array_plays_no_loop():
    # e3nn's tensor_square returns an IrrepsArray of other irreps and 10 values for one of 4:
    # the output of an operation, new to jit, not a state a loop feeds back and recompiles.
    result = _audit("e3nn_tensor_square")
    assert [s.name for s in result.steps] == [
        "first_call", "repeat_call", "same_shape_array", "new_shape_array", "equal_instance",
        "other_instance",
    ]  # fmt: skip
    assert [s.cell for s in result.steps] == ["1/1", "0/0", "0/0", "1/1", "0/0", "0/0"]
    assert result.hazards() == {} and result.leaked_arrays == 0
    assert not any("loop" in line or "compiles again" in line for line in result.verdict)


def test_a_stepper_jitted_once_per_object_compiles_for_every_new_one():
    # exponax's rollout jitted per stepper: each new stepper (eqx.tree_at, an equal one too)
    # gets its own jit and compiles, its values seen or not. Nothing is hashed: a field's
    # label stays the walk's, and no line says a value seen before reuses its program.
    result = _audit("exponax_stepper", fields=r"^(dt|num_points)$")
    assert [(s.name, s.field, s.cell) for s in result.steps if s.field == "dt"] == [
        ("same_shape_array", "dt", "1/1"), ("seen_static", "dt", "1/1"),
    ]  # fmt: skip
    assert {s.role for s in result.steps if s.field} == {"traced number"}
    assert result.step("equal_instance").cell == "1/1"
    assert result.verdict[0].startswith(
        "every new object compiles again, whatever its values, and the same object called "
        "again does not (4 steps where jit had seen every value: "
    )
    assert not any("hashes" in line or "reuses its program" in line for line in result.verdict)
    # num_points refused with and without jit, inside the trace: what that failed trace closed
    # over is no leak of the stepper's.
    assert result.step("same_shape_array").cell == "1/0 n/a"
    assert result.leaked_instances == 0 and result.leaked_arrays == 0


def test_a_class_registered_with_python_callbacks_is_not_said_to_flatten_in_cpp():
    # jax_dataclasses registers its dataclasses with register_pytree_node and Python
    # callbacks: the analogy says how jit flattens it, as tried, never register_dataclass's C++.
    from jitbench.targets.kinds import flattened_in_python

    assert flattened_in_python(load_target("gallery_models:jdc_dataclass").obj) is True
    result = _audit("jdc_dataclass")
    assert result.hazards() == {} and result.matches == "pytree_class"
    assert result.verdict[-1].endswith(
        "at every step of its audit; jit flattens it by Python code at every call, as it "
        "flattens that strategy's class"
    )
    assert not any("C++" in line for line in result.verdict)
