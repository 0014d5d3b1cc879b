"""``jitbench advise``: every way of jitting a user's call, measured alike (audit, timings,
instructions where Valgrind counts), and the one to use: the cheapest that is never stale
and never raises. How ways are ranked: docs/advise.md.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

from jitbench.errors import JitbenchError, NoFigure, error_text
from jitbench.measure.timing import Spread
from jitbench.options import COUNT_TOLERANCE, DEFAULT_ARRAYS, REPEAT
from jitbench.targets import Target, as_target

COLD_CALLS = 3
BY_COUNTS = "instructions per cached call"
BY_TIME = "the cached call's median time"


@dataclasses.dataclass(frozen=True)
class WayRow:
    """One way measured, or why it was not: its hazards over the audit's scenario
    (:data:`jitbench.hazards.FOUND`, as ``assert_jit_safe`` names them), its compiles, timings
    (seconds per call), instructions, and ``ratio``, its cached call over the call as written's
    (by the advice's ranking figure); ``findings`` the audit's hazards in plain words
    (:func:`jitbench.auditing.verdict.hazards`)."""

    way: str
    caveat: str
    code: str
    reason: str = ""
    hazards: tuple[str, ...] = ()
    compiles: int | None = None
    cold: Spread | None = None
    cached: Spread | None = None
    dispatch: Spread | None = None
    call_instructions: float | None = None
    dispatch_instructions: float | None = None
    ratio: float | None = None
    findings: tuple[str, ...] = ()

    @property
    def built(self) -> bool:
        return not self.reason

    @property
    def safe(self) -> bool:
        """Built, never stale and never raising under jit: a candidate for the advice."""
        return self.built and not {"stale", "error"} & set(self.hazards)


@dataclasses.dataclass(frozen=True)
class Advice:
    """Every way's row, the recommended way (``""``: none is safe) and what ranked them.

    ``note`` is the one line of a kind of object with no alternative to the call as
    written; ``counts`` says why instructions were not counted ("" where they were).
    """

    target: str
    kind: str
    call: str
    device: str
    rows: tuple[WayRow, ...]
    recommended: str = ""
    ranked_by: str = ""
    counts: str = ""
    note: str = ""

    def row(self, way: str) -> WayRow:
        return next(r for r in self.rows if r.way == way)

    def why(self) -> str:
        """Why the recommended way was chosen, in the words its ranking earns."""
        chosen = self.row(self.recommended)
        cheaper = self._cheaper(chosen, lambda r: r.safe)
        clean = "" if chosen.hazards else ", no leak, no recompile"
        if not cheaper:
            return f"the cheapest never stale, never raising{clean}"
        if any(len(r.hazards) <= len(chosen.hazards) for r in cheaper):
            return (
                f"never stale, never raising{clean}; no other way is clearly cheaper (their "
                "figures overlap its own)"
            )
        return f"never stale, never raising{clean}, with the fewest hazards of those"

    def faster_hazardous(self) -> list[WayRow]:
        """The ways cheaper than the recommended one that have a hazard it has not."""
        if not self.recommended:
            return []
        chosen = self.row(self.recommended)
        return self._cheaper(chosen, lambda r: r.built and set(r.hazards) - set(chosen.hazards))

    def _cheaper(self, chosen: WayRow, keep: Callable[[WayRow], Any]) -> list[WayRow]:
        """The rows ``keep`` takes whose ranking figure is below ``chosen``'s."""
        best = _figure(chosen, self.ranked_by)
        return [
            r for r in self.rows
            if keep(r) and (f := _figure(r, self.ranked_by)) is not None and best is not None
            and f < best
        ]  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Advice:
        """The advice :meth:`to_dict` wrote (``jitbench advise --format json``'s output)."""
        rows = []
        for row in data["rows"]:
            spreads = {k: Spread(**row[k]) if row[k] else None for k in ("cold", "cached",
                                                                          "dispatch")}  # fmt: skip
            lists = {k: tuple(row[k]) for k in ("hazards", "findings")}
            rows.append(WayRow(**{**row, **spreads, **lists}))
        return cls(**{**data, "rows": tuple(rows)})


def _figure(row: WayRow, ranked_by: str) -> float | None:
    if ranked_by == BY_COUNTS:
        return row.call_instructions
    return row.cached.median if row.cached else None


def _measure(subject: Any, way: Any, names: Any, fields: str | None, arrays: int,
             repeat: int, cold_calls: int) -> WayRow:  # fmt: skip
    from jitbench.auditing.audit import audit_subject
    from jitbench.auditing.verdict import hazards
    from jitbench.measure.timing import time_subject

    code = way.code(names) if way.snippet else ""
    try:
        audit = audit_subject(subject, fields=fields, arrays=arrays)
        if audit.steps[0].hazard:  # its first call raises under jit: nothing to time
            return WayRow(way.name, way.caveat, code, hazards=tuple(audit.hazards()),
                          compiles=audit.compiles, findings=tuple(hazards(audit)))  # fmt: skip
        timed = time_subject(subject, repeat=repeat, cold_calls=cold_calls, after_runs=0,
                             fields=fields, arrays=arrays)  # fmt: skip
    except JitbenchError as exc:
        return WayRow(way.name, way.caveat, code, reason=str(exc))
    except Exception as exc:  # a way the audit played but whose timed calls raise
        return WayRow(
            way.name, way.caveat, code, reason=f"its timed call raises: {error_text(exc)}"
        )
    return WayRow(way.name, way.caveat, code, hazards=tuple(audit.hazards()),
                  compiles=audit.compiles, cold=timed.cold, cached=timed.cached,
                  dispatch=timed.dispatch, findings=tuple(hazards(audit)))  # fmt: skip


def _count(rows: list[WayRow], spec: str, device: str, call: str | None,
           inputs: str | None) -> tuple[list[WayRow], str]:  # fmt: skip
    """The rows with their instructions where Valgrind counts here, and why not otherwise."""
    from jitbench.measure.counting import instructions
    from jitbench.measure.counting.callgrind import unavailable_reason as callgrind_reason

    built = [r for r in rows if r.built]
    counted = [instructions.Row(spec, device, call=call, inputs=inputs, way=r.way) for r in built]
    if callgrind_reason() is None:
        print(f"jitbench: counting the instructions of {len(counted)} ways under Valgrind "
              "(minutes; --no-count skips it)", file=sys.stderr, flush=True)  # fmt: skip
    try:
        found = instructions.count_rows(counted)
    except (NotImplementedError, JitbenchError) as exc:
        return rows, f"instructions not counted: {exc}"
    by_way = dict(zip((r.way for r in built), found, strict=True))
    done, missing = [], []
    for row in rows:
        got = by_way.get(row.way)
        if isinstance(got, NoFigure):
            missing.append(f"{row.way}: {got.reason}")
        elif got is not None:
            row = dataclasses.replace(
                row, call_instructions=got.call, dispatch_instructions=got.dispatch
            )
        done.append(row)
    return done, "; ".join(missing)


def _ranked(rows: list[WayRow], counted: bool) -> tuple[list[WayRow], str, str]:
    """The rows with their ratio to the call as written, the recommended way, and by what."""
    from jitbench.ways.catalog import AS_WRITTEN

    safe = [r for r in rows if r.safe]
    by_counts = counted and bool(safe) and all(r.call_instructions is not None for r in safe)
    ranked_by = BY_COUNTS if by_counts else BY_TIME
    base = next((_figure(r, ranked_by) for r in rows if r.way == AS_WRITTEN), None)
    rows = [
        dataclasses.replace(r, ratio=f / base)
        if (f := _figure(r, ranked_by)) is not None and base else r
        for r in rows
    ]  # fmt: skip
    candidates = [r for r in rows if r.safe and _figure(r, ranked_by) is not None]
    # Fewer hazards first: a way that leaks or compiles again only where every safe way does.
    best = min(candidates, key=lambda r: (len(r.hazards), _figure(r, ranked_by)), default=None)
    written = next((r for r in candidates if r.way == AS_WRITTEN), None)
    if best and written and len(best.hazards) == len(written.hazards):
        # A rewrite is advised only where it is clearly cheaper, not where it ties: the way
        # the call is already written, measured again, lands on either side of it.
        best = best if _clearly_cheaper(best, written, ranked_by) else written
    return rows, (best.way if best else ""), ranked_by


def _clearly_cheaper(way: WayRow, written: WayRow, ranked_by: str) -> bool:
    """Fewer instructions by more than the count tolerance, or cached-call quartiles apart."""
    if ranked_by == BY_COUNTS:
        assert way.call_instructions is not None and written.call_instructions is not None
        return way.call_instructions < written.call_instructions * (1 - COUNT_TOLERANCE)
    assert way.cached is not None and written.cached is not None
    return way.cached.q3 < written.cached.q1


def advise_object(
    target: Any, *, call: Any = None, inputs: Any = None,
    fields: str | None = None, repeat: int = REPEAT, arrays: int = DEFAULT_ARRAYS,
    instructions: bool = True, device: str = "cpu", cold_calls: int = COLD_CALLS,
) -> Advice:  # fmt: skip
    """Every way of jitting ``target``'s call, measured alike, and the one to use.

    ``target``, ``call`` and ``inputs``: any form :func:`~jitbench.targets.as_target`
    takes; the ways' instructions are counted where the target is a spec
    ``package.module:factory`` (the counting process loads it by name), Valgrind is
    present and ``instructions``. ``fields``/``arrays`` choose the changes as the audit does,
    ``repeat`` the samples per cached and dispatch timing, ``cold_calls`` per cold one,
    ``device`` where a spec's target is built. JitbenchError where the call as written
    cannot be audited (its first call raises, or differs from the call without jit).
    """
    from jitbench.ways.builders import unjitted
    from jitbench.ways.catalog import WaySubject, kind_of, names_of, ways_of

    spec = target if isinstance(target, str) else None
    if spec is not None:
        from jitbench.measure.case import use_device

        use_device(device)
    target = as_target(target, call=call, inputs=inputs)
    kind = kind_of(target.obj)
    ways = ways_of(target)
    platform = _platform(target)
    if len(ways) == 1:
        note = (f"{target.name} is {kind}: no way of jitting it other than the call as "
                "written (jit takes it as an argument as it is)")  # fmt: skip
        return Advice(target.name, kind, target.call_name, platform, (), note=note)
    raw = unjitted(target)
    names = names_of(target, raw)
    rows = []
    for way in ways:
        try:
            subject = WaySubject(target, way)
        except JitbenchError as exc:
            rows.append(WayRow(way.name, way.caveat, way.code(names), reason=str(exc)))
            continue
        rows.append(_measure(subject, way, names, fields, arrays, repeat, cold_calls))
        if len(rows) == 1 and not rows[0].built:  # as jitbench audit stops on the call as written
            raise JitbenchError(rows[0].reason)
    counts = "instructions not counted: the target was handed over, not named by its spec"
    if spec is not None and instructions:
        rows, counts = _count(rows, spec, device, call, inputs)
    elif not instructions:
        counts = "instructions not counted: not asked for"
    rows, best, ranked_by = _ranked(rows, not counts)
    return Advice(target.name, kind, target.call_name, platform, tuple(rows), best, ranked_by,
                  counts)  # fmt: skip


def _platform(target: Target) -> str:
    import jax

    leaves = [leaf for leaf in jax.tree_util.tree_leaves(target.inputs) if hasattr(leaf, "devices")]
    return next(iter(leaves[0].devices())).platform if leaves else jax.default_backend()
