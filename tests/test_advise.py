"""``jitbench advise``: every way of jitting a user's call, built from the user's object,
audited and timed alike; the recommended way is never stale. No timing is asserted."""

from __future__ import annotations

import dataclasses
import functools
import json

import jax
import pytest

import jitbench
from jitbench.advise import BY_COUNTS, BY_TIME, HANDED_OVER, Advice, advise_object
from jitbench.cli import main, render
from jitbench.compiles import count_compiles, read_back
from jitbench.measure import advising, diskcache
from jitbench.measure.case import Row
from jitbench.measure.sampling import Spread
from jitbench.targets import load_target
from jitbench.ways.calls import unjitted
from jitbench.ways.catalog import AS_WRITTEN, BOUND_METHOD_JIT, kind_of, ways_for
from jitbench.ways.names import names_of
from jitbench.ways.subject import WaySubject, way_subject

SEED = "user_models:custom_class_target"
# The value-hashed static self returns stale results on JAX 0.9.0 to 0.10.2 (the audit's
# release history, tests/test_audit.py): the same object found equal in jit's cache.
VALUE_HASH_STALE = (0, 9) <= tuple(int(p) for p in jax.__version__.split(".")[:2]) < (0, 11)
EQX = ("equinox_mlp:mlp", "equinox_mlp:forward", "equinox_mlp:batch")
EQX_FIELDS = "layers[0]."
VECTOR = "user_models:vector"
FLAX_FIELDS = r"^linear_out\.bn\.use_running_average$|^linear_in\.linear\.w$"


@functools.cache
def _advice(spec: str, call: str | None = None, inputs: str | None = None, **kw):
    # Measured here, without the fresh processes of the cache-filled first calls: the tests
    # of those run the command line.
    return advise_object(
        spec, call=call, inputs=inputs, repeat=1, cold_calls=1, instructions=False,
        restarts=False, **kw,
    )  # fmt: skip


@pytest.fixture
def examples(monkeypatch):
    monkeypatch.syspath_prepend("docs/examples")


def test_unjitted_finds_the_method_under_each_jit_wrapper():
    import user_models

    target = load_target(SEED)
    assert unjitted(target) is user_models.CustomClass.calc.__wrapped__
    eqx_target = load_target("user_models:mlp", call="user_models:forward")
    assert unjitted(eqx_target) is user_models.forward.__wrapped__
    nnx_target = load_target("user_models:linear", call="user_models:apply")
    assert unjitted(nnx_target).__name__ == "apply"


def _clipping(method):
    """A decorator of the user's own, as numpyro's ``@validate_sample``: no jit."""

    @functools.wraps(method)
    def clipped(self, y):
        return jax.numpy.clip(method(self, y), -1.0, 1.0)

    return clipped


class _Clipped:
    def __init__(self, x):
        self.x = x

    @_clipping
    def calc(self, y):
        return self.x * y


def test_a_decorator_of_the_user_s_own_stays_in_the_raw_call():
    obj = _Clipped(jax.numpy.full(3, 4.0))
    target = jitbench.Target(obj, (jax.numpy.ones(3),), call="calc")
    assert unjitted(target) is _Clipped.calc  # the clipping wrapper, not the bare body
    advice = advise_object(target, repeat=1, cold_calls=1, instructions=False)
    assert {row.way: row.hazards for row in advice.rows if row.built}["pytree registration"] == ()
    assert float(unjitted(target)(obj, jax.numpy.ones(3))[0]) == 1.0


@pytest.mark.parametrize(
    ("spec", "call"),
    [(SEED, None), ("user_models:tempered", "user_models:forward"),
     ("user_models:linear", "user_models:apply"), ("user_models:scaled", None)],
)  # fmt: skip
def test_the_row_as_written_is_the_audit_of_the_call(spec, call):
    """Its hazards and compiles are jitbench audit's (a float under eqx.filter_jit is a static
    there, set to new values; never a recompile), and the way the call is written already
    jits with is not built again: measured twice, timing noise alone could rank it cheaper."""
    from jitbench.auditing.audit import audit_object

    audited = audit_object(load_target(spec, call=call, inputs=VECTOR))
    advice = _advice(spec, call, VECTOR)
    written = advice.row(AS_WRITTEN)
    assert (written.hazards, written.compiles) == (tuple(audited.hazards()), audited.compiles)
    again = {
        "user_models:forward": "eqx.filter_jit", "user_models:apply": "nnx.jit",
        "user_models:scaled": "jax.jit, object as argument",
    }.get(call or spec)  # fmt: skip
    for row in advice.rows[1:]:
        if row.way == again:
            assert row.reason == f"the call as written already jits with {again}"
        else:
            assert "as written" not in row.reason, row.way
    if advice.kind == "eqx.Module":  # a number is in the hashed part, as under the filter
        assert advice.row("jax.jit over eqx.partition").hazards == written.hazards
    if again == "nnx.jit":  # the same wrapper with other options is another way
        assert advice.row("nnx.jit(graph=False)").built


def test_seed_class_as_written_is_stale_and_every_registered_way_never_is():
    advice = _advice(SEED)
    assert advice.kind == "plain class"
    assert [r.way for r in advice.rows] == [
        AS_WRITTEN, "pytree registration", "helper function", "static self, value hash"
    ]  # fmt: skip
    rows = {r.way: r for r in advice.rows}
    assert set(rows[AS_WRITTEN].hazards) == {"stale", "leak", "recompile"}
    assert rows["pytree registration"].hazards == ()
    assert rows["helper function"].hazards == ()
    value_hash = rows.pop("static self, value hash")
    if VALUE_HASH_STALE:
        assert set(value_hash.hazards) == {"stale", "leak"}
    else:
        assert set(value_hash.hazards) == {"leak", "recompile"}
        # it compiles again for the array's new values and for the other instance
        assert value_hash.compiles == 5
    # first call, a new flag, a new shape: one compile each
    assert {w: r.compiles for w, r in rows.items()} == {
        AS_WRITTEN: 3, "pytree registration": 3, "helper function": 3,
    }  # fmt: skip
    assert advice.ranked_by == BY_TIME
    assert advice.recommended in ("pytree registration", "helper function")
    assert advice.row(advice.recommended).safe
    assert all(r.cached is not None and r.ratio is not None for r in advice.rows)
    assert any("is not seen" in line for line in rows[AS_WRITTEN].findings)


def test_seed_class_code_names_its_class_and_method():
    code = _advice(SEED).row("pytree registration").code
    assert "object.__new__(CustomClass)" in code
    assert "lambda o: ((o.x,), (o.mul,))" in code
    assert "calc = jax.jit(CustomClass.calc)" in code
    assert "calc(obj, y)" in code
    helper = _advice(SEED).row("helper function").code
    assert "return _calc((self.mul,), (self.x,), y)" in helper


def test_the_user_s_class_is_never_changed():
    import jax
    import user_models

    target = load_target(SEED)
    subject = WaySubject(target, ways_for("plain class")[1])
    converted = subject.new()
    assert type(converted) is not user_models.CustomClass
    assert isinstance(converted, user_models.CustomClass)
    assert jax.tree_util.tree_leaves(user_models.custom_class()) != [converted.x]
    assert len(jax.tree_util.tree_leaves(converted)) == 1


@pytest.mark.slow  # every equinox way audited and timed, cold calls in fresh processes
def test_equinox_mlp_ways_with_figures(examples):
    advice = _advice(*EQX, fields=EQX_FIELDS)
    assert advice.kind == "eqx.Module"
    rows = {r.way: r for r in advice.rows}
    assert list(rows) == [
        AS_WRITTEN, "eqx.filter_jit", "jax.jit, object as argument",
        "jax.jit over eqx.partition", "static self, value hash",
    ]  # fmt: skip
    assert "neither arrays nor numbers" in rows["jax.jit, object as argument"].reason
    assert rows["eqx.filter_jit"].reason == "the call as written already jits with eqx.filter_jit"
    for name in (AS_WRITTEN, "jax.jit over eqx.partition"):
        assert rows[name].hazards == () and rows[name].cached is not None
    assert "leak" in rows["static self, value hash"].hazards
    assert advice.row(advice.recommended).safe
    assert "eqx.partition(model, eqx.is_array)" in rows["jax.jit over eqx.partition"].code


@pytest.mark.slow  # builds flax's model ~40 times, a second each on CPU
def test_flax_model_five_nnx_ways_and_jit_partial_s_hazard(examples):
    advice = _advice("flax_mlp:model", fields=FLAX_FIELDS)
    assert advice.kind == "nnx.Module"
    rows = {r.way: r for r in advice.rows}
    assert list(rows) == [
        AS_WRITTEN, "jax.jit, object as argument", "nnx.jit", "nnx.jit(graph=False)",
        "nnx.jit_partial", "nnx.cached_partial", "jax.jit over nnx.split",
        "jax.jit over nnx.split, output only",
    ]  # fmt: skip
    # flax 0.12's module is a pytree jax.jit takes, but its call writes its count and its
    # BatchNorms' statistics, which a copy jax.jit rebuilds would lose: not built, and why;
    # nor the split that returns the output alone (what the call writes is not returned).
    copies = ("jax.jit, object as argument", "jax.jit over nnx.split, output only")
    for way in copies:
        assert rows[way].reason.startswith("the call writes into the object without jit (`count`, ")
    assert all(r.built for r in advice.rows if r.way not in copies)
    partial = rows["nnx.jit_partial"]
    assert "stale" in partial.hazards
    assert any("use_running_average" in line and "not seen" in line for line in partial.findings)
    assert "stale" in rows["jax.jit over nnx.split"].hazards
    assert rows["nnx.jit"].hazards == () and rows["nnx.jit(graph=False)"].hazards == ()
    assert advice.recommended in (AS_WRITTEN, "nnx.jit", "nnx.jit(graph=False)")
    assert "call = nnx.jit(MLP.__call__)" in rows["nnx.jit"].code


@pytest.mark.slow  # one advise run, each way cold in fresh processes
def test_cli_table_json_and_csv(capsys):
    """The CLI's json, and the table and csv of the advice it decodes to (the same renderer
    the CLI calls for each format)."""
    assert main(["advise", SEED, "--repeat", "1", "--no-count", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["recommended"] in ("pytree registration", "helper function")
    advice = Advice.from_dict(data)
    assert json.loads(json.dumps(advice.to_dict())) == data
    render.advice(advice, "table")
    out = capsys.readouterr().out
    assert "recommended:" in out and "pytree registration" in out
    assert "faster, but" not in out or "as written" in out
    render.advice(advice, "csv")
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("target,device,way") and len(lines) == 5


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "give a TARGET"),
        (["user_models:nothing_here"], "has no attribute"),
        (["user_models:NOT_A_FACTORY"], "is not callable"),
        ([SEED, "--call", "nothing"], "has no method 'nothing'"),
        ([SEED, "--format", "xml"], "unknown format 'xml'"),
        ([SEED, "--device", "tpu9"], "unknown device 'tpu9'"),
    ],
)
def test_bad_input_is_one_line_exit_2(capsys, argv, message):
    try:
        status = main(["advise", *argv, "--no-count"])
    except SystemExit as exc:  # argparse's own errors
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_a_kind_with_no_alternative_is_one_line_exit_0(capsys):
    assert kind_of(load_target("user_models:array_target").obj) == "an array"
    assert main(["advise", "user_models:array_target", "--no-count"]) == 0
    out = capsys.readouterr().out.strip()
    assert len(out.splitlines()) == 1 and "no way of jitting it other than" in out


@pytest.mark.slow
def test_counted_ways_are_ranked_by_instructions(monkeypatch):
    import os
    from pathlib import Path

    from jitbench.measure.counting import callgrind

    tests = str(Path(__file__).parent)  # the counting process imports the target's module
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")]))
    reason = callgrind.unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    advice = advise_object(SEED, repeat=1, cold_calls=1)
    assert advice.counts == ""
    assert advice.ranked_by == BY_COUNTS
    assert all(r.call_instructions and r.dispatch_instructions for r in advice.rows)
    assert advice.row(AS_WRITTEN).ratio == 1.0
    assert advice.recommended in ("pytree registration", "helper function")
    # Two processes, half the ways each, their counts put back on their own ways: the value
    # hash hashes the array at every call (about 8x the others' count).
    hashing = "static self, value hash"
    others = [r.call_instructions for r in advice.rows if r.way != hashing]
    assert advice.row(hashing).call_instructions > 3 * max(others)


def _row(way: str, median: float, q1: float, q3: float, counted: float | None = None):
    from jitbench.advise import WayRow
    from jitbench.measure.timing import Spread

    return WayRow(way, "", "", cached=Spread(median, q1, q3, 7), call_instructions=counted)


def test_a_way_that_ties_with_the_call_as_written_is_not_advised():
    """The way already written, measured again, lands on either side of the call as written:
    a rewrite is advised only where it is clearly cheaper."""
    from jitbench.advise import _ranked

    written = _row(AS_WRITTEN, 10.0, 9.0, 11.0, counted=1000.0)
    tie = _row("nnx.jit", 9.9, 9.2, 10.8, counted=995.0)
    cheaper = _row("nnx.jit(graph=False)", 5.0, 4.5, 5.5, counted=600.0)
    assert _ranked([written, tie], counted=False)[1] == AS_WRITTEN
    assert _ranked([written, tie], counted=True)[1:] == (AS_WRITTEN, BY_COUNTS)
    assert _ranked([written, tie, cheaper], counted=False)[1] == "nnx.jit(graph=False)"
    assert _ranked([written, tie, cheaper], counted=True)[1] == "nnx.jit(graph=False)"
    stale = dataclasses.replace(written, hazards=("stale",))
    assert _ranked([stale, tie], counted=False)[1] == "nnx.jit"  # only a safe call stays


def test_a_bound_method_jitted_in_init_is_left_out_of_every_way():
    import user_models

    target = load_target("user_models:bound_jit_target")
    assert unjitted(target) is user_models.BoundJit.calc
    advice = _advice("user_models:bound_jit_target")
    rows = {r.way: r for r in advice.rows}
    assert "stale" in rows[AS_WRITTEN].hazards
    assert rows["pytree registration"].hazards == rows["helper function"].hazards == ()
    assert "(o.x,), (o.mul,)" in rows["pytree registration"].code


def _algorithm_target() -> jitbench.Target:
    """A NamedTuple of closures (blackjax's samplers, haiku's ``Transformed``) called by the
    name of the field holding the function: ``algorithm.step(x, y)``."""
    import user_models

    x = user_models.vector()
    return jitbench.Target(user_models.algorithm(), (x, x), call="step", name="algorithm",
                           factory=user_models.algorithm)  # fmt: skip


@functools.cache
def _algorithm_advice():
    return advise_object(_algorithm_target(), repeat=1, cold_calls=1, instructions=False)


def test_a_function_the_object_holds_is_called_through_it_by_every_way():
    """The raw call reads the field, as the call as written does: the call without jit had
    been the field's getter called on the object (TypeError: '_tuplegetter' object is not
    callable), and advise stopped where jitbench audit ran."""
    from jitbench.auditing.audit import audit_object

    target = _algorithm_target()
    advice = _algorithm_advice()
    written = advice.row(AS_WRITTEN)
    assert written.built and written.hazards == tuple(audit_object(target).hazards())
    assert advice.row("static self, value hash").built
    names = names_of(target, unjitted(target))
    assert (names.fn, names.args) == ("lambda obj, *args: obj.step(*args)", "x, y")
    assert names.unjitted == "obj.step as written"


def test_jax_jit_of_a_held_function_is_offered_where_the_call_is_one():
    """haiku's documented pattern, ``apply = jax.jit(forward.apply)``: a way where the call is a
    function the object holds; a new instance's new closures are a new jit (a recompile)."""
    from jitbench.ways.catalog import JIT_HELD_CALL

    row = _algorithm_advice().row("jax.jit of the call")
    assert row.built and row.code == (
        "step = jax.jit(obj.step)   # once, outside the loop\nstep(x, y)"
    )
    assert row.hazards == ("recompile",)  # the equal instance: new closures, a new jit
    assert row.compiles == 4  # the first call, the new step, the equal and the other instance
    assert JIT_HELD_CALL not in ways_for(kind_of(load_target(SEED).obj))
    import user_models

    jitted = user_models.Algorithm(lambda x: x, jax.jit(lambda x, y: x * y))
    x = user_models.vector()
    target = jitbench.Target(jitted, (x, x), call="step", factory=lambda: jitted)
    with pytest.raises(jitbench.JitbenchError, match="already jits: step is a jitted function"):
        WaySubject(target, JIT_HELD_CALL)


def test_a_method_jitted_into_another_attribute_is_the_raw_call():
    """``self.jitted = jax.jit(self.calc)``, called as ``jitted``: the raw call is the method
    (advise had refused a call that is no method of the class)."""
    import user_models

    target = load_target("user_models:marked_bound", inputs=VECTOR)
    assert unjitted(target) is user_models.MarkedBound.calc
    assert names_of(target, unjitted(target)).fn == "MarkedBound.calc"
    advice = _advice("user_models:marked_bound")
    assert "stale" in advice.row(AS_WRITTEN).hazards
    assert advice.row("pytree registration").hazards == ()


@pytest.mark.parametrize(
    "spec, call, inputs",
    [
        (SEED, None, None),
        ("user_models:mlp", "user_models:forward", "user_models:vector"),
        ("user_models:linear", None, "user_models:vector"),
        ("user_models:scaled", None, "user_models:vector"),
        ("user_models:bound_jit_target", None, None),
    ],
)
def test_every_snippet_is_python_naming_the_user_s_call(spec, call, inputs):
    import ast

    from jitbench.ways.names import names_of

    target = load_target(spec, call=call, inputs=inputs)
    names = names_of(target, unjitted(target))
    for way in ways_for(kind_of(target.obj))[1:]:
        code = way.code(names)
        ast.parse(code.replace("...", "pass"))
        assert names.fn in code, way.label
    if call is not None:  # a function's jitted twin has a name of its own: no recursion
        assert names.name == "forward_jit"
    # nnx.Linear.__call__, and a method jitted in __init__, have no decorator to remove.
    decorated = spec not in ("user_models:linear", "user_models:bound_jit_target")
    assert names.unjitted.startswith("the jit decorator removed from") == decorated


def test_the_value_hash_code_keys_on_what_no_leaf_holds():
    """The printed key holds the pytree's static data: a registered dataclass's meta field is
    in none of its leaves, and a key of leaves alone finds an object that differs only there
    equal to one already compiled for (stale)."""
    import numpy as np
    import user_models

    from jitbench.ways.catalog import STATIC_SELF_VALUE_HASH as VALUE_HASH
    from jitbench.ways.names import names_of

    class Holds:
        def __init__(self) -> None:
            self.inner = user_models.scaled()

        def calc(self, y):
            return self.inner.x * self.inner.mul + y

    obj, y = Holds(), user_models.vector()
    target = jitbench.Target(obj, (y,), call="calc")
    code = VALUE_HASH.code(names_of(target, unjitted(target)))
    space = {"jax": jax, "partial": functools.partial, "Holds": Holds, "obj": obj, "y": y}
    exec(code, space)  # defines the jitted call and calls it once
    other = Holds()
    other.inner = dataclasses.replace(obj.inner, mul=obj.inner.mul * 3)
    np.testing.assert_allclose(space["calc"](other, y), other.calc(y))


def test_the_value_hash_code_hashes_a_typed_key_by_its_key_data():
    """NumPy cannot read a typed PRNG key's bytes: the printed key reads its key data."""
    import numpy as np
    import user_models

    from jitbench.ways.catalog import STATIC_SELF_VALUE_HASH as VALUE_HASH
    from jitbench.ways.names import names_of

    target = load_target("user_models:noisy", call="user_models:sample", inputs=VECTOR)
    code = VALUE_HASH.code(names_of(target, unjitted(target)))
    assert "jax.random.key_data(leaf)" in code
    obj, y = user_models.noisy(), user_models.vector()
    space = {"jax": jax, "partial": functools.partial, "Noisy": user_models.Noisy}
    space.update(obj=obj, y=y, sample=unjitted(target))
    exec(code, space)
    try:
        other = user_models.Noisy(jax.random.key(1))
        got, want = space["sample_jit"](other, y)[1], user_models.sample(other, y)[1]
        np.testing.assert_allclose(got, want, rtol=1e-6)
    finally:  # the class is the tests' own: its hash and equality back as they were
        del user_models.Noisy.__hash__, user_models.Noisy.__eq__


def test_the_value_hash_code_reads_a_slotted_class():
    """A class with ``__slots__`` alone has no ``vars()``: the key names its attributes."""
    import numpy as np
    import user_models

    from jitbench.ways.catalog import STATIC_SELF_VALUE_HASH as VALUE_HASH
    from jitbench.ways.names import names_of

    target = load_target("user_models:slotted", inputs=VECTOR)
    obj, y = user_models.slotted(), user_models.vector()
    code = VALUE_HASH.code(names_of(target, unjitted(target)))
    space = {"jax": jax, "partial": functools.partial, "Slotted": user_models.Slotted}
    space.update(obj=obj, y=y)
    exec(code, space)
    try:
        np.testing.assert_allclose(space["call"](user_models.Slotted(obj.x, False), y), y)
    finally:  # the class is the tests' own: its hash and equality back as they were
        del user_models.Slotted.__hash__, user_models.Slotted.__eq__


def test_the_value_hash_code_runs_on_a_linen_module():
    """A linen module's ``vars()`` holds its bookkeeping (an unhashable ``_state``, an ``_id``
    of each instance's own): the printed key names its fields, and runs as printed."""
    import numpy as np
    import user_models

    from jitbench.ways.catalog import STATIC_SELF_VALUE_HASH as VALUE_HASH
    from jitbench.ways.names import names_of

    target = load_target("user_models:linen_mlp")
    code = VALUE_HASH.code(names_of(target, unjitted(target)))
    cls, (params, x) = user_models.LinenMLP, target.inputs
    saved = {k: cls.__dict__[k] for k in ("__hash__", "__eq__") if k in cls.__dict__}
    space = {"jax": jax, "partial": functools.partial, "LinenMLP": cls, "obj": target.obj}
    space.update(params=params, x=x, apply_static=unjitted(target))
    try:
        exec(code, space)  # defines the jitted call and calls it once
        jitted, other = space["apply_static_jit"], target.obj.clone(scale=3.0)
        np.testing.assert_allclose(jitted(other, params, x), other.apply(params, x))
        jitted(cls(), params, x)  # equal to the first: its program reused
        assert jitted._cache_size() == 2
    finally:  # the class is the tests' own: its hash and equality back as they were
        for name in ("__hash__", "__eq__"):
            if name in saved:
                setattr(cls, name, saved[name])
            else:
                delattr(cls, name)


def test_a_jitted_function_the_object_calls_stays_on_the_rebuilt_object():
    """Left out is only a jit of the object's own method, which the way replaces."""
    import numpy as np

    target = load_target("user_models:delegating_target")
    expected = target.obj.calc(*target.inputs)
    for way in ways_for("plain class")[1:]:
        subject = WaySubject(target, way)
        np.testing.assert_allclose(subject.call(subject.new())(), expected, err_msg=way.label)
    bound = load_target("user_models:bound_jit_target")
    assert names_of(bound, unjitted(bound)).aux == ("mul",)


def test_a_way_whose_call_leaves_tracers_in_the_object_is_a_row_not_a_traceback():
    """A call writing its state back into the object (penzai's ``pz.variable_jit``) leaves
    tracers there under a jit of the object as a static argument, and writes into a copy
    under a jit of the object as a pytree, where the state it writes is lost (the next call
    would read the old one, which its result alone does not show): neither is built, and
    each row says why."""
    advice = _advice("user_models:writes_back")
    value_hash = advice.row("static self, value hash")
    assert not value_hash.built
    assert "leaves tracers of jit's trace in the object" in value_hash.reason
    assert "`w`" in value_hash.reason
    assert advice.row(AS_WRITTEN).built
    assert advice.row("pytree registration").reason == (
        "the call writes into the object without jit (`w`): pytree registration calls a copy "
        "of it (flattened and rebuilt), so what the call writes is lost"
    )


# Every target docs/examples holds, with the call and inputs its docstring gives (a field
# pattern where the model is wide: the same ways, fewer changes).
EXAMPLES = {
    "equinox_mlp:mlp": {"call": "equinox_mlp:forward", "inputs": "equinox_mlp:batch",
                        "fields": EQX_FIELDS},
    "flax_mlp:model": {"fields": FLAX_FIELDS},
    **{f"flax_mlp:{name}": {} for name in ("graph_mode", "jit_partial", "split_state")},
    **{f"jax_api:{name}": {} for name in ("trivial", "simple", "small_matmul")},
    "affine:make": {"inputs": "affine:batch"},
    "scaler:make": {"call": "calc", "inputs": "scaler:batch"},
}  # fmt: skip
# What only jitbench's own failure prints: a traceback, its own files, a copy of an nnx module
# it broke, or the user's call blamed where it runs (every example's call does).
INTERNAL = ("Traceback", "jitbench/", "_pytree__", "the call without jit (the oracle) raises")


def test_the_examples_table_names_every_target_in_docs_examples():
    import importlib
    import inspect
    import sys

    sys.path[:0] = ["docs/examples", "docs/examples/testing"]
    try:
        found = set()
        for module in ("equinox_mlp", "flax_mlp", "jax_api", "affine", "scaler"):
            loaded = importlib.import_module(module)
            found |= {
                f"{module}:{name}" for name, f in vars(loaded).items()
                if inspect.isfunction(f) and f.__module__ == module and not name.startswith("_")
                and not inspect.signature(f).parameters
            }  # fmt: skip
    finally:
        del sys.path[:2]
    inputs = {options["inputs"] for options in EXAMPLES.values() if "inputs" in options}
    assert found - inputs == set(EXAMPLES)


@pytest.mark.slow  # every example's ways audited and timed (a repeat each)
@pytest.mark.parametrize("spec", list(EXAMPLES))
def test_advise_on_every_example_target_prints_no_internal_error(monkeypatch, capsys, spec):
    """The examples the docs name advise as printed (a way whose first call raises is a row
    with its reason, not a traceback out of the scenario), and no line blames the user's call
    for what jitbench's own steps did (graph_mode's failed jit under a static self broke the
    model jitbench then copied: the call without jit was said to raise)."""
    monkeypatch.syspath_prepend("docs/examples/testing")
    monkeypatch.syspath_prepend("docs/examples")
    options = dict(EXAMPLES[spec])
    named = [options.pop("call", None), options.pop("inputs", None)]
    advice = _advice(spec, *(named if any(named) else ()), **options)  # the cache other tests fill
    assert advice.row(AS_WRITTEN).built
    render.advice(advice, "table")
    printed = capsys.readouterr().out
    assert not [marker for marker in INTERNAL if marker in printed], printed
    reasons = [row.reason for row in advice.rows if not row.built]
    assert all(r and "\n" not in r for r in reasons), reasons


def test_the_recommendation_says_cheapest_only_where_it_is():
    from jitbench.advise import Advice, WayRow, _ranked
    from jitbench.measure.timing import Spread

    def row(way: str, seconds: float, *hazards: str) -> WayRow:
        return WayRow(way, "", "", hazards=hazards, cached=Spread(seconds, seconds, seconds, 5))

    def why(*rows: WayRow) -> str:
        ranked, best, by = _ranked(list(rows), counted=False)
        return Advice("t", "plain class", "calc", "cpu", tuple(ranked), best, by).why()

    written = row(AS_WRITTEN, 2e-6)
    assert (
        why(written, row("a", 1e-6))
        == "the cheapest never stale, never raising, no leak, no recompile"
    )
    # A cheaper way that recompiles loses to one that does not: not "the cheapest".
    assert why(row(AS_WRITTEN, 1e-6, "recompile"), row("a", 3e-6)) == (
        "never stale, never raising, no leak, no recompile, with the fewest hazards of those"
    )
    # A way within noise of the call as written leaves it recommended, not as "cheapest".
    close = WayRow("a", "", "", cached=Spread(1.9e-6, 1.5e-6, 2.1e-6, 5))
    tied = WayRow(AS_WRITTEN, "", "", cached=Spread(2e-6, 1.8e-6, 2.2e-6, 5))
    assert why(tied, close).startswith("never stale, never raising, no leak, no recompile; no ")


def test_two_ways_with_the_same_compiles_carry_the_same_label():
    # An option a library hashes inside its own eqx.filter_jit (optimistix's rtol): as written
    # the float is hashed by that jit, under eqx.filter_jit by this one; each new value
    # compiles once and its value back reuses its program, in both rows alike.
    eqx = pytest.importorskip("equinox")

    class Solver(eqx.Module):
        w: jax.Array
        rtol: float = 1e-3

    @eqx.filter_jit
    def solve(solver, y):
        return solver.w * y + solver.rtol

    def as_written(solver, y):
        return solve(solver, y)

    target = jitbench.Target(Solver(jax.numpy.ones(3)), (jax.numpy.ones(3),), call=as_written)
    advice = advise_object(target, fields="rtol", repeat=1, cold_calls=1, instructions=False)
    rows = {row.way: row for row in advice.rows if row.built}
    written, filtered = rows[AS_WRITTEN], rows["eqx.filter_jit"]
    assert written.compiles == filtered.compiles
    assert written.hazards == filtered.hazards == ()
    assert any("a number the call hashes" in line for line in written.findings)


def test_a_ratio_far_below_one_keeps_its_digits():
    # 188μs against a compile at every call (715 ms) printed as 0.00x before.
    from jitbench.cli.render import _ratio

    assert [_ratio(v) for v in (None, 1.0, 0.53, 0.01, 188.3e-6 / 715.7e-3)] == [
        "n/a", "1.00x", "0.53x", "0.01x", "0.00026x",
    ]  # fmt: skip


def test_a_partition_whose_static_part_holds_a_list_names_it_in_one_sentence():
    """eqx.partition keeps a module's list and dict fields as they are (their arrays None):
    jax.jit cannot hash that static part. The way is not built, and the reason names the
    containers, not jit's error cut inside the module's repr (flowjax's flows)."""
    import equinox as eqx

    class Stacked(eqx.Module):
        layers: list
        options: dict

        def __call__(self, x):
            for layer in self.layers:
                x = layer(x)
            return x * self.options["scale"]

    key = jax.random.key(0)
    model = Stacked([eqx.nn.Linear(2, 2, key=key)], {"scale": 2.0})
    target = jitbench.Target(model, (jax.numpy.ones(2),))
    way = next(w for w in ways_for(kind_of(model)) if w.label == "jax.jit over eqx.partition")
    with pytest.raises(jitbench.JitbenchError) as raised:
        WaySubject(target, way)
    assert str(raised.value) == (
        "its static part (the module without its arrays) holds a list at .layers and a dict "
        "at .options, which jax.jit cannot hash as a static argument"
    )


def test_a_jit_made_at_every_call_is_measured_hoisted_and_its_misses_named():
    """A call that makes its jit inside (``jax.jit(obj.calc)(y)``) compiles at every call:
    advise adds the jit made once outside the loop, audits it like every way (a change made
    in place after it is not seen: stale, named) and recommends a way that sees them."""
    import printed_models as pm

    def make():
        return pm.Scaler(pm.arrays(), 2)

    target = jitbench.Target(make(), (pm.inputs(),), call=pm.jit_each_call, factory=make)
    advice = advise_object(target, repeat=1, cold_calls=1, instructions=False)
    hoisted = advice.row("jit made once, outside the loop")
    assert advice.row(AS_WRITTEN).hazards == ("recompile",)
    assert "stale" in hoisted.hazards
    assert "`mul` set to a new value in place is not seen" in hoisted.findings[0]
    assert "pass the changed value as an argument" in hoisted.caveat
    assert hoisted.code == (
        "jit_each_call_jit = jax.jit(partial(jit_each_call, obj))   # once, outside the loop\n"
        "jit_each_call_jit(y)"
    )
    # Both see every change; which is cheaper is the timings' to say.
    assert advice.recommended in ("pytree registration", "helper function")
    # A call that reuses its program gets no such row.
    assert all(r.way != hoisted.way for r in _advice(SEED).rows)
    # The counting process asks for each way by name: the hoisted one too.
    assert way_subject(target, hoisted.way).way is BOUND_METHOD_JIT
    with pytest.raises(jitbench.JitbenchError, match="unknown way 'jit made once"):
        way_subject(load_target(SEED), hoisted.way)


def _timed(way: str, cached: float, loop: float, dispatch: float, *hazards: str,
           device: float | None = None):  # fmt: skip
    from jitbench.advise import WayRow
    from jitbench.measure.timing import Spread

    def spread(seconds: float) -> Spread:
        return Spread(seconds, seconds, seconds, 9, 100, seconds * 0.98, seconds * 1.02)

    return WayRow(way, "", "", hazards=hazards, cached=spread(cached), loop=spread(loop),
                  dispatch=spread(dispatch), device_time=device)  # fmt: skip


# flax's MNIST CNN on a TPU v5e (docs/advise/reference-tpu.json): the chip's own time is 16 us
# a forward pass, every way's loop far above it.
CNN_ON_TPU = (
    (AS_WRITTEN, 5.9e-3, 5.67e-3, 5.74e-3),
    ("nnx.jit", 1.35e-3, 0.92e-3, 0.98e-3),
    ("nnx.jit(graph=False)", 0.74e-3, 0.31e-3, 0.34e-3),
    ("jax.jit over nnx.split", 0.82e-3, 0.34e-3, 0.27e-3, "stale"),
)


def test_an_accelerator_ranks_by_the_loop_and_says_what_bounds_it():
    """On a chip the synchronous call is mostly the round trip, the same for every jitted way;
    a training loop pays the loop per call, here far above the chip's own time: host-bound."""
    from jitbench.advise import BY_LOOP, Advice, _ranked

    rows = [_timed(*row, device=16e-6) for row in CNN_ON_TPU]
    ranked, best, by = _ranked(rows, counted=False, device="tpu")
    assert (best, by) == ("nnx.jit(graph=False)", BY_LOOP)
    assert _ranked(rows, counted=False)[2] == BY_TIME  # the CPU ranks by the cached call
    advice = Advice("cnn", "nnx.Module", "__call__", "tpu", tuple(ranked), best, by)
    assert render.bound(advice) == (
        "as written: a loop of the call is host-bound (5.67ms a call against the tpu's own "
        "16.0μs): the tpu waits for the host to dispatch each call; no way makes it "
        "device-bound: the fastest loop, nnx.jit(graph=False)'s (310μs a call against the "
        "tpu's own 16.0μs), is still the host's pace"
    )
    # A way whose loop goes at the device's pace (a large model's step) is named.
    heavy = [*rows[:2], _timed("nnx.jit(graph=False)", 3e-3, 2e-3, 0.3e-3, device=1.9e-3)]
    advice = Advice("cnn", "nnx.Module", "__call__", "tpu", tuple(heavy), "", BY_LOOP)
    assert render.bound(advice).endswith(
        "; nnx.jit(graph=False) makes it device-bound (2.00ms a call against the tpu's own 1.90ms)"
    )


def test_without_the_device_s_own_time_the_loop_is_judged_against_the_dispatch():
    """As the device rows judge it: 1.25x the dispatch or more is the device's pace; the
    sentence says the device's own time was not measured."""
    from jitbench.advise import BY_LOOP, Advice

    rows = [_timed(*row) for row in CNN_ON_TPU]
    assert [r.device_bound for r in rows] == [False, False, False, True]
    advice = Advice("cnn", "nnx.Module", "__call__", "tpu", tuple(rows), "", BY_LOOP)
    sentence = render.bound(advice)
    assert "(the tpu's own time not measured: the loop against the dispatch" in sentence
    assert sentence.endswith("; jax.jit over nnx.split makes it device-bound (340μs a call, "
                             "1.26x its dispatch of 270μs)")  # fmt: skip


def test_the_device_s_own_time_is_its_plane_s_programs_in_the_profile():
    """A TPU's plane in a profile (XLA's profiler schema: ``/device:TPU:0``, its "XLA
    Modules" line), read as jax.profiler reads it: overlapping runs counted once; a profile
    with no plane for the device (the CPU's) gives none."""
    import jax

    from jitbench.measure.devicetime import busy_seconds, device_seconds, per_loop

    def event(offset_us: float, duration_us: float) -> str:
        return (f"events {{ metadata_id: 1 offset_ps: {int(offset_us * 1e6)} "
                f"duration_ps: {int(duration_us * 1e6)} }}")  # fmt: skip

    modules = " ".join([event(0, 16), event(100, 16), event(108, 16)])
    text = (
        'planes { id: 1 name: "/device:TPU:0" '
        f'lines {{ id: 1 name: "XLA Modules" timestamp_ns: 1000 {modules} }} '
        f'lines {{ id: 2 name: "XLA Ops" timestamp_ns: 1000 {event(0, 300)} }} '
        'event_metadata { key: 1 value { id: 1 name: "jit_step(1)" } } } '
        'planes { id: 2 name: "/device:TPU:0 SparseCore 0" '
        f'lines {{ id: 1 name: "XLA Modules" timestamp_ns: 1000 {event(0, 500)} }} }} '
        'planes { id: 3 name: "/host:CPU" }'
    )
    data = jax.profiler.ProfileData.from_text_proto(text)
    assert busy_seconds(data, "tpu") == pytest.approx((16 + 24) * 1e-6)
    assert busy_seconds(data, "gpu") is None
    assert busy_seconds(data, "tpu", (1000 + 100e3, 1000 + 108e3)) == pytest.approx(16e-6)
    # Two loops in one profile: each the runs that start between its annotation and the next.
    marks = " ".join(
        f"events {{ metadata_id: {i} offset_ps: {int(start * 1e6)} duration_ps: 1000000 }}"
        for i, start in ((2, 0), (3, 100))
    )
    host = (
        f'planes {{ id: 3 name: "/host:CPU" lines {{ id: 1 name: "python" timestamp_ns: 1000 '
        f"{marks} }} "
        'event_metadata { key: 2 value { id: 2 name: "jitbench-loop-0" } } '
        'event_metadata { key: 3 value { id: 3 name: "jitbench-loop-1" } } }'
    )
    two = jax.profiler.ProfileData.from_text_proto(
        text.replace('planes { id: 3 name: "/host:CPU" }', host)
    )
    assert per_loop(two, "tpu", [1, 4]) == pytest.approx([16e-6, 24e-6 / 4])
    assert per_loop(data, "tpu", [1, 4]) == [None, None]  # no annotations: not told apart
    assert device_seconds([(lambda n: None, 10)], "cpu") == [None]
    # The whole path on this host, a real profile written and read back: no TPU plane here.
    double = jax.jit(lambda x: x * 2)
    x = jax.numpy.ones(8)

    def loop(n: int) -> None:
        for _ in range(n):
            out = double(x)
        jax.block_until_ready(out)

    loop(1)
    if jax.default_backend() == "cpu":
        assert device_seconds([(loop, 5), (loop, 3)], "tpu") == [None, None]


def test_advise_and_time_json_carry_every_figure_on_the_cpu(capsys, examples):
    """Every way's loop per call, dispatch, cached call and first calls are in the JSON of
    advise and time on the CPU too (a cheap target, one sample of each; no figure judged):
    the first calls with the cache filled from fresh processes, which import the target's
    module alone (the README's Scaler, JAX alone)."""
    argv = ["scaler:make", "--call", "calc", "--inputs", "scaler:batch", "--repeat", "1",
            "--format", "json"]  # fmt: skip
    assert main(["advise", *argv, "--no-count"]) == 0
    data = json.loads(capsys.readouterr().out)
    built = [row for row in data["rows"] if not row["reason"]]
    assert len(built) >= 2 and data["ranked_by"] == BY_TIME
    for row in built:
        for figure in ("dispatch", "cached", "loop", "cold"):
            assert row[figure]["samples"] >= 1 and row[figure]["median"] > 0, (row["way"], figure)
        assert row["device_time"] is None  # no device plane on a CPU
        # A fresh process's first call, the cache filled by the measuring process.
        assert row["cold_filled"]["samples"] == 1 and row["cold_filled"]["median"] > 0
    assert data["restarts"] == ""
    assert main(["time", *argv]) == 0
    timed = json.loads(capsys.readouterr().out)
    for figure in ("dispatch", "cached", "loop", "cold", "cold_filled"):
        assert timed[figure]["samples"] >= 1 and timed[figure]["median"] > 0, figure
    assert timed["restarts"] == ""


def test_a_target_handed_over_has_no_restarted_first_call_and_says_why():
    seed = load_target(SEED)
    advice = advise_object(seed.obj, call=seed.call, inputs=seed.inputs, repeat=1, cold_calls=1,
                           instructions=False)  # fmt: skip
    assert advice.restarts == HANDED_OVER
    assert all(r.cold_filled is None for r in advice.rows)


def test_the_ways_are_timed_with_the_persistent_cache_off():
    """Each way is compiled first (read back where its audit compiled it), then timed with
    JAX's persistent compilation cache off: a call that jits at every call compiles at every
    timed call, as in the user's own process, rather than reading its program back."""
    import printed_models as pm

    target = jitbench.Target(pm.Scaler(pm.arrays(), 2), (pm.inputs(),), call=pm.jit_each_call)
    subject = way_subject(target, AS_WRITTEN)
    with read_back(), count_compiles() as stats:
        found = advising.timed({AS_WRITTEN: subject}, 1, 1, "cached", "cpu",
                               advising.Progress("jit each call", 1))  # fmt: skip
    timed = found[AS_WRITTEN]
    assert isinstance(timed, dict)
    calls = sum(timed[k].samples * timed[k].number for k in ("dispatch", "cached", "loop"))
    assert calls >= 30 and stats.compiles >= calls
    # The way's compile before the timings: its one program, a miss or a hit.
    assert stats.persistent_cache_hits + stats.persistent_cache_misses == 1


def test_a_restarted_first_call_is_the_first_call_its_object_gets(tmp_path, monkeypatch):
    """The fresh process of a way's first call with the cache filled builds the way without
    calling the object first (advise's check of what the call writes runs it without jit,
    which would warm what the first call pays): one call, traced once."""
    (tmp_path / "counted_calls.py").write_text(COUNTED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("COUNTED_CALLS", str(tmp_path / "calls.txt"))
    way = "pytree registration"
    with read_back() as folder:
        subject = way_subject(load_target("counted_calls:make"), way)
        subject.call(subject.new())()  # its program written to the folder
        (tmp_path / "calls.txt").write_text("")
        (found,) = diskcache.restarted([Row("counted_calls:make", "cpu", way=way)], folder)
    assert isinstance(found, Spread) and found.samples == 1
    assert (tmp_path / "calls.txt").read_text() == "called\n"


# A plain class whose call notes each time its Python body runs (once per trace under jit).
COUNTED = """
import os
import jax.numpy as jnp
import jitbench

class Counted:
    def __init__(self):
        self.x, self.mul = jnp.ones(4), True

    def calc(self, y):
        with open(os.environ["COUNTED_CALLS"], "a") as log:
            log.write("called\\n")
        return self.x * y if self.mul else y

def make():
    return jitbench.Target(Counted(), (jnp.ones(4),), call="calc")
"""


def test_an_nnx_module_that_is_a_pytree_gets_plain_jax_jit_as_a_way():
    """flax 0.12's nnx.Module is a pytree: jax.jit with the module as an argument, as flax's
    docs show it, is built beside nnx.jit (on gpjax's RBF kernel the cheapest way never
    stale), and is never stale for a call that writes nothing into the module."""
    import printed_models as pm

    from jitbench.auditing.audit import audit_subject

    assert "jax.jit, object as argument" in [w.label for w in ways_for("nnx.Module")]
    target = jitbench.Target(pm.NnxScaler(pm.arrays(), 2), (pm.inputs(),))
    assert jax.tree_util.tree_leaves(target.obj) != [target.obj]  # a pytree jax.jit takes
    audit = audit_subject(way_subject(target, "jax.jit, object as argument"))
    assert audit.hazards() == {} and audit.step("new_static").cell == "1/1"


def test_a_compile_only_a_new_instance_pays_does_not_keep_the_call_as_written():
    """flax's tutorial CNN keeps a functools.partial (hashed by identity): every way that jits
    it compiles again for each new instance, found at that step alone; a loop over one instance
    never pays it, so the cheapest such way is advised over the call as written, and says so.
    A recompile a loop meets (at a change of a field) still ranks a way after it."""
    from jitbench.advise import _ranked
    from jitbench.auditing.audit import audit_subject

    # Built by its factory, as a spec is: each new instance gets a partial of its own.
    audit = audit_subject(way_subject(load_target("printed_models:pooled"), "nnx.jit"))
    assert audit.hazards() == {"recompile": 1} and audit.per_instance() == ("recompile",)
    slow, fast = _timed(AS_WRITTEN, 9e-3, 9e-3, 9e-3), _timed("nnx.jit", 4e-3, 4e-3, 4e-3)
    once = dataclasses.replace(fast, hazards=("recompile",), per_instance=("recompile",))
    rows, best, by = _ranked([slow, once], counted=False)
    assert best == "nnx.jit"
    advice = Advice("cnn", "nnx.Module", "__call__", "cpu", tuple(rows), best, by)
    assert advice.why() == (
        "the cheapest never stale, never raising, no leak, no recompile but one for each new "
        "instance"
    )
    lasting = dataclasses.replace(fast, hazards=("recompile",))
    assert _ranked([slow, lasting], counted=False)[1] == AS_WRITTEN


def test_advise_honours_device_for_an_object_handed_over():
    # device is made JAX's default for every form of target, not only a spec: a sharded
    # placement is refused before anything is measured.
    obj = load_target(SEED).obj
    with pytest.raises(NotImplementedError, match="a target is measured unsharded"):
        advise_object(obj, device=jitbench.resolve("cpu-sharded"))


def test_the_recommended_code_is_run_as_printed_in_a_fresh_process():
    """The recommended way's code, as printed, runs in a fresh process on a new object and is
    audited before it is recommended; an object handed over cannot be built there: one line
    says so."""
    advice = _advice(SEED)
    assert advice.recommended in ("pytree registration", "helper function")
    assert advice.checks == (
        f"{advice.recommended}: its code, run as printed in a fresh process on a new object "
        "and audited: never stale, never raising, nothing kept alive",
    )
    assert advice.refused == ()
    handed = advise_object(load_target(SEED), repeat=1, cold_calls=1, instructions=False)
    assert handed.recommended and handed.checks == (
        f"{handed.recommended}: its code was not run in a fresh process: the target was handed "
        "over as an object, not named by its spec (package.module:factory), and no other "
        "process can build it",
    )


def test_a_way_whose_printed_code_keeps_objects_alive_is_not_recommended():
    """A factory that calls a method jitted with a static self (gymnax's reset) leaves every
    object it builds in that jit's cache. The pytree registration's row plays converted copies
    and finds no leak; its code as printed registers the class itself and calls the user's
    own objects, which stay alive: not recommended, and the line says why."""
    advice = _advice("user_models:resetting", inputs=None)
    assert advice.row("pytree registration").hazards == ()
    assert advice.refused == ("pytree registration",) and advice.recommended == ""
    assert advice.checks[0].startswith(
        "not recommended: pytree registration: its code, run as printed in a fresh process on "
        "a new object: leak: "
    )


def test_a_leaking_way_is_never_recommended():
    from jitbench.advise import _ranked

    written = _row(AS_WRITTEN, 10.0, 9.0, 11.0)
    leaking = dataclasses.replace(_row("static self, value hash", 5.0, 4.5, 5.5), hazards=("leak",))
    stale = dataclasses.replace(written, hazards=("stale",))
    assert _ranked([written, leaking], counted=False)[1] == AS_WRITTEN
    assert _ranked([stale, leaking], counted=False)[1] == ""
    assert _ranked([written, leaking], counted=False, refused=[AS_WRITTEN])[1] == ""
