"""One figure: a value with its unit and, where there is no value, the word that says why not.
The CLI, the report, validate, compare and the README format a figure here, and a seconds
figure through :func:`seconds` alone: asv's human units (``1.23μs``, ``45.6ms``, ``1.2±0.1ms``
with an error), so a time reads the same in every table jitbench writes. Standard library
only: the CLI imports it."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from itertools import pairwise

SECONDS = "seconds"
BYTES = "bytes"
INSTRUCTIONS = "instructions"  # a count: its unit is a word after the value (asv's own units)
NOT_MEASURED = "n/a"  # why not: nothing was measured (or nothing could be)
FAILED = "failed"  # why not: the measurement raised

# asv's units of time (asv.util's human_time), smallest first.
_TIME_UNITS = (
    ("ns", 1e-9), ("μs", 1e-6), ("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0),
    ("d", 86400.0), ("w", 604800.0), ("M", 2620800.0), ("q", 7862400.0), ("y", 31449600.0),
    ("C", 3144960000.0),
)  # fmt: skip


@dataclass(frozen=True)
class Figure:
    """A value in ``unit`` (seconds, bytes, instructions or another of asv's units), its error
    where known, and ``why_not``, shown in its place where there is no value."""

    value: float | None
    unit: str = SECONDS
    err: float | None = None
    why_not: str = NOT_MEASURED

    def __str__(self) -> str:
        value = self.value
        if value is None or math.isnan(value):
            return self.why_not
        if self.unit == SECONDS:
            return seconds(value, self.err)
        if self.unit == BYTES:
            return byte_size(value, self.err)
        if self.unit == INSTRUCTIONS:
            return f"{value:,.0f}"
        shown = json.dumps(value)
        return shown if self.err is None else f"{shown}±{self.err:.2g}"


def seconds(value: float | None, err: float | None = None) -> str:
    """A time in human units, three significant digits, negative ones too (a saving, an
    intercept or an interval's end can be); ``n/a`` where there is none."""
    if value is None or math.isnan(value):
        return NOT_MEASURED
    value = float(value)
    if value < 0:
        return "-" + seconds(-value, err)
    scale = value if value or err is None else float(err)
    units = _TIME_UNITS if scale else _TIME_UNITS[3:5]
    for (name, size), (_, bigger) in pairwise(units):
        if scale < bigger:
            shown = _digits(value / size, 3, significant_zeros=True)
            if err is None:
                return shown + name
            return f"{shown}±{_digits(err / size, 1, truncate_small=2)}{name}"
    return "~0"


def byte_size(value: float, err: float | None = None) -> str:
    """Bytes in powers of 1000, three significant digits: ``256``, ``64k``, ``1.1G``."""
    value = float(value) if value >= 1 else 0.0
    power = math.floor(math.log(value) / math.log(1000)) if value else 0
    suffix = "?" if power > 7 else " kMGTPEH"[power].strip()
    scale = int(math.pow(1000, power))
    if err is None:
        return _digits(value / scale, 3) + suffix
    return f"{_digits(value / scale, 3)}±{_digits(err / scale, 1, truncate_small=2)}{suffix}"


def _digits(
    value: float, significant: int, truncate_small: int | None = None, significant_zeros=False
) -> str:
    """``value`` to ``significant`` digits, as asv's human_float writes it."""
    if value == 0:
        return "0"
    if math.isinf(value) or math.isnan(value):
        return f"{value}"
    sign = "-" if value < 0 else ""
    value = abs(value)
    magnitude = math.floor(math.log10(value)) + 1
    if truncate_small is not None:
        magnitude = max(magnitude, -truncate_small + 1)
    places = significant - magnitude
    if magnitude <= -5 or magnitude >= 9:
        shown = f"{value:.{significant}e}"
    elif value == int(value) or places <= 0:
        shown = f"{int(round(value, places)):d}"
    else:
        shown = f"{value:.{places}f}"
    shown = sign + shown
    if not significant_zeros and "." in shown and "e" not in shown:
        shown = shown.rstrip("0").removesuffix(".")
    if significant_zeros and "." not in shown and len(shown) < significant:
        shown += "." + "0" * (significant - len(shown))
    return shown
