"""advise's printed code, run as printed in a fresh process, over every object of the gallery
(``tests/gallery_models.py``): whichever way the timings recommend, its code is never stale,
never raises and keeps nothing alive. Slow: every way's code is audited in fresh processes
that import the gallery (about 12 s of CPU each), and a few rows here."""

from __future__ import annotations

import inspect
import re

import pytest

pytest.importorskip("chex", reason="the gallery's libraries: pip install 'jitbench[gallery]'")

import gallery_models

from jitbench import JitbenchError, load_target
from jitbench.auditing.audit import audit_subject
from jitbench.measure.case import Row
from jitbench.measure.printed_audit import REFUSED, run_printed
from jitbench.targets import fields
from jitbench.ways.catalog import STATIC_SELF_VALUE_HASH, way_of, ways_of
from jitbench.ways.subject import Walked, WaySubject

pytestmark = pytest.mark.slow


def _gallery() -> list[str]:
    """The gallery's objects: every factory returning a Target."""
    return [
        name for name, f in inspect.getmembers(gallery_models, inspect.isfunction)
        if f.__module__ == "gallery_models" and inspect.signature(f).return_annotation == "Target"
    ]  # fmt: skip


def _few_fields(target) -> str | None:
    """One field of each kind the audit plays by default (its first flag or number, its first
    array): every step of the scenario, at a fraction of its length (a diffrax controller
    plays ten numbers, a compile each)."""
    chosen = fields.choose(Walked(target).fields(target.obj)[0])[0]
    picks = [next((f for f in chosen if (f.kind == "array") == array), None)
             for array in (False, True)]  # fmt: skip
    paths = [re.escape(f.path) for f in picks if f is not None]
    return f"^(?:{'|'.join(paths)})$" if paths else None


def test_every_way_advise_may_recommend_runs_clean_as_printed_in_a_fresh_process():
    """Every way advise builds for a gallery object, other than the call as written (the user's
    own code), has its code run as printed in a fresh process, on a new object of the
    library's classes as shipped, and audited. Where that run is stale, raises or keeps
    objects alive, the way's own row must be so too (audited here): it is then never a
    candidate, so whatever the timings recommend runs clean. The ways of one object run in
    processes of their own (a way's code changes what the next of the same class sees: a
    registration); one field of each kind plays. The value hash is left out: jit's cache
    holds its static argument, so its row keeps every object it compiled for
    (tests/test_advise.py pins it) and advise never recommends it."""
    processes: list[list[Row]] = []
    patterns: dict[str, str | None] = {}
    for name in _gallery():
        spec = f"gallery_models:{name}"
        target = load_target(spec)
        patterns[spec] = _few_fields(target)
        built = []
        for way in ways_of(target)[1:]:
            if way is STATIC_SELF_VALUE_HASH:
                continue
            try:
                WaySubject(target, way)
            except JitbenchError:
                continue  # not built for this object: no code printed
            built.append(Row(spec, way=way.label))
        for index, row in enumerate(built):
            if index == len(processes):
                processes.append([])
            processes[index].append(row)
    rows = [row for rows in processes for row in rows]
    ran = [run for rows in processes
           for run in run_printed(rows, fields=[patterns[r.subject] for r in rows])]  # fmt: skip
    wrong = []
    for row, run in zip(rows, ran, strict=True):
        if run.clean:
            continue
        target = load_target(row.subject)
        try:
            way = WaySubject(target, way_of(target, str(row.way)))
            audit = audit_subject(way, fields=patterns[row.subject])
        except JitbenchError:
            continue  # its row is not built either
        if not set(REFUSED) & {str(h) for h in audit.hazards()}:
            wrong.append(f"{row.subject}: {row.way}: its row is a candidate, its code as printed "
                         f"is not: {run.said()}")  # fmt: skip
    assert not wrong, "\n".join(wrong)
    clean = {run.way for run in ran if run.clean}
    # Every kind's ways among those run clean: a plain class's, an eqx.Module's, an nnx.Module's.
    assert {"pytree registration", "helper function", "jax.jit over eqx.partition",
            "eqx.filter_jit", "nnx.jit", "jax.jit, object as argument"} <= clean, clean  # fmt: skip
