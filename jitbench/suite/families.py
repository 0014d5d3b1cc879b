"""The asv benchmark families, written once for a built-in strategy's rows and a target's.

Each method measures the row its parameters name through the class's ``row(*params)``;
the timing disciplines are in docs/benchmarks.md, the calling stack in docs/counting.md.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from jitbench.auditing.scenario import TIMED_CHANGES, call_after
from jitbench.errors import NoFigure
from jitbench.hazards import HAZARDS
from jitbench.measure import case, device_rows
from jitbench.measure.counting import instructions
from jitbench.strategies.codegen import Shape
from jitbench.suite import grid
from jitbench.ways.subject import Subject

_off_clock_seconds = 0.0
T = TypeVar("T")
# One asv parameter's value: a strategy's or target's name, a device spec, a size, a depth,
# a change's name.
Param = str | int
# The audit's totals per (subject, device), as :func:`jitbench.measure.case.hazard_totals`.
Totals = dict[tuple[str, str], dict[str, object] | NoFigure]


class Rows(Protocol):
    """What a family's methods call on the class it is mixed into (the grid's, or
    :class:`TargetRows`): its parameters and the row they name."""

    params: list[list[Param]]

    def row(self, *params: Param) -> case.Row: ...


def clock() -> float:
    """``time.perf_counter`` less the seconds spent off it (:func:`off_clock`)."""
    return time.perf_counter() - _off_clock_seconds


def off_clock(work: Callable[[], T]) -> T:
    """``work()``, its seconds left out of :func:`clock`: building :class:`Cached` state, and
    the dispatch row's wait for the last call of a run."""
    global _off_clock_seconds
    start = time.perf_counter()
    try:
        return work()
    finally:
        _off_clock_seconds += time.perf_counter() - start


def skip(exc: NotImplementedError) -> NotImplementedError:
    """What makes asv record n/a from a body (docs/design.md); ``exc`` itself outside asv."""
    try:
        from asv_runner.benchmarks.mark import SkipNotImplemented
    except ImportError:
        return exc
    return SkipNotImplemented(str(exc))


class OneCallTiming:
    """asv's settings for a sample of one call after a ``setup`` that prepares it."""

    number = 1
    repeat = (3, 10, 1.0)
    warmup_time = 0.0


class ManyCallsTiming:
    """asv's settings for samples of cached calls (see :class:`Cached`); three rounds, so that
    no one process or busy minute sets the figure alone (docs/benchmarks.md)."""

    number = 30
    # Up to 10 samples in half a second: a cached call reaches 10 (30 calls take
    # milliseconds), a sample of a call that compiles every time (jit_per_call: 30
    # compiles, about a second) is enough alone.
    repeat = (1, 10, 0.5)
    warmup_time = 0.05
    rounds = 3


class Cached:
    """Base of the cached-call families: the state is built on the first timed call, off
    :func:`clock`."""

    timer = staticmethod(clock)
    _prepared: case.Prepared | None = None

    def subject(self, *params: Param) -> Subject:
        """The row's subject (``row`` is the grid class's), unless a family builds its own."""
        return self.row(*params).load()

    def prepared(
        self, params: Sequence[Param], prepare: Callable[[Subject], case.Prepared] | None = None
    ) -> case.Prepared:
        """``prepare(subject)`` (a :class:`~jitbench.measure.case.Prepared` by default) of the
        row ``params`` name, built on first use, off the clock."""
        if self._prepared is None:
            build = prepare or case.Prepared
            try:
                self._prepared = off_clock(lambda: build(self.subject(*params)))
            except NotImplementedError as exc:
                raise skip(exc) from None
        return self._prepared


class ColdCall(OneCallTiming):
    """The first call of a new instance, every in-memory cache cleared."""

    def setup(self, *params: Param) -> None:
        self.call = case.cold_call(self.row(*params).load())

    def time_first_call(self, *params: Param) -> None:
        self.call()


class FreshProcess(OneCallTiming):
    """The first call in a fresh interpreter (its imports and construction not timed):
    what a new process adds, its one-time costs; each sample starts an interpreter."""

    repeat = 2

    def timeraw_first_call_fresh_process(self, *params: Param) -> tuple[str, str]:
        return case.fresh_code(self.row(*params))


class CachedCall(Cached, ManyCallsTiming):
    """Many calls per sample. ``time_cached_call_dispatch`` does not wait for each result: the
    Python and C++ path of calls made back to back, in runs of ``case.DISPATCH_RUN`` (a
    sample), each run's last result waited for off the clock, so that no call waits behind a
    full queue of earlier ones still computing (docs/benchmarks.md)."""

    _dispatched = 0
    _out: object = None

    def time_cached_call(self, *params: Param) -> None:
        self.prepared(params).call()

    def time_cached_call_dispatch(self, *params: Param) -> None:
        # The result is kept until the next call, as a loop keeps it: one dropped at once,
        # while its computation is still queued, costs a few microseconds more to release.
        self._out = self.prepared(params).dispatch()
        self._dispatched += 1
        if self._dispatched % case.DISPATCH_RUN == 0:
            off_clock(lambda: _wait(self._out))

    # asv reads these from the method before its class. At least five samples a round, none
    # of them the one the first call built the state in (the calls right after a compile, the
    # first of them slow), which was a round's only sample wherever building outlasted the
    # half second of sampling; the first samples after it are often slow too, and a busy
    # machine spoils others: the median of fifteen holds where that of three did not. Up to
    # two seconds, so that a target whose build takes a second or so gets up to ten. Its own
    # version: 3 since runs are waited for (the class's, 2 built-in and 1 target, was the
    # row's before).
    time_cached_call_dispatch.repeat = (5, 10, 2.0)  # type: ignore[attr-defined]
    time_cached_call_dispatch.version = "3"  # type: ignore[attr-defined]


def _wait(out: object) -> None:
    """``jax.block_until_ready(out)``; JAX imported here, as importing the suite starts none."""
    import jax

    jax.block_until_ready(out)


class AfterChange(OneCallTiming):
    """The call right after a change (:func:`jitbench.auditing.scenario.call_after`): one call
    per sample, the scenario played from cold caches up to that change in ``setup``."""

    repeat = (3, 5, 0.5)

    def setup(self, *params: Param) -> None:
        *row, change = params
        subject = self.row(*row).load()
        obj = subject.new()
        played, _ = subject.playable(obj, subject.fields(obj)[0])
        self.call = call_after(subject, change, played)

    def time_call_after_change(self, *params: Param) -> None:
        self.call()


class Memory:
    """Peak memory of building an instance and calling it once."""

    def setup(self, *params: Param) -> None:
        self.subject = self.row(*params).load()

    def peakmem_build_and_first_call(self, *params: Param) -> None:
        case.cold_call(self.subject)()


def _track(name: str, unit: str) -> Callable[..., object]:
    def track(self: Rows, totals: Totals, *params: Param) -> object:
        row = self.row(*params)
        entry = totals.get((row.subject, row.device))
        if entry is None:
            entry = NoFigure(f"{row.subject} on {row.device} is not available here")
        elif not isinstance(entry, NoFigure) and entry[name] is None:
            reason = f"{row.subject}: {name} unknown (its instances cannot be weakly referenced)"
            entry = NoFigure(reason)
        if isinstance(entry, NoFigure):
            if not entry.failed:  # asv records n/a for its own exception only, from a body
                raise skip(NotImplementedError(entry.reason))
            entry.throw()
        return entry[name]

    track.__name__ = f"track_{name}"
    track.unit = unit  # type: ignore[attr-defined]
    return track


# Every class asv runs defines its own setup_cache (the target classes' are below, the
# built-in ones' in benchmarks/); why: docs/design.md.


class Hazards:
    """Totals of the audit per row (``jitbench audit``): one audit per row and device in
    ``setup_cache`` (:meth:`totals`), shared by every track."""

    timeout = 600

    def totals(self) -> Totals:
        return case.hazard_totals([self.row(*p) for p in itertools.product(*self.params)])


for _hazard in HAZARDS:
    setattr(Hazards, f"track_{_hazard.name}", _track(_hazard.name, _hazard.unit))


class Instructions:
    """The calling thread's instructions per call under Valgrind (opt-in), every row counted
    in ``setup_cache`` (:mod:`jitbench.measure.counting`), each call from the same two frames."""

    unit = instructions.COUNT_UNIT
    timeout = instructions.TIMEOUT_S

    def counted(self, *params: Param) -> case.Row:
        """What to count of the row the parameters name."""
        return instructions.counted(self.row(*params))

    def counts(self) -> instructions.Table:
        """Every row counted, one Valgrind process per subject (``setup_cache``)."""
        rows = [self.counted(*params) for params in itertools.product(*self.params)]
        return instructions.table(rows)

    def setup(self, table: instructions.Table, *params: Param) -> None:
        self.row_counts = instructions.lookup(table, self.counted(*params))

    def track_cached_call_instructions(self, table: instructions.Table, *params: Param) -> float:
        return self.row_counts.call

    def track_dispatch_instructions(self, table: instructions.Table, *params: Param) -> float:
        return self.row_counts.dispatch


TRACEBACKS = {"on": True, "off": False}


class InstructionsVsCallerDepth(Instructions):
    """Instructions per call made from ``frames`` more frames of the caller's (the counted
    loop called through that many functions), with JAX's traceback capture on or off:
    the slope over ``frames`` is what each frame of the caller costs a call
    (:func:`jitbench.measure.counting.instructions.fit_line`)."""

    param_names = ["strategy", "frames", "tracebacks"]
    timeout = 4 * instructions.TIMEOUT_S  # six rows of every strategy, two processes at a time

    def counted(self, strategy: str, frames: int, tracebacks: str) -> case.Row:
        row = case.Row(strategy, grid.SCALING_DEVICE, grid.SCALING_SIZE)
        return dataclasses.replace(row, frames=frames, tracebacks=TRACEBACKS[tracebacks])


class InstructionsVsDepth(Instructions):
    """Instructions per call of a class of ``depth`` nested layers (``Shape.depth``): the
    slope over ``depth`` is what each layer costs a call."""

    param_names = ["strategy", "depth"]
    timeout = 4 * instructions.TIMEOUT_S  # four rows of every strategy, two processes at a time

    def counted(self, strategy: str, depth: int) -> case.Row:
        return case.Row(strategy, grid.SCALING_DEVICE, grid.SCALING_SIZE, Shape(depth=depth))


class Device:
    """The device rows (opt-in, :mod:`jitbench.measure.device_rows`): the whole grid measured
    in one ``setup_cache``, defined here once so that every device class shares its result
    (asv keys it by module and line), each figure read back by a track."""

    unit = "seconds"

    def setup_cache(self) -> device_rows.Table:
        return device_rows.table(
            grid.strategy_names(), grid.sizes(), grid.loop_sizes(), grid.unsharded_devices()
        )

    setup_cache.timeout = device_rows.TIMEOUT_S  # type: ignore[attr-defined]

    def figures(
        self, table: device_rows.Table, kind: str, *params: Param
    ) -> device_rows.Calls | device_rows.Changes:
        row = self.row(*params[:3])
        try:
            return device_rows.lookup(table, (kind, row.subject, row.size, row.device))
        except NotImplementedError as exc:
            raise skip(exc) from None


class DeviceCalls(Device):
    """Per call: dispatch onto an idle device, the synchronous call, and a loop of calls with
    one wait at the end, at sizes up to 1e8 (where the device's own time shows)."""

    def track_dispatch_seconds(self, table: device_rows.Table, *params: Param) -> float:
        return self.figures(table, "calls", *params).dispatch

    def track_call_seconds(self, table: device_rows.Table, *params: Param) -> float:
        return self.figures(table, "calls", *params).call

    def track_loop_seconds(self, table: device_rows.Table, *params: Param) -> float:
        return self.figures(table, "calls", *params).loop


class DeviceFirstCall(Device):
    """The cold first call: on an accelerator, the chip's compile."""

    def track_first_call_seconds(self, table: device_rows.Table, *params: Param) -> float:
        return self.figures(table, "changes", *params).first_call


class DeviceAfterChange(Device):
    """The call right after each change of the scenario (a recompile, or a cache hit)."""

    param_names = ["strategy", "size", "device", "change"]

    def track_call_after_change_seconds(self, table: device_rows.Table, *params: Param) -> float:
        changes, step = self.figures(table, "changes", *params), params[3]
        if step not in changes.after:
            why = changes.raised.get(step, "its audit plays no such step")
            raise skip(NotImplementedError(f"{params[0]} at {step}: {why}"))
        return changes.after[step]


# --- A target's rows ------------------------------------------------------------------------


class TargetRows:
    """target x device; one process per combination and round."""

    param_names = ["target", "device"]
    rounds = 1
    timeout = 300
    version = "1"

    def row(self, target: str, device: str) -> case.Row:
        return case.Row(target, device)


def _target_totals(self: Hazards) -> Totals:
    return self.totals()


def _target_counts(self: Instructions) -> instructions.Table:
    return self.counts()


# name of the target class -> (family, its own attributes); the names are asv's
# (bench_targets.TargetCachedCall.time_cached_call...), read by jitbench.suite.catalog.
TARGET_FAMILIES: dict[str, tuple[type, dict[str, object]]] = {
    "TargetColdCall": (ColdCall, {}),
    "TargetFreshProcess": (FreshProcess, {}),
    "TargetCachedCall": (CachedCall, {}),
    "TargetAfterChange": (AfterChange, {"param_names": ["target", "device", "change"]}),
    "TargetHazards": (Hazards, {"setup_cache": _target_totals}),
    "TargetMemory": (Memory, {}),
    "TargetInstructions": (Instructions, {"devices": ["cpu"], "setup_cache": _target_counts}),
}


def benchmark_classes(declared: Sequence[str] = ()) -> dict[str, type]:
    """The target classes for ``declared`` targets and ``JITBENCH_TARGETS``, by name; none
    without a target. Each target's module is imported here, once (what cannot be is one
    line on stderr, and its rows fail with it); the parameters are the specs."""
    specs = case.target_specs(declared)
    if not specs:
        return {}
    case.target_problems(specs)
    made: dict[str, type] = {}
    for name, (family, own) in TARGET_FAMILIES.items():
        devices = own.get("devices", grid.unsharded_devices())
        extra = [list(TIMED_CHANGES)] if family is AfterChange else []
        attributes: dict[str, object] = {**own, "params": [specs, devices, *extra]}
        made[name] = type(name, (family, TargetRows), attributes)
    return made
