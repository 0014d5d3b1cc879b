"""``jitbench advise``: every way of jitting a user's call, measured alike (audit, timings,
instructions where Valgrind counts), and the one to use: the cheapest that is never stale
and never raises. How ways are measured and ranked: docs/advise.md; the measuring itself:
:mod:`jitbench.measure.advising`.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import tempfile
from collections.abc import Callable, Collection
from pathlib import Path

from jitbench import child
from jitbench.child import Json
from jitbench.compiles import read_back
from jitbench.devices import Placement, parse_spec, resolve, use_device
from jitbench.errors import JitbenchError, NoFigure
from jitbench.jsondata import JsonObject
from jitbench.measure import advising as measure
from jitbench.measure import diskcache
from jitbench.measure.advising import WayRow
from jitbench.measure.case import Row
from jitbench.measure.printed_audit import run_printed
from jitbench.measure.sampling import Spread, apart
from jitbench.options import COUNT_TOLERANCE, DEFAULT_ARRAYS, REPEAT
from jitbench.targets import Call, Target, as_target, child_environment
from jitbench.vocabulary import Hazard
from jitbench.ways.calls import unjitted
from jitbench.ways.catalog import AS_WRITTEN, kind_of, ways_of
from jitbench.ways.names import names_of
from jitbench.ways.subject import WaySubject

# The cold first call, in its own fresh state, once per way (and once with the persistent
# compilation cache filled).
COLD_CALLS = 1
BY_COUNTS = "instructions per cached call"
BY_TIME = "the cached call's median time"
BY_LOOP = "the loop's median time per call (calls back to back, one wait)"
# The process that measures a target named by its spec (python -c WORKER REQUEST RESULT).
WORKER = "from jitbench.advise import serve; serve()"
# Seconds it may take: every way audited, timed and counted (minutes on a deep model).
WORKER_TIMEOUT_S = 3600
HANDED_OVER = (
    "the first call with the cache filled not measured: a fresh process builds the target "
    "from its spec (package.module:factory), and this one was handed over as an object"
)


@dataclasses.dataclass(frozen=True)
class Advice:
    """Every way's row, the recommended way (``""``: none is safe) and what ranked them.

    ``note`` is the one line of a kind of object with no alternative to the call as
    written; ``counts`` says why instructions were not counted ("" where they were);
    ``restarts`` why a way has no first call with the cache filled ("" where each has one);
    ``checks`` what running the recommended way's code as printed, in a fresh process, found
    (a line per way run, or why none could run), and ``refused`` the ways whose code, so
    run, was stale, raised or kept objects alive: not recommended.
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
    restarts: str = ""
    checks: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()

    def row(self, way: str) -> WayRow:
        return next(r for r in self.rows if r.way == way)

    def why(self) -> str:
        """Why the recommended way was chosen, in the words its ranking earns."""
        chosen = self.row(self.recommended)
        clean = "never stale, never raising, no leak" + ("" if chosen.lasting else ", no recompile")
        if chosen.per_instance:
            clean += " but one for each new instance"
        candidate = functools.partial(_candidate, refused=self.refused)
        if not self._cheaper(chosen, candidate, clearly=False):
            return f"the cheapest {clean}"
        clearly = self._cheaper(chosen, candidate)
        if not clearly or any(len(r.lasting) <= len(chosen.lasting) for r in clearly):
            return f"{clean}; no other way is clearly cheaper (their figures overlap its own)"
        return f"{clean}, with the fewest hazards of those"

    def faster_hazardous(self) -> list[WayRow]:
        """The ways clearly cheaper than the recommended one that have a hazard it has not."""
        if not self.recommended:
            return []
        chosen = self.row(self.recommended)
        return self._cheaper(chosen, lambda r: r.built and set(r.hazards) - set(chosen.hazards))

    def _cheaper(
        self, chosen: WayRow, keep: Callable[[WayRow], object], clearly: bool = True
    ) -> list[WayRow]:
        """The rows ``keep`` takes whose ranking figure is below ``chosen``'s (``clearly``:
        by more than the ranking's tolerance, :func:`_clearly_cheaper`)."""
        if _figure(chosen, self.ranked_by) is None:
            return []
        return [
            r for r in self.rows
            if keep(r) and _figure(r, self.ranked_by) is not None
            and (_clearly_cheaper(r, chosen, self.ranked_by) if clearly
                 else _figure(r, self.ranked_by) < _figure(chosen, self.ranked_by))
        ]  # fmt: skip

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: JsonObject) -> Advice:
        """The advice :meth:`to_dict` wrote (``jitbench advise --format json``'s output)."""
        rows = []
        for row in data["rows"]:
            # A run recorded before the loop and the filled cache were measured has neither.
            spreads = {k: Spread(**row[k]) if row.get(k) else None for k in SPREADS}
            lists = {k: tuple(row.get(k, ())) for k in ("hazards", "findings", "per_instance")}
            rows.append(WayRow(**{**row, **spreads, **lists}))
        ran = {k: tuple(data.get(k, ())) for k in ("checks", "refused")}
        return cls(**{**data, "rows": tuple(rows), **ran})


SPREADS = ("cold", "cold_filled", "dispatch", "cached", "loop")


def _figure(row: WayRow, ranked_by: str) -> float | None:
    if ranked_by == BY_COUNTS:
        return row.call_instructions
    spread = _spread(row, ranked_by)
    return spread.median if spread else None


def _spread(row: WayRow, ranked_by: str) -> Spread | None:
    return row.loop if ranked_by == BY_LOOP else row.cached


def _clearly_cheaper(way: WayRow, other: WayRow, ranked_by: str) -> bool:
    """Fewer instructions by more than the count tolerance; or a lower median told apart from
    the other's (:func:`~jitbench.measure.sampling.apart`: more than 5% below it, the bounds
    of the two medians apart). Two ways not told apart tie: of those, the one listed first is
    advised (the call as written first), so that runs agree."""
    if ranked_by == BY_COUNTS:
        assert way.call_instructions is not None and other.call_instructions is not None
        return way.call_instructions < other.call_instructions * (1 - COUNT_TOLERANCE)
    mine, theirs = _spread(way, ranked_by), _spread(other, ranked_by)
    assert mine is not None and theirs is not None
    return mine.median < theirs.median and apart(mine, theirs)


def ranking_figure(device: str, counted: bool) -> str:
    """What ranks the ways: instructions where counted, else the loop per call on an
    accelerator (what a training loop pays), the cached call on the CPU."""
    if counted:
        return BY_COUNTS
    return BY_TIME if device == "cpu" else BY_LOOP


def _candidate(row: WayRow, refused: Collection[str] = ()) -> bool:
    """A way advise may recommend: built, never stale, never raising, keeping nothing alive,
    and not ``refused`` (its code, run as printed in a fresh process, was not so)."""
    return row.safe and Hazard.LEAK not in row.hazards and row.way not in refused


def _ranked(
    rows: list[WayRow], counted: bool, device: str = "cpu", refused: Collection[str] = ()
) -> tuple[list[WayRow], str, str]:
    """The rows with their ratio to the call as written, the recommended way (of the
    candidates, :func:`_candidate`; "" for none), and by what."""
    safe = [r for r in rows if r.safe]
    by_counts = counted and bool(safe) and all(r.call_instructions is not None for r in safe)
    ranked_by = ranking_figure(device, by_counts)
    base = next((_figure(r, ranked_by) for r in rows if r.way == AS_WRITTEN), None)
    rows = [
        dataclasses.replace(r, ratio=f / base)
        if (f := _figure(r, ranked_by)) is not None and base else r
        for r in rows
    ]  # fmt: skip
    candidates = [r for r in rows if _candidate(r, refused) and _figure(r, ranked_by) is not None]
    if not candidates:
        return rows, "", ranked_by
    # Fewer hazards first: a way that compiles again only where every candidate does; a
    # compile only a new instance pays is not one a loop over the instance meets.
    fewest = min(len(r.lasting) for r in candidates)
    group = [r for r in candidates if len(r.lasting) == fewest]
    cheapest = min(group, key=lambda r: _figure(r, ranked_by) or 0.0)
    # A way is advised over the one listed before it only where it is clearly cheaper: the
    # call as written measured again (the same jit) lands on either side of it.
    best = next(r for r in group if not _clearly_cheaper(cheapest, r, ranked_by))
    return rows, best.way, ranked_by


def _run(
    rows: list[WayRow], best: str, ranked_by: str, spec: str | None, call: Call | None,
    inputs: object, fields: str | None, arrays: int, platform: str, progress: measure.Progress,
) -> tuple[str, tuple[str, ...], tuple[str, ...]]:  # fmt: skip
    """The recommended way, once its code has been run as printed in a fresh process and
    audited (the next candidate where it is stale, raises or keeps objects alive), what the
    runs found, and the ways refused. The call as written, recommended, is the user's own
    code, audited in its row: no code of advise's runs."""
    if best in ("", AS_WRITTEN):
        return best, (), ()
    if spec is None or not all(isinstance(s, str | None) for s in (call, inputs)):
        return best, (f"{best}: its code was not run in a fresh process: the target was "
                      "handed over as an object, not named by its spec (package.module:factory)"
                      ", and no other process can build it",), ()  # fmt: skip
    assert isinstance(call, str | None) and isinstance(inputs, str | None)
    where = "in a fresh process"
    if platform != "cpu":
        where += f" (on the CPU: a second process cannot open the {platform} this one holds)"
    said, refused = [], []
    while best not in ("", AS_WRITTEN):
        progress.say(f"{best}: its code, run as printed {where}")
        row = Row(spec, platform, call=call, inputs=inputs, way=best)
        (ran,) = run_printed([row], fields=fields, arrays=arrays)
        if ran.clean:
            said.append(f"{best}: its code, run as printed {where} on a new object and "
                        "audited: never stale, never raising, nothing kept alive")  # fmt: skip
            break
        refused.append(best)
        said.append(f"not recommended: {best}: its code, run as printed {where} on a new "
                    f"object: {ran.said()}")  # fmt: skip
        best = _ranked(rows, ranked_by == BY_COUNTS, platform, refused)[1]
    return best, tuple(said), tuple(refused)


def advise_object(
    target: object, *, call: Call | None = None, inputs: object = None,
    fields: str | None = None, repeat: int = REPEAT, arrays: int = DEFAULT_ARRAYS,
    instructions: bool = True, device: Placement | str | None = None,
    cold_calls: int = COLD_CALLS, restarts: bool = True,
) -> Advice:  # fmt: skip
    """Every way of jitting ``target``'s call, measured alike, and the one to use.

    ``target``, ``call`` and ``inputs``: any form :func:`~jitbench.targets.as_target`
    takes. Where all three are specs (``package.module:name``, ``call`` and ``inputs``
    optional), the ways are measured in a process of their own, then each way's first call
    with JAX's persistent compilation cache filled by it is made in a fresh process per way,
    as a restarted script makes it (``restarts``; a device is held by one process at a time,
    so the process measuring cannot be this one, which may hold it); a target handed over is
    measured here, without those first calls. The ways' instructions are counted where the
    target is a spec, Valgrind is present, the device is the CPU and ``instructions``: in a
    process started before the audits, which runs beside them. ``fields``/``arrays`` choose
    the changes as the audit does, ``repeat`` the fewest samples per timing (more where a
    median is not yet known or two ways' overlap: :mod:`jitbench.measure.advising`),
    ``cold_calls`` per cold first call, ``device`` (a spec, or a Placement) made JAX's
    default before the target is built or called (None: JAX's default device as it is;
    NotImplementedError where it is sharded). JitbenchError where the call as written cannot
    be audited (its first call raises, or differs from the call without jit).
    """
    spec = device.spec if isinstance(device, Placement) else device
    if spec is not None:
        parse_spec(spec)  # an unknown spec is one line before anything starts
    request: dict[str, Json] = {
        "target": target, "call": call, "inputs": inputs, "fields": fields, "repeat": repeat,
        "arrays": arrays, "instructions": instructions, "device": spec,
        "cold_calls": cold_calls,
    }  # fmt: skip
    named = all(isinstance(v, str) or v is None for v in (target, call, inputs))
    if not (named and restarts and isinstance(target, str)):
        if isinstance(device, str):
            device = resolve(device)
        if device is not None:
            use_device(device)
        # Every program compiled from here on is written to disk: what a cleared cache makes
        # JAX compile again (each audit and first call starts with a clear) is read back
        # instead, the probes' below and the target's own building included.
        with read_back():
            advice = _advise(target, call, inputs, fields, repeat, arrays, instructions,
                             cold_calls)  # fmt: skip
        why = HANDED_OVER if restarts else "the first call with the cache filled: not asked for"
        return dataclasses.replace(advice, restarts=why)
    with tempfile.TemporaryDirectory(prefix="jitbench-compilation-cache-") as folder:
        specs = [v for v in (target, call, inputs) if isinstance(v, str)]
        env = {**os.environ, **child_environment(specs)}
        with tempfile.TemporaryDirectory(prefix="jitbench-advise-") as work:
            # Its progress lines (stderr) are the user's; its stdout too, on stderr: this
            # process's stdout is the advice's.
            answer = child.work(["-c", WORKER], {**request, "folder": folder}, Path(work),
                                what=f"advise {target}", timeout=WORKER_TIMEOUT_S, env=env,
                                capture=False)  # fmt: skip
        missing = NoFigure.from_json(answer)
        if missing is not None:
            raise JitbenchError(missing.reason)
        assert isinstance(answer, dict)
        return _restarted(Advice.from_dict(answer), target, call, inputs, folder)


def serve() -> None:
    """The measuring process of :func:`advise_object` (``python -c WORKER REQUEST RESULT``):
    the advice as JSON, every program it compiled written to the request's folder."""

    def answer(request: Json) -> Json:
        assert isinstance(request, dict)
        if request["device"] is not None:
            use_device(resolve(str(request["device"])))
        with read_back(str(request["folder"])):
            return _advise(
                request["target"], request["call"], request["inputs"], request["fields"],
                request["repeat"], request["arrays"], request["instructions"],
                request["cold_calls"],
            ).to_dict()  # fmt: skip

    child.serve(answer)


def _restarted(
    advice: Advice, target: str, call: str | None, inputs: str | None, folder: str
) -> Advice:
    """``advice`` with each timed way's first call in a fresh process of its own, with the
    persistent compilation cache the measuring process filled at ``folder``
    (:func:`jitbench.measure.diskcache.restarted`), or why a way has none."""
    timed = [r for r in advice.rows if r.cold is not None]
    progress = measure.Progress(advice.target, len(timed))
    rows = [Row(target, advice.device, call=call, inputs=inputs, way=r.way)
            for r in timed]  # fmt: skip
    seconds = diskcache.restarted(rows, folder, say=progress.restart)
    found = dict(zip([r.way for r in timed], seconds, strict=True))
    done, missing = [], []
    for row in advice.rows:
        got = found.get(row.way)
        if isinstance(got, NoFigure):
            missing.append(f"{row.way}: {got.reason}")
        elif got is not None:
            row = dataclasses.replace(row, cold_filled=got)
        done.append(row)
    return dataclasses.replace(advice, rows=tuple(done), restarts="; ".join(missing))


def _advise(
    target: object, call: Call | None, inputs: object, fields: str | None, repeat: int,
    arrays: int, instructions: bool, cold_calls: int,
) -> Advice:  # fmt: skip
    spec = target if isinstance(target, str) else None
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
    rows, subjects = [], {}
    for way in ways:
        try:
            subjects[way.label] = WaySubject(target, way)
        except JitbenchError as exc:
            rows.append(WayRow(way.label, way.caveat, way.code(names), reason=str(exc)))
            continue
        rows.append(WayRow(way.label, way.caveat, way.code(names) if way.snippet else ""))
    progress = measure.Progress(target.name, len(subjects))
    counting = measure.Counting()
    # One new object whose fields every way's audit walks (each builds its own scenario's).
    made = target.new_instance() if target.factory is not None else None
    try:
        for i, row in enumerate(rows):
            if row.way in subjects:
                index, subject = list(subjects).index(row.way), subjects[row.way]
                probe = None if made is None else subject.converted(made)
                rows[i] = measure.audited(row, subject, fields, arrays, progress, index,
                                          probe)  # fmt: skip
            if i == 0 and not rows[0].built:  # as jitbench audit stops on the call as written
                raise JitbenchError(rows[0].reason)
            if i == 0:  # the call as written audited: the counts are worth starting
                counting = measure.Counting.start(spec, platform, call, inputs,
                                                  list(subjects), instructions)  # fmt: skip
        timed = {r.way: subjects[r.way] for r in rows if r.built and not r.first_call_raises}
        ranking = "loop" if ranking_figure(platform, counted=False) == BY_LOOP else "cached"
        figures = measure.timed(timed, repeat, cold_calls, ranking, platform, progress)
        rows = [measure.with_figures(r, figures.get(r.way)) for r in rows]
        rows, counts = counting.finish(rows, progress)
    finally:
        counting.cancel()
    rows, best, ranked_by = _ranked(rows, not counts, platform)
    best, checks, refused = _run(rows, best, ranked_by, spec, call, inputs, fields, arrays,
                                 platform, progress)  # fmt: skip
    return Advice(target.name, kind, target.call_name, platform, tuple(rows), best, ranked_by,
                  counts, checks=checks, refused=refused)  # fmt: skip


def _platform(target: Target) -> str:
    import jax

    leaves = [leaf for leaf in jax.tree_util.tree_leaves(target.inputs) if hasattr(leaf, "devices")]
    return next(iter(leaves[0].devices())).platform if leaves else jax.default_backend()
