"""The asv benchmark classes of targets: one row per target and device.

A benchmark module puts them in its namespace with
``globals().update(benchmark_classes([...]))``: this repository's
``benchmarks/bench_targets.py`` (targets from ``JITBENCH_TARGETS`` only) and
the module ``jitbench init`` writes into another project (its own targets).
Both give the same benchmark names, ``bench_targets.TargetCachedCall.
time_cached_call`` and so on (:mod:`jitbench.catalog`), so reports and
comparisons read either. With no target there are no classes, and no rows.

The timing attributes are those of the built-in benchmark of the same family
(``benchmarks/common.py``; a test keeps them equal), and the work is in
:mod:`jitbench.target_suite`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from jitbench import changes, instructions, suite, target_suite
from jitbench.measure import block
from jitbench.target_suite import PreparedTarget, TargetCase


class TargetBenchmark:
    """target x device; one process per combination and round."""

    param_names = ["target", "device"]
    rounds = 1
    timeout = 300
    version = "1"


class OneCall(suite.OneCallTiming, TargetBenchmark):
    pass


class ManyCalls(suite.Cached, suite.ManyCallsTiming, TargetBenchmark):
    pass


class TargetColdCall(OneCall):
    """The first call of a new instance from the factory, every in-memory cache cleared."""

    def setup(self, target: str, device: str) -> None:
        self.call = TargetCase.of(target, device).cold_call()

    def time_first_call(self, target: str, device: str) -> None:
        block(self.call())


class TargetFreshProcess(OneCall):
    """The first call in a fresh interpreter (its imports and factory not timed)."""

    repeat = 2

    def timeraw_first_call_fresh_process(self, target: str, device: str) -> tuple[str, str]:
        return target_suite.fresh_code(target, device)


class TargetCachedCall(ManyCalls):
    """Many cached calls per sample; the first call of the body builds and compiles.

    ``time_cached_call`` waits for the result, ``time_cached_call_dispatch``
    does not: the Python and C++ path of a call, where per-call work shows.
    """

    def time_cached_call(self, target: str, device: str) -> None:
        self.cached(lambda: TargetCase.of(target, device), PreparedTarget).call()

    def time_cached_call_dispatch(self, target: str, device: str) -> None:
        self.cached(lambda: TargetCase.of(target, device), PreparedTarget).dispatch()


class TargetAfterChange(OneCall):
    """The call right after the first change of each kind the target's audit plays."""

    extra_params: ClassVar[list[list[Any]]] = [list(changes.TIMED_CHANGES)]
    param_names = [*TargetBenchmark.param_names, "change"]
    repeat = (3, 5, 0.5)

    def setup(self, target: str, device: str, change: str) -> None:
        self.call = target_suite.after_change(TargetCase.of(target, device), change)

    def time_call_after_change(self, target: str, device: str, change: str) -> None:
        self.call()


def _track(key: str, unit: str) -> Any:
    def track(self: Any, totals: dict[Any, Any], target: str, device: str) -> int:
        return target_suite.hazard_count(totals, target, device, key)

    track.__name__ = f"track_{key}"
    track.unit = unit  # type: ignore[attr-defined]
    return track


class TargetHazards(TargetBenchmark):
    """Totals of the target's cache audit per device (``jitbench audit TARGET``)."""

    timeout = 600

    def setup_cache(self) -> dict[Any, Any]:
        # One audit per target and device, shared by every track below.
        return target_suite.audit_all(self.params[0], self.params[1])

    track_compiles = _track("compiles", "compiles")
    track_traces = _track("traces", "traces")
    track_stale_results = _track("stale_results", "stale results")
    track_errors = _track("errors", "errors")
    track_leaked_instances = _track("leaked_instances", "instances")
    track_repeat_call_compiles = _track("repeat_call_compiles", "compiles")


class TargetMemory(TargetBenchmark):
    """Peak memory of building an instance from the factory and calling it once."""

    def setup(self, target: str, device: str) -> None:
        self.case = TargetCase.of(target, device)

    def peakmem_build_and_first_call(self, target: str, device: str) -> None:
        block(self.case.load().function()())


class TargetInstructions(TargetBenchmark):
    """The calling thread's instructions per call on ``cpu``, counted by Valgrind (opt-in)."""

    devices: ClassVar[list[str]] = ["cpu"]
    unit = instructions.COUNT_UNIT
    timeout = instructions.TIMEOUT_S

    def setup_cache(self) -> instructions.Table:
        return instructions.table([instructions.Row(s, d) for s in self.params[0]
                                   for d in self.params[1]])  # fmt: skip

    def setup(self, table: instructions.Table, target: str, device: str) -> None:
        self.counts = instructions.lookup(table, instructions.Row(target, device))

    def track_cached_call_instructions(self, table: Any, target: str, device: str) -> float:
        return self.counts.call

    def track_dispatch_instructions(self, table: Any, target: str, device: str) -> float:
        return self.counts.dispatch


CLASSES: tuple[type, ...] = (
    TargetColdCall,
    TargetFreshProcess,
    TargetCachedCall,
    TargetAfterChange,
    TargetHazards,
    TargetMemory,
    TargetInstructions,
)


def benchmark_classes(declared: Sequence[str] = ()) -> dict[str, type]:
    """The classes for ``declared`` targets and ``JITBENCH_TARGETS``, by name; none without any.

    Each target's module is imported here, once (what cannot be is one line on
    stderr, and its rows fail with it); the parameters are the specs.
    """
    specs = target_suite.target_specs(declared)
    if not specs:
        return {}
    target_suite.problems(specs)
    devices = suite.unsharded_devices()
    made: dict[str, type] = {}
    for base in CLASSES:
        extra: list[list[Any]] = getattr(base, "extra_params", [])
        where = getattr(base, "devices", devices)
        made[base.__name__] = type(base.__name__, (base,), {"params": [specs, where, *extra]})
    return made
