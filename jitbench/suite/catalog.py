"""Every benchmark of the asv suite by its asv name: the one list the code reads
(``tests/test_catalog.py`` checks it against the suite and the fixture project)."""

from __future__ import annotations

import re

from jitbench import hazards
from jitbench.measure import population

COLD = "bench_cold.ColdCall.time_first_call"
COLD_FRESH = "bench_cold.FreshProcess.timeraw_first_call_fresh_process"
TRACE = "bench_cold.Stages.track_trace_seconds"
LOWER = "bench_cold.Stages.track_lower_seconds"
COMPILE = "bench_cold.Stages.track_compile_seconds"
# The cold first call the three stages above are parts of (same process, same call).
STAGE_CALL = "bench_cold.Stages.track_call_seconds"
CACHED = "bench_cached.CachedCall.time_cached_call"
DISPATCH = "bench_cached.CachedCall.time_cached_call_dispatch"
AFTER_CHANGE = "bench_change.AfterChange.time_call_after_change"
MEMORY = "bench_memory.Memory.peakmem_build_and_first_call"
DISK_COLD = "bench_persistent.ColdDiskCache.time_first_call"
DISK_WARM = "bench_persistent.WarmDiskCache.time_first_call"
DISK_HITS = "bench_persistent.WarmDiskCache.track_persistent_cache_hits"
WIDTH = "bench_scaling.DispatchVsWidth.time_dispatch"
OPS_TRACE = "bench_scaling.CompileVsProgramSize.track_trace_seconds"
OPS_COMPILE = "bench_scaling.CompileVsProgramSize.track_compile_seconds"
DEVICE_COUNT = "bench_scaling.DispatchVsDeviceCount.time_dispatch"
DEPTH_CALL = "bench_scaling.CallVsDepth.time_cached_call"
DEPTH_DISPATCH = "bench_scaling.CallVsDepth.time_cached_call_dispatch"
DEPTH_TRACE = "bench_scaling.CompileVsDepth.track_trace_seconds"
DEPTH_COMPILE = "bench_scaling.CompileVsDepth.track_compile_seconds"
# The audit's totals, per strategy and device (jitbench.hazards).
HAZARDS = {h.name: f"bench_hazards.Hazards.track_{h.name}" for h in hazards.HAZARDS}
# Instructions per call, counted by Valgrind (opt-in: nox -s instructions).
INSTRUCTIONS = {
    "call": "bench_instructions.Instructions.track_cached_call_instructions",
    "dispatch": "bench_instructions.Instructions.track_dispatch_instructions",
}
# The same counts against the caller's extra frames (and JAX's tracebacks on/off), and
# against the nesting depth of the class (opt-in, with the counts above).
INSTRUCTIONS_VS_CALLER_DEPTH = {
    kind: f"bench_instructions.InstructionsVsCallerDepth.track_{name}_instructions"
    for kind, name in (("call", "cached_call"), ("dispatch", "dispatch"))
}
INSTRUCTIONS_VS_DEPTH = {
    kind: f"bench_instructions.InstructionsVsDepth.track_{name}_instructions"
    for kind, name in (("call", "cached_call"), ("dispatch", "dispatch"))
}
# Many live instances of one strategy (opt-in: nox -s instances), per figure.
POPULATION = {name: f"bench_population.Population.track_{name}" for name in population.FIGURES}
# The device rows (opt-in: jitbench device-run), every figure measured in one process.
DEVICE_DISPATCH = "bench_device.DeviceCalls.track_dispatch_seconds"
DEVICE_CALL = "bench_device.DeviceCalls.track_call_seconds"
DEVICE_LOOP = "bench_device.DeviceCalls.track_loop_seconds"
DEVICE_FIRST_CALL = "bench_device.DeviceFirstCall.track_first_call_seconds"
DEVICE_AFTER_CHANGE = "bench_device.DeviceAfterChange.track_call_after_change_seconds"
DEVICE_ROWS = (DEVICE_DISPATCH, DEVICE_CALL, DEVICE_LOOP, DEVICE_FIRST_CALL, DEVICE_AFTER_CHANGE)
# A target's twin of each built-in benchmark, one row per target and device: the same
# family (``jitbench.suite.families``) in a class named Target + the built-in class's name.
TARGET_TWINS = {
    name: "bench_targets.Target{1}.{2}".format(*name.split("."))
    for name in (COLD, COLD_FRESH, CACHED, DISPATCH, AFTER_CHANGE, MEMORY,
                 *INSTRUCTIONS.values(), *HAZARDS.values())
}  # fmt: skip

ALL = (
    COLD, COLD_FRESH, TRACE, LOWER, COMPILE, STAGE_CALL, CACHED, DISPATCH, AFTER_CHANGE, MEMORY,
    DISK_COLD, DISK_WARM, DISK_HITS, WIDTH, OPS_TRACE, OPS_COMPILE, DEVICE_COUNT,
    DEPTH_CALL, DEPTH_DISPATCH, DEPTH_TRACE, DEPTH_COMPILE,
    *HAZARDS.values(), *INSTRUCTIONS.values(), *INSTRUCTIONS_VS_CALLER_DEPTH.values(),
    *INSTRUCTIONS_VS_DEPTH.values(), *POPULATION.values(), *DEVICE_ROWS, *TARGET_TWINS.values(),
)  # fmt: skip


# The quick smoke run of the test session: one benchmark of each timing discipline.
SMOKE = (CACHED, DISPATCH, HAZARDS["stale_results"], COLD)
# What nox -s instructions runs: the counts of the strategies and of any target.
COUNTED = (
    *INSTRUCTIONS.values(), *(TARGET_TWINS[name] for name in INSTRUCTIONS.values()),
    *INSTRUCTIONS_VS_CALLER_DEPTH.values(), *INSTRUCTIONS_VS_DEPTH.values(),
)  # fmt: skip
# What nox -s instances runs: every figure of the many-live-instances family.
POPULATED = tuple(POPULATION.values())
# The JAX release history: hazards, cold first call, cached call and dispatch.
HISTORY = (COLD, CACHED, DISPATCH, *HAZARDS.values())


def regex(*names: str) -> str:
    """An ``asv run -b`` regex that selects exactly these benchmarks (all their parameters)."""
    return "^(" + "|".join(re.escape(name) for name in names) + r")(\(|$)"
