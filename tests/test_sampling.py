"""Samples taken until a median is known: the order-statistic bounds of a median, and where
more samples go. No clock is read: each figure's samples are a fixed sequence."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from jitbench.measure.sampling import (
    CALL,
    DISPATCH,
    LOOP,
    Figure,
    Spread,
    apart,
    contradicted,
    median_bounds,
    sample,
    unresolved,
)  # fmt: skip


def _coverage(n: int, index: int) -> float:
    """P(x(index+1) <= median <= x(n-index)) for n samples, whatever the distribution."""
    return 1 - 2 * sum(math.comb(n, j) for j in range(index + 1)) / 2**n


@pytest.mark.parametrize("n, expected", [(1, (1, 1)), (5, (1, 5)), (6, (1, 6)), (9, (2, 8)),
                                         (15, (4, 12)), (30, (10, 21))])  # fmt: skip
def test_median_bounds_are_the_order_statistics_binomial_coverage_gives(n, expected):
    values = list(range(1, n + 1))
    random.Random(n).shuffle(values)
    low, high = median_bounds(values)
    assert (low, high) == expected
    if n >= 6:  # the widest interval with coverage of 95% or more, and no narrower one has it
        assert _coverage(n, low - 1) >= 0.95 > _coverage(n, low)


def _figure(values: list[float]) -> Figure:
    """A figure whose samples are ``values`` in turn (seconds per call, one call a sample)."""
    stream = itertools.cycle(values)
    return Figure(lambda n: next(stream) * n, 1)


def test_a_steady_figure_stops_at_its_first_samples():
    steady = _figure([1.0])
    sample([steady], 7)
    assert len(steady.per_call) == 7 and steady.known()


def test_a_noisy_figure_gets_more_samples_until_known_or_the_cap():
    noisy = _figure([1.0, 1.3, 0.8, 1.1, 0.9, 1.2, 1.0, 0.7, 1.05])
    sample([noisy], 7, max_samples=40)
    assert 7 < len(noisy.per_call) <= 40


def test_one_sample_asked_is_one_taken():
    noisy = _figure([1.0, 2.0])
    sample([noisy], 1)
    assert len(noisy.per_call) == 1


def test_two_figures_not_yet_told_apart_get_more_samples():
    # Each known within 5% after 9 samples, 7% apart, their bounds overlapping.
    a = _figure([1.0, 1.04, 0.96, 1.1, 0.9, 1.02, 0.98, 1.03, 0.97])
    b = _figure([1.07, 1.11, 1.03, 1.17, 0.97, 1.09, 1.05, 1.10, 1.04])
    c = _figure([3.0])  # far from both: never wanted for the ranking
    for figure in (a, b, c):
        for _ in range(9):
            figure.take()
    assert a.known() and b.known()
    assert unresolved([a, b, c]) == {0, 1}
    assert not apart(a, b) and apart(a, c) and apart(b.spread(), c.spread())


def test_two_figures_within_the_tolerance_are_a_tie_not_a_reason_to_sample():
    a, b = _figure([1.0, 1.01, 0.99]), _figure([1.02, 1.03, 1.01])
    for figure in (a, b):
        for _ in range(9):
            figure.take()
    assert unresolved([a, b]) == set() and not apart(a, b)


def test_bounds_of_a_spread_without_them_are_its_quartiles():
    assert Spread(2.0, 1.0, 3.0, 5).bounds == (1.0, 3.0)
    assert Spread.of([3.0, 1.0, 2.0, 4.0, 5.0, 6.0, 7.0]).bounds == (1.0, 7.0)


def test_a_call_timed_below_its_own_dispatch_contradicts_its_figures():
    """A call and its wait include the dispatch: a call's median told apart below its
    dispatch's (a busy spell of the machine while the dispatch was sampled) asks for more
    samples of that way; within the tolerance, or overlapping, it does not."""

    def figures(call: float, dispatch: float) -> dict[str, Figure]:
        found = {CALL: _figure([call]), DISPATCH: _figure([dispatch]), LOOP: _figure([dispatch])}
        for figure in found.values():
            for _ in range(7):
                figure.take()
        return found

    assert contradicted(figures(0.9e-3, 2.4e-3))
    assert not contradicted(figures(2.5e-3, 2.4e-3))
    assert not contradicted(figures(2.35e-3, 2.4e-3))  # within 5%: noise
