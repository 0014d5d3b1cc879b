"""``jitbench validate``: does the suite measure what it claims, on this machine?

Phases fidelity, accuracy, noise, sensitivity and counts, each against a target, written to
``validation.md`` and CSVs (docs/validation.md). This package imports pandas and asv: only
the command imports it.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from pathlib import Path

from jitbench.document import markdown_blocks
from jitbench.errors import JitbenchError
from jitbench.suite import asvrun
from jitbench.suite.grid import DEFAULT_SIZES
from jitbench.validate import asvphases, counts, inprocess
from jitbench.validate.plan import PHASES, Outcome, Plan, Progress
from jitbench.validate.summary import summary_table
from jitbench.validate.writer import verdicts, write_report

__all__ = ["PHASES", "run_validation"]


def run_validation(
    out: Path,
    *,
    repetitions: int,
    slowdowns: tuple[float, ...],
    factor: float,
    sizes: tuple[int, ...],
    phases: tuple[str, ...],
    cpu_affinity: str | None = None,
) -> int:
    """Measure, write the report, print the summary; 0 when every target is met, else 1.

    ``slowdowns`` are the canary's in percent, ``repetitions`` the base/head
    pairs per slowdown, ``factor`` compare's, ``sizes`` from the suite's grid
    (fidelity uses the smallest), ``phases`` a subset of :data:`PHASES` (run
    in that order), ``cpu_affinity`` asv's ``--cpu-affinity`` for the asv phases
    (as ``nox -s compare`` pins them). Bad input raises JitbenchError before
    anything is written.
    """
    plan = Plan(
        Path(out), repetitions, tuple(slowdowns), factor, tuple(sizes), tuple(phases), cpu_affinity
    )
    plan.check(DEFAULT_SIZES)
    plan = dataclasses.replace(
        plan,
        sizes=tuple(sorted(set(plan.sizes))),
        phases=tuple(p for p in PHASES if p in plan.phases),
    )
    root, commit = None, None
    try:
        root = asvrun.checkout()
    except JitbenchError as exc:
        if plan.needs_suite:
            raise JitbenchError(
                f"jitbench validate runs the asv suite of a source checkout, found from the "
                f"working directory as asv finds it: {exc}"
            ) from None
    if root is not None:
        plan.check_out(root / asvrun.load_config(root)["results_dir"])
        try:  # asv records results under the commit
            commit = asvrun.git(
                root, "rev-parse", "HEAD", failure=f"cannot read the git HEAD of {root}"
            )
        except JitbenchError:
            if plan.needs_suite:
                raise
    return _run(plan, root, commit)


def _run(plan: Plan, root: Path | None, commit: str | None) -> int:
    started = time.time()
    clock = time.perf_counter()
    outcome = Outcome(plan, commit, started)
    accuracy = inprocess.accuracy_strategies() if "accuracy" in plan.phases else []
    steps = {
        "fidelity": len(inprocess.fidelity_strategies()),
        "accuracy": len(accuracy) * len(plan.sizes),
        "noise": 3,
        "sensitivity": plan.repetitions * (1 + len(plan.slowdowns)),
        "counts": counts.SLOWED + 2,
    }
    progress = Progress(1 + sum(steps[p] for p in plan.phases))
    with tempfile.TemporaryDirectory(prefix="jitbench-validate-") as tmp:
        asv = None
        if root is not None and commit is not None:
            asv = asvphases.AsvSession(root, Path(tmp), commit, plan.cpu_affinity)
        for phase in plan.phases:
            start = time.perf_counter()
            if phase == "fidelity":
                outcome.fidelity = inprocess.measure_fidelity(min(plan.sizes), progress)
            elif phase == "accuracy":
                assert root is not None
                outcome.accuracy = inprocess.measure_accuracy(root, accuracy, plan.sizes, progress)
            elif phase == "counts":
                outcome.counts, outcome.count_figures = counts.measure_counts(
                    min(plan.sizes), progress
                )
            elif phase == "noise":
                assert asv is not None
                outcome.noise, outcome.noise_summary, outcome.parallelism = asvphases.measure_noise(
                    asv, plan.sizes, plan.factor, progress
                )
            else:
                assert asv is not None
                outcome.sensitivity, outcome.sensitivity_summary, outcome.canary_zero = (
                    asvphases.measure_sensitivity(asv, plan, progress)
                )
            outcome.seconds[phase] = time.perf_counter() - start
            outcome.loads[phase] = progress.load_range(phase)
    progress.step("report", f"writing {plan.out}")
    total_seconds = time.perf_counter() - clock
    table = summary_table(outcome, total_seconds)
    path = write_report(outcome, table, total_seconds)
    print(markdown_blocks([verdicts(table)]), end="")
    print(path)
    return 0 if bool(table["met"].all()) else 1
