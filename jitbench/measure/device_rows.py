"""The device rows: every figure of every strategy on a device, measured in one process, asv's
``setup_cache``, and read back as ``track_`` rows (why, and what each figure is:
docs/accelerator.md).
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
import time
from collections.abc import Sequence

from jitbench.errors import JitbenchError, NoFigure, opted_in
from jitbench.measure.case import Prepared, Row
from jitbench.measure.timing import after_changes, cold_spread
from jitbench.ways.subject import Subject

OPT_IN_ENV = "JITBENCH_DEVICE_ROWS"
# Samples per figure, and how long a sample of calls lasts: as many calls as fit in
# SAMPLE_S, within [MIN_CALLS, MAX_CALLS] (a loop of one call would be the synchronous call).
SAMPLES = 3
SAMPLE_S = 0.05
MIN_CALLS, MAX_CALLS = 3, 200
COLD_CALLS = 3
AFTER_RUNS = 1
# A size whose call would take longer than this (:func:`too_slow`) is not measured (why:
# docs/accelerator.md).
CALL_LIMIT_S = 0.5
# asv's limit for the setup_cache that measures the whole grid.
TIMEOUT_S = 1500
# The host's CPU rows stop here: a call of 1e8 elements takes tenths of a second there, and
# the CPU hides its dispatch by 1e6 already (docs/accelerator.md).
CPU_LIMIT = 10_000_000

Key = tuple[str, str, int, str]  # (kind "calls" or "changes", strategy, size, device)


@dataclasses.dataclass(frozen=True)
class Calls:
    """Seconds per call, medians over the samples: ``dispatch`` (until the call returns, the
    device idle), ``call`` (with the wait), ``loop`` (``calls`` calls back to back, one wait)."""

    dispatch: float
    call: float
    loop: float
    calls: int


@dataclasses.dataclass(frozen=True)
class Changes:
    """Seconds of the cold first call and of the call right after each step of the scenario
    (medians), by step name; ``raised``: the steps whose call raised, and why."""

    first_call: float
    after: dict[str, float]
    raised: dict[str, str]


Table = dict[Key, Calls | Changes | NoFigure] | NoFigure


def measure_calls(subject: Subject) -> Calls:
    """Dispatch, synchronous call and loop per call of ``subject``'s call on its own object,
    the number of calls per sample set by one timed call."""
    prepared = Prepared(subject, subject.target.obj)
    start = time.perf_counter()
    prepared.call()
    once = time.perf_counter() - start
    calls = int(min(MAX_CALLS, max(MIN_CALLS, SAMPLE_S // max(once, 1e-9))))
    dispatch, call, loop = [], [], []
    clock, sync = time.perf_counter, prepared.call
    for _ in range(SAMPLES):
        dispatch.append(prepared.dispatch_each(calls) / calls)
        start = clock()
        for _ in range(calls):
            sync()
        call.append((clock() - start) / calls)
        start = clock()
        prepared.loop(calls)
        loop.append((clock() - start) / calls)
    median = statistics.median
    return Calls(median(dispatch), median(call), median(loop), calls)


def measure_changes(subject: Subject) -> Changes:
    """The cold first call and the call after each step, as ``jitbench time`` times them."""
    cold, _ = cold_spread(subject, COLD_CALLS)
    obj = subject.new()
    played, _ = subject.playable(obj, subject.fields(obj)[0])
    steps = after_changes(subject, AFTER_RUNS, played)
    after = {step.step: step.seconds.median for step in steps if step.outcome != "error"}
    raised = {step.step: step.error for step in steps if step.outcome == "error"}
    return Changes(cold.median, after, raised)


def too_slow(measured: list[tuple[int, Calls | Changes | NoFigure]], size: int) -> str | None:
    """Why a call at ``size`` is not measured, from the calls ``measured`` at smaller sizes
    (size, figures): the line through the last two, extended to ``size``, passes
    :data:`CALL_LIMIT_S` (a compile's fixed cost does not grow with the size; what does
    grows about linearly). None where it may be measured."""
    calls = [(n, f.call) for n, f in measured if isinstance(f, Calls)][-2:]
    if len(calls) < 2:
        return None
    (n0, t0), (n1, t1) = calls
    expected = t1 + max(t1 - t0, 0.0) * (size - n1) / (n1 - n0)
    if expected <= CALL_LIMIT_S:
        return None
    return (
        f"not measured: a call took {t0:.3g} s at size {n0:,} and {t1:.3g} s at {n1:,}, "
        f"so about {expected:.3g} s here (over {CALL_LIMIT_S} s a call)"
    )


def _measured(kind: str, row: Row) -> Calls | Changes | NoFigure:
    if kind == "calls" and row.device.startswith("cpu") and (row.size or 0) > CPU_LIMIT:
        return NoFigure(f"the host's CPU rows stop at {CPU_LIMIT:,} elements")
    try:
        subject = row.load()
        return measure_calls(subject) if kind == "calls" else measure_changes(subject)
    except (NotImplementedError, JitbenchError) as exc:
        return NoFigure.of(exc)


def table(
    strategies: Sequence[str], sizes: Sequence[int], loop_sizes: Sequence[int],
    devices: Sequence[str],
) -> Table:  # fmt: skip
    """Every row's figures for asv's ``setup_cache``: calls at ``loop_sizes``, the first call
    and the changes at ``sizes``, per strategy and device; the one reason when not opted in."""
    if not opted_in(OPT_IN_ENV):
        return NoFigure(
            "the device rows are opt-in (minutes, one process): python -m jitbench device-run, "
            f"or {OPT_IN_ENV}=1 asv run -b Device"
        )
    found: dict[Key, Calls | Changes | NoFigure] = {}
    for device in devices:
        start = time.perf_counter()
        for strategy in strategies:
            for kind, grid in (("changes", sizes), ("calls", loop_sizes)):
                measured: list[tuple[int, Calls | Changes | NoFigure]] = []
                stop: str | None = None  # why this size and every larger one is skipped
                for size in sorted(grid):
                    stop = stop or too_slow(measured, size)
                    entry = NoFigure(stop) if stop else _measured(kind, Row(strategy, device, size))
                    found[kind, strategy, size, device] = entry
                    measured.append((size, entry))
        seconds = time.perf_counter() - start
        print(f"jitbench: device rows on {device}: {seconds:.0f} s", file=sys.stderr, flush=True)
    return found


def lookup(figures: Table, key: Key) -> Calls | Changes:
    """The figures of one row, or raise what asv reads as n/a or failed."""
    missing = NoFigure(f"{key[1]} at size {key[2]} on {key[3]} was not measured in this run")
    entry = figures if isinstance(figures, NoFigure) else figures.get(key, missing)
    if isinstance(entry, NoFigure):
        entry.throw()
    return entry
