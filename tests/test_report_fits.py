"""Per-layer (and per-leaf, per-op) fits: 95% intervals, and no negative cost shown."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jitbench.report import fits
from jitbench.report.run import display

DEPTHS = np.array([1.0, 4.0, 16.0, 64.0])


def test_an_exact_line_has_a_tight_interval_around_its_slope():
    found = fits.line(DEPTHS, 2e-6 * DEPTHS + 5e-6)
    assert found["per"] == pytest.approx(2e-6)
    assert found["at0"] == pytest.approx(5e-6)
    assert found["per_lo"] == pytest.approx(2e-6) and found["per_hi"] == pytest.approx(2e-6)
    assert fits.text(found["per"], found["per_lo"], found["per_hi"]) == "2.00μs [2.00μs, 2.00μs]"


def test_an_interval_that_includes_zero_is_below_noise():
    # A layer that costs nothing, medians spread by a few microseconds.
    ys = 10e-6 + np.array([3e-6, -2e-6, 4e-6, -1e-6])
    found = fits.line(DEPTHS, ys)
    assert found["per_lo"] < 0 < found["per_hi"]
    shown = fits.text(found["per"], found["per_lo"], found["per_hi"])
    assert shown.startswith("below noise [-") and shown.count(",") == 1


def test_a_negative_fit_is_never_shown_as_a_cost():
    assert fits.text(-3e-6, -5e-6, -1e-6) == "below noise [-5.00μs, -1.00μs]"
    assert fits.text(-3e-6, float("nan"), float("nan")) == "below noise"
    assert fits.text(float("nan"), float("nan"), float("nan")) == "n/a"


def test_two_points_have_no_interval():
    found = fits.line(DEPTHS[:2], np.array([1e-6, 2e-6]))
    assert found["per"] == pytest.approx(1e-6 / 3)
    assert np.isnan(found["per_lo"])
    assert fits.text(found["per"], found["per_lo"], found["per_hi"]) == "333ns"


def test_tables_show_each_fit_with_its_interval_and_keep_the_bounds_out():
    table = pd.DataFrame(
        {
            "strategy": ["a", "b"],
            "dispatch_per_layer_s": [2e-6, -1e-7],
            "dispatch_per_layer_lo_s": [1e-6, -4e-7],
            "dispatch_per_layer_hi_s": [3e-6, 2e-7],
        }
    )
    shown = display(table)
    assert list(shown.columns) == ["strategy", "dispatch_per_layer_s"]
    assert shown["dispatch_per_layer_s"].tolist() == [
        "2.00μs [1.00μs, 3.00μs]",
        "below noise [-400ns, 200ns]",
    ]
