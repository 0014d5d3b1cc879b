"""The suite's grids: strategies, sizes and devices, and the variables that narrow them.

``JITBENCH_SIZES`` and ``JITBENCH_DEVICES`` narrow the size and device grids
(a bad value is one line at discovery); the scaling families' axes are fixed here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TypeVar

from jitbench.devices import DEVICE_SPECS, host_devices
from jitbench.errors import JitbenchError
from jitbench.ways.registry import STRATEGIES, load_plugins

DEFAULT_SIZES = (10, 1_000, 100_000, 1_000_000)
# The device rows' calls go on to where an accelerator's own time shows (1e8 float32
# elements: 400 MB an array).
LARGE_SIZES = (10_000_000, 100_000_000)
WIDTHS = (1, 10, 100, 1000)
PROGRAM_SIZES = (1, 10, 100, 1000)
# Layers of a nested class (codegen.Shape.depth): flax's benchmark model has 5 blocks.
DEPTHS = (1, 4, 16, 64)
DEVICE_COUNTS = (1, 2, 4, 8)
# Frames a counted call is made from beyond the counting loop's own two.
CALLER_FRAMES = (0, 10, 50)
SCALING_SIZE = 10
SCALING_DEVICE = "cpu"
SIZES_ENV = "JITBENCH_SIZES"
DEVICES_ENV = "JITBENCH_DEVICES"


def strategy_names() -> list[str]:
    """Every registered strategy (plugins loaded), available here or not."""
    load_plugins()
    return list(STRATEGIES)


T = TypeVar("T")


def _env_list(
    name: str,
    default: list[T],
    parse: Callable[[str], T],
    form: str,
    environ: Mapping[str, str] | None = None,
) -> list[T]:
    """The comma-separated values of ``name``, each parsed, else ``default``."""
    text = (os.environ if environ is None else environ).get(name, "").strip()
    if not text:
        return default
    values = []
    for item in (i.strip() for i in text.split(",")):
        try:
            values.append(parse(item))
        except ValueError:
            raise JitbenchError(f"{name} has {item!r}; expected {form}") from None
    return values


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _device_spec(text: str) -> str:
    if text not in DEVICE_SPECS:
        raise ValueError(text)
    return text


def sizes(environ: Mapping[str, str] | None = None) -> list[int]:
    """The size grid: ``JITBENCH_SIZES`` (comma-separated) or the default four sizes, read from
    ``environ`` (default this process's: a command checks the one it gives asv)."""
    form = "positive integers like '10,1000'"
    return _env_list(SIZES_ENV, list(DEFAULT_SIZES), _positive, form, environ)


def loop_sizes() -> list[int]:
    """The device rows' calls: the default sizes and :data:`LARGE_SIZES`, or ``JITBENCH_SIZES``
    alone where it is set."""
    chosen = sizes()
    return chosen if os.environ.get(SIZES_ENV, "").strip() else sorted({*chosen, *LARGE_SIZES})


def edge_sizes() -> list[int]:
    """The smallest and largest size: the grid of the new-process benchmarks."""
    grid = sizes()
    return sorted({min(grid), max(grid)})


def devices(environ: Mapping[str, str] | None = None) -> list[str]:
    """The device grid: ``JITBENCH_DEVICES`` or the specs this host can serve (so it differs
    between machines). A spec this host cannot serve is refused here, at discovery: its
    run would be nothing but n/a, exiting 0."""
    form = f"device specs from {', '.join(DEVICE_SPECS)}"
    here = host_devices()
    chosen = _env_list(DEVICES_ENV, here, _device_spec, form, environ)
    absent = [spec for spec in chosen if spec not in here]
    if absent:
        raise JitbenchError(
            f"{DEVICES_ENV} has {absent[0]!r}, which this host cannot serve; "
            f"this host has: {', '.join(here)}"
        )
    return chosen


def check_environment(environ: Mapping[str, str]) -> None:
    """Raise JitbenchError for a grid variable of ``environ`` that discovery would refuse: one
    line before asv starts rather than a failure inside its discovery."""
    sizes(environ)
    devices(environ)


def unsharded_devices() -> list[str]:
    """The device grid without ``-sharded`` specs: for benchmarks where sharding adds nothing."""
    return [d for d in devices() if not d.endswith("-sharded")]
