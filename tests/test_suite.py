"""The benchmark classes run directly: what they compile, what they time, and where.

Compile counts are observations with JAX 0.4.30, 0.9.0, 0.9.1, 0.10.2 and
0.12.0.1 (ranges as in test_audit.py); the cells that differ between releases
are keyed by release.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest
from jax_releases import below_minimum, for_release, runnable

import jitbench
from jitbench.auditing import scenario
from jitbench.auditing.audit import audit_subject
from jitbench.compiles import clear_caches, count_compiles
from jitbench.devices import host_devices
from jitbench.errors import JitbenchError
from jitbench.measure import case, diskcache
from jitbench.measure.case import Row
from jitbench.strategies.codegen import Shape
from jitbench.suite import families, grid
from jitbench.vocabulary import Outcome

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import bench_cached, bench_change, bench_cold, bench_scaling  # noqa: E402

NAMES = list(jitbench.STRATEGIES)
DEVICES = ["cpu", "cpu-sharded"]
ABSENT = [spec for spec in ("gpu", "gpu-sharded", "tpu") if spec not in host_devices()]


def _python(code: str, env: dict[str, str] | None = None, check: bool = True):
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=check
    )


# --- Cold calls ----------------------------------------------------------------------------------

# Backend compiles of one cold first call: one program, except eager's op-by-op dispatch
# (one program per primitive: mul and add).
COLD_COMPILES = {name: 1 for name in NAMES} | {"eager": 2}
COLD_COMPILES_BY_RELEASE = [
    # equinox 0.11 (the newest these releases admit) runs two eager jnp operations of its own
    # on the first call (see test_audit).
    ((0, 4, 30), (0, 4, 36), {"equinox_filter_jit": 3}),
    ((0, 9), None, {}),
]


def cold_compiles(name: str) -> int:
    return {**COLD_COMPILES, **for_release(COLD_COMPILES_BY_RELEASE)}[name]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", runnable(NAMES))
def test_every_cold_sample_compiles(name, device):
    bench = bench_cold.ColdCall()
    for _sample in range(2):
        with count_compiles() as prepared:
            bench.setup(name, 10, device)
        with count_compiles() as stats:
            bench.time_first_call(name, 10, device)
        # The setup builds with NumPy and device_put: every compile is the timed call's.
        assert prepared.compiles == 0
        assert stats.compiles == cold_compiles(name)


@pytest.mark.parametrize("name", runnable(NAMES))
def test_first_call_stages_are_parts_of_the_call(name):
    stages = case.first_call_stages(Row(name, "cpu", 10).load())
    assert stages.trace > 0 and stages.lower > 0 and stages.compile > 0
    assert stages.trace + stages.lower + stages.compile <= stages.call
    assert stages.remainder == stages.call - stages.trace - stages.lower - stages.compile >= 0


def test_typical_stages_are_those_of_the_median_call(monkeypatch):
    # Per-stage medians of these calls add up to 15 s, more than any call: the
    # stages reported must be one call's own, the median call's (10.6 s).
    warm_up = case.Stages(9.0, 9.0, 9.0, 99.0)
    calls = [
        case.Stages(5.0, 5.0, 0.0, 10.5),
        case.Stages(0.0, 5.0, 5.0, 11.0),
        case.Stages(5.0, 0.0, 5.0, 10.6),
    ]
    measured = iter([warm_up, *calls])
    monkeypatch.setattr(case, "first_call_stages", lambda subject: next(measured))
    assert case.typical_stages(None, calls=3) is calls[2]
    assert next(measured, None) is None


def test_stage_benchmarks_report_one_call_and_its_parts():
    names = [name for name in NAMES if below_minimum(name) is None]
    table = case.stage_table(names, [10], ["cpu"], calls=3)
    assert {key[0] for key in table} == set(names)
    bench = bench_cold.Stages()
    for name in names:
        bench.setup(table, name, 10, "cpu")
        parts = [
            bench.track_trace_seconds(table, name, 10, "cpu"),
            bench.track_lower_seconds(table, name, 10, "cpu"),
            bench.track_compile_seconds(table, name, 10, "cpu"),
        ]
        assert all(part > 0 for part in parts), name
        assert sum(parts) <= bench.track_call_seconds(table, name, 10, "cpu"), name


# --- Cached calls --------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", runnable(NAMES))
def test_cached_timing_hits_the_cache(name, device):
    for method in ("time_cached_call", "time_cached_call_dispatch"):
        bench = bench_cached.CachedCall()
        clear_caches()
        with count_compiles() as build:
            getattr(bench, method)(name, 10, device)  # builds, compiles, then calls
        assert build.compiles == cold_compiles(name) + (name == "jit_per_call")
        with count_compiles() as stats:
            for _ in range(5):
                getattr(bench, method)(name, 10, device)
        # The documented exception: a new jit object per call compiles at every call.
        assert stats.compiles == (5 if name == "jit_per_call" else 0), method


@pytest.mark.parametrize("name", runnable([n for n in NAMES if n != "jit_per_call"]))
def test_width_scaling_hits_the_cache(name):
    bench = bench_scaling.DispatchVsWidth()
    bench.time_dispatch(name, 10)
    assert bench._prepared.obj.__class__ is jitbench.get_strategy(name).make_class(Shape(10))
    with count_compiles() as stats:
        bench.time_dispatch(name, 10)
        bench.time_dispatch(name, 10)
    assert stats.compiles == 0


def test_the_dispatch_slopes_are_na_for_a_strategy_that_compiles_every_call():
    from asv_runner.benchmarks.mark import SkipNotImplemented

    with pytest.raises(SkipNotImplemented, match=r"^jit_per_call compiles on every call"):
        bench_scaling.DispatchVsWidth().time_dispatch("jit_per_call", 10)


def test_cached_build_is_off_the_clock(monkeypatch):
    # A clock that moves only when told to: the build takes 7 s, each call 0.5 s.
    now = [100.0]

    class Clock:
        @staticmethod
        def perf_counter():
            return now[0]

    class Built(case.Prepared):
        def __init__(self, subject):
            now[0] += 7.0

        def call(self):
            now[0] += 0.5

    monkeypatch.setattr(families, "time", Clock)
    monkeypatch.setattr(case, "Prepared", Built)
    monkeypatch.setattr(families, "_off_clock_seconds", 0.0)
    assert bench_cached.CachedCall.timer is families.clock
    bench = bench_cached.CachedCall()
    for expected_build in (7.0, 0.0):
        build_before, c0 = families._off_clock_seconds, families.clock()
        bench.time_cached_call("helper_function", 10, "cpu")
        assert families._off_clock_seconds - build_before == expected_build
        assert families.clock() - c0 == 0.5  # the call alone, whether or not it built
    assert isinstance(bench._prepared, Built)


def test_a_build_that_cannot_run_is_skipped_and_off_the_clock(monkeypatch):
    from asv_runner.benchmarks.mark import SkipNotImplemented

    def unavailable(*params):
        raise jitbench.StrategyUnavailable("strategy 'x' needs package 'y'")

    bench = bench_cached.CachedCall()
    monkeypatch.setattr(bench, "subject", unavailable)
    before = families._off_clock_seconds
    with pytest.raises(SkipNotImplemented, match=r"^strategy 'x' needs package 'y'$"):
        bench.time_cached_call("x", 10, "cpu")
    assert families._off_clock_seconds > before and bench._prepared is None


def test_asv_times_cached_calls_only():
    """asv's own timing loop: no setup hook, the suite's clock, ``number`` calls a sample,
    and the one compile is the build of the first call."""
    from asv_runner.discovery import get_benchmark_from_name

    wanted = ("helper_function", min(grid.sizes()), "cpu")
    combos = list(itertools.product(*bench_cached.CachedCall.params))
    name = f"bench_cached.CachedCall.time_cached_call-{combos.index(wanted)}"
    bench = get_benchmark_from_name(str(ROOT / "benchmarks"), name)
    assert not bench.do_setup()
    assert bench.timer is families.clock
    with count_compiles() as stats:
        result = bench.run(*wanted)
    assert stats.compiles == 1
    assert result["number"] == bench_cached.CachedCall.number == 30
    low, high, _ = bench_cached.CachedCall.repeat
    assert low <= len(result["samples"]) <= high and all(s > 0 for s in result["samples"])


def _asv_benchmark(method: str):
    """asv's own benchmark object for helper_function's row of ``method`` at the smallest size."""
    from asv_runner.discovery import get_benchmark_from_name

    wanted = ("helper_function", min(grid.sizes()), "cpu")
    combos = list(itertools.product(*bench_cached.CachedCall.params))
    name = f"bench_cached.CachedCall.{method}-{combos.index(wanted)}"
    return get_benchmark_from_name(str(ROOT / "benchmarks"), name), wanted


def test_asv_times_the_dispatch_rows_runs():
    """The dispatch row in asv's own loop: the suite's clock, its own version (asv reads the
    method's before the class's), at least five samples a round, each one run of calls, and
    the one compile is the build of the first call."""
    bench, wanted = _asv_benchmark("time_cached_call_dispatch")
    assert not bench.do_setup()
    assert bench.timer is families.clock
    assert (bench.version, bench_cached.CachedCall.version) == ("3", "2")
    clear_caches()  # the class's program may be compiled by an earlier test
    with count_compiles() as stats:
        result = bench.run(*wanted)
    assert stats.compiles == 1
    assert result["number"] == bench_cached.CachedCall.number == case.DISPATCH_RUN == 30
    assert 5 <= len(result["samples"]) <= 10 and all(s > 0 for s in result["samples"])


class _Out:
    """A dispatched call's result: waiting for it moves the clock by 7 s."""

    def __init__(self, now, waits, index):
        self.now, self.waits, self.index = now, waits, index

    def block_until_ready(self):
        self.now[0] += 7.0
        self.waits.append(self.index)
        return self


def _fake_clock(monkeypatch):
    now = [100.0]

    class Clock:
        @staticmethod
        def perf_counter():
            return now[0]

    monkeypatch.setattr(families, "time", Clock)
    monkeypatch.setattr(families, "_off_clock_seconds", 0.0)
    return now


def test_the_dispatch_row_waits_for_each_runs_last_call_off_the_clock(monkeypatch):
    """Calls back to back, the last of every run of 30 waited for (so no call of the next run
    queues behind them), and that wait left out of the clock."""
    now, waits = _fake_clock(monkeypatch), []

    class Built:
        def __init__(self, subject):
            self.calls = 0

        def dispatch(self):
            self.calls += 1
            now[0] += 0.5
            return _Out(now, waits, self.calls)

    monkeypatch.setattr(case, "Prepared", Built)
    bench = bench_cached.CachedCall()
    start = families.clock()
    for _ in range(65):
        bench.time_cached_call_dispatch("helper_function", 10, "cpu")
    assert waits == [30, 60]
    assert families.clock() - start == 65 * 0.5


def test_dispatch_loop_waits_for_each_runs_last_call_outside_its_window():
    """``jitbench time``'s and validate's dispatch (``Prepared.dispatch_loop``): calls back to
    back in runs of at most ``DISPATCH_RUN``, the last result of each waited for outside the
    window (a clock that moves only while waiting reads no time at all)."""
    prepared = case.Prepared(Row("helper_function", "cpu", 10).load())
    now, waited = [0.0], []

    def wait(out):
        now[0] += 7.0
        waited.append(out)
        return out

    names = prepared.dispatch_loop.__globals__  # the compiled loop's own namespace
    names["clock"], names["block_until_ready"] = (lambda: now[0]), wait
    assert prepared.dispatch_loop(2 * case.DISPATCH_RUN + 5) == 0.0
    assert len(waited) == 3


def test_a_slow_build_leaves_the_dispatch_row_only_later_samples(monkeypatch):
    """A build past asv's time for sampling (a target's compile): the round's samples are
    still five runs after the one the state was built in, whose first call after the
    compile is slow, never that run alone (which was every such round's figure)."""
    import time

    now, waits = _fake_clock(monkeypatch), []
    bench, wanted = _asv_benchmark("time_cached_call_dispatch")
    past_sampling = bench.warmup_time + bench.repeat[2] + 0.1  # in asv's own time

    class SlowBuild:
        def __init__(self, subject):
            time.sleep(past_sampling)
            self.calls = 0

        def dispatch(self):
            self.calls += 1
            now[0] += 1.0 if self.calls == 1 else 0.001
            return _Out(now, waits, self.calls)

    monkeypatch.setattr(case, "Prepared", SlowBuild)
    samples = bench.run(*wanted)["samples"]
    assert samples == pytest.approx([0.001] * 5)
    assert waits == [30, 60, 90, 120, 150, 180]


# --- The call after a change ---------------------------------------------------------------------


@pytest.mark.parametrize("name", runnable(NAMES))
def test_the_call_after_a_change_is_the_audits_step(name):
    """AfterChange's setup plays the audit's scenario up to the change (its compiles are
    those of every earlier step), and the timed call is the audit's step of that change:
    the pinned audit rows (test_audit) are this benchmark's compiles too."""
    from test_audit import cells_of, expected_rows

    cells, _ = expected_rows()[name]
    compiles = [int(c.rstrip("! E").split("/")[1]) for c in cells_of(cells)]
    bench = bench_change.AfterChange()
    # The walk of the fields, before the scenario's cold start: a pytree flattening its
    # children without keys is flattened again holding copies of its arrays (a copy program).
    subject = bench.row(name, 10, "cpu").load()
    clear_caches()
    with count_compiles() as walk:
        subject.fields(subject.new())
    for change in scenario.TIMED_CHANGES:
        step = scenario.SCENARIO.index(change)
        if change in jitbench.get_strategy(name).raises_on:
            with pytest.raises(NotImplementedError, match="by design"):
                bench.setup(name, 10, "cpu", change)
            continue
        bench.setup(name, 10, "cpu", change)  # the first in a process also judges the change
        clear_caches()
        with count_compiles() as setup:
            bench.setup(name, 10, "cpu", change)
        with count_compiles() as stats:
            bench.time_call_after_change(name, 10, "cpu", change)
        setup_compiles = setup.compiles - walk.compiles
        assert (setup_compiles, stats.compiles) == (sum(compiles[:step]), compiles[step]), change


@pytest.mark.parametrize("name", runnable(NAMES))
def test_what_raises_by_design_is_what_the_audit_sees_raise(name):
    from test_audit import _audit

    strategy = jitbench.get_strategy(name)
    errors = tuple(s.name for s in _audit(name, "cpu").steps if s.outcome == "error")
    assert errors == strategy.raises_on
    for change in strategy.raises_on:
        with pytest.raises(NotImplementedError, match=f"{name} raises on {change} by design"):
            bench_change.AfterChange().setup(name, 10, "cpu", change)


def test_unknown_change_is_rejected():
    with pytest.raises(
        jitbench.JitbenchError,
        match=r"^unknown change 'other_instance'; valid: new_static, seen_static, "
        r"same_shape_array, new_shape_array, equal_instance$",
    ):
        bench_change.AfterChange().setup("eager", 10, "cpu", "other_instance")


# --- Cases and grids -----------------------------------------------------------------------------


def test_a_row_loads_its_subject():
    subject = Row("pytree_class", "cpu-sharded", 10, Shape(n_arrays=3, n_ops=2)).load()
    assert subject.strategy is jitbench.get_strategy("pytree_class")
    assert subject.placement.spec == "cpu-sharded" and subject.placement.n_devices == 4
    assert subject.shape == Shape(n_arrays=3, n_ops=2) and subject.size == 10
    obj, y = subject.instance()
    assert y.shape == (12,) and len(jitbench.arrays_of(obj)) == 3
    # A name that is neither a strategy nor a target (package.module:factory).
    with pytest.raises(jitbench.JitbenchError, match=r"unknown strategy 'nope'; valid: eager,"):
        Row("nope", "cpu", 10).load()
    with pytest.raises(jitbench.JitbenchError, match="n_ops must be a positive integer"):
        Row("eager", "cpu", 10, Shape(n_ops=0)).load()


@pytest.mark.skipif(not ABSENT, reason="this host has every device: nothing is absent")
def test_absent_device_skips_everywhere():
    from asv_runner.benchmarks.mark import SkipNotImplemented

    spec = ABSENT[0]
    with pytest.raises(NotImplementedError, match=f"device '{spec}' is not available"):
        bench_cold.ColdCall().setup("eager", 10, spec)
    with pytest.raises(NotImplementedError, match=f"device '{spec}' is not available"):
        bench_change.AfterChange().setup("eager", 10, spec, "new_static")
    with pytest.raises(SkipNotImplemented, match=f"device '{spec}' is not available"):
        bench_cached.CachedCall().time_cached_call("eager", 10, spec)
    with pytest.raises(NotImplementedError):
        case.fresh_code(Row("eager", spec, 10))


def test_sizes_default_and_override(monkeypatch):
    monkeypatch.delenv("JITBENCH_SIZES", raising=False)
    assert grid.sizes() == [10, 1000, 100000, 1000000]
    assert grid.edge_sizes() == [10, 1000000]
    monkeypatch.setenv("JITBENCH_SIZES", "16, 4096")
    assert grid.sizes() == [16, 4096]
    monkeypatch.setenv("JITBENCH_SIZES", "16")
    assert grid.edge_sizes() == [16]
    for bad in ("16,big", "16,0"):
        monkeypatch.setenv("JITBENCH_SIZES", bad)
        item = bad.split(",")[1]
        with pytest.raises(
            jitbench.JitbenchError,
            match=f"^JITBENCH_SIZES has '{item}'; expected positive integers like '10,1000'$",
        ):
            grid.sizes()


def test_devices_default_and_override(monkeypatch):
    monkeypatch.delenv("JITBENCH_DEVICES", raising=False)
    assert grid.devices() == host_devices()
    assert grid.unsharded_devices() == [d for d in host_devices() if "-" not in d]
    monkeypatch.setenv("JITBENCH_DEVICES", "cpu-sharded,cpu")
    assert grid.devices() == ["cpu-sharded", "cpu"]
    assert grid.unsharded_devices() == ["cpu"]
    monkeypatch.setenv("JITBENCH_DEVICES", "cpu,xpu")
    with pytest.raises(jitbench.JitbenchError) as error:
        grid.devices()
    assert str(error.value) == (
        "JITBENCH_DEVICES has 'xpu'; expected device specs from cpu, cpu-sharded, gpu, "
        "gpu-sharded, tpu, tpu-sharded"
    )


@pytest.mark.skipif(not ABSENT, reason="this host has every device: nothing is absent")
def test_a_device_this_host_lacks_is_refused_at_discovery(monkeypatch):
    # Not a grid of nothing but n/a that exits 0: the spec and this host's specs, named.
    monkeypatch.setenv("JITBENCH_DEVICES", f"cpu,{ABSENT[-1]}")
    with pytest.raises(jitbench.JitbenchError) as error:
        grid.devices()
    assert str(error.value) == (
        f"JITBENCH_DEVICES has {ABSENT[-1]!r}, which this host cannot serve; "
        f"this host has: {', '.join(host_devices())}"
    )
    with pytest.raises(jitbench.JitbenchError) as error:
        grid.check_environment({"JITBENCH_DEVICES": ABSENT[-1]})
    assert str(error.value).startswith(f"JITBENCH_DEVICES has {ABSENT[-1]!r}, which this host")


def test_audit_all_keeps_what_this_process_serves():
    from test_audit import expected_rows, traces_of

    specs = ["cpu", *ABSENT[:1]]
    rows = [Row(n, s) for s in specs for n in ["bound_method_jit", "helper_function"]]
    totals = case.hazard_totals(rows)
    rows = expected_rows()
    assert totals == {
        ("bound_method_jit", "cpu"): {
            "compiles": 3,
            "traces": traces_of(rows["bound_method_jit"][0]),
            "stale_results": 3,
            "errors": 0,
            "leaked_instances": 0,
            "recompiles": 1,  # an equal new instance compiles again (self hashed by identity)
            "repeat_call_compiles": 0,
        },
        ("helper_function", "cpu"): {
            "compiles": 3,
            "traces": traces_of(rows["helper_function"][0]),
            "stale_results": 0,
            "errors": 0,
            "leaked_instances": 0,
            "recompiles": 0,
            "repeat_call_compiles": 0,
        },
    }


def test_a_recompile_at_every_call_moves_every_compile_track():
    """A target's hazard tracks, as asv reads them, for the model and the same model jitting a
    new function at every call: every step of its scenario compiles, and the compile and
    trace tracks count each step's, as the recompile tracks count the steps that recompiled."""
    specs = ["target_models:make_model", "target_models:make_rejitted"]
    hazards = families.benchmark_classes(specs)["TargetHazards"]()
    totals = hazards.totals()
    track = {name: [getattr(hazards, f"track_{name}")(totals, s, "cpu") for s in specs]
             for name in ("compiles", "traces", "recompiles", "repeat_call_compiles")}  # fmt: skip
    steps = audit_subject(Row(specs[1], "cpu").load()).steps
    played = [s for s in steps if s.outcome is not Outcome.NOT_APPLICABLE]
    assert all(step.compiles >= 1 for step in played)
    assert track["compiles"] == [track["compiles"][0], sum(s.compiles for s in steps)]
    assert track["traces"][1] == sum(s.traces for s in steps)
    for name, (model, rejitted) in track.items():
        assert rejitted > model, (name, model, rejitted)
    assert track["repeat_call_compiles"] == [0, 1]


# --- Benchmark processes -------------------------------------------------------------------------


def test_importing_the_suite_starts_no_backend_and_no_thread():
    # What makes asv's forkserver safe: the server imports the suite (JAX, equinox and
    # flax included) and forks; no backend may exist then, and no thread beyond NumPy's
    # OpenBLAS pool (which re-creates its threads in the child through pthread_atfork).
    code = (
        "import threading, os, sys\n"
        "import numpy\n"
        "before = len(os.listdir('/proc/self/task'))\n"
        "import benchmarks.bench_cached, benchmarks.bench_cold, benchmarks.bench_change\n"
        "import benchmarks.bench_hazards, benchmarks.bench_memory, benchmarks.bench_scaling\n"
        "import benchmarks.bench_persistent\n"
        "from jax._src import xla_bridge\n"
        "assert all(m in sys.modules for m in ('jax', 'equinox', 'flax.nnx', 'flax.struct'))\n"
        "after = len(os.listdir('/proc/self/task'))\n"
        "print(len(xla_bridge._backends), threading.active_count(), after - before)\n"
    )
    assert _python(code).stdout.split() == ["0", "1", "0"]


def test_cpu_rows_get_the_host_default_configuration(bare_env):
    code = (
        "import jax\n"
        "from jitbench.devices import resolve\n"
        "placement = resolve('cpu')\n"
        "print(len(placement.devices), placement.n_devices, len(jax.devices('cpu')))\n"
    )
    assert _python(code, bare_env).stdout.split() == ["1", "1", "1"]


def test_cpu_sharded_rows_get_four_devices(bare_env):
    code = (
        "import jax\n"
        "from jitbench.devices import resolve\n"
        "placement = resolve('cpu-sharded')\n"
        "print(placement.n_devices, len(jax.devices('cpu')))\n"
    )
    assert _python(code, bare_env).stdout.split() == ["4", "4"]


def test_cpu_sharded_after_the_backend_started_is_unavailable(bare_env):
    code = (
        "import jax\n"
        "from jitbench.devices import resolve\n"
        "from jitbench.errors import DeviceUnavailable\n"
        "resolve('cpu')\n"
        "try:\n"
        "    resolve('cpu-sharded')\n"
        "except DeviceUnavailable as exc:\n"
        "    print(exc)\n"
    )
    assert _python(code, bare_env).stdout.splitlines() == [
        "device 'cpu-sharded' needs 2 or more cpu devices, found 1 (the CPU backend started "
        "before --xla_force_host_platform_device_count could be set: put it in XLA_FLAGS)"
    ]


def test_host_device_case_in_a_fresh_process(bare_env):
    code = (
        "import jax\n"
        "from jitbench.measure import case\n"
        "subject = case.host_device_subject('pytree_dataclass', 10, 2)\n"
        "prepared = case.Prepared(subject)\n"
        "result = prepared.call()\n"
        "print(subject.placement.n_devices, subject.size, len(jax.devices('cpu')),\n"
        "      len(result.sharding.device_set), result.shape[0])\n"
    )
    assert _python(code, bare_env).stdout.split() == ["2", "20", "2", "2", "20"]


def test_host_device_case_after_the_backend_started_is_unavailable():
    # This process started its backend with four devices.
    with pytest.raises(
        jitbench.DeviceUnavailable, match=r"^2 host devices asked for, the CPU backend has 4$"
    ):
        case.host_device_subject("helper_function", 10, 2)
    assert case.host_device_subject("helper_function", 10, 4).placement.n_devices == 4


def test_fresh_process_code_times_only_the_first_call():
    stmt, setup = case.fresh_code(Row("helper_function", "cpu", 10))
    assert stmt == "first_call()"
    code = f"{setup}\nfrom jitbench.compiles import count_compiles\n"
    code += "with count_compiles() as s:\n    first_call()\n"
    code += "print(s.compiles, s.persistent_cache_hits)\n"
    assert _python(code).stdout.split() == ["1", "0"]


PLUGIN = (
    "import jitbench\n"
    "base = jitbench.get_strategy('pytree_class')\n"
    "def render(t):\n"
    "    return base.render(t).replace('class PytreeClass', 'class MyPytree')\n"
    "jitbench.register_strategy(jitbench.Strategy('my_pytree', 's', 'm', render))\n"
)


def test_plugins_join_the_grid(tmp_path):
    (tmp_path / "my_strategies.py").write_text(PLUGIN)
    env = dict(os.environ, JITBENCH_PLUGINS="my_strategies", PYTHONPATH=str(tmp_path))
    code = (
        "from benchmarks import bench_cached, bench_hazards\n"
        "from jitbench.measure.case import Prepared, Row\n"
        "print(bench_cached.CachedCall.params[0][-1], bench_hazards.Hazards.params[0][-1])\n"
        "prepared = Prepared(Row('my_pytree', 'cpu', 4).load())\n"
        "print(type(prepared.obj).__name__, prepared.call().shape)\n"
    )
    assert _python(code, env).stdout.splitlines() == ["my_pytree my_pytree", "MyPytree (4,)"]


BAD_GRIDS = {
    "JITBENCH_PLUGINS": (
        "no_such_module_jb",
        "cannot import JITBENCH_PLUGINS module 'no_such_module_jb': "
        "No module named 'no_such_module_jb'",
    ),
    "JITBENCH_SIZES": ("10,big", "JITBENCH_SIZES has 'big'; expected positive integers like "
                       "'10,1000'"),
    "JITBENCH_DEVICES": ("cpu,xpu", "JITBENCH_DEVICES has 'xpu'; expected device specs from cpu, "
                         "cpu-sharded, gpu, gpu-sharded, tpu, tpu-sharded"),
}  # fmt: skip


@pytest.mark.parametrize("variable", list(BAD_GRIDS))
def test_a_bad_grid_variable_fails_the_suite_import_in_one_line(variable):
    # What asv's discovery shows under "STDERR": one line, no traceback.
    value, message = BAD_GRIDS[variable]
    out = _python("import benchmarks.bench_cached", dict(os.environ, **{variable: value}), False)
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == f"jitbench: error: {message}\n"


@pytest.mark.parametrize("variable", ["JITBENCH_SIZES", "JITBENCH_DEVICES"])
def test_asvrun_checks_the_grid_before_asv_starts(variable, tmp_path):
    value, message = BAD_GRIDS[variable]
    folder = tmp_path / "asv"
    out = subprocess.run(
        [sys.executable, "-m", "jitbench.suite.asvrun", f"--folder={folder}", "--", "run",
         "--quick"],
        cwd=ROOT, env=dict(os.environ, **{variable: value}), capture_output=True, text=True,
    )  # fmt: skip
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr == f"jitbench.suite.asvrun: error: {message}\n"
    assert not folder.exists()  # not even the config copy


def test_asvrun_refuses_bad_exit_statuses_before_writing_anything(tmp_path):
    folder = tmp_path / "asv"
    out = subprocess.run(
        [sys.executable, "-m", "jitbench.suite.asvrun", f"--folder={folder}", "--ok", "0,a",
         "--", "run"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert (out.returncode, out.stdout) == (2, "")
    assert out.stderr.splitlines()[-1] == (
        "python -m jitbench.suite.asvrun: error: argument --ok: "
        "'0,a' is not a list of exit statuses such as 0,2"
    )
    assert "Traceback" not in out.stderr and not folder.exists()


@pytest.mark.slow
def test_asv_check_shows_a_bad_grid_variable_in_one_line():
    env = dict(os.environ, JITBENCH_SIZES="10,big")
    out = subprocess.run(
        [sys.executable, "-m", "asv", "check", "--python=same"],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert out.returncode == 1
    lines = [line.strip() for line in out.stdout.splitlines()]
    assert f"jitbench: error: {BAD_GRIDS['JITBENCH_SIZES'][1]}" in lines
    assert "Traceback (most recent call last):" not in out.stdout + out.stderr


# --- On-disk compilation cache -------------------------------------------------------------------

DISK_CODE = """
import sys
from jitbench.compiles import clear_caches, count_compiles
from jitbench.measure import diskcache
from jitbench.measure.case import Row

case = Row("helper_function", "cpu", 10).load()
call = diskcache.first_call(case, sys.argv[1])  # the process's first call, as benchmarked
with count_compiles() as stats:
    call()
hits = diskcache.hits(case, sys.argv[2])  # clears the in-memory caches first
print(stats.persistent_cache_hits, stats.persistent_cache_misses, stats.compiles, hits)
"""


def test_disk_cache_helpers_in_fresh_processes(tmp_path):
    filled, empty, other = (str(tmp_path / d) for d in ("filled", "empty", "other"))
    diskcache.fill(Row("helper_function", "cpu", 10).load(), filled)
    assert os.listdir(filled), "the filling call wrote nothing"
    assert not jax.config.jax_enable_compilation_cache  # left off for the next cold call
    script = tmp_path / "disk.py"
    script.write_text(DISK_CODE)

    def fresh(first_call_path, hits_path):
        out = subprocess.run(
            [sys.executable, str(script), first_call_path, hits_path],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.split()

    # The first call's disk-cache hits, misses and backend compiles (a program read from
    # disk counts as a compile too: JAX reports the event either way), then hits().
    assert fresh(filled, filled) == ["1", "0", "1", "1"]
    assert fresh(other, empty) == ["0", "1", "1", "0"]
    assert os.listdir(other)  # a cold disk cache is written by the first call


def test_fill_all_skips_what_this_process_cannot_serve(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    filled = diskcache.fill_all(["helper_function"], [10], ["cpu", *ABSENT[:1]])
    path = str(tmp_path / "jax-disk-cache" / "helper_function-10-cpu")
    assert filled == {("helper_function", 10, "cpu"): path}
    assert os.listdir(path)


def test_depth_stage_table_is_keyed_by_depth_and_read_by_its_benchmark():
    names = ["helper_function", "pytree_dataclass"]
    # The floor's free function takes a flat object's fields: n/a at depth, the table goes on.
    table = case.stage_table([*names, "jit_function"], [10], ["cpu"], (1, 4), calls=1,
                             axis="depth")  # fmt: skip
    assert set(table) == {(n, 10, "cpu", d) for n in names for d in (1, 4)}
    bench = bench_scaling.CompileVsDepth()
    for name in names:
        for depth in (1, 4):
            bench.setup(table, name, depth)
            assert bench.track_trace_seconds(table, name, depth) > 0
            assert bench.track_compile_seconds(table, name, depth) > 0
    with pytest.raises(NotImplementedError, match="eager is not available"):
        bench.setup(table, "eager", 1)
    with pytest.raises(NotImplementedError, match=r"^jit_function calls _calc\(acts, params, y\)"):
        Row("jit_function", "cpu", 10, Shape(depth=1)).load()


def test_depth_case_builds_the_nested_class():
    subject = Row("pytree_class", "cpu", 10, Shape(depth=16)).load()
    assert subject.shape.depth == 16
    prepared = case.Prepared(subject)
    assert len(prepared.obj.layers) == 16
    assert prepared.call().shape == (10,)


def test_reused_refuses_a_strategy_that_compiles_every_call():
    subject = Row("jit_per_call", "cpu", 10, Shape(depth=2)).load()
    with pytest.raises(NotImplementedError, match=r"^jit_per_call compiles on every call"):
        case.Reused(subject)
    prepared = case.Reused(Row("helper_function", "cpu", 10, Shape(depth=2)).load())
    with count_compiles() as stats:
        prepared.call()
    assert stats.compiles == 0


def test_depth_benchmark_is_na_for_a_strategy_that_compiles_every_call():
    bench = bench_scaling.CallVsDepth()
    with pytest.raises(NotImplementedError, match="compiles on every call"):
        bench.time_cached_call_dispatch("jit_per_call", 1)


def _described() -> dict:
    return json.loads((ROOT / "results" / "benchmarks.json").read_text())


def test_a_narrowed_run_leaves_the_description_as_it_was():
    from jitbench.suite.asvrun import merge_description

    before = _described()
    name = "bench_cached.CachedCall.time_cached_call"
    narrowed = {**before, name: {**before[name], "params": [p[:1] for p in before[name]["params"]]}}
    assert merge_description(before, narrowed) is before


def test_a_run_on_new_hardware_adds_its_device_and_changed_code_replaces_the_entry():
    from jitbench.suite.asvrun import merge_description

    before = _described()
    name, other = "bench_cached.CachedCall.time_cached_call", "bench_cold.ColdCall.time_first_call"
    strategies, sizes, devices = before[name]["params"]
    assert "'gpu'" not in devices  # a device no committed run measured this on
    after = {
        **before,
        name: {**before[name], "params": [strategies[:2], sizes, ["'gpu'", "'cpu'"]]},
        other: {**before[other], "version": "0" * 64},
    }
    merged = merge_description(before, after)
    assert merged[name]["params"] == [strategies, sizes, [*devices, "'gpu'"]]
    assert merged[other] == after[other]
    assert {k: v for k, v in merged.items() if k not in (name, other)} == {
        k: v for k, v in before.items() if k not in (name, other)
    }


def test_an_asv_run_through_asvrun_keeps_the_committed_description_byte_for_byte(tmp_path):
    # asv rewrites results/benchmarks.json at every run, with the run's grid: a narrowed grid
    # (one size, one device) would otherwise change the tracked file.
    results = tmp_path / "results"
    results.mkdir()
    committed = (ROOT / "results" / "benchmarks.json").read_bytes()
    (results / "benchmarks.json").write_bytes(committed)
    folder = tmp_path / "asv"
    # HOME: asv's machine file (~/.asv-machine.json) inside the temporary folder.
    env = dict(os.environ, JITBENCH_SIZES="10", JITBENCH_DEVICES="cpu", HOME=str(tmp_path))
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    asvrun = [sys.executable, "-m", "jitbench.suite.asvrun", f"--folder={folder}",
              f"--set=results_dir={json.dumps(str(results))}", "--ok=0,1", "--"]  # fmt: skip
    for args in (
        ["machine", "--yes", "--machine", "probe"],
        ["run", f"--environment=existing:{sys.executable}",
         f"--set-commit-hash={head.stdout.strip()}", "-b", "zzz_none", "--machine", "probe"],
    ):  # fmt: skip
        out = subprocess.run([*asvrun, *args], cwd=ROOT, env=env, capture_output=True, text=True)
        assert out.returncode in (0, 1), out.stdout[-800:] + out.stderr[-800:]
    assert "No benchmarks selected" in out.stdout  # asv's status 1, after its discovery
    assert (results / "benchmarks.json").read_bytes() == committed


def test_one_row_says_what_to_measure_to_every_process_as_json():
    # asv's fresh-interpreter setup, the counting plan and a population's request all carry
    # this record as JSON: nothing is lost on the way.
    row = Row("user_models:scaled", "cpu", None, Shape(depth=2), call="m:f", inputs="m:x",
              way="eqx.filter_jit", instances=3, slowdown=0.1, twin=True, frames=5,
              tracebacks=False)  # fmt: skip
    assert Row.from_json(json.loads(json.dumps(row.to_json()))) == row
    # What a count changes around the call leaves the object built the same.
    assert row.built == Row("user_models:scaled", "cpu", None, Shape(depth=2), call="m:f",
                            inputs="m:x", way="eqx.filter_jit", instances=3, twin=True)  # fmt: skip
    with pytest.raises(JitbenchError, match=r"not a row to measure: \[1\]"):
        Row.from_json([1])
    _, setup = case.fresh_code(Row("helper_function", "cpu", 10))
    assert "fresh('{" in setup  # the row as JSON, not a Python repr
