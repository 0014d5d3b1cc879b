"""What the commands print: their results as a table, JSON or CSV, one rendering per kind of
result whichever subject it comes from (README.md)."""

from __future__ import annotations

import csv
import json
import re
import sys
import textwrap
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

from jitbench.figure import INSTRUCTIONS, NOT_MEASURED, Figure, seconds
from jitbench.hazards import HAZARDS
from jitbench.measure.sampling import CONFIDENCE, HIDDEN_BY, PRECISION, Spread
from jitbench.targets.fields import named
from jitbench.vocabulary import SCENARIO, Outcome

if TYPE_CHECKING:
    from jitbench.advise import Advice
    from jitbench.auditing.result import AuditResult, Step
    from jitbench.measure.advising import WayRow
    from jitbench.measure.timing import Timings


class Explained(Protocol):
    """What JAX explained of a step's or a block's tracing-cache misses (a
    :class:`~jitbench.auditing.result.Step`, a ``jitbench.testing.CompileCount``)."""

    @property
    def explanations(self) -> Sequence[str]: ...


# Each outcome's mark in a cell, as the tables' legends quote it.
MARKS = {outcome: f"'{outcome.mark.strip()}'" for outcome in Outcome}
CELLS = (
    f"each step: traces/compiles; {MARKS[Outcome.STALE]} marks a stale (wrong) result, "
    f"{MARKS[Outcome.ERROR]} an error"
)
STEP_COLUMNS = ("subject", "device", "size", "step", "field", "how", "traces", "compiles")


def table(rows: Sequence[Sequence[object]], header: Sequence[str]) -> None:
    """Columns padded to their widest cell, a rule under the header."""
    cells = [list(map(str, header))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    for n, row in enumerate(cells):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        if n == 0:
            print("  ".join("-" * w for w in widths))


def as_json(data: object) -> None:
    json.dump(data, sys.stdout, indent=2)
    print()


def _csv(header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    writer = csv.writer(sys.stdout)
    writer.writerow(header)
    writer.writerows(rows)  # csv writes None as an empty cell


def audit_csv(results: Sequence[AuditResult]) -> None:
    """Every step of every audit, one row each (the same columns for any subject)."""
    _csv(
        [*STEP_COLUMNS, "outcome", "error", "explanation"],
        ([r.subject, r.device, r.size, s.name, s.field, s.how, s.traces, s.compiles, s.outcome,
          s.error, "\n\n".join(s.explanations)] for r in results for s in r.steps),
    )  # fmt: skip


# What tells two misses of one function apart: its id, and JAX's remark from the second on.
_SAME_MISS = re.compile(r" id=\d+|\n *but seen another function defined on the same line;.*", re.S)


def explanation(step: Explained) -> str:
    """JAX's words for the step's tracing-cache misses, the same miss of a function defined
    at one place told once with a count (a diffrax solve traces its inner lambdas anew in
    every call: 250 misses of 30), or why there are none."""
    if step.explanations:
        first: dict[str, str] = {}  # a miss's first words, by what tells misses apart
        counts: Counter[str] = Counter()
        for text in step.explanations:
            first.setdefault(key := _SAME_MISS.sub("", text), text)
            counts[key] += 1
        return "\n".join(
            first[key]
            + (f"\n  ({n - 1} more {'miss' if n == 2 else 'misses'} like it)" if n > 1 else "")
            for key, n in counts.items()
        )
    return (
        "JAX gave no explanation: it explains misses of functions defined outside JAX only "
        "(op-by-op dispatch traces JAX's own primitives), and not a trace that its tracing "
        "cache served"
    )


def _explained(steps: Sequence[Step], fields: bool) -> None:
    for step in steps:
        if step.traces or step.explanations:
            where = f" {step.field}" if step.field and fields else ""
            print(f"  {step.name}{where} ({step.cell}): {step.name.does}")
            print(textwrap.indent(explanation(step), "    "))


def strategy_audits(results: Sequence[AuditResult], device: str, size: int, explain: bool) -> None:
    """The built-in strategies' audits: one row per strategy, a cell per step, the totals."""
    print(f"cache audit on {device}, size {size}")
    print(CELLS + "\n")
    rows = [[r.subject, *(s.cell for s in r.steps), *r.totals().values()] for r in results]
    table(rows, ["strategy", *SCENARIO, *(h.short for h in HAZARDS)])
    errors = [(r.subject, s) for r in results for s in r.steps if s.error]
    if errors:
        print()
        for name, step in errors:
            print(f"{name} {step.name}: {step.error}")
    for r in results if explain else ():
        print(f"\n{r.subject}")
        _explained(r.steps, fields=False)


def step_table(steps: Sequence[Step]) -> None:
    """A user's object's steps, a row each: the field, how jit sees it, how it was changed."""
    rows = [[s.name, s.field or "-", s.role or "-", s.how or "-", s.cell] for s in steps]
    table(rows, ["step", "field", "jit sees it as", "change made with", "cell"])


def object_audit(result: AuditResult, title: str, explain: bool) -> None:
    """A user's object's audit: one row per step (the field, how jit sees it, how it was
    changed), then what was left out (a line per kind of reason) and the verdict."""
    print(f"cache audit of {title}")
    elements = f"{result.size:,} element{'' if result.size == 1 else 's'}"
    arrays = f", the first array field played of {elements}" if result.size else ""
    print(f"on {result.device}{arrays}")
    played = len({s.field for s in result.steps if s.field})
    left = f", {len(result.skipped)} left out (why: under the table)" if result.skipped else ""
    print(f"fields played: {played}{left}")
    print(
        f"{CELLS} (under jit only), {MARKS[Outcome.NOT_APPLICABLE]} a call that raises without "
        f"jit too, {MARKS[Outcome.UNJUDGED]} a change that leaves the result without jit as it "
        "was (jit reused a program: seen or not, it returns the same)\n"
    )
    step_table(result.steps)
    leaked = result.leaked_instances
    objects = f"objects not checked ({result.unchecked})" if leaked is None else f"{leaked} objects"
    if result.steps[0].outcome is Outcome.ERROR:
        print("\nleaked: not checked (the first call raised: no scenario was played)")
    else:
        print(f"\nleaked: {objects}, {result.leaked_arrays} arrays")
    # What was left out, one line per reason (its paths shortened to a few and a count).
    by_reason: dict[str, list[str]] = {}
    for path, reason in result.skipped:
        by_reason.setdefault(reason, []).append(path)
    for reason, paths in by_reason.items():
        print(f"skipped: {named(paths, 3)}: {reason}")
    print("\nverdict:")
    for line in result.verdict:
        print(f"  - {line}")
    if explain:
        print()
        _explained(result.steps, fields=True)


def spread(figure: Spread) -> str:
    """Median [q1, q3]: ``1.23μs [1.20μs, 1.30μs]``."""
    return f"{seconds(figure.median)} [{seconds(figure.q1)}, {seconds(figure.q3)}]"


# What each timing is, under jitbench time's and advise's tables.
TIMED = """\
cold first call: a new instance's first call, every in-memory cache cleared (it compiles)
cache filled: the first call in a fresh process, JAX's persistent compilation cache filled by
  the process before: what a restarted script pays
dispatch: calls back to back in runs of 30, each run's last wait off the clock
cached call: a call and its wait
loop per call: calls back to back and one wait for the last: a training loop's pace"""


def _sampled(repeat: int) -> str:
    return (
        f"medians of {repeat} samples or more each, taken until each median is known within "
        f"{PRECISION:.0%} ({CONFIDENCE:.0%} bounds)"
    )


def timings(result: Timings, form: str, repeat: int) -> None:
    """``jitbench time``'s figures: cold (without and with the persistent cache), dispatch,
    cached call, loop per call, and after each change."""
    if form == "json":
        as_json(result.to_dict())
        return
    rows = [
        ("cold first call", "", "", result.cold, ""),
        ("cold first call, cache filled", "", "", result.cold_filled, ""),
        ("dispatch", "", "", result.dispatch, ""),
        ("cached call", "", "", result.cached, ""),
        ("loop per call", "", "", result.loop, ""),
        *((f"after {a.step}", a.field, a.how, a.seconds, a.outcome) for a in result.after_change),
    ]
    if form == "csv":
        _csv(["target", "device", "measure", "field", "how", "median_s", "q1_s", "q3_s", "samples",
              "number", "outcome"],
             ([result.target, result.device, name, field, how, *(_cells(s)), outcome]
              for name, field, how, s, outcome in rows))  # fmt: skip
        return
    print(f"timings of {result.target} on {result.device}: seconds per call, median [q1, q3]")
    print(f"cold calls on {result.cold_on}; the others {_sampled(repeat)}\n")
    shown = [
        (name, field or "-", how or "-", spread(s) if s else NOT_MEASURED,
         s.samples * s.number if s else NOT_MEASURED, _mark(outcome))
        for name, field, how, s, outcome in rows
    ]  # fmt: skip
    table(shown, ["measure", "field", "change made with", "per call", "calls", "result"])
    print(f"\n{TIMED}")
    if result.restarts:
        print(f"cache filled: {result.restarts}")
    for a in result.after_change:
        if a.outcome != Outcome.CORRECT:
            why = a.error or _WHY.get(a.outcome, "its result differs from the call's without jit")
            print(f"after {a.step} {a.field or ''}: {_mark(a.outcome)}: {why}".replace("  ", " "))


def _cells(figure: Spread | None) -> tuple[float | None, ...]:
    """A spread's CSV cells (median, q1, q3, samples, number): empty where not measured."""
    if figure is None:
        return (None,) * 5
    return figure.median, figure.q1, figure.q3, figure.samples, figure.number


# Why a timed step is not judged correct, where no error says it: stale has its own line.
_WHY = {
    Outcome.UNJUDGED: "the change leaves the result without jit as it was, so whether jit sees it "
    "is not known (jit reused a program: seen or not, it returns the same)",
}


def _mark(outcome: str) -> str:
    """The result column of a timed step (:attr:`Outcome.shown`): blank for a correct one and
    for none (a figure that is no step's)."""
    return Outcome(outcome).shown if outcome else ""


ADVICE_COLUMNS = ("way", "hazards", "compiles", "cold first call", "cache filled", "dispatch",
                  "cached call", "loop per call")  # fmt: skip
COUNT_COLUMNS = ("instructions/call", "instructions/dispatch")
ADVICE_CSV = ("target", "device", "way", "reason", "hazards", "compiles", "cold_s",
              "cold_filled_s", "dispatch_s", "cached_s", "loop_s", "device_s",
              "call_instructions", "dispatch_instructions", "ratio", "recommended")  # fmt: skip


def _count(value: float | None) -> str:
    return str(Figure(value, INSTRUCTIONS))


def _ratio(value: float | None) -> str:
    """A ratio to the call as written: two decimals, or two significant digits below 0.01."""
    if value is None:
        return NOT_MEASURED
    return f"{value:.2f}x" if value >= 0.01 else f"{value:.2g}x"


def _median(figure: Spread | None) -> str:
    return seconds(figure.median if figure else None)


def advice(result: Advice, form: str) -> None:
    """``jitbench advise``'s rows (one per way), the recommended way and its code."""
    if form == "json":
        as_json(result.to_dict())
        return
    if form == "csv":
        _csv(ADVICE_CSV,
             ([result.target, result.device, r.way, r.reason, " ".join(r.hazards), r.compiles,
               *(f.median if f else None for f in (r.cold, r.cold_filled, r.dispatch, r.cached,
                                                    r.loop)),
               r.device_time, r.call_instructions, r.dispatch_instructions, r.ratio,
               r.way == result.recommended] for r in result.rows))  # fmt: skip
        return
    if result.note:
        print(result.note)
        return
    print(f"ways of jitting {result.target} ({result.kind}, call {result.call}) on "
          f"{result.device}")  # fmt: skip
    print("each way audited (the same scenario, the oracle the raw call without jit) and "
          "timed: medians")  # fmt: skip
    print(f"first calls once each, in a fresh state; the others {_sampled_all()}\n")
    counted = any(r.call_instructions is not None for r in result.rows)
    on_device = any(r.device_time is not None for r in result.rows)
    rows = [
        [r.way, " ".join(r.hazards) or "none", r.compiles,
         *(_median(f) for f in (r.cold, r.cold_filled, r.dispatch, r.cached, r.loop)),
         *((seconds(r.device_time),) if on_device else ()),
         *((_count(r.call_instructions), _count(r.dispatch_instructions)) if counted else ()),
         _ratio(r.ratio)]
        for r in result.rows if r.built
    ]  # fmt: skip
    table(rows, [*ADVICE_COLUMNS, *(("device time",) if on_device else ()),
                 *(COUNT_COLUMNS if counted else ()), "vs as written"])  # fmt: skip
    print(TIMED)
    if on_device:
        print(f"device time: the {result.device}'s own time a call in a loop, from JAX's profiler")
    for r in result.rows:
        if not r.built:
            print(f"not built: {r.way}: {r.reason}")
        elif r.hazards:
            more = f" (and {len(r.findings) - 1} more)" if len(r.findings) > 1 else ""
            print(f"{r.way}: {r.findings[0]}{more}")
    if result.counts:
        print(result.counts)
    if result.restarts:
        print(result.restarts)
    if result.device != "cpu":
        print(bound(result))
    if not result.recommended:
        print("\nno way is free of stale results, errors and leaks: see the audit of each")
        for line in result.checks:
            print(line)
        return
    best = result.row(result.recommended)
    print(f"\nrecommended: {best.way} ({result.why()}; ranked by {result.ranked_by})")
    if best.hazards:
        print(f"  its hazards: {', '.join(best.hazards)}")
    if best.caveat:
        print(f"  caveat: {best.caveat}")
    if best.code:
        print(textwrap.indent(best.code, "    "))
    else:
        print("  keep the call as it is")
    for r in result.faster_hazardous():
        what = r.caveat or "the call as the user wrote it"
        print(f"faster, but {', '.join(r.hazards)}: {r.way}: {what}")
    for line in result.checks:
        print(line)


def _sampled_all() -> str:
    return (
        f"sampled in turn until each median is known within {PRECISION:.0%} ({CONFIDENCE:.0%} "
        "bounds) and the ways are told apart"
    )


def bound(result: Advice) -> str:
    """On an accelerator: whether a loop of the call as written is host-bound or device-bound
    (its loop per call against the device's own time, or, where that is not known, against
    its dispatch as the device rows judge it), and the way that would change it."""
    timed = [r for r in result.rows if r.built and r.device_bound is not None]
    written = result.rows[0]  # the call as written comes first
    device = result.device
    if written not in timed:
        return f"host-bound or device-bound on the {device}: not measured"

    def figures(row: WayRow) -> str:
        if row.device_time is not None:
            own = seconds(row.device_time)
            return f"{_median(row.loop)} a call against the {device}'s own {own}"
        ratio = row.loop.median / row.dispatch.median
        return f"{_median(row.loop)} a call, {ratio:.2f}x its dispatch of {_median(row.dispatch)}"

    basis = (
        "" if written.device_time is not None
        else f" (the {device}'s own time not measured: the loop against the dispatch, "
        f"{HIDDEN_BY}x or more device-bound, as the device rows judge it)"
    )  # fmt: skip
    if written.device_bound:
        return (
            f"{written.way}: a loop of the call is device-bound ({figures(written)}){basis}: the "
            f"{device}'s own time sets its pace, and another way of jitting changes the host's "
            "part alone"
        )
    said = (
        f"{written.way}: a loop of the call is host-bound ({figures(written)}){basis}: the "
        f"{device} waits for the host to dispatch each call"
    )
    bound_ways = [r for r in timed if r.device_bound]
    if bound_ways:
        way = min(bound_ways, key=lambda r: r.loop.median)
        return f"{said}; {way.way} makes it device-bound ({figures(way)})"
    fastest = min(timed, key=lambda r: r.loop.median)
    return (
        f"{said}; no way makes it device-bound: the fastest loop, {fastest.way}'s "
        f"({figures(fastest)}), is still the host's pace"
    )
