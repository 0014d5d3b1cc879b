"""Loading a user's object as a target: what it calls, and every way loading fails."""

from __future__ import annotations

import os

import numpy as np
import pytest
import user_models

import jitbench
from jitbench.targets import Target, load_target


def test_a_factory_returning_the_object_with_call_and_inputs_named():
    target = load_target("user_models:custom_class", call="calc", inputs="user_models:vector")
    assert isinstance(target.obj, user_models.CustomClass)
    assert target.name == "user_models:custom_class" and target.call == "calc"
    assert target.factory is user_models.custom_class
    np.testing.assert_allclose(target.function()(), target.obj.x * user_models.vector())
    other = target.new_instance()
    assert isinstance(other, user_models.CustomClass) and other is not target.obj


def test_a_factory_returning_a_target():
    target = load_target("user_models:value_hash_target")
    assert (target.call, len(target.inputs)) == ("calc", 1)
    assert target.factory is user_models.value_hash_target
    assert isinstance(target.new_instance(), user_models.ValueHashClass)


def test_a_function_taking_the_object():
    target = load_target("user_models:mlp", call="user_models:forward", inputs="user_models:vector")
    assert target.call is user_models.forward
    assert target.call_name == "user_models.forward"
    np.testing.assert_allclose(target.function()(), target.obj(user_models.vector()), rtol=1e-5)


def test_single_input_is_one_argument_and_default_call_is_dunder_call():
    target = load_target("user_models:scaled", inputs="user_models:vector")
    assert target.call == "__call__" and len(target.inputs) == 1
    assert Target(3).name == "int" and Target(3, [1, 2]).inputs == (1, 2)


@pytest.mark.parametrize(
    "spec, call, inputs, message",
    [
        ("user_models.custom_class", None, None,
         "target 'user_models.custom_class' must be package.module:name, with a ':'"),
        ("no_such_module_jb:f", None, None,
         "target 'no_such_module_jb:f': cannot import module 'no_such_module_jb': "
         "ModuleNotFoundError: No module named 'no_such_module_jb'"),
        ("broken_model:make", None, None,
         "target 'broken_model:make': cannot import module 'broken_model': "
         "RuntimeError: CUDA is not available"),
        ("user_models:nope", None, None,
         "target 'user_models:nope': 'user_models' has no attribute 'nope'"),
        ("user_models:NOT_A_FACTORY", None, None,
         "target 'user_models:NOT_A_FACTORY' is not callable: it is a int"),
        ("user_models:missing_weights", None, None,
         "target factory 'user_models:missing_weights' raised "
         "FileNotFoundError: no checkpoint at /models/mlp.eqx"),
        ("user_models:custom_class", "calcc", None,
         "target 'user_models:custom_class' (CustomClass) has no method 'calcc'; "
         "its methods: calc"),
        ("user_models:custom_class", "x", None,
         "target 'user_models:custom_class' (CustomClass) has a non-callable attribute 'x'; "
         "its methods: calc"),
        ("user_models:custom_class", "user_models:nope", None,
         "call 'user_models:nope': 'user_models' has no attribute 'nope'"),
        ("user_models:custom_class", "calc", "user_models:wrong_inputs",
         "inputs 'user_models:wrong_inputs' raised ValueError: batch size must be positive"),
        ("user_models:custom_class", "calc", "user_models:NOT_A_FACTORY",
         "inputs 'user_models:NOT_A_FACTORY' is not callable: it is a int"),
    ],
)  # fmt: skip
def test_every_loading_failure_is_one_line_naming_the_value(spec, call, inputs, message):
    with pytest.raises(jitbench.JitbenchError) as info:
        load_target(spec, call=call, inputs=inputs)
    assert str(info.value) == message


def test_new_instance_without_factory_is_an_error():
    with pytest.raises(jitbench.JitbenchError, match="has no factory"):
        Target(user_models.custom_class()).new_instance()


def test_the_oracle_s_copy_of_an_nnx_state_flattens_as_the_state_does():
    # copy.deepcopy of an nnx Variable flattens as one leaf (flax 0.12), not as the node jit
    # returns: the oracle's result then differed from jit's "in structure" on every call.
    import jax
    from flax import nnx

    from jitbench.targets.snapshot import snapshot

    _, state = nnx.split(nnx.Linear(2, 3, rngs=nnx.Rngs(0)))
    held = {"state": state, "w": nnx.Param(jax.numpy.ones(2))}
    copied = snapshot(held)
    assert jax.tree.structure(copied) == jax.tree.structure(held)
    assert copied["state"] is not state and copied["w"] is not held["w"]
    pairs = zip(jax.tree.leaves(copied), jax.tree.leaves(held), strict=True)
    assert all(a is b for a, b in pairs)


def test_an_error_whose_message_holds_a_traceback_reads_as_the_error_it_ends_in():
    from jitbench.errors import error_text

    message = (
        "Non-hashable static arguments are not supported. The error was:\n"
        "Traceback (most recent call last):\n"
        '  File "x.py", line 1, in value\n'
        "    return np.asarray(x)\n"
        "TracerArrayConversionError: __array__() was called on traced array\n"
        "The error occurred while tracing the function <lambda> at x.py:2 for jit.\n"
    )
    assert error_text(ValueError(message)) == (
        "ValueError: Non-hashable static arguments are not supported. The error was: "
        "TracerArrayConversionError: __array__() was called on traced array"
    )
    long = error_text(ValueError("word " * 100))
    assert long.endswith("word ...") and len(long) <= len("ValueError: ") + 300 + 4
    # A long repr after a sentence: cut after the sentence, not inside the repr.
    hashing = error_text(ValueError(
        "Non-hashable static arguments are not supported. An error occurred while trying to "
        "hash an object of type <class 'Transformed'>, Transformed( base_dist=Normal( "
        + "shape=(2,), " * 40 + ")"
    ))  # fmt: skip
    assert hashing == "ValueError: Non-hashable static arguments are not supported. ..."


def test_every_entry_point_takes_every_target_form():
    """One target form for audit_object, time_object, advise_object and assert_jit_safe
    (jitbench.targets.as_target): a spec, a factory, a Target or the object, with call and
    inputs as specs, functions or values."""
    import user_models

    import jitbench
    from jitbench.targets import as_target

    spec = "user_models:custom_class_target"
    forms = [spec, user_models.custom_class_target, load_target(spec), load_target(spec).obj]
    for form in forms:
        target = as_target(form, call="calc", inputs="user_models:vector")
        assert type(target.obj) is user_models.CustomClass and target.call == "calc"
        assert len(target.inputs) == 1 and target.inputs[0].shape == user_models.vector().shape
    assert as_target(spec).factory is not None and as_target(spec).name == spec
    by_spec = jitbench.audit_object(spec)
    by_factory = jitbench.audit_object(user_models.custom_class_target)
    assert [s.cell for s in by_spec.steps] == [s.cell for s in by_factory.steps]
    timed = jitbench.time_object(spec, repeat=1, cold_calls=1, after_runs=0)
    assert timed.cached.median > 0
    with pytest.raises(jitbench.JitbenchError, match="has no method 'nope'"):
        jitbench.audit_object(spec, call="nope")


def test_a_child_process_imports_the_target_from_where_asv_found_it(tmp_path, monkeypatch):
    """asv imports its suite folder (no __init__.py) through a finder of its own, not from
    sys.path; a process jitbench starts from a benchmark imports the target module from the
    same folder, and nothing else beside it (a project's own package at the repository's
    root must come from the environment, as installed at the commit measured)."""
    import subprocess
    import sys

    from asv_runner._aux import update_sys_path

    from jitbench.targets import child_environment, import_roots, resolve_name

    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "targets.py").write_text("def make():\n    return 'made'\n")
    (tmp_path / "mylib").mkdir()  # the checkout's package, beside the suite folder
    (tmp_path / "mylib" / "__init__.py").write_text("")
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    update_sys_path(str(tmp_path / "suite"))  # what asv does in a benchmark process
    spec = "suite.targets:make"
    assert resolve_name(spec, "target")() == "made"
    assert import_roots([spec, "numpy:ones", None]) == {"suite": str(tmp_path)}
    probe = (
        "import importlib.util, sys; from jitbench.targets import resolve_name; "
        f"print(resolve_name({spec!r}, 'target')(), importlib.util.find_spec('mylib'))"
    )
    env = {**os.environ, **child_environment([spec])}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert done.stdout.split() == ["made", "None"], done.stderr
    alone = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert "cannot import module 'suite.targets'" in alone.stderr
    sys.modules.pop("suite.targets", None)
    sys.modules.pop("suite", None)


def test_an_array_is_what_jax_tree_util_takes_for_a_leaf_not_a_registered_class():
    """A sparse BCOO matrix has a shape and a dtype and comes from JAX, yet jax.tree_util
    flattens it into its data and indices: a pytree class, not an array (its kind says so,
    and a weak reference reaches it, so its leak is checked)."""
    import weakref

    import jax.numpy as jnp
    from jax.experimental import sparse

    from jitbench.targets import kinds

    matrix = sparse.BCOO.fromdense(jnp.eye(3))
    assert not kinds.is_array(matrix) and kinds.object_kind(matrix) == "pytree"
    assert weakref.ref(matrix)() is matrix
    assert kinds.is_array(matrix.data) and kinds.is_array(np.ones(2))
    assert kinds.is_array(jnp.ones(2)) and not kinds.is_array(2.0)
