"""The scenario a user plays on an object, as a built-in strategy's subject plays it."""

from __future__ import annotations

import numpy as np
import pytest
from jax_releases import runnable

import jitbench
from jitbench import vocabulary
from jitbench.auditing import scenario
from jitbench.devices import resolve
from jitbench.strategies.codegen import Shape, arrays_of, fields_of, statics_of
from jitbench.targets.fields import IN_PLACE
from jitbench.vocabulary import Outcome, StepName
from jitbench.ways.subject import Generated

NAMES = list(jitbench.STRATEGIES)


def test_the_tables():
    assert list(vocabulary.CHANGES) == [
        "new_static",
        "seen_static",
        "same_shape_array",
        "new_shape_array",
        "equal_instance",
        "other_instance",
    ]
    assert vocabulary.SCENARIO == ("first_call", "repeat_call", *vocabulary.CHANGES)
    assert vocabulary.CALLS == vocabulary.SCENARIO[:2]
    assert list(StepName) == [*vocabulary.SCENARIO, *vocabulary.FED_BACK]
    # other_instance is a cold call: every change but it is timed after.
    assert vocabulary.TIMED_CHANGES == tuple(vocabulary.CHANGES)[:-1]
    assert scenario.SCENARIO is vocabulary.SCENARIO
    # asv names a parameter by its repr: a change reads as its plain string there.
    assert repr(vocabulary.TIMED_CHANGES[0]) == "'new_static'"
    # A seen step compiles only where jit misses what it saw; the changes to new values are
    # not seen ones.
    assert StepName.NEW_STATIC not in vocabulary.SEEN
    assert StepName.REPEAT_CALL in vocabulary.SEEN


def _played(subject: Generated) -> list[tuple[str, str, dict]]:
    """Every step of the scenario with the field it changed and the object's fields then."""
    play = scenario.Play(subject, subject.fields(subject.new())[0])
    seen = []

    def visit(name):
        seen.append((name, play.changed[-1][0], fields_of(play.obj), play.obj))
        return Outcome.CORRECT

    scenario.replay(play, visit)
    return seen


@pytest.mark.parametrize("device", ["cpu", "cpu-sharded"])
@pytest.mark.parametrize("name", runnable(NAMES))
def test_changes_in_scenario_order(name, device):
    strategy = jitbench.get_strategy(name)
    placement = resolve(device)
    subject = Generated(strategy, placement, 10)
    length = placement.round_size(10)
    (y,) = subject.target.inputs
    assert y.shape == (length,)
    # The subject's call is the method on its argument: NumPy's result for its fields.
    obj = subject.new()
    expected = jitbench.reference_calc(arrays_of(obj), statics_of(obj), y, 1)
    np.testing.assert_allclose(subject.call(obj)(), expected, rtol=1e-5, atol=1e-5)
    steps = _played(subject)
    assert [s[0] for s in steps] == list(scenario.SCENARIO)
    owner = f"{strategy.holder}." if strategy.holder else ""  # the object holding the fields
    assert [s[1] for s in steps] == ["", "", *[owner + "s0"] * 2, *[owner + "a0"] * 2, "", ""]
    fields = [s[2] for s in steps]
    objects = [s[3] for s in steps]
    first = fields[0]["a0"]
    # Frozen styles build a new object for a change, the others change it in place; the
    # new-instance steps always build one.
    frozen = any(f.how not in IN_PLACE for f in subject.fields(obj)[0])
    for i, name in enumerate(vocabulary.CHANGES, start=2):
        new_object = frozen or name.endswith("_instance")
        assert (objects[i] is not objects[i - 1]) == new_object, name
        assert type(objects[i]) is type(objects[0])
    assert (fields[1]["s0"], fields[2]["s0"], fields[3]["s0"]) == (1, 2, 1)
    assert fields[2]["a0"] is first
    assert fields[4]["a0"].shape == (length,) and not np.array_equal(fields[4]["a0"], first)
    assert fields[5]["a0"].shape == (2, length)
    assert len(fields[5]["a0"].sharding.device_set) == placement.n_devices
    assert all(fields[6][k] is fields[5][k] for k in fields[5])  # an equal instance
    assert fields[7]["s0"] == 2 and fields[7]["a0"].shape == (length,)
    assert not np.array_equal(fields[7]["a0"], first)  # other values


def test_every_field_plays_in_turn():
    subject = Generated(jitbench.get_strategy("helper_function"), resolve("cpu"), 8,
                        Shape(n_arrays=2, n_static=2))  # fmt: skip
    steps = _played(subject)
    assert [(s[0], s[1]) for s in steps[2:-2]] == [
        ("new_static", "s0"), ("seen_static", "s0"), ("new_static", "s1"), ("seen_static", "s1"),
        ("same_shape_array", "a0"), ("new_shape_array", "a0"),
        ("same_shape_array", "a1"), ("new_shape_array", "a1"),
    ]  # fmt: skip
    at = {(s[0], s[1]): s[2] for s in steps}
    assert (at["new_static", "s0"]["s0"], at["new_static", "s0"]["s1"]) == (2, 1)
    # a0 is set back to its shape before a1 plays: every field meets the first call's shapes.
    assert at["same_shape_array", "a1"]["a0"].shape == (8,)
    assert at["new_shape_array", "a1"]["a1"].shape == (2, 8)


def test_probe_follows_the_subject():
    strategy = jitbench.get_strategy("pytree_class")
    subject = Generated(strategy, resolve("cpu"), 8, probe=True)
    assert type(_played(subject)[-1][3]) is strategy.make_class(probe=True)


def test_the_call_after_a_change_is_the_scenario_played_to_it():
    subject = Generated(jitbench.get_strategy("helper_function"), resolve("cpu"), 8)
    played = subject.fields(subject.new())[0]
    with jitbench_compiles() as stats:
        call = scenario.call_after(subject, "seen_static", played)
    # The first call and the new flag's program, twice: the first setup of a process also
    # plays the change itself to judge it (the old value's call compiles nothing).
    assert stats.compiles == 4
    with jitbench_compiles() as stats:
        call()
    assert stats.compiles == 0  # the flag's old value: a program seen before
    with jitbench_compiles() as stats:
        scenario.call_after(subject, "seen_static", played)
    assert stats.compiles == 2  # judged once per process
    with pytest.raises(jitbench.JitbenchError, match="unknown change 'x'; valid: new_static"):
        scenario.call_after(subject, "x", played)
    aot = Generated(jitbench.get_strategy("aot_compiled"), resolve("cpu"), 8)
    with pytest.raises(NotImplementedError, match="aot_compiled raises on new_shape_array"):
        scenario.call_after(aot, "new_shape_array", played)


def test_a_change_the_call_cannot_take_has_no_call_after_it():
    """asv records n/a (not a failure) for a change the audit calls n/a: an equinox MLP given
    an input layer's weight of a new shape raises without jit too."""
    from jitbench.ways.subject import subject_of

    spec, call, inputs = "user_models:mlp", "user_models:forward", "user_models:vector"
    subject = subject_of(jitbench.load_target(spec, call=call, inputs=inputs))
    played = [f for f in subject.fields(subject.new())[0] if f.path == "layers[0].weight"]
    with pytest.raises(NotImplementedError, match=r"new_shape_array: not applicable: .*dot_gen"):
        scenario.call_after(subject, "new_shape_array", played)
    assert scenario.call_after(subject, "same_shape_array", played)() is not None


def jitbench_compiles():
    from jitbench.compiles import count_compiles

    return count_compiles()
