"""The code advise prints is the code it measured: run as printed, each way's snippet gives
the compiles and results of its measured row (the audit of that way), step by step.

For a plain class, an eqx.Module, an nnx.Module, a linen module, a call that jits at every
call, and classes taken as a library's (installed, so that the code wraps them as shipped:
one whose method is jitted with a static ``self``, one whose every attribute is static) of
tests/printed_models.py, every way advise builds is audited as advise audits it; then its
printed code is audited as printed (``jitbench.ways.printed.PrintedSubject``, the subject
advise's fresh process audits): its lines run once, the lines it marks "once, outside the
loop" again for every new object, its last line at every call, in a namespace holding what
the user's module would. Both audits make every change as each library's users make it
(``setattr`` and ``Variable``'s ``[...] =`` in place, ``eqx.tree_at`` and linen's ``clone``
for a new object): their steps agree.
"""

from __future__ import annotations

import jax
import printed_models as pm
import pytest

import jitbench
from jitbench.auditing.audit import audit_subject
from jitbench.ways.calls import unjitted
from jitbench.ways.catalog import AS_WRITTEN, way_of, ways_of
from jitbench.ways.names import names_of
from jitbench.ways.printed import Printed, PrintedSubject
from jitbench.ways.subject import WaySubject

KINDS = ("plain class", "eqx.Module", "nnx.Module", "linen module", "jit made at every call",
         "library class, static self", "library class, all static")  # fmt: skip
# The kinds whose class is taken as an installed library's, and what says where libraries lie.
LIBRARY = ("library class, static self", "library class, all static")
LIBRARY_FOLDERS = "jitbench.ways.names._library_folders"


@pytest.fixture(autouse=True)
def _as_installed(request, monkeypatch):
    """The tests' own folder as a library's (site-packages'), for the kinds in LIBRARY."""
    kind = request.node.callspec.params.get("kind") if hasattr(request.node, "callspec") else None
    if kind in LIBRARY:
        monkeypatch.setattr(LIBRARY_FOLDERS, lambda: (pm.__file__.rpartition("/")[0],))


def _target(kind: str) -> tuple[jitbench.Target, type]:
    """The object of ``kind`` and its class: a subclass of the model's own, of the same name,
    so that a way's code registering or hashing the class touches this test's class only."""
    base = {"plain class": pm.Scaler, "eqx.Module": pm.EqxScaler, "nnx.Module": pm.NnxScaler,
            "linen module": pm.LinenScaler, "jit made at every call": pm.Scaler,
            "library class, static self": pm.StaticSelfScaler,
            "library class, all static": pm.Grid}[kind]  # fmt: skip
    cls = type(base.__name__, (base,), {"__module__": base.__module__})
    y = pm.inputs()
    if kind == "linen module":
        module = cls(mul=2)
        return jitbench.Target(module, (module.init(jax.random.key(0), y), y), call="apply"), cls
    if kind == "library class, all static":
        return jitbench.Target(cls(3, 2.0), (y,), call="step"), cls
    call = {"plain class": "calc", "jit made at every call": pm.jit_each_call,
            "library class, static self": "calc"}.get(kind, "__call__")  # fmt: skip
    return jitbench.Target(cls(pm.arrays(), 2), (y,), call=call), cls


def _ways(kind: str) -> list[str]:
    target, _ = _target(kind)
    names = []
    for way in ways_of(target):
        if way.label == AS_WRITTEN:
            continue
        try:
            WaySubject(target, way)
        except jitbench.JitbenchError:
            continue  # not built for this object: advise prints no code to run
        names.append(way.label)
    return names


CASES = [(kind, way) for kind in KINDS for way in _ways(kind)]


def _steps(audit) -> list[tuple[str, str, int, str]]:
    return [(s.name, s.field, s.compiles, s.outcome) for s in audit.steps]


@pytest.mark.parametrize(("kind", "way_name"), CASES, ids=[f"{k}: {w}" for k, w in CASES])
def test_the_printed_code_run_as_printed_matches_its_measured_row(kind, way_name):
    target, _ = _target(kind)
    way = way_of(target, way_name)
    measured = audit_subject(WaySubject(target, way))
    fresh, _ = _target(kind)  # the user's own object (and class), not the one just audited
    printed = audit_subject(PrintedSubject(fresh, way))
    assert _steps(printed) == _steps(measured)
    assert printed.hazards() == measured.hazards()


def test_a_library_s_class_is_wrapped_as_shipped_never_edited(monkeypatch):
    """A method a library jits with a static self (gymnax's ``step``) is reached through its
    jit's ``__wrapped__``; the value hash wraps the object in a key of its own, the helper
    rebuilds it: no line assigns to the class or asks for its method to be rewritten."""
    monkeypatch.setattr(LIBRARY_FOLDERS, lambda: (pm.__file__.rpartition("/")[0],))
    target = jitbench.Target(pm.StaticSelfScaler(pm.arrays(), 2), (pm.inputs(),), call="calc")
    names = names_of(target, unjitted(target))
    assert (names.fn, names.library) == ("StaticSelfScaler.calc.__wrapped__", True)
    assert names.imports == "from printed_models import StaticSelfScaler"
    for way in ways_of(target)[1:]:
        code = way.code(names)
        assert code.startswith(names.imports + "\n\n")
        assert "StaticSelfScaler.__" not in code and "in its place" not in code, way.label
        assert "StaticSelfScaler.calc.__wrapped__" in code, way.label


def test_an_object_whose_every_attribute_is_static_gets_every_way():
    """No attribute holds an array (gymnax's Catch keeps two ints): registered as a pytree it
    is all static data, and the helper takes its flags alone; no line unpacks nothing."""
    target, _ = _target("library class, all static")
    assert _ways("library class, all static") == [
        "pytree registration", "helper function", "static self, value hash",
    ]  # fmt: skip
    code = way_of(target, "pytree registration").code(names_of(target, unjitted(target)))
    assert "lambda o: ((), (o.rows, o.scale))" in code and "= children" not in code


def test_printed_code_splits_as_its_user_runs_it():
    """The lines run once keep their decorators; the lines marked once per object run again
    for a new object; the last line is the call, its result read where it assigns one."""
    code = (
        "graphdef, state = nnx.split(model)   # once, outside the loop\n\n"
        "@jax.jit\ndef step(graphdef, state, x):\n    return x, state\n\n"
        "out, state = step(graphdef, state, x)   # nnx.update(model, state) when done"
    )
    printed = Printed.of(code)
    assert printed.setup.startswith("@jax.jit\ndef step(")
    assert printed.per_object == "graphdef, state = nnx.split(model)   # once, outside the loop"
    assert printed.call.startswith("out, state = step(") and printed.result == "out"
    assert Printed.of("f = jax.jit(g)\nf(obj, y)").result == ""
