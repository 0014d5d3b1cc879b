"""Timings sampled until their medians are known well enough: distribution-free bounds of a
median (order statistics of the samples), each figure of a call (dispatch, synchronous call,
loop per call) and sampling that stops when it knows enough, spending more samples only where
a figure's bounds are wide or two figures being ranked overlap (docs/advise.md).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Protocol

# The confidence of a median's bounds, and how close they must be to it for the median to be
# known: within PRECISION of it on either side.
CONFIDENCE = 0.95
PRECISION = 0.05
# The calls of one sample last about SAMPLE_S, within [MIN_CALLS, MAX_CALLS]: a loop of ten
# calls or more, so that its one wait is spread over them (the device rows' figures).
SAMPLE_S = 0.05
MIN_CALLS, MAX_CALLS = 10, 1000
# More samples than the first ones stop at MAX_SAMPLES a figure, or after EXTRA_S in all.
MAX_SAMPLES = 60
EXTRA_S = 2.0
# Two medians closer than this are not told apart (nor two whose bounds overlap).
TOLERANCE = 0.05
# The figures of a call, as the device rows measure them (docs/accelerator.md).
DISPATCH, CALL, LOOP = "dispatch", "cached", "loop"
# A loop per call this many times the dispatch or more goes at the device's pace, not the
# host's (the device hides the host); why this margin: docs/accelerator.md#what-is-measured.
HIDDEN_BY = 1.25


def median_bounds(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Bounds of the median of what ``values`` sample, whatever its distribution: the order
    statistics x(k) and x(n-k+1) with the largest k whose binomial coverage is at least
    ``confidence``; the samples' range where too few reach it (fewer than 6 at 95%)."""
    ordered = sorted(values)
    n = len(ordered)
    tail = (1 - confidence) / 2 * 2**n  # outcomes of 2**n allowed below the lower bound
    below, index = 0, 0
    for j in range(n // 2):
        below += math.comb(n, j)  # outcomes with at most j samples under the median
        if below > tail:
            break
        index = j
    return ordered[index], ordered[n - 1 - index]


@dataclasses.dataclass(frozen=True)
class Spread:
    """Seconds per call over the samples: median and quartiles, and (``low``, ``high``) the
    bounds of the median (:func:`median_bounds`; None where not computed)."""

    median: float
    q1: float
    q3: float
    samples: int
    number: int = 1
    low: float | None = None
    high: float | None = None

    @classmethod
    def of(cls, per_call: list[float], number: int = 1) -> Spread:
        low, high = median_bounds(per_call)
        if len(per_call) == 1:
            (only,) = per_call
            return cls(only, only, only, 1, number, low, high)
        q1, median, q3 = statistics.quantiles(per_call, n=4, method="inclusive")
        return cls(median, q1, q3, len(per_call), number, low, high)

    @property
    def bounds(self) -> tuple[float, float]:
        """The bounds of the median, or the quartiles where none were computed."""
        if self.low is None or self.high is None:
            return self.q1, self.q3
        return self.low, self.high


@dataclasses.dataclass
class Figure:
    """One figure of one call: ``run(n)`` makes ``n`` calls and returns their seconds; each
    sample is ``number`` calls, kept per call."""

    run: Callable[[int], float]
    number: int
    per_call: list[float] = dataclasses.field(default_factory=list)

    def take(self) -> None:
        self.per_call.append(self.run(self.number) / self.number)

    @property
    def median(self) -> float:
        return statistics.median(self.per_call)

    def bounds(self) -> tuple[float, float]:
        return median_bounds(self.per_call)

    def known(self, precision: float = PRECISION) -> bool:
        """Whether the median's bounds are within ``precision`` of it on both sides."""
        low, high = self.bounds()
        median = self.median
        return median - low <= precision * median and high - median <= precision * median

    def spread(self) -> Spread:
        return Spread.of(self.per_call, self.number)


class Calls(Protocol):
    """What :func:`call_figures` times (a :class:`~jitbench.measure.case.Prepared`): the call
    waited for, and loops of ``n`` calls dispatched back to back."""

    def call(self) -> object: ...

    def dispatch_loop(self, n: int) -> float: ...

    def loop(self, n: int) -> object: ...


def _repeated(call: Callable[[], object]) -> Callable[[int], float]:
    clock = time.perf_counter

    def run(n: int) -> float:
        start = clock()
        for _ in range(n):
            call()
        return clock() - start

    return run


def _looped(loop: Callable[[int], object]) -> Callable[[int], float]:
    clock = time.perf_counter

    def run(n: int) -> float:
        start = clock()
        loop(n)
        return clock() - start

    return run


def calls_per_sample(call: Callable[[], object]) -> int:
    """Calls per sample for ``call`` (compiled, warm): as many as last :data:`SAMPLE_S`, from
    three calls timed, within [:data:`MIN_CALLS`, :data:`MAX_CALLS`]."""
    once = _repeated(call)(3) / 3
    return int(min(MAX_CALLS, max(MIN_CALLS, SAMPLE_S // max(once, 1e-9))))


def call_figures(prepared: Calls, number: int | None = None) -> dict[str, Figure]:
    """The three figures of a :class:`~jitbench.measure.case.Prepared` call, ``number`` calls a
    sample (None: :func:`calls_per_sample`): ``dispatch`` (calls back to back in runs that
    never fill the queue, each run's last wait outside the window: the suite's dispatch row),
    ``cached`` (the call and its wait), ``loop`` (calls back to back and one wait for the last,
    per call)."""
    number = number or calls_per_sample(prepared.call)
    return {
        DISPATCH: Figure(prepared.dispatch_loop, number),
        CALL: Figure(_repeated(prepared.call), number),
        LOOP: Figure(_looped(prepared.loop), number),
    }


def apart(a: Figure | Spread, b: Figure | Spread) -> bool:
    """Whether the two medians are told apart: more than :data:`TOLERANCE` from each other
    and their bounds not overlapping."""
    (low_a, high_a), (low_b, high_b) = (_bounds(a), _bounds(b))
    lower, higher = (a, b) if a.median <= b.median else (b, a)
    overlap = high_a >= low_b if lower is a else high_b >= low_a
    return not overlap and lower.median < higher.median * (1 - TOLERANCE)


def _bounds(figure: Figure | Spread) -> tuple[float, float]:
    return figure.bounds() if isinstance(figure, Figure) else figure.bounds


def unresolved(figures: Sequence[Figure]) -> set[int]:
    """The figures (by index) of each two neighbours in order of median whose medians differ
    by more than :data:`TOLERANCE` but whose bounds overlap: more samples would tell them
    apart, and a ranking needs that."""
    order = sorted(range(len(figures)), key=lambda i: figures[i].median)
    wanted = set()
    for a, b in itertools.pairwise(order):
        low, high = figures[a], figures[b]
        if low.median < high.median * (1 - TOLERANCE) and low.bounds()[1] >= high.bounds()[0]:
            wanted |= {a, b}
    return wanted


def contradicted(figures: dict[str, Figure]) -> bool:
    """Whether one call's figures (:func:`call_figures`) contradict each other: its call and
    the wait for its result told apart below its dispatch alone, which is part of it. The
    machine was busier while some were taken than while others were: more samples."""
    call, dispatch = figures[CALL], figures[DISPATCH]
    return call.median < dispatch.median and apart(call, dispatch)


def sample(
    figures: Sequence[Figure], repeat: int, *, close: Callable[[], set[int]] | None = None,
    extra_s: float = EXTRA_S, max_samples: int = MAX_SAMPLES,
) -> None:  # fmt: skip
    """Samples of every figure, in turn (a machine's slow spell falls on all of them alike),
    until each has ``repeat``; then, round by round, one more of each figure whose median is
    not known yet (:meth:`Figure.known`) and of each that ``close`` names (by index: two
    figures being ranked that are not yet told apart, :func:`unresolved`), until none is
    wanted, a figure has ``max_samples`` or ``extra_s`` seconds are spent. ``repeat`` under 2:
    those samples alone."""
    while any(len(f.per_call) < repeat for f in figures):
        for figure in figures:
            if len(figure.per_call) < repeat:
                figure.take()
    if repeat < 2:
        return
    deadline = time.perf_counter() + extra_s
    while time.perf_counter() < deadline:
        wanted = {i for i, f in enumerate(figures) if not f.known()}
        wanted |= close() if close else set()
        wanted = {i for i in wanted if len(figures[i].per_call) < max_samples}
        if not wanted:
            return
        for i in sorted(wanted):
            figures[i].take()
