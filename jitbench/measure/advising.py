"""How ``jitbench advise`` measures its ways: each audited; all timed together, samples taken
in turn until their medians rank the ways (:mod:`jitbench.measure.sampling`), JAX's
persistent compilation cache off; each way's first call with every cache cleared (with that
cache filled: a fresh process's, :mod:`jitbench.measure.diskcache`); instructions counted by
two Valgrind processes that run beside it all; progress lines saying what is left
(docs/advise.md).
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import statistics
import sys
import time
from collections.abc import Sequence

from jitbench.auditing.audit import audit_subject
from jitbench.auditing.verdict import hazards
from jitbench.compiles import as_the_user_runs, count_compiles
from jitbench.errors import JitbenchError, NoFigure, error_text
from jitbench.measure import sampling
from jitbench.measure.case import Prepared
from jitbench.measure.counting import callgrind, instructions
from jitbench.measure.devicetime import device_seconds
from jitbench.measure.sampling import HIDDEN_BY, Spread
from jitbench.measure.timing import first_call
from jitbench.ways.subject import Subject

# What a way's figures are, by WayRow field (spreads, the device's time); or why it has none.
Figures = dict[str, Spread | float | None] | str


@dataclasses.dataclass(frozen=True)
class WayRow:
    """One way measured, or why it was not: its hazards over the audit's scenario
    (:data:`jitbench.hazards.FOUND`, as ``assert_jit_safe`` names them), its compiles, timings
    (seconds per call: ``cold`` the first call with every in-memory cache cleared,
    ``cold_filled`` the same with JAX's persistent compilation cache filled; ``dispatch``,
    ``cached`` and ``loop`` as the device rows measure them; ``device_time`` the device's own
    time per call, on an accelerator), instructions, and ``ratio``, its
    ranking figure over the call as written's; ``findings`` the audit's hazards in plain words
    (:func:`jitbench.auditing.verdict.hazards`); ``first_call_raises`` where its first call
    raised under jit (the error hazard, nothing to time or count); ``per_instance`` the hazards
    found only at a new instance equal to one already called
    (:meth:`~jitbench.auditing.result.AuditResult.per_instance`)."""

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
    loop: Spread | None = None
    cold_filled: Spread | None = None
    device_time: float | None = None
    first_call_raises: bool = False
    per_instance: tuple[str, ...] = ()

    @property
    def built(self) -> bool:
        return not self.reason

    @property
    def lasting(self) -> tuple[str, ...]:
        """The hazards a loop over one instance meets: all but :attr:`per_instance`."""
        return tuple(h for h in self.hazards if h not in self.per_instance)

    @property
    def device_bound(self) -> bool | None:
        """Whether a loop of the call goes at the device's pace, not the host's: its loop per
        call under :data:`~jitbench.measure.sampling.HIDDEN_BY` times the device's own time
        (the device busy most of the loop); where that time is not known, as the device rows
        judge it, the loop that many times its dispatch or more. None where not measured."""
        if self.loop is None:
            return None
        if self.device_time is not None:
            return self.loop.median < HIDDEN_BY * self.device_time
        if self.dispatch is None:
            return None
        return self.loop.median >= HIDDEN_BY * self.dispatch.median

    @property
    def safe(self) -> bool:
        """Built, never stale and never raising under jit: a candidate for the advice."""
        return self.built and not {"stale", "error"} & set(self.hazards)


class Progress:
    """Lines on stderr while advise measures: the way, the step, and about how long is left,
    from what the steps before took."""

    def __init__(self, target: str, ways: int) -> None:
        self.target, self.ways = target, ways
        self.audits: list[float] = []  # seconds of each audit
        self.compile_s: list[float] = []  # seconds of a first call's compile, from the audits
        self.firsts: list[float] = []  # seconds of each way's first call

    def say(self, what: str, left: float | None = None) -> None:
        tail = f" (about {left:.0f} s left)" if left is not None and left >= 0.5 else ""
        print(f"jitbench: advise {self.target}: {what}{tail}", file=sys.stderr, flush=True)

    def audit(self, index: int, way: str) -> None:
        """A line before each audit but the first (whose failure is the command's one line)."""
        if self.audits:
            left = statistics.mean(self.audits) * (self.ways - index) + self._after_audits()
            self.say(f"way {index + 1} of {self.ways}, {way}: audit", left)

    def timing(self, seconds: float) -> None:
        self.say(f"{self.ways} ways: dispatch, cached call and loop per call",
                 seconds + self._firsts(0))  # fmt: skip

    def first_calls(self, index: int, way: str) -> None:
        self.say(f"way {index + 1} of {self.ways}, {way}: first call, every cache cleared",
                 self._firsts(index))  # fmt: skip

    def restart(self, index: int, way: str) -> None:
        self.say(f"way {index + 1} of {self.ways}, {way}: first call in a fresh process, the "
                 "persistent compilation cache filled")  # fmt: skip

    def _after_audits(self) -> float:
        # The timings' first rounds (a sample lasts SAMPLE_S at most) and the first calls.
        per_way = 3 * sampling.SAMPLE_S * 7
        return per_way * self.ways + self._firsts(0)

    def _firsts(self, done: int) -> float:
        each = statistics.mean(self.firsts or self.compile_s or [0.0])
        return each * (self.ways - done)


def audited(
    row: WayRow, subject: Subject, fields: str | None, arrays: int, progress: Progress,
    index: int, probe: object = None,
) -> WayRow:  # fmt: skip
    """``row`` with the audit of its way: its hazards, compiles and findings, or why not
    (``probe``: the object whose fields are walked, as :func:`audit_subject` takes it)."""
    progress.audit(index, row.way)
    start = time.perf_counter()
    with count_compiles() as stats:
        try:
            audit = audit_subject(subject, fields=fields, arrays=arrays, probe=probe)
        except JitbenchError as exc:
            return dataclasses.replace(row, reason=str(exc))
    progress.audits.append(time.perf_counter() - start)
    if stats.compiles:
        spent = stats.trace_seconds + stats.lower_seconds + stats.compile_seconds
        progress.compile_s.append(spent / stats.compiles)
    return dataclasses.replace(row, hazards=tuple(audit.hazards()), compiles=audit.compiles,
                               findings=tuple(hazards(audit)),
                               first_call_raises=bool(audit.steps[0].hazard),
                               per_instance=audit.per_instance())  # fmt: skip


def timed(
    subjects: dict[str, Subject], repeat: int, cold_calls: int, ranking: str, platform: str,
    progress: Progress,
) -> dict[str, Figures]:  # fmt: skip
    """Every way's figures: ``dispatch``, ``cached`` and ``loop`` of all ways sampled in turn
    (at least ``repeat`` samples each; more where a median is not known yet, the ``ranking``
    figures of two ways are not told apart, or a way's figures contradict each other,
    :func:`~jitbench.measure.sampling.contradicted`); on an accelerator ``platform``, the
    device's own time per call in a loop (``device_time``,
    :func:`~jitbench.measure.devicetime.device_seconds`); then each way's first call,
    ``cold_calls`` times each, in its own fresh state: every in-memory cache cleared, JAX's
    persistent compilation cache off (``cold``). Each way is compiled first (read back where
    its audit compiled it); everything timed runs with the persistent cache off, as the
    user's own process runs it (a call that jits at every call compiles at every call). The
    first call with that cache filled is a fresh process's
    (:func:`jitbench.measure.diskcache.restarted`)."""
    found: dict[str, Figures] = {}
    made: dict[str, Prepared] = {}
    for name, subject in subjects.items():
        try:
            made[name] = Prepared(subject)  # compiled (read back where an audit compiled it)
        except Exception as exc:
            found[name] = f"its timed call raises: {error_text(exc)}"
    with as_the_user_runs():
        figures_of: dict[str, dict[str, sampling.Figure]] = {}
        for name, prepared in list(made.items()):
            try:
                figures_of[name] = sampling.call_figures(prepared)
                for figure in figures_of[name].values():  # each figure once: one that raises
                    figure.take()
            except Exception as exc:
                del made[name]
                figures_of.pop(name, None)
                found[name] = f"its timed call raises: {error_text(exc)}"
        flat = [f for figures in figures_of.values() for f in figures.values()]
        ranked = [i for i, kind in enumerate(k for fs in figures_of.values() for k in fs)
                  if kind == ranking]  # fmt: skip
        progress.timing(sum(f.number * f.per_call[0] for f in flat) * max(repeat - 1, 0))

        def close() -> set[int]:
            wanted = {ranked[i] for i in sampling.unresolved([flat[j] for j in ranked])}
            start = 0  # a way whose figures contradict each other: each sampled again
            for figures in figures_of.values():
                if sampling.contradicted(figures):
                    wanted |= set(range(start, start + len(figures)))
                start += len(figures)
            return wanted

        sampling.sample(flat, repeat, close=close)
        # Each first call's instance, built and bound while every cache is warm.
        fresh = {name: [subjects[name].call(subjects[name].new()) for _ in range(cold_calls)]
                 for name in made}  # fmt: skip
        loops = [(made[name].loop, figures_of[name][sampling.LOOP].number) for name in made]
        for (name, figures), own in zip(figures_of.items(), device_seconds(loops, platform),
                                        strict=True):  # fmt: skip
            found[name] = {kind: figure.spread() for kind, figure in figures.items()}
            found[name]["device_time"] = own
        made.clear()
        for index, (name, calls) in enumerate(fresh.items()):
            progress.first_calls(index, name)
            start = time.perf_counter()
            try:
                cold = [first_call(call, None)[0] for call in calls]
            except Exception as exc:
                found[name] = f"its first call raises: {error_text(exc)}"
                continue
            progress.firsts.append(time.perf_counter() - start)
            figures = found[name]
            assert isinstance(figures, dict)
            figures.update(cold=Spread.of(cold))
    return found


def with_figures(row: WayRow, figures: Figures | None) -> WayRow:
    """``row`` with its figures, or why it has none."""
    if figures is None:
        return row
    if isinstance(figures, str):
        return dataclasses.replace(row, reason=figures)
    return dataclasses.replace(row, **figures)


@dataclasses.dataclass
class Counting:
    """The ways' instructions, counted by two Valgrind processes, or why they are not
    counted. The first starts before the audits and runs beside them; the second where this
    process has a CPU to spare for it, else once its timings are done (:meth:`later`): on two
    CPUs, both and this process would share them while it times. The first, started sooner,
    counts two thirds of the ways, the second the rest: a counting process's start (JAX's
    import, the ways built and compiled under Valgrind) is most of its time, and the counts
    of two processes agree (docs/advise.md)."""

    reason: str = ""
    ways: tuple[str, ...] = ()
    futures: list[concurrent.futures.Future[list[instructions.Counts | NoFigure]]] = (
        dataclasses.field(default_factory=list)
    )
    started: float = 0.0
    rest: list[instructions.Row] = dataclasses.field(default_factory=list)

    @classmethod
    def start(
        cls, spec: str | None, device: str, call: str | None, inputs: str | None,
        ways: Sequence[str], wanted: bool,
    ) -> Counting:  # fmt: skip
        if not wanted:
            return cls("instructions not counted: not asked for")
        if spec is None:
            return cls("instructions not counted: the target was handed over, not named by its "
                       "spec")  # fmt: skip
        if device != "cpu":
            return cls(f"instructions not counted: they are counted on the CPU alone (a "
                       f"counting process cannot open the {device} this one holds)")  # fmt: skip
        reason = callgrind.unavailable_reason()
        if reason is not None:
            return cls(f"instructions not counted: {reason}")
        rows = [instructions.Row(spec, device, call=call, inputs=inputs, way=w) for w in ways]
        first = len(rows) - len(rows) // 3
        counting = cls("", tuple(ways), started=time.perf_counter(), rest=rows[first:])
        counting._submit(rows[:first])
        if len(instructions.cpus()) > 2:  # a CPU for each and one for this process
            counting.later()
        print(f"jitbench: advise {spec}: counting the instructions of {len(rows)} ways under "
              "Valgrind, beside the rest (--no-count skips it)", file=sys.stderr,
              flush=True)  # fmt: skip
        return counting

    def _submit(self, rows: list[instructions.Row]) -> None:
        pool = concurrent.futures.ThreadPoolExecutor(1)
        self.futures.append(pool.submit(instructions.count_rows, rows))
        pool.shutdown(wait=False)

    def later(self) -> None:
        """Start the second counting process, if not yet started."""
        if self.rest:
            rows, self.rest = self.rest, []
            self._submit(rows)

    def cancel(self) -> None:
        """Stop the counting processes, their counts no longer needed."""
        self.rest = []
        if any(not future.done() for future in self.futures):
            instructions.stop()

    def finish(self, rows: list[WayRow], progress: Progress) -> tuple[list[WayRow], str]:
        """The rows with their instructions, and why some or all have none ("" where all do)."""
        if not self.futures:
            return rows, self.reason
        self.later()
        if not all(future.done() for future in self.futures):
            so_far = time.perf_counter() - self.started
            progress.say(f"waiting for the instruction counts of {len(self.ways)} ways "
                         f"(Valgrind, {so_far:.0f} s so far)")  # fmt: skip
        try:
            found = [counts for future in self.futures for counts in future.result()]
        except (NotImplementedError, JitbenchError) as exc:
            return rows, f"instructions not counted: {exc}"
        by_way = dict(zip(self.ways, found, strict=True))
        done, missing = [], []
        for row in rows:
            got = by_way.get(row.way) if row.built and not row.first_call_raises else None
            if isinstance(got, NoFigure):
                missing.append(f"{row.way}: {got.reason}")
            elif got is not None:
                row = dataclasses.replace(
                    row, call_instructions=got.call, dispatch_instructions=got.dispatch
                )
            done.append(row)
        return done, "; ".join(missing)
