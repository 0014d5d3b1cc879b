"""The phases timed in this process: fidelity (generated class against hand-written twin) and
accuracy (asv's benchmark objects against ``timeit``), each pair timed in alternation so that a
change of load hits both sides; and the host-parallelism probe (docs/validation.md)."""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import statistics
import time
import timeit
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

from jitbench.compiles import block, clear_memory_caches
from jitbench.devices import resolve
from jitbench.errors import JitbenchError
from jitbench.measure.case import Prepared, Row
from jitbench.measure.timing import sample
from jitbench.strategies.codegen import arrays_of, statics_of
from jitbench.strategies.instances import make_instance
from jitbench.strategies.twins import TWINS, twin
from jitbench.suite.grid import DEVICES_ENV, SIZES_ENV
from jitbench.validate.plan import Progress
from jitbench.validate.stats import CACHED, CANARY, DISPATCH, accuracy_table, fidelity_table
from jitbench.ways.registry import STRATEGIES, get_strategy, load_plugins

if TYPE_CHECKING:
    import jax
    from asv_runner.benchmarks.time import TimeBenchmark

FIDELITY_DEVICE = "cpu"
# interleaved's defaults; why CPU seconds: docs/validation.md#how-each-phase-measures
FIDELITY_TIMER = time.process_time
FIDELITY_LOOP_S = 0.002
FIDELITY_ROUNDS = 200
FIDELITY_MIN_ROUNDS = 10
FIDELITY_BUDGET_S = 0.6
ACCURACY_DEVICE = "cpu"
ACCURACY_ROUNDS = 3
ACCURACY_ROW_BUDGET_S = 3.0
TIMEIT_REPEATS = 1  # per round


class Calc(Protocol):
    """A generated instance or its hand-written twin: what fidelity times."""

    def calc(self, y: jax.Array) -> jax.Array: ...


def fidelity_strategies() -> list[str]:
    """The built-in strategies (each has a hand-written twin) that can run here."""
    return [name for name in TWINS if name in STRATEGIES and STRATEGIES[name].available]


def interleaved(
    first: Callable[[], object],
    second: Callable[[], object],
    *,
    after: Callable[[], object] | None = None,
    loop_s: float = FIDELITY_LOOP_S,
    rounds: int = FIDELITY_ROUNDS,
    min_rounds: int = FIDELITY_MIN_ROUNDS,
    budget_s: float = FIDELITY_BUDGET_S,
    timer: Callable[[], float] = FIDELITY_TIMER,
) -> dict[str, float]:
    """Median seconds per call of ``first`` and ``second``, timed in alternation by ``timer``.

    Both loops run the same number of calls: as many as take ``first`` about
    ``loop_s``. ``after`` runs untimed after every loop (to wait for calls
    that were only dispatched). The rounds stop at ``rounds``, or after
    ``budget_s`` of wall time once ``min_rounds`` are done.
    """
    timers = (timeit.Timer(first, timer=timer), timeit.Timer(second, timer=timer))
    number = _calls_per_loop(timers[0], loop_s, after)
    seconds: tuple[list[float], list[float]] = ([], [])
    start = time.perf_counter()
    done = 0
    while done < rounds and (done < min_rounds or time.perf_counter() - start < budget_s):
        for side in (0, 1) if done % 2 == 0 else (1, 0):
            seconds[side].append(timers[side].timeit(number) / number)
            if after is not None:
                after()
        done += 1
    return {
        "generated_s": statistics.median(seconds[0]),
        "twin_s": statistics.median(seconds[1]),
        "rounds": done,
        "number": number,
    }


def _calls_per_loop(timer: timeit.Timer, loop_s: float, after: Callable[[], object] | None) -> int:
    """The number of calls that take about ``loop_s``: loops of 1, 4, 16... calls, the fastest
    of three each (one slowed by another process does not count), up to a tenth of it."""
    number = 1
    while True:
        took = math.inf
        for _ in range(3):
            took = min(took, timer.timeit(number))
            if after is not None:
                after()
        if took >= loop_s / 10:
            return max(1, round(number * loop_s / took))
        number *= 4


def measure_fidelity(
    size: int, progress: Progress, strategies: Sequence[str] | None = None
) -> pd.DataFrame:
    """Generated instance against its twin per strategy: cached call and dispatch at ``size``."""
    placement = resolve(FIDELITY_DEVICE)
    rows = []
    for name in fidelity_strategies() if strategies is None else strategies:
        progress.step("fidelity", name)
        obj, y = make_instance(get_strategy(name), size, placement)
        (x,), (mul,) = arrays_of(obj), statics_of(obj)
        other = twin(name)(x, mul)  # the very arrays the generated instance holds
        mine, theirs = np.asarray(block(obj.calc(y))), np.asarray(block(other.calc(y)))
        same = bool(np.allclose(mine, theirs, rtol=1e-6, atol=0))
        for measure, timed in _fidelity_pair(obj, other, y).items():
            rows.append(
                {
                    "strategy": name,
                    "measure": measure,
                    "size": size,
                    "device": FIDELITY_DEVICE,
                    "same_result": same,
                    **timed,
                }
            )
    return fidelity_table(pd.DataFrame(rows))


def _fidelity_pair(obj: Calc, other: Calc, y: jax.Array) -> dict[str, dict[str, float]]:
    """Cached call (result waited for) and dispatch (not waited for) of both instances."""
    from jax import block_until_ready as wait  # JAX's own, called in the timed loops

    return {
        "cached call": interleaved(lambda: wait(obj.calc(y)), lambda: wait(other.calc(y))),
        "dispatch": interleaved(
            lambda: obj.calc(y), lambda: other.calc(y), after=lambda: wait(obj.calc(y))
        ),
    }


def accuracy_strategies() -> list[str]:
    """Every registered strategy that can run here (plugins included), canary excepted."""
    load_plugins()
    return [name for name, s in STRATEGIES.items() if s.available and name != CANARY]


@contextlib.contextmanager
def suite_grid(sizes: Sequence[int], devices: Sequence[str]) -> Iterator[None]:
    """``JITBENCH_SIZES`` and ``JITBENCH_DEVICES`` for an in-process import of the suite."""
    wanted = {SIZES_ENV: sizes, DEVICES_ENV: devices}
    old = {name: os.environ.get(name) for name in wanted}
    os.environ.update({name: ",".join(map(str, values)) for name, values in wanted.items()})
    try:
        yield
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _plain(strategy: str, size: int, device: str) -> Prepared:
    """The timeit side: an instance of its own, built as the benchmark builds one, with another
    seed so that it shares no jit cache entry with the benchmark's (docs/validation.md)."""
    return Prepared(Row(strategy, device, size).load(), seed=1)


def _plain_sides(plain: Prepared) -> dict[str, Callable[[int], float]]:
    """Each benchmark's plain side, seconds per call of a loop of ``n`` calls: timeit's loop of
    the cached call; dispatch as its row times it, in runs that never fill the queue."""
    loop = timeit.Timer(plain.call)
    return {CACHED: lambda n: loop.timeit(n) / n, DISPATCH: lambda n: plain.dispatch_loop(n) / n}


def _accuracy_row(
    bench: TimeBenchmark,
    wanted: tuple[str, int, str],
    plain: Prepared,
    per_call: Callable[[int], float],
) -> dict[str, float]:
    """asv's run and the plain side's loops (``per_call(number)``: seconds per call of a loop
    of ``number``) in alternation, the median of each side."""
    number, _ = timeit.Timer(plain.call).autorange()  # timeit's own calibration: >= 0.2 s
    asv_medians: list[float] = []
    asv_samples = 0
    plain_times: list[float] = []
    start = time.perf_counter()
    for _ in range(ACCURACY_ROUNDS):
        samples = bench.run(*wanted)["samples"]
        asv_medians.append(statistics.median(samples))
        asv_samples += len(samples)
        plain_times += [per_call(number) for _ in range(TIMEIT_REPEATS)]
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

    bench_dir = str(root / "benchmarks")
    with suite_grid(sizes, [ACCURACY_DEVICE]):
        # asv names a parameter combination by the reprs of its values.
        combos = list(itertools.product(*get_benchmark_from_name(bench_dir, CACHED).params))
    rows = []
    for strategy, size in itertools.product(strategies, sizes):
        progress.step("accuracy", f"{strategy} size {size}")
        wanted = (strategy, size, ACCURACY_DEVICE)
        if tuple(map(repr, wanted)) not in combos:
            raise JitbenchError(
                f"the suite's grid in this process lacks {wanted}; it was imported before "
                "with other JITBENCH_SIZES or JITBENCH_DEVICES"
            )
        index = combos.index(tuple(map(repr, wanted)))
        plain = _plain(*wanted)
        for benchmark, per_call in _plain_sides(plain).items():
            # why: docs/validation.md#how-each-phase-measures (accuracy)
            clear_memory_caches()
            plain.call()
            bench = get_benchmark_from_name(bench_dir, f"{benchmark}-{index}")
            bench.do_setup()
            measured = _accuracy_row(bench, wanted, plain, per_call)
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


@contextlib.contextmanager
def _pinned(cpus: set[int]) -> Iterator[None]:
    """Every thread of this process (XLA's pool included) pinned to ``cpus`` for the block."""
    old = {}
    for name in os.listdir("/proc/self/task"):
        tid = int(name)
        with contextlib.suppress(OSError):
            old[tid] = os.sched_getaffinity(tid)
            os.sched_setaffinity(tid, cpus)
    try:
        yield
    finally:
        for tid, mask in old.items():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, mask)


def host_parallelism(size: int) -> dict[str, float] | None:
    """helper_function's cached call at ``size`` on all of this process's CPUs, then on one
    (docs/validation.md); None where thread affinity cannot be set (Linux only) or on one
    CPU."""
    if not hasattr(os, "sched_setaffinity") or not os.path.isdir("/proc/self/task"):
        return None
    cpus = os.sched_getaffinity(0)
    if len(cpus) < 2:
        return None
    plain = _plain("helper_function", size, "cpu")
    all_cpus: list[float] = []
    one_cpu: list[float] = []
    for _ in range(2):  # alternated, so a change of load hits both
        all_cpus.append(sample(plain.call, 3, None).median)
        with _pinned({min(cpus)}):
            one_cpu.append(sample(plain.call, 3, None).median)
    all_s, one_s = statistics.median(all_cpus), statistics.median(one_cpu)
    return {"size": size, "cpus": len(cpus), "all_cpus_s": all_s, "one_cpu_s": one_s}
