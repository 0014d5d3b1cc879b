"""The code advise prints is the code it measured: run as printed, each way's snippet gives
the compiles and results of its measured row (the audit of that way), step by step.

For a plain class, an eqx.Module, an nnx.Module and a linen module (tests/printed_models.py),
every way advise builds is audited as advise audits it; then its printed code is run as
printed, in a namespace holding what the user's module would (the class, the object, the
call's arguments), and the changes the audit made are made as each library's users make
them: ``setattr`` and ``Variable``'s ``[...] =`` in place, ``eqx.tree_at`` and linen's
``clone`` for a new object, where the lines the code marks "once, outside the loop" run
again, as its caveat tells the user. Only the call line runs at every step, as in a loop.
"""

from __future__ import annotations

import ast
import functools

import equinox as eqx
import jax
import numpy as np
import printed_models as pm
import pytest
from flax import nnx

import jitbench
from jitbench.auditing.audit import audit_subject
from jitbench.compiles import clear_caches, count_compiles
from jitbench.ways.builders import unjitted
from jitbench.ways.catalog import AS_WRITTEN, WaySubject, names_of, ways_of

KINDS = ("plain class", "eqx.Module", "nnx.Module", "linen module", "jit made at every call")
# The steps replayed: each field's change and its value back; a new shape and other
# instances are not (the call's inputs keep their shape).
REPLAYED = ("new_static", "seen_static", "same_shape_array")


def _target(kind: str) -> tuple[jitbench.Target, type]:
    """The object of ``kind`` and its class: a subclass of the model's own, of the same name,
    so that a way's code registering or hashing the class touches this test's class only."""
    base = {"plain class": pm.Scaler, "eqx.Module": pm.EqxScaler, "nnx.Module": pm.NnxScaler,
            "linen module": pm.LinenScaler, "jit made at every call": pm.Scaler}[kind]  # fmt: skip
    cls = type(base.__name__, (base,), {"__module__": base.__module__})
    y = pm.inputs()
    if kind == "linen module":
        module = cls(mul=2)
        return jitbench.Target(module, (module.init(jax.random.key(0), y), y), call="apply"), cls
    call = {"plain class": "calc", "jit made at every call": pm.jit_each_call}.get(kind, "__call__")
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


def _changed(kind: str, obj, field: str, value):
    """``obj`` with ``field`` set to ``value`` as the library's users set it."""
    if kind == "eqx.Module":
        return eqx.tree_at(lambda m: getattr(m, field), obj, value)
    if kind == "linen module":
        return obj.clone(**{field: value})
    if kind == "nnx.Module" and isinstance(getattr(obj, field), nnx.Variable):
        getattr(obj, field)[...] = value
    else:
        setattr(obj, field, value)
    return obj


def _get(obj, field: str):
    value = getattr(obj, field)
    return value[...] if isinstance(value, nnx.Variable) else value


class Printed:
    """A way's printed code, split as its user runs it: the lines run once (setup), the lines
    marked to run again for a new object, and the call line."""

    def __init__(self, code: str) -> None:
        lines = code.splitlines()
        tree = ast.parse(code)
        *setup, last = tree.body
        self.setup = code
        self.again = "\n".join(
            ast.get_source_segment(code, node) for node in setup
            if "once, outside the loop" in lines[node.lineno - 1]
        )  # fmt: skip
        self.call = ast.get_source_segment(code, last)
        # the result: the call's value, or its `out` where the line unpacks (split/merge)
        self.result = "out" if isinstance(last, ast.Assign) else None

    def run(self, space: dict, source: str) -> tuple[object, int]:
        if self.result is None:
            *before, last = source.splitlines() or [""]
            source = "\n".join([*before, f"__result__ = {last}"])
        with count_compiles() as stats:
            exec(source, space)
            result = jax.block_until_ready(space["out" if self.result else "__result__"])
        return result, stats.compiles


def _oracle(target: jitbench.Target, obj) -> np.ndarray:
    with jax.disable_jit():
        return np.asarray(unjitted(target)(obj, *target.inputs))


@pytest.mark.parametrize(("kind", "way_name"), CASES, ids=[f"{k}: {w}" for k, w in CASES])
def test_the_printed_code_run_as_printed_matches_its_measured_row(kind, way_name):
    target, cls = _target(kind)
    way = next(w for w in ways_of(target) if w.label == way_name)
    names = names_of(target, unjitted(target))
    printed = Printed(way.code(names))
    try:
        audit = audit_subject(WaySubject(target, way))
    except jitbench.JitbenchError as exc:  # its first call cannot run: advise's row not built
        audit, failed = None, str(exc)
    if audit is not None and audit.steps[0].hazard:  # its first call raises under jit alone
        audit, failed = None, audit.steps[0].error

    fresh, _ = _target(kind)  # the user's own object, not the one the audit played
    obj = fresh.obj
    space = {"jax": jax, "partial": functools.partial, "eqx": eqx, "nnx": nnx,
             cls.__name__: type(obj), names.var: obj}  # fmt: skip
    space.update(zip([a.strip() for a in names.args.split(",")], fresh.inputs, strict=True))
    if not isinstance(target.call, str):
        space[names.fn] = unjitted(target)
    target = fresh
    clear_caches()
    if audit is None:  # the printed code raises where the measured call did
        with pytest.raises(Exception) as raised:
            printed.run(space, printed.setup)
        assert type(raised.value).__name__ in failed
        return
    done = []

    result, compiles = printed.run(space, printed.setup)
    done.append(("first_call", "", compiles, np.allclose(result, _oracle(target, obj))))
    result, compiles = printed.run(space, printed.call)
    done.append(("repeat_call", "", compiles, np.allclose(result, _oracle(target, obj))))
    kept = {}
    for step in audit.steps:
        if step.name not in REPLAYED:
            continue
        field = step.field
        if step.name == "seen_static":
            value = kept[field]
        else:
            kept[field] = before = _get(obj, field)
            value = before + 1  # a new flag value; a new array of the same shape
        new = _changed(kind, obj, field, value)
        if new is not obj:  # a new object: the user runs the lines made once for it again
            obj = space[names.var] = new
            exec(printed.again, space)
        result, compiles = printed.run(space, printed.call)
        done.append((step.name, field, compiles, np.allclose(result, _oracle(target, obj))))

    measured = [
        (s.name, s.field, s.compiles, s.outcome != "stale")
        for s in audit.steps
        if s.name in ("first_call", "repeat_call", *REPLAYED)
    ]
    assert done == measured
