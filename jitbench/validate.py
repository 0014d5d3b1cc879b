"""``jitbench validate``: does the suite measure what it claims, on this machine?

Three checks, each against a target, written to a short report
(``validation.md`` and CSVs, default ``reports/validation``):

* **accuracy**: the cached-call and dispatch figures of the asv benchmark
  objects themselves (run in this process, as asv's runner would) against an
  independent ``timeit`` of the same call with its own calibration. The ratio
  shows whether the suite's timing discipline (state built on the first call,
  build time taken off the clock) reports the call and nothing else.
* **noise**: asv run twice on unchanged code; per row the ratio of the two
  medians, per benchmark family the 95th percentile of ``|ratio - 1|``. A
  comparison cannot be trusted below this spread.
* **sensitivity**: a strategy made slower by a known fraction
  (:mod:`jitbench.canary`) against itself unslowed, every other strategy
  unchanged, judged by :func:`jitbench.compare.compare_frames` at ``--factor``
  over several independent base/head pairs: the smallest slowdown flagged in
  every pair while no unchanged strategy is flagged in any.

asv runs go to a temporary results dir through a temporary asv config, with
``HOME`` pointed at a temporary folder so the user's ``~/.asv-machine.json``
is untouched; the two sides of a comparison are two asv machine names.
Nothing is written under ``results/``. This module imports pandas and asv, so
only the command imports it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import itertools
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from jitbench.errors import JitbenchError

CACHED = "bench_cached.CachedCall.time_cached_call"
DISPATCH = "bench_cached.CachedCall.time_cached_call_dispatch"
COLD = "bench_cold.ColdCall.time_first_call"
FAMILIES = {CACHED: "cached call", DISPATCH: "dispatch", COLD: "cold first call"}
PHASES = ("accuracy", "noise", "sensitivity")
DEFAULT_SIZES = (10, 1_000_000)
DEFAULT_SLOWDOWNS = (5.0, 10.0, 20.0)
DEFAULT_OUT = "reports/validation"
CANARY_MODULE = "jitbench.canary"
CANARY = "canary"
ACCURACY_DEVICE = "cpu"
NOISE_DEVICES = ("cpu", "cpu-sharded")
SENSITIVITY_DEVICE = "cpu"
# Targets: accuracy ratio range, noise spread per family, slowdown to detect (percent).
ACCURACY_RANGE = (0.8, 1.25)
NOISE_TARGETS = {CACHED: 0.05, DISPATCH: 0.05, COLD: 0.10}
TARGET_SLOWDOWN = 10.0
RUNTIME_TARGET_S = 15 * 60
ACCURACY_ROUNDS = 3
ACCURACY_ROW_BUDGET_S = 3.0
TIMEIT_REPEATS = 1  # per round
REGRESSION_MARKS = ("+", "!")
CHANGE_MARKS = ("+", "-", "!")


# --- input ---------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``jitbench validate`` (checked by :func:`parse_plan`, not argparse)."""
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"report folder (default {DEFAULT_OUT})")
    parser.add_argument(
        "--repetitions", default="3", help="independent base/head pairs per slowdown (default 3)"
    )
    parser.add_argument(
        "--slowdowns",
        default=",".join(f"{p:g}" for p in DEFAULT_SLOWDOWNS),
        help="canary slowdowns in percent, comma-separated (default 5,10,20)",
    )
    parser.add_argument(
        "--factor", default="1.05", help="jitbench compare's regression factor (default 1.05)"
    )
    parser.add_argument(
        "--sizes",
        default=",".join(map(str, DEFAULT_SIZES)),
        help="array sizes from the suite's grid, comma-separated (default 10,1000000)",
    )
    parser.add_argument(
        "--phases",
        default=",".join(PHASES),
        help=f"checks to run, comma-separated (default {','.join(PHASES)})",
    )


@dataclasses.dataclass(frozen=True)
class Plan:
    """Validated options: everything :func:`run` needs before it writes anything."""

    out: Path
    repetitions: int
    slowdowns: tuple[float, ...]
    factor: float
    sizes: tuple[int, ...]
    phases: tuple[str, ...]


def parse_plan(args: argparse.Namespace) -> Plan:
    """Check every option; bad input raises JitbenchError naming the value and the valid form."""
    from jitbench.suite import DEFAULT_SIZES as GRID

    repetitions = _positive_int(args.repetitions)
    slowdowns = tuple(sorted(set(_items(args.slowdowns, "--slowdowns", _slowdown))))
    factor = _number(args.factor)
    if not (math.isfinite(factor) and factor >= 1):
        raise JitbenchError(f"--factor must be a number >= 1 such as 1.05, got {args.factor!r}")
    sizes = tuple(sorted(set(_items(args.sizes, "--sizes", lambda t: _size(t, GRID)))))
    phases = tuple(_items(args.phases, "--phases", _phase))
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise JitbenchError(f"--out {str(out)!r} exists and is not a directory")
    for results_dir in {Path("results").resolve(), _repo_root() / "results"}:
        resolved = out.resolve()
        if resolved == results_dir or results_dir in resolved.parents:
            raise JitbenchError(
                f"--out {str(out)!r} is inside the asv results dir {str(results_dir)!r}; "
                "choose a folder outside it, e.g. reports/validation"
            )
    return Plan(out, repetitions, slowdowns, factor, sizes, tuple(p for p in PHASES if p in phases))


def _items(value: Any, option: str, parse: Callable[[str], Any]) -> list[Any]:
    items = value if isinstance(value, list | tuple) else str(value).split(",")
    parsed = [parse(str(item).strip()) for item in items]
    if not parsed:
        raise JitbenchError(f"{option} is empty")
    return parsed


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _positive_int(value: Any) -> int:
    text = str(value).strip()
    if not re.fullmatch(r"\+?\d+", text) or int(text) < 1:
        raise JitbenchError(f"--repetitions must be a positive integer such as 3, got {text!r}")
    return int(text)


def _slowdown(text: str) -> float:
    value = _number(text)
    if not (math.isfinite(value) and value > 0):
        raise JitbenchError(
            f"--slowdowns has {text!r}; expected positive percentages separated by commas, "
            "e.g. '5,10,20'"
        )
    return value


def _size(text: str, grid: Sequence[int]) -> int:
    value = int(text) if re.fullmatch(r"\d+", text) else None
    if value not in grid:
        raise JitbenchError(
            f"--sizes has {text!r}; expected sizes of the suite's grid "
            f"({','.join(map(str, grid))}) separated by commas, e.g. '10,1000000'"
        )
    return value


def _phase(text: str) -> str:
    if text not in PHASES:
        raise JitbenchError(
            f"--phases has {text!r}; expected names from {','.join(PHASES)} separated by commas"
        )
    return text


# --- the arithmetic ------------------------------------------------------------------


def spread(ratios: Sequence[float] | pd.Series) -> float:
    """The noise figure: 95th percentile of ``|ratio - 1|`` (NaN when there is no ratio)."""
    values = np.abs(np.asarray(ratios, dtype="float64") - 1.0)
    values = values[np.isfinite(values)]
    return float(np.percentile(values, 95)) if values.size else math.nan


def accuracy_table(measured: pd.DataFrame) -> pd.DataFrame:
    """Add ``ratio`` (asv median / timeit median) and ``in_range`` to accuracy measurements.

    ``measured`` has one row per strategy, size, device and benchmark with
    ``asv_s`` and ``timeit_s`` in seconds.
    """
    table = measured.copy()
    table["ratio"] = table["asv_s"] / table["timeit_s"]
    low, high = ACCURACY_RANGE
    table["in_range"] = table["ratio"].between(low, high)
    return table


def noise_table(first: pd.DataFrame, second: pd.DataFrame, factor: float) -> pd.DataFrame:
    """Rows of two runs of unchanged code: second/first ratio and compare's mark at ``factor``.

    ``first`` and ``second`` are :func:`jitbench.results.load` frames of one
    run each; only benchmarks of :data:`FAMILIES` measured on both sides count.
    """
    from jitbench.compare import compare_frames

    table = compare_frames(first, second, factor)
    keep = table["benchmark"].isin(list(FAMILIES)) & (table["base_status"] == "ok")
    table = table[keep & (table["head_status"] == "ok")].copy()
    table.insert(0, "family", table["benchmark"].map(FAMILIES))
    return table.sort_values(["family", "case"]).reset_index(drop=True)


def noise_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Per family: rows, spread (p95 of |ratio - 1|), largest deviation, compare's false flags."""
    rows = []
    for benchmark, family in FAMILIES.items():
        part = table[table["benchmark"] == benchmark]
        deviation = (part["ratio"] - 1).abs()
        value = spread(part["ratio"])
        target = NOISE_TARGETS[benchmark]
        rows.append(
            {
                "family": family,
                "benchmark": benchmark,
                "rows": len(part),
                "spread": value,
                "max_deviation": float(deviation.max()) if len(part) else math.nan,
                "median_ratio": float(part["ratio"].median()) if len(part) else math.nan,
                "flagged": int(part["mark"].isin(CHANGE_MARKS).sum()),
                "target": target,
                "met": bool(value <= target) if len(part) else False,
            }
        )
    return pd.DataFrame(rows)


def noise_by_size(table: pd.DataFrame) -> pd.DataFrame:
    """The spread per family, size and device: where the noise comes from."""
    rows = []
    for (family, size, device), part in table.groupby(["family", "size", "device"], sort=True):
        rows.append(
            {
                "family": family,
                "size": int(size),
                "device": device,
                "rows": len(part),
                "spread": spread(part["ratio"]),
                "median_ratio": float(part["ratio"].median()),
                "flagged": int(part["mark"].isin(CHANGE_MARKS).sum()),
            }
        )
    return pd.DataFrame(rows)


def judge_sensitivity(
    pairs: Sequence[tuple[int, float, pd.DataFrame, pd.DataFrame]],
    factor: float,
    canary: str = CANARY,
) -> pd.DataFrame:
    """One row per (repetition, slowdown, cached-call case): compare's mark and ratio.

    ``pairs`` holds (repetition, slowdown in percent, base frame, head frame)
    with frames shaped like :func:`jitbench.results.load` output. ``flagged``
    is a regression mark (``+`` or ``!``); rows of ``canary`` are the planted
    regression, every other row is unchanged code.
    """
    from jitbench.compare import compare_frames

    parts = []
    for repetition, slowdown, base, head in pairs:
        table = compare_frames(base, head, factor)
        keep = (table["benchmark"] == CACHED) & (table["base_status"] == "ok")
        table = table[keep & table["head_status"].isin(["ok", "failed"])].copy()
        table.insert(0, "slowdown", float(slowdown))
        table.insert(0, "repetition", int(repetition))
        table["factor"] = float(factor)
        table["canary"] = table["strategy"] == canary
        table["flagged"] = table["mark"].isin(REGRESSION_MARKS)
        parts.append(table)
    if not parts:
        return pd.DataFrame(
            columns=["repetition", "slowdown", "case", "ratio", "mark", "canary", "flagged"]
        )
    return pd.concat(parts, ignore_index=True)


def sensitivity_summary(judged: pd.DataFrame, *, by_size: bool = False) -> pd.DataFrame:
    """Per slowdown (and size): how often the canary was flagged, its ratios, the false flags.

    ``canary_above_factor`` and ``canary_significant`` say which half of
    compare's test a missed canary row failed: the ratio or the significance.
    """
    keys = ["slowdown", "size"] if by_size else ["slowdown"]
    rows = []
    for key, part in judged.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        canary = part[part["canary"]]
        unchanged = part[~part["canary"]]
        false = unchanged[unchanged["flagged"]]
        factor = float(part["factor"].iloc[0]) if "factor" in part else math.nan
        row: dict[str, Any] = {"slowdown_pct": float(key[0])}
        if by_size:
            row["size"] = int(key[1])
        row.update(
            {
                "repetitions": int(part["repetition"].nunique()),
                "canary_rows": len(canary),
                "canary_flagged": int(canary["flagged"].sum()),
                "canary_above_factor": int((canary["ratio"] > factor).sum()),
                "canary_significant": int(canary["significant"].fillna(False).sum()),
                "canary_ratio_median": float(canary["ratio"].median()),
                "canary_ratio_min": float(canary["ratio"].min()),
                "canary_ratio_max": float(canary["ratio"].max()),
                "unchanged_rows": len(unchanged),
                "false_flags": len(false),
                "false_flag_cases": "; ".join(
                    f"r{r.repetition} {r.case} x{r.ratio:.3f}" for r in false.itertuples()
                ),
                "detected": bool(len(canary)) and bool(canary["flagged"].all()),
            }
        )
        rows.append(row)
    table = pd.DataFrame(rows)
    if not table.empty:
        table["clean"] = table["false_flags"] == 0
    return table


def smallest_flagged(summary: pd.DataFrame, *, require_clean: bool = True) -> float | None:
    """The smallest slowdown flagged in every repetition (with no false flag), else None."""
    if summary.empty:
        return None
    ok = summary["detected"] & (summary["clean"] if require_clean else True)
    chosen = summary.loc[ok, "slowdown_pct"]
    return float(chosen.min()) if len(chosen) else None


# --- running asv ---------------------------------------------------------------------


def _repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


def _check_checkout(root: Path) -> str:
    """The git HEAD of the source checkout that holds the asv suite."""
    missing = [
        p for p in ("asv.conf.json", "benchmarks/bench_cached.py") if not (root / p).exists()
    ]
    if missing:
        raise JitbenchError(
            f"jitbench validate runs the asv suite of a source checkout; {root} lacks "
            f"{', '.join(missing)} (install jitbench with pip install -e from a clone)"
        )
    done = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise JitbenchError(f"cannot read the git HEAD of {root}: {done.stderr.strip()}")
    return done.stdout.strip()


def _asv_config(root: Path, folder: Path) -> dict[str, Any]:
    """asv.conf.json with absolute paths and every output inside ``folder``."""
    text = (root / "asv.conf.json").read_text()
    config = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.MULTILINE))
    config.update(
        repo=str(root),
        benchmark_dir=str(root / "benchmarks"),
        results_dir=str(folder / "results"),
        html_dir=str(folder / "html"),
        env_dir=str(folder / "env"),
    )
    return config


def device_regex(benchmark: str, devices: Sequence[str]) -> str:
    """asv ``-b`` regex for one parameterized benchmark on ``devices`` (its last parameter)."""
    choice = "|".join(re.escape(d) for d in devices)
    return rf"^{re.escape(benchmark)}\(.*, '(?:{choice})'\)$"


class AsvRunner:
    """``asv run --python=same`` into a temporary results dir, one asv machine per run."""

    def __init__(self, root: Path, folder: Path, commit: str) -> None:
        self.root = root
        self.folder = folder
        self.commit = commit
        self.results = folder / "results"
        self.config = folder / "asv.conf.json"
        self.config.write_text(json.dumps(_asv_config(root, folder), indent=2))
        home = folder / "home"
        home.mkdir(exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("JITBENCH_")}
        gitconfig = Path.home() / ".gitconfig"
        if gitconfig.is_file() and "GIT_CONFIG_GLOBAL" not in self.env:
            # git's own settings (e.g. safe.directory) stay in force under the new HOME.
            self.env["GIT_CONFIG_GLOBAL"] = str(gitconfig)
        self.env["HOME"] = str(home)
        self.plugins = [
            p.strip()
            for p in os.environ.get("JITBENCH_PLUGINS", "").split(",")
            if p.strip() and p.strip() != CANARY_MODULE
        ]

    def run(
        self,
        machine: str,
        benchmarks: Sequence[str],
        sizes: Sequence[int],
        canary_slowdown: float | None = None,
    ) -> None:
        """One asv run of the ``-b`` regexes ``benchmarks``; results under machine ``machine``.

        ``canary_slowdown`` (a fraction) adds the canary strategy to the grid.
        """
        env = dict(self.env, JITBENCH_SIZES=",".join(map(str, sizes)))
        plugins = list(self.plugins)
        if canary_slowdown is not None:
            plugins.append(CANARY_MODULE)
            env["JITBENCH_CANARY_SLOWDOWN"] = repr(float(canary_slowdown))
        if plugins:
            env["JITBENCH_PLUGINS"] = ",".join(plugins)
        config = str(self.config)
        self._asv(env, machine, "machine", "--yes", "--machine", machine, "--config", config)
        args = ["run", "--config", config, "--python=same", "--machine", machine]
        args += ["--set-commit-hash", self.commit, "--record-samples"]
        for regex in benchmarks:
            args += ["-b", regex]
        # asv exits 2 when a benchmark failed; those rows are reported, not fatal.
        self._asv(env, machine, *args, ok=(0, 2))

    def _asv(
        self, env: dict[str, str], machine: str, *args: str, ok: tuple[int, ...] = (0,)
    ) -> None:
        log = self.folder / f"{machine}.log"
        with log.open("a") as stream:
            done = subprocess.run(
                [sys.executable, "-m", "asv", *args],
                cwd=self.folder,
                env=env,
                stdout=stream,
                stderr=subprocess.STDOUT,
                check=False,
            )
        if done.returncode not in ok:
            tail = log.read_text(errors="replace").splitlines()[-25:]
            print("\n".join(tail), file=sys.stderr)
            raise JitbenchError(
                f"asv {args[0]} for machine {machine!r} exited with {done.returncode} "
                "(its last lines are above)"
            )

    def load(self, machine: str) -> pd.DataFrame:
        """The results of one run."""
        from jitbench import results

        return results.load(self.results, machine=machine)


# --- the phases ----------------------------------------------------------------------


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


def accuracy_strategies() -> list[str]:
    """Every registered strategy that can run here (plugins included), canary excepted."""
    from jitbench.strategies import STRATEGIES
    from jitbench.suite import load_plugins

    load_plugins()
    return [name for name, s in STRATEGIES.items() if s.available and name != CANARY]


@contextlib.contextmanager
def _sizes_env(sizes: Sequence[int]) -> Iterator[None]:
    """``JITBENCH_SIZES`` for an in-process import of the suite, restored afterwards."""
    old = os.environ.get("JITBENCH_SIZES")
    os.environ["JITBENCH_SIZES"] = ",".join(map(str, sizes))
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("JITBENCH_SIZES", None)
        else:
            os.environ["JITBENCH_SIZES"] = old


class _Plain:
    """The timeit side: an instance of its own, built as the benchmark builds one.

    Another seed, so it is not equal to the benchmark's instance: strategies
    with a value-hashed static ``self`` would otherwise share one jit cache
    entry, and the instance that did not create it pays ``__eq__`` on every
    call, which no asv benchmark process (one instance per process) does.
    """

    def __init__(self, strategy: str, size: int, device: str) -> None:
        from jitbench.factory import make_instance
        from jitbench.measure import block

        self._block = block
        self.obj, self.y = make_instance(strategy, size, device=device, seed=1)
        self.call()

    def call(self) -> Any:
        return self._block(self.obj.calc(self.y))

    def dispatch(self) -> Any:
        return self.obj.calc(self.y)


def _accuracy_row(
    bench: Any, wanted: tuple[Any, ...], plain: _Plain, func: Callable[[], Any]
) -> dict[str, Any]:
    """Interleaved rounds of asv's run and timeit's repeats; the median of each side.

    Rounds alternate the two methods so that a change of load in this process's
    seconds hits both; they stop at :data:`ACCURACY_ROUNDS` or after
    :data:`ACCURACY_ROW_BUDGET_S` (the slow strategies take one round).
    """
    timer = timeit.Timer(func)
    number, _ = timer.autorange()  # timeit's own calibration: a loop of >= 0.2 s
    asv_medians: list[float] = []
    asv_samples = 0
    plain_times: list[float] = []
    start = time.perf_counter()
    for _ in range(ACCURACY_ROUNDS):
        samples = bench.run(*wanted)["samples"]
        asv_medians.append(statistics.median(samples))
        asv_samples += len(samples)
        plain.call()  # drain what dispatch-only calls left queued
        plain_times += [t / number for t in timer.repeat(repeat=TIMEIT_REPEATS, number=number)]
        plain.call()
        if time.perf_counter() - start > ACCURACY_ROW_BUDGET_S:
            break
    return {
        "asv_s": statistics.median(asv_medians),
        "timeit_s": statistics.median(plain_times),
        "rounds": len(asv_medians),
        "asv_samples": asv_samples,
        "timeit_number": number,
    }


def measure_accuracy(
    root: Path, strategies: Sequence[str], sizes: Sequence[int], progress: Progress
) -> pd.DataFrame:
    """asv's own benchmark objects (median of their samples) against timeit, in this process."""
    from asv_runner.discovery import get_benchmark_from_name

    from jitbench.measure import clear_memory_caches

    bench_dir = str(root / "benchmarks")
    with _sizes_env(sizes):
        grid = get_benchmark_from_name(bench_dir, CACHED)._params
    combos = list(itertools.product(*grid))
    rows = []
    for strategy, size in itertools.product(strategies, sizes):
        progress.step("accuracy", f"{strategy} size {size}")
        wanted = (strategy, size, ACCURACY_DEVICE)
        if wanted not in combos:
            raise JitbenchError(
                f"the suite's grid in this process lacks {wanted}; unset JITBENCH_SIZES "
                "and JITBENCH_PLUGINS or include the size"
            )
        index = combos.index(wanted)
        plain = _Plain(*wanted)
        for benchmark, func in ((CACHED, plain.call), (DISPATCH, plain.dispatch)):
            # One benchmark's instance per jit cache, as in an asv benchmark process: an
            # equal instance of the previous benchmark would otherwise own the cache entry.
            clear_memory_caches()
            plain.call()
            bench = get_benchmark_from_name(bench_dir, f"{benchmark}-{index}")
            bench.do_setup()
            measured = _accuracy_row(bench, wanted, plain, func)
            rows.append(
                {
                    "benchmark": benchmark,
                    "strategy": strategy,
                    "size": size,
                    "device": ACCURACY_DEVICE,
                    **measured,
                }
            )
    return accuracy_table(pd.DataFrame(rows))


def _pin_threads(cpus: set[int]) -> dict[int, set[int]]:
    """Pin every thread of this process (XLA's pool included) to ``cpus``; the old affinities."""
    old = {}
    for name in os.listdir("/proc/self/task"):
        tid = int(name)
        with contextlib.suppress(OSError):
            old[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, cpus)
    return old


def _unpin_threads(old: dict[int, set[int]]) -> None:
    for tid, cpus in old.items():
        with contextlib.suppress(OSError):
            os.sched_setaffinity(tid, cpus)


def host_parallelism(size: int) -> dict[str, Any] | None:
    """helper_function's cached call at ``size`` on all of this process's CPUs, then on one.

    XLA's CPU backend spreads large elementwise work over the cores, so a
    process that takes a core away slows the call by up to this ratio. None
    where thread affinity cannot be set (only Linux has it) or on one CPU.
    """
    if not hasattr(os, "sched_setaffinity") or not os.path.isdir("/proc/self/task"):
        return None
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:
        return None
    plain = _Plain("helper_function", size, "cpu")
    all_cpus: list[float] = []
    one_cpu: list[float] = []
    for _ in range(2):  # alternated, so a change of load hits both
        all_cpus.append(_median_timeit(plain.call))
        old = _pin_threads({min(cpus)})
        try:
            one_cpu.append(_median_timeit(plain.call))
        finally:
            _unpin_threads(old)
    all_s, one_s = statistics.median(all_cpus), statistics.median(one_cpu)
    return {"size": size, "cpus": len(cpus), "all_cpus_s": all_s, "one_cpu_s": one_s}


def _median_timeit(func: Callable[[], Any], repeats: int = 3) -> float:
    """timeit with its own calibration (autorange): median seconds per call over ``repeats``."""
    timer = timeit.Timer(func)
    number, _ = timer.autorange()
    return statistics.median(timer.repeat(repeat=repeats, number=number)) / number


def measure_noise(
    asv: AsvRunner, sizes: Sequence[int], factor: float, progress: Progress
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any] | None]:
    """Two asv runs of unchanged code, compared row by row; and the host-parallelism probe."""
    progress.step("noise", f"helper_function at size {max(sizes)} on all CPUs, then on one")
    parallel = host_parallelism(max(sizes))
    regexes = [device_regex(b, NOISE_DEVICES) for b in FAMILIES]
    machines = ("validate-noise-1", "validate-noise-2")
    for n, machine in enumerate(machines, 1):
        progress.step("noise", f"asv run {n}/2 (cached call, dispatch, cold first call)")
        asv.run(machine, regexes, sizes)
    table = noise_table(asv.load(machines[0]), asv.load(machines[1]), factor)
    return table, noise_summary(table), parallel


def _slug(percent: float) -> str:
    return f"{percent:g}".replace(".", "_")


def measure_sensitivity(
    asv: AsvRunner, plan: Plan, progress: Progress
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Per repetition: all strategies plus the canary unslowed, then slowed by each slowdown."""
    regexes = [device_regex(CACHED, [SENSITIVITY_DEVICE])]
    runs: list[tuple[int, float, str, str]] = []
    for repetition in range(1, plan.repetitions + 1):
        base = f"validate-r{repetition}-base"
        progress.step("sensitivity", f"repetition {repetition}: base (canary slowdown 0)")
        asv.run(base, regexes, plan.sizes, canary_slowdown=0.0)
        # Rotate the order of the heads so no slowdown always runs furthest from its base.
        shift = (repetition - 1) % len(plan.slowdowns)
        for percent in plan.slowdowns[shift:] + plan.slowdowns[:shift]:
            head = f"validate-r{repetition}-p{_slug(percent)}"
            progress.step("sensitivity", f"repetition {repetition}: canary {percent:g}% slower")
            asv.run(head, regexes, plan.sizes, canary_slowdown=percent / 100)
            runs.append((repetition, percent, base, head))
    pairs = [(r, p, asv.load(base), asv.load(head)) for r, p, base, head in runs]
    judged = judge_sensitivity(pairs, plan.factor)
    judged = judged.sort_values(["slowdown", "repetition", "case"]).reset_index(drop=True)
    bases = pd.concat([asv.load(f"validate-r{r}-base") for r in range(1, plan.repetitions + 1)])
    return judged, sensitivity_summary(judged), canary_at_zero(bases)


def canary_at_zero(bases: pd.DataFrame) -> pd.DataFrame:
    """Canary unslowed / helper_function in the same run: the canary adds nothing at 0."""
    rows = bases[(bases["benchmark"] == CACHED) & (bases["status"] == "ok")]
    keys = ["machine", "size", "device"]
    canary = rows[rows["strategy"] == CANARY].set_index(keys)["value"]
    helper = rows[rows["strategy"] == "helper_function"].set_index(keys)["value"]
    joined = pd.DataFrame({"canary_s": canary, "helper_function_s": helper}).dropna()
    joined["ratio"] = joined["canary_s"] / joined["helper_function_s"]
    return joined.reset_index()


# --- the report ----------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    """What the phases measured, and how long each took."""

    plan: Plan
    commit: str
    started: float
    seconds: dict[str, float] = dataclasses.field(default_factory=dict)
    accuracy: pd.DataFrame | None = None
    noise: pd.DataFrame | None = None
    noise_summary: pd.DataFrame | None = None
    sensitivity: pd.DataFrame | None = None
    sensitivity_summary: pd.DataFrame | None = None
    canary_zero: pd.DataFrame | None = None
    parallelism: dict[str, Any] | None = None
    loads: dict[str, tuple[float, float] | None] = dataclasses.field(default_factory=dict)


def summary_table(outcome: Outcome, total_seconds: float) -> pd.DataFrame:
    """One row per target: what was asked, what was reached, whether it was met."""
    rows: list[dict[str, Any]] = []
    low, high = ACCURACY_RANGE
    if outcome.accuracy is not None:
        for benchmark in (CACHED, DISPATCH):
            part = outcome.accuracy[outcome.accuracy["benchmark"] == benchmark]
            inside = int(part["in_range"].sum())
            rows.append(
                {
                    "check": f"accuracy: {FAMILIES[benchmark]} asv / timeit",
                    "target": f"every ratio in {low}-{high}",
                    "reached": f"{part['ratio'].min():.3f}-{part['ratio'].max():.3f} "
                    f"({inside}/{len(part)} in range)",
                    "met": inside == len(part) and len(part) > 0,
                }
            )
    if outcome.noise_summary is not None:
        for row in outcome.noise_summary.itertuples():
            rows.append(
                {
                    "check": f"noise: {row.family} spread (p95 of abs(ratio - 1))",
                    "target": f"<= {row.target:.0%}",
                    "reached": f"{row.spread:.1%} over {row.rows} rows "
                    f"(max {row.max_deviation:.1%}, {row.flagged} flagged by compare)",
                    "met": bool(row.met),
                }
            )
    if outcome.sensitivity_summary is not None:
        summary = outcome.sensitivity_summary
        smallest = smallest_flagged(summary)
        detected = smallest_flagged(summary, require_clean=False)
        false = int(summary["false_flags"].sum()) if not summary.empty else 0
        reached = "none" if smallest is None else f"{smallest:g}%"
        if smallest is None and detected is not None:
            reached += f" (canary flagged every time from {detected:g}%, but false flags)"
        reached += f"; {false} false flags in {int(summary['unchanged_rows'].sum())} rows"
        rows.append(
            {
                "check": "sensitivity: smallest slowdown flagged every repetition, no false flag",
                "target": f"<= {TARGET_SLOWDOWN:g}% at factor {outcome.plan.factor:g}",
                "reached": reached,
                "met": smallest is not None and smallest <= TARGET_SLOWDOWN,
            }
        )
    if set(outcome.plan.phases) == set(PHASES):
        rows.append(
            {
                "check": "runtime of jitbench validate",
                "target": f"< {RUNTIME_TARGET_S // 60} min",
                "reached": _minutes(total_seconds),
                "met": total_seconds < RUNTIME_TARGET_S,
            }
        )
    return pd.DataFrame(rows, columns=["check", "target", "reached", "met"])


def limits(outcome: Outcome) -> list[str]:
    """Plain statements of what the data say about each missed target."""
    notes = []
    cpus = os.cpu_count() or 1
    if outcome.accuracy is not None and not outcome.accuracy["in_range"].all():
        bad = outcome.accuracy[~outcome.accuracy["in_range"]]
        cases = ", ".join(
            f"{FAMILIES[r.benchmark]} {r.strategy} {r.size} x{r.ratio:.2f}"
            for r in bad.itertuples()
        )
        notes.append(
            f"Accuracy: outside {ACCURACY_RANGE[0]}-{ACCURACY_RANGE[1]}: {cases}. "
            f"{_load_text(outcome, 'accuracy', cpus)} The two sides are measured seconds "
            "apart in one process, so a change of load between them moves the ratio."
        )
    if outcome.noise_summary is not None and not outcome.noise_summary["met"].all():
        missed = outcome.noise_summary[~outcome.noise_summary["met"]]
        by_size = noise_by_size(outcome.noise)
        parts = []
        for row in missed.itertuples():
            sized = by_size[by_size["family"] == row.family]
            where = ", ".join(
                f"{r.device} size {r.size}: {r.spread:.0%}" for r in sized.itertuples()
            )
            parts.append(f"{row.family} {row.spread:.1%} ({where})")
        text = f"Noise above target: {'; '.join(parts)}. "
        text += _load_text(outcome, "noise", cpus) + " "
        probe = outcome.parallelism
        if probe:
            text += (
                f"helper_function's cached call at size {probe['size']} takes "
                f"{_fmt_seconds(probe['all_cpus_s'])} on all {probe['cpus']} CPUs and "
                f"{_fmt_seconds(probe['one_cpu_s'])} pinned to one "
                f"(x{probe['one_cpu_s'] / probe['all_cpus_s']:.2f}): XLA spreads large "
                "elementwise work over the cores, so whether another process holds a core "
                "during a run moves the large sizes by up to that factor. "
            )
        text += (
            "The two runs are minutes apart: this is the drift of the machine between runs, "
            "which a comparison of two commits sees too."
        )
        notes.append(text)
    summary = outcome.sensitivity_summary
    if summary is not None and not summary.empty:
        smallest = smallest_flagged(summary)
        if smallest is None or smallest > TARGET_SLOWDOWN:
            by_size = sensitivity_summary(outcome.sensitivity, by_size=True)
            parts = []
            for row in by_size.itertuples():
                parts.append(
                    f"{row.slowdown_pct:g}% size {row.size}: canary flagged "
                    f"{row.canary_flagged}/{row.canary_rows} (ratio "
                    f"{row.canary_ratio_min:.2f}-{row.canary_ratio_max:.2f}; above the factor "
                    f"{row.canary_above_factor}, significant {row.canary_significant}), "
                    f"{row.false_flags} false flags"
                )
            notes.append(
                f"Sensitivity at factor {outcome.plan.factor:g}: "
                + "; ".join(parts)
                + ". "
                + _load_text(outcome, "sensitivity", cpus)
                + " compare flags a row when its ratio exceeds the factor and asv's test "
                "finds the two sets of samples different (Mann-Whitney, p < 0.002, on at most "
                "10 samples a side): a canary row is missed when run-to-run drift pulls its "
                "ratio under the factor or the scatter of its samples hides the shift, and an "
                "unchanged row is flagged when drift between its two runs exceeds the factor. "
                "False flags are listed in sensitivity_summary.csv."
            )
    return notes


def _load_text(outcome: Outcome, phase: str, cpus: int) -> str:
    loads = outcome.loads.get(phase)
    if not loads:
        return ""
    busy = "; other processes competed for them" if loads[1] > cpus else ""
    return (
        f"The 1-minute load average during this phase was {loads[0]:.1f}-{loads[1]:.1f} "
        f"on {cpus} CPUs{busy}."
    )


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def _fmt_seconds(value: float) -> str:
    from asv.util import human_value

    return human_value(value, "seconds") if pd.notna(value) else "n/a"


def _pct(value: float) -> str:
    return f"{value:.1%}" if pd.notna(value) else "n/a"


def _markdown_table(table: pd.DataFrame) -> str:
    return table.to_markdown(index=False, disable_numparse=True)


def _yes(flag: Any) -> str:
    return "yes" if bool(flag) else "NO"


def _accuracy_section(outcome: Outcome, out: Path) -> list[str]:
    table = outcome.accuracy
    assert table is not None
    table.to_csv(out / "accuracy.csv", index=False)
    shown = pd.DataFrame(
        {
            "benchmark": table["benchmark"].map(FAMILIES),
            "strategy": table["strategy"],
            "size": table["size"],
            "device": table["device"],
            "asv": table["asv_s"].map(_fmt_seconds),
            "timeit": table["timeit_s"].map(_fmt_seconds),
            "ratio": table["ratio"].map("{:.3f}".format),
            "in range": table["in_range"].map(_yes),
        }
    )
    if "rounds" in table:
        shown["rounds"] = table["rounds"]
    return [
        "## Accuracy: asv's figure against an independent timeit",
        "",
        "asv: the suite's own benchmark object run in-process as asv's runner runs it, "
        "median of its samples; timeit: an instance of its own, timeit's own calibration "
        f"(`autorange`). Up to {ACCURACY_ROUNDS} rounds alternate the two (asv's run, then "
        f"{TIMEIT_REPEATS} timeit loop); each side is the median over its rounds. jit's "
        "in-memory caches are cleared before each benchmark, so its instance is the only one "
        "in its cache entry, as in an asv benchmark process. Target: every ratio in "
        f"{ACCURACY_RANGE[0]}-{ACCURACY_RANGE[1]}. Data: `accuracy.csv`.",
        "",
        _markdown_table(shown),
        "",
    ]


def _noise_section(outcome: Outcome, out: Path) -> list[str]:
    table, summary = outcome.noise, outcome.noise_summary
    assert table is not None and summary is not None
    table.to_csv(out / "noise.csv", index=False)
    summary.to_csv(out / "noise_summary.csv", index=False)
    by_size = noise_by_size(table)
    by_size.to_csv(out / "noise_by_size.csv", index=False)
    shown = pd.DataFrame(
        {
            "family": summary["family"],
            "rows": summary["rows"],
            "spread": summary["spread"].map(_pct),
            "max deviation": summary["max_deviation"].map(_pct),
            "median ratio": summary["median_ratio"].map("{:.3f}".format),
            "flagged by compare": summary["flagged"],
            "target": summary["target"].map("{:.0%}".format),
            "met": summary["met"].map(_yes),
        }
    )
    sized = by_size.assign(
        spread=by_size["spread"].map(_pct),
        median_ratio=by_size["median_ratio"].map("{:.3f}".format),
    )
    lines = [
        "## Noise: asv twice on unchanged code",
        "",
        f"Devices {', '.join(NOISE_DEVICES)}; ratio = second run's median / first's; "
        "spread = 95th percentile of |ratio - 1|; flagged = rows `jitbench compare` marks "
        f"as changed at factor {outcome.plan.factor:g}. Rows: `noise.csv`.",
        "",
        _markdown_table(shown),
        "",
        "By size and device (`noise_by_size.csv`):",
        "",
        _markdown_table(sized),
        "",
    ]
    probe = outcome.parallelism
    if probe:
        lines += [
            f"Host parallelism: helper_function's cached call at size {probe['size']} takes "
            f"{_fmt_seconds(probe['all_cpus_s'])} with this process on all {probe['cpus']} "
            f"CPUs and {_fmt_seconds(probe['one_cpu_s'])} pinned to one "
            f"(x{probe['one_cpu_s'] / probe['all_cpus_s']:.2f}).",
            "",
        ]
    return lines


def _sensitivity_section(outcome: Outcome, out: Path) -> list[str]:
    judged, summary = outcome.sensitivity, outcome.sensitivity_summary
    assert judged is not None and summary is not None
    judged.to_csv(out / "sensitivity.csv", index=False)
    summary.to_csv(out / "sensitivity_summary.csv", index=False)
    by_size = sensitivity_summary(judged, by_size=True)

    def shown(table: pd.DataFrame) -> pd.DataFrame:
        frame = pd.DataFrame({"slowdown": table["slowdown_pct"].map("{:g}%".format)})
        if "size" in table:
            frame["size"] = table["size"]
        frame["canary flagged"] = [
            f"{a}/{b}" for a, b in zip(table["canary_flagged"], table["canary_rows"], strict=True)
        ]
        frame["canary ratio median (range)"] = [
            f"{m:.3f} ({lo:.3f}-{hi:.3f})"
            for m, lo, hi in zip(
                table["canary_ratio_median"],
                table["canary_ratio_min"],
                table["canary_ratio_max"],
                strict=True,
            )
        ]
        frame["false flags"] = [
            f"{a}/{b}" for a, b in zip(table["false_flags"], table["unchanged_rows"], strict=True)
        ]
        return frame

    smallest = smallest_flagged(summary)
    lines = [
        "## Sensitivity: a planted regression against jitbench compare",
        "",
        "`canary` is helper_function plus host work calibrated to slow its cached call by the "
        f"given fraction; {outcome.plan.repetitions} independent base/head pairs per slowdown "
        f"on {SENSITIVITY_DEVICE}, every strategy in each run, judged by `compare_frames` at "
        f"factor {outcome.plan.factor:g}. Smallest slowdown flagged in every repetition with "
        "no unchanged strategy flagged: "
        f"**{'none' if smallest is None else f'{smallest:g}%'}**. Rows: `sensitivity.csv`.",
        "",
        _markdown_table(shown(summary)),
        "",
        "By size:",
        "",
        _markdown_table(shown(by_size)),
        "",
    ]
    false = summary[summary["false_flags"] > 0]
    if not false.empty:
        lines += ["False flags (unchanged strategies marked as regressions):", ""]
        lines += [f"- {r.slowdown_pct:g}%: {r.false_flag_cases}" for r in false.itertuples()]
        lines += [""]
    zero = outcome.canary_zero
    if zero is not None and not zero.empty:
        lines += [
            "Canary at slowdown 0 / helper_function in the same base run: "
            f"{zero['ratio'].min():.3f}-{zero['ratio'].max():.3f} over {len(zero)} rows.",
            "",
        ]
    return lines


def write_report(outcome: Outcome, summary: pd.DataFrame, total_seconds: float) -> Path:
    """validation.md and the CSVs behind it in ``plan.out``."""
    import jax

    out = outcome.plan.out
    out.mkdir(parents=True, exist_ok=True)
    summary.to_csv(out / "summary.csv", index=False)
    phases = ", ".join(f"{k} {_minutes(v)}" for k, v in outcome.seconds.items())
    lines = [
        "# jitbench validation",
        "",
        f"Commit {outcome.commit[:12]}, JAX {jax.__version__}, Python "
        f"{platform.python_version()}, {platform.machine()} with {os.cpu_count()} CPUs; "
        f"{time.strftime('%Y-%m-%d %H:%M', time.localtime(outcome.started))}. "
        f"Sizes {', '.join(map(str, outcome.plan.sizes))}; runtime {_minutes(total_seconds)} "
        f"({phases}).",
        "",
        "## Summary",
        "",
        _markdown_table(summary.assign(met=summary["met"].map(_yes))),
        "",
    ]
    notes = limits(outcome)
    if notes:
        lines += ["## What limits the missed targets", ""]
        lines += [f"- {note}" for note in notes] + [""]
    if outcome.accuracy is not None:
        lines += _accuracy_section(outcome, out)
    if outcome.noise is not None and outcome.noise_summary is not None:
        lines += _noise_section(outcome, out)
    if outcome.sensitivity is not None and outcome.sensitivity_summary is not None:
        lines += _sensitivity_section(outcome, out)
    (out / "validation.md").write_text("\n".join(lines), encoding="utf-8")
    return out / "validation.md"


# --- the command ---------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    """Measure, write the report, print the summary; 0 when every target is met, else 1."""
    plan = parse_plan(args)
    root = _repo_root()
    commit = _check_checkout(root)
    started = time.time()
    clock = time.perf_counter()
    outcome = Outcome(plan, commit, started)
    strategies = accuracy_strategies() if "accuracy" in plan.phases else []
    total = 1 + len(strategies) * len(plan.sizes) * ("accuracy" in plan.phases)
    total += 3 * ("noise" in plan.phases)
    total += plan.repetitions * (1 + len(plan.slowdowns)) * ("sensitivity" in plan.phases)
    progress = Progress(total)
    with tempfile.TemporaryDirectory(prefix="jitbench-validate-") as tmp:
        asv = AsvRunner(root, Path(tmp), commit)
        if "accuracy" in plan.phases:
            start = time.perf_counter()
            outcome.accuracy = measure_accuracy(root, strategies, plan.sizes, progress)
            outcome.seconds["accuracy"] = time.perf_counter() - start
        if "noise" in plan.phases:
            start = time.perf_counter()
            outcome.noise, outcome.noise_summary, outcome.parallelism = measure_noise(
                asv, plan.sizes, plan.factor, progress
            )
            outcome.seconds["noise"] = time.perf_counter() - start
        if "sensitivity" in plan.phases:
            start = time.perf_counter()
            judged, summary, zero = measure_sensitivity(asv, plan, progress)
            outcome.sensitivity, outcome.sensitivity_summary, outcome.canary_zero = (
                judged,
                summary,
                zero,
            )
            outcome.seconds["sensitivity"] = time.perf_counter() - start
    for phase in PHASES:
        outcome.loads[phase] = progress.load_range(phase)
    progress.step("report", f"writing {plan.out}")
    total_seconds = time.perf_counter() - clock
    table = summary_table(outcome, total_seconds)
    path = write_report(outcome, table, total_seconds)
    print(_markdown_table(table.assign(met=table["met"].map(_yes))))
    print(path)
    return 0 if bool(table["met"].all()) else 1


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors, as the jitbench command has."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m jitbench.validate [options]``: the same as ``jitbench validate``."""
    from jitbench.devices import ensure_host_devices

    ensure_host_devices()
    parser = _Parser(prog="jitbench validate", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (JitbenchError, NotImplementedError) as exc:
        print(f"jitbench: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
