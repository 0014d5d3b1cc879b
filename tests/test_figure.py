"""One figure: every seconds figure jitbench prints goes through figure.seconds, which writes
what asv's own human_value writes (compare's tables read as asv compare's), negative times
and missing figures too."""

from __future__ import annotations

import math

import pytest
from asv.util import human_value

from jitbench.cli import render
from jitbench.figure import FAILED, NOT_MEASURED, Figure, seconds
from jitbench.measure.sampling import Spread

# From a nanosecond to a week, each unit's edges, and values with and without an error.
VALUES = [0.0, 1e-9, 4.2e-8, 9.995e-7, 1e-6, 1.2345e-5, 9.9949e-4, 1e-3, 0.5, 1.0, 59.99, 60.0,
          3599.0, 3600.0, 86400.0 * 3, 604800.0 * 2]  # fmt: skip


@pytest.mark.parametrize("value", VALUES)
def test_seconds_write_what_asv_writes(value):
    assert seconds(value) == human_value(value, "seconds")
    assert seconds(value, value / 7) == human_value(value, "seconds", err=value / 7)
    assert str(Figure(value * 1e9, "bytes")) == human_value(value * 1e9, "bytes")


def test_a_negative_time_keeps_its_units_and_a_missing_one_says_why_not():
    # A fit's intercept or a saving can be negative: asv's human_value has no negative times.
    assert seconds(-4.2e-8) == "-42.0ns"
    assert seconds(None) == seconds(math.nan) == NOT_MEASURED
    assert str(Figure(None, why_not=FAILED)) == "failed"
    assert str(Figure(1234567.0, "instructions", err=3.0)) == "1,234,567"
    assert str(Figure(3.0, "compiles")) == "3.0"


def test_the_cli_spread_is_three_figures_of_the_same_function():
    spread = Spread(1.234e-5, 1.2e-5, 2.5e-3, 10, 1)
    assert render.spread(spread) == "12.3μs [12.0μs, 2.50ms]"
