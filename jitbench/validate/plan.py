"""What a validation run was asked to do, what it measured, and its progress on stderr."""

from __future__ import annotations

import dataclasses
import math
import os
import sys
from pathlib import Path

import pandas as pd

from jitbench.errors import JitbenchError
from jitbench.jsondata import JsonObject
from jitbench.options import VALIDATE_PHASES as PHASES

# Phases that run the asv suite of a source checkout (fidelity needs only the package).
SUITE_PHASES = ("accuracy", "noise", "sensitivity")


@dataclasses.dataclass(frozen=True)
class Plan:
    """The options of one run (slowdowns in percent, sizes from the suite's grid)."""

    out: Path
    repetitions: int
    slowdowns: tuple[float, ...]
    factor: float
    sizes: tuple[int, ...]
    phases: tuple[str, ...]
    cpu_affinity: str | None = None

    def check(self, grid: tuple[int, ...]) -> None:
        """Raise JitbenchError naming the first bad value and the valid ones; writes nothing."""
        for phase in self.phases or ("",):
            if phase not in PHASES:
                raise JitbenchError(f"unknown phase {phase!r}; valid: {', '.join(PHASES)}")
        if isinstance(self.repetitions, bool) or not (
            isinstance(self.repetitions, int) and self.repetitions >= 1
        ):
            raise JitbenchError(f"repetitions must be a positive integer, got {self.repetitions!r}")
        for value in self.slowdowns or (math.nan,):
            if not (math.isfinite(value) and value > 0):
                raise JitbenchError(f"a slowdown must be a percentage > 0 such as 10, got {value}")
        if not (math.isfinite(self.factor) and self.factor >= 1):
            raise JitbenchError(f"factor must be a number >= 1 such as 1.05, got {self.factor}")
        for size in self.sizes or (None,):
            if size not in grid:
                raise JitbenchError(
                    f"size {size} is not in the suite's grid; valid: {', '.join(map(str, grid))}"
                )
        if self.out.exists() and not self.out.is_dir():
            raise JitbenchError(f"--out {str(self.out)!r} exists and is not a directory")

    def check_out(self, results_dir: Path) -> None:
        """The report must not go into asv's results dir (reports never write there)."""
        out, results = self.out.resolve(), results_dir.resolve()
        if out == results or results in out.parents:
            raise JitbenchError(
                f"--out {str(self.out)!r} is inside the asv results dir {str(results)!r}; "
                "choose a folder outside it, e.g. reports/validation"
            )

    @property
    def needs_suite(self) -> bool:
        return any(p in SUITE_PHASES for p in self.phases)


@dataclasses.dataclass
class Outcome:
    """What the phases measured, and how long each took."""

    plan: Plan
    commit: str | None
    started: float
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    fidelity: pd.DataFrame | None = None
    accuracy: pd.DataFrame | None = None
    noise: pd.DataFrame | None = None
    noise_summary: pd.DataFrame | None = None
    sensitivity: pd.DataFrame | None = None
    sensitivity_summary: pd.DataFrame | None = None
    canary_zero: pd.DataFrame | None = None
    parallelism: dict[str, float] | None = None
    counts: pd.DataFrame | None = None
    count_figures: JsonObject | None = None
    loads: dict[str, tuple[float, float] | None] = dataclasses.field(default_factory=dict)


class Progress:
    """Counted steps on stderr, with the load average seen at each (noise context)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.loads: dict[str, list[float]] = {}

    def step(self, phase: str, label: str) -> None:
        self.done += 1
        load = os.getloadavg()[0]
        self.loads.setdefault(phase, []).append(load)
        text = f"[{self.done}/{self.total}] {phase}: {label} (load {load:.1f})"
        print(text, file=sys.stderr, flush=True)

    def load_range(self, phase: str) -> tuple[float, float] | None:
        loads = self.loads.get(phase)
        return (min(loads), max(loads)) if loads else None
