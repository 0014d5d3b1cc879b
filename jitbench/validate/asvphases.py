"""The phases that run asv: noise (unchanged code twice) and sensitivity (the canary), each
through a config copy into a temporary folder (docs/validation.md#how-each-phase-measures)."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from jitbench import results
from jitbench.errors import JitbenchError
from jitbench.strategies.canary import SLOWDOWN_ENV as CANARY_SLOWDOWN_ENV
from jitbench.suite import catalog
from jitbench.suite.asvrun import AsvConfig
from jitbench.suite.grid import DEVICES_ENV, SIZES_ENV
from jitbench.validate.inprocess import host_parallelism
from jitbench.validate.plan import Plan, Progress
from jitbench.validate.stats import (
    CACHED,
    FAMILIES,
    canary_at_zero,
    judge_sensitivity,
    noise_summary,
    noise_table,
    sensitivity_summary,
)
from jitbench.ways.registry import PLUGINS_ENV

CANARY_MODULE = "jitbench.ways.canary"
NOISE_DEVICES = ("cpu", "cpu-sharded")
SENSITIVITY_DEVICE = "cpu"
LOG_TAIL = 25


class AsvSession:
    """``asv run --python=same`` of the checkout's suite into ``folder``, one machine per run."""

    def __init__(self, root: Path, folder: Path, commit: str, cpu_affinity: str | None) -> None:
        self.folder = folder
        self.commit = commit
        self.affinity = ["--cpu-affinity", cpu_affinity] if cpu_affinity else []
        self.config = AsvConfig(
            root,
            folder,
            results_dir=str(folder / "results"),
            html_dir=str(folder / "html"),
            env_dir=str(folder / "env"),
        )
        home = folder / "home"
        home.mkdir(exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("JITBENCH_")}
        gitconfig = Path.home() / ".gitconfig"
        if gitconfig.is_file() and "GIT_CONFIG_GLOBAL" not in self.env:
            # git's own settings (e.g. safe.directory) stay in force under the new HOME.
            self.env["GIT_CONFIG_GLOBAL"] = str(gitconfig)
        self.env["HOME"] = str(home)
        named = (p.strip() for p in os.environ.get(PLUGINS_ENV, "").split(","))
        self.plugins = [p for p in named if p and p != CANARY_MODULE]

    def run(
        self,
        machine: str,
        benchmarks: Sequence[str],
        sizes: Sequence[int],
        devices: Sequence[str],
        canary_slowdown: float | None = None,
    ) -> None:
        """One asv run of ``benchmarks`` (catalog names) on that grid, as machine ``machine``;
        ``canary_slowdown`` (a fraction) adds the canary strategy to the grid."""
        env = {**self.env, SIZES_ENV: ",".join(map(str, sizes)), DEVICES_ENV: ",".join(devices)}
        plugins = list(self.plugins)
        if canary_slowdown is not None:
            plugins.append(CANARY_MODULE)
            env[CANARY_SLOWDOWN_ENV] = repr(float(canary_slowdown))
        if plugins:
            env[PLUGINS_ENV] = ",".join(plugins)
        log = self.folder / f"{machine}.log"
        try:
            self.config.run("machine", "--yes", "--machine", machine, env=env, log=log)
            self.config.run(
                "run", "--python=same", "--machine", machine, "--set-commit-hash", self.commit,
                "--record-samples", "-b", catalog.regex(*benchmarks), *self.affinity,
                env=env, ok=(0, 2), log=log,
            )  # fmt: skip
        except JitbenchError:
            # The log lives in a temporary folder: show its end before it goes.
            tail = log.read_text(errors="replace").splitlines()[-LOG_TAIL:]
            print("\n".join(tail), file=sys.stderr)
            raise
        # asv exits 2 when a benchmark failed; those rows are reported, not fatal.

    def load(self, machine: str) -> pd.DataFrame:
        """The results of one run."""
        return results.load(self.config.results, machine=machine)


def measure_noise(
    asv: AsvSession, sizes: Sequence[int], factor: float, progress: Progress
) -> tuple[pd.DataFrame, pd.DataFrame, dict | None]:
    """Two asv runs of unchanged code, compared row by row; and the host-parallelism probe."""
    progress.step("noise", f"helper_function at size {max(sizes)} on all CPUs, then on one")
    parallel = host_parallelism(max(sizes))
    machines = ("validate-noise-1", "validate-noise-2")
    for n, machine in enumerate(machines, 1):
        progress.step("noise", f"asv run {n}/2 ({', '.join(FAMILIES.values())})")
        asv.run(machine, list(FAMILIES), sizes, NOISE_DEVICES)
    table = noise_table(asv.load(machines[0]), asv.load(machines[1]), factor)
    return table, noise_summary(table), parallel


def measure_sensitivity(
    asv: AsvSession, plan: Plan, progress: Progress
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Per repetition: all strategies plus the canary unslowed, then slowed by each slowdown."""
    devices = [SENSITIVITY_DEVICE]
    runs: list[tuple[int, float, str]] = []
    for repetition in range(1, plan.repetitions + 1):
        base = f"validate-r{repetition}-base"
        progress.step("sensitivity", f"repetition {repetition}: base (canary slowdown 0)")
        asv.run(base, [CACHED], plan.sizes, devices, canary_slowdown=0.0)
        # Rotate the order of the heads so no slowdown always runs furthest from its base.
        shift = (repetition - 1) % len(plan.slowdowns)
        for percent in plan.slowdowns[shift:] + plan.slowdowns[:shift]:
            head = f"validate-r{repetition}-p{percent:g}".replace(".", "_")
            progress.step("sensitivity", f"repetition {repetition}: canary {percent:g}% slower")
            asv.run(head, [CACHED], plan.sizes, devices, canary_slowdown=percent / 100)
            runs.append((repetition, percent, head))
    bases = {r: asv.load(f"validate-r{r}-base") for r in range(1, plan.repetitions + 1)}
    pairs = [(r, p, bases[r], asv.load(head)) for r, p, head in runs]
    judged = judge_sensitivity(pairs, plan.factor)
    judged = judged.sort_values(["slowdown", "repetition", "case"]).reset_index(drop=True)
    return judged, sensitivity_summary(judged), canary_at_zero(pd.concat(bases.values()))
