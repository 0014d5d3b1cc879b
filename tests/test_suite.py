"""The benchmark classes, run directly: what they compile, and that their figures are right.

Compile counts here are observations with JAX 0.10.2 (see test_audit.py).
"""

from __future__ import annotations

import itertools
import os
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

import jax
import pytest

import jitbench
from jitbench import suite
from jitbench.measure import count_compiles

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import bench_cached, bench_change, bench_cold, bench_scaling  # noqa: E402

NAMES = list(jitbench.STRATEGIES)
DEVICES = ["cpu", "cpu-sharded"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", NAMES)
def test_every_cold_sample_compiles(name, device):
    bench = bench_cold.ColdCall()
    for _sample in range(2):
        bench.setup(name, 10, device)
        with count_compiles() as stats:
            bench.time_first_call(name, 10, device)
        assert stats.compiles >= 1


@pytest.mark.parametrize("name", NAMES)
def test_stage_tracks_report_positive_seconds(name):
    bench = bench_cold.Stages()
    bench.setup(name, 10, "cpu")
    assert bench.track_trace_seconds(name, 10, "cpu") > 0
    assert bench.track_lower_seconds(name, 10, "cpu") > 0
    assert bench.track_compile_seconds(name, 10, "cpu") > 0


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", NAMES)
def test_cached_timing_hits_the_cache(name, device):
    for method in ("time_cached_call", "time_cached_call_dispatch"):
        bench = bench_cached.CachedCall()
        getattr(bench, method)(name, 10, device)  # builds and compiles
        with count_compiles() as stats:
            for _ in range(5):
                getattr(bench, method)(name, 10, device)
        if name == "jit_per_call":
            # The documented exception: a new jit object per call compiles every call.
            assert stats.compiles == 5
        else:
            assert stats.compiles == 0, method


@pytest.mark.parametrize("name", NAMES)
def test_width_scaling_hits_the_cache(name):
    bench = bench_scaling.DispatchVsWidth()
    bench.time_dispatch(name, 10)
    with count_compiles() as stats:
        bench.time_dispatch(name, 10)
    assert stats.compiles == (1 if name == "jit_per_call" else 0)


def test_cached_build_is_off_the_clock():
    bench = bench_cached.CachedCall()
    wall, clock = time.perf_counter(), suite.clock()
    bench.time_cached_call("flax_nnx_jit", 10, "cpu")  # the build includes a compile
    spent_wall = time.perf_counter() - wall
    spent_clock = suite.clock() - clock
    assert spent_clock < spent_wall
    assert bench_cached.CachedCall.timer is suite.clock


# Compiles caused by the timed call after each change (1 = recompiled, 0 = reused).
# Strategies that miss the change (0 where a correct one compiles) return stale results.
AFTER_CHANGE = {
    #                        new_static seen_static same_shape new_shape equal_instance
    "eager": (0, 0, 0, 2, 0),
    "bound_method_jit": (0, 0, 0, 0, 1),
    "helper_function": (1, 0, 0, 1, 0),
    "static_self_id_hash": (0, 0, 0, 0, 1),
    "static_self_value_hash": (0, 0, 0, 0, 0),
    "pytree_class": (1, 0, 0, 1, 0),
    "pytree_dataclass": (1, 0, 0, 1, 0),
    "jit_per_call": (1, 1, 1, 1, 1),
    "equinox_filter_jit": (1, 0, 0, 1, 0),
    "flax_struct_dataclass": (1, 0, 0, 1, 0),
    "flax_nnx_jit": (1, 0, 0, 1, 0),
}


@pytest.mark.parametrize("name", NAMES)
def test_after_change_compiles_as_observed(name):
    bench = bench_change.AfterChange()
    got = []
    for change in suite.CHANGES:
        bench.setup(name, 10, "cpu", change)
        with count_compiles() as stats:
            bench.time_call_after_change(name, 10, "cpu", change)
        got.append(stats.compiles)
    assert tuple(got) == AFTER_CHANGE[name]


def test_unknown_change_is_rejected():
    with pytest.raises(jitbench.JitbenchError, match="unknown change 'x'; valid: new_static"):
        suite.after_change("eager", 10, "cpu", "x")


def test_absent_device_skips_everywhere():
    from asv_runner.benchmarks.mark import SkipNotImplemented

    with pytest.raises(NotImplementedError):
        bench_cold.ColdCall().setup("eager", 10, "gpu")
    with pytest.raises(NotImplementedError):
        bench_change.AfterChange().setup("eager", 10, "tpu", "new_static")
    with pytest.raises(SkipNotImplemented):
        bench_cached.CachedCall().time_cached_call("eager", 10, "gpu-sharded")


def test_sizes_default_and_override(monkeypatch):
    monkeypatch.delenv("JITBENCH_SIZES", raising=False)
    assert suite.sizes() == [10, 1000, 100000, 1000000]
    monkeypatch.setenv("JITBENCH_SIZES", "16, 4096")
    assert suite.sizes() == [16, 4096]
    monkeypatch.setenv("JITBENCH_SIZES", "16,big")
    with pytest.raises(jitbench.JitbenchError, match="JITBENCH_SIZES has 'big'"):
        suite.sizes()


def test_plugins_join_the_grid(tmp_path):
    (tmp_path / "my_strategies.py").write_text(
        "import jitbench\n"
        "base = jitbench.STRATEGIES['pytree_class']\n"
        "jitbench.register_strategy(jitbench.Strategy('my_pytree', 's', 'm', base.build))\n"
    )
    env = dict(os.environ, JITBENCH_PLUGINS="my_strategies", PYTHONPATH=str(tmp_path))
    code = "from benchmarks import bench_cached; print(bench_cached.CachedCall.params[0][-1])"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "my_pytree"
    env["JITBENCH_PLUGINS"] = "no_such_module_jb"
    bad = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert bad.returncode != 0 and "no_such_module_jb" in bad.stderr


def test_importing_the_suite_starts_no_backend_and_no_thread():
    # What makes asv's forkserver safe: the server imports the suite (JAX,
    # equinox, flax included) and forks; no backend may exist then, and no
    # thread beyond NumPy's OpenBLAS pool (which is fork-safe: it re-creates
    # its threads in the child through pthread_atfork).
    code = (
        "import threading, os, sys\n"
        "import numpy\n"
        "before = len(os.listdir('/proc/self/task'))\n"
        "import benchmarks.bench_cached, benchmarks.bench_cold, benchmarks.bench_change\n"
        "import benchmarks.bench_hazards, benchmarks.bench_memory, benchmarks.bench_scaling\n"
        "from jax._src import xla_bridge\n"
        "assert 'jax' in sys.modules and 'flax' in sys.modules\n"
        "after = len(os.listdir('/proc/self/task'))\n"
        "print(len(xla_bridge._backends), threading.active_count(), after - before)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["0", "1", "0"]


def test_fresh_process_code_times_only_the_first_call():
    stmt, setup = suite.fresh_process_code("helper_function", 10, "cpu")
    assert stmt == "first_call()"
    code = f"{setup}\nfrom jitbench.measure import count_compiles\n"
    code += "with count_compiles() as s:\n    first_call()\nprint(s.compiles)\n"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(out.stdout.strip()) >= 1


def _param_index(params, wanted):
    return next(i for i, combo in enumerate(itertools.product(*params)) if combo == wanted)


def test_asv_figure_agrees_with_timeit():
    """asv's own timing loop versus a plain timeit of the same call, in one process."""
    from asv_runner.discovery import get_benchmark_from_name

    wanted = ("helper_function", min(suite.sizes()), "cpu")
    idx = _param_index(bench_cached.CachedCall.params, wanted)
    name = f"bench_cached.CachedCall.time_cached_call-{idx}"
    bench = get_benchmark_from_name(str(ROOT / "benchmarks"), name)
    bench.repeat, bench.warmup_time = 15, 0.1
    assert not bench.do_setup()
    ratios = []
    for _attempt in range(3):  # a shared machine: allow for a noisy moment
        asv_time = statistics.median(bench.run(*wanted)["samples"])
        call = suite.Prepared(*wanted).call
        timer = timeit.Timer(call)
        number, _ = timer.autorange()
        plain = min(timer.repeat(repeat=7, number=number)) / number
        ratios.append(asv_time / plain)
        if 0.8 <= ratios[-1] <= 1.2:
            break
    assert 0.8 <= ratios[-1] <= 1.2, ratios


@pytest.mark.parametrize("name", ["helper_function", "pytree_class", "flax_nnx_jit"])
def test_warm_disk_cache_records_hits_in_process(name):
    path = suite.fill_disk_cache(name, 10, "cpu")
    try:
        assert os.listdir(path), "the filling call wrote nothing"
        assert suite.disk_cache_hits(name, 10, "cpu", path) >= 1
    finally:
        suite.remove_disk_cache(path)
    assert not os.path.exists(path)
    assert not jax.config.jax_enable_compilation_cache  # left off for the next cold call


def test_warm_disk_cache_records_hits_in_a_fresh_interpreter():
    path = suite.fill_disk_cache("pytree_dataclass", 10, "cpu")
    try:
        counts = {}
        for label, disk_cache in (("warm", path), ("cold", "empty"), ("off", None)):
            _stmt, setup = suite.fresh_process_code("pytree_dataclass", 10, "cpu", disk_cache)
            code = setup + (
                "from jitbench.measure import count_compiles\n"
                "with count_compiles() as s:\n    first_call()\n"
                "print(s.persistent_cache_hits, s.persistent_cache_misses)\n"
            )
            out = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            )
            counts[label] = tuple(map(int, out.stdout.split()))
    finally:
        suite.remove_disk_cache(path)
    assert counts["warm"][0] >= 1
    assert counts["cold"] == (0, counts["cold"][1]) and counts["cold"][1] >= 1
    assert counts["off"] == (0, 0)


def test_persistent_benchmark_cleans_up_its_directories():
    from benchmarks import bench_persistent

    bench = bench_persistent.PersistentCache()
    bench.setup("helper_function", 10, "cpu")
    assert bench.track_persistent_cache_hits("helper_function", 10, "cpu") >= 1
    path = bench.cache_dir
    assert os.path.isdir(path)
    bench.teardown("helper_function", 10, "cpu")
    assert not os.path.exists(path)
