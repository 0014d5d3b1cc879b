"""Cheap stand-ins for the jitbench suite: same ids and params, pure-Python bodies.

Costs are loop counts so that results differ predictably between strategies
and between a device and its sharded variant.
JITBENCH_FIXTURE_SLOW multiplies the cached-call cost to fake a regression (far larger
than what load makes of a timing), and
JITBENCH_FIXTURE_FAIL (comma-separated strategies) makes their peakmem benchmark
raise, for a real asv failure record.
"""

import os

from asv_runner.benchmarks.mark import SkipNotImplemented

STRATEGIES = ["eager", "bound_method_jit", "static_self_id_hash", "pytree_class", "jit_per_call"]
SIZES = [10, 1000]
DEVICES = ["cpu", "gpu"]
# The suite's smaller grids: new-process benchmarks at the edge sizes, and
# benchmarks where sharding adds nothing on unsharded devices only.
EDGE_SIZES = sorted({min(SIZES), max(SIZES)})
UNSHARDED_DEVICES = [d for d in DEVICES if not d.endswith("-sharded")]
# Devices that run here; the rest are skipped like an absent accelerator.
AVAILABLE = ("cpu", "cpu-sharded")
CHANGES = ["new_static", "seen_static", "same_shape_array", "new_shape_array", "equal_instance"]

# Relative per-call cost. Where a test reads an order from these (the stale strategy
# cheapest, bound_method_jit the cheapest correct one, jit_per_call dearer than eager),
# the costs differ tenfold: more than load on a shared machine makes of two samples
# taken minutes apart. Nothing compares eager and pytree_class.
PER_CALL = {
    "eager": 100,
    "bound_method_jit": 10,
    "static_self_id_hash": 1,
    "pytree_class": 100,
    "jit_per_call": 1000,
}
# Eager's first call compiles every operation on its own: dearer than one jit compile.
COMPILE = {name: (60 if name == "eager" else 40) for name in STRATEGIES}
STALE = {"static_self_id_hash": 1}
ERRORS = {"jit_per_call": 1}
LEAKED = {"bound_method_jit": 1}
REPEAT_COMPILES = {"jit_per_call": 1}
# Compiles where nothing new was seen: jit_per_call's four, as its audit counts them.
RECOMPILES = {"jit_per_call": 4}
# Persistent-cache hits of a first call against a filled disk cache (default 1).
DISK_HITS = {"eager": 2, "pytree_class": 0}
SHARDED_COST = 1.5
SLOW = float(os.environ.get("JITBENCH_FIXTURE_SLOW", "1"))


def spin(units):
    """Burn a deterministic amount of CPU: one unit is a 200-step loop."""
    return sum(range(int(units * 200)))


def check_device(device):
    """Only the CPU devices exist here; others are skipped the way jitbench skips them."""
    if device not in AVAILABLE:
        raise NotImplementedError(f"device {device} is not available")


def skip_unless_available(device):
    """The same check from inside a timed body (no setup hook)."""
    if device not in AVAILABLE:
        raise SkipNotImplemented(f"device {device} is not available")


def per_call_units(strategy, size, device):
    """Up to twice the cost at the largest size, so the dearest cells stay quick to time."""
    sharded = SHARDED_COST if device.endswith("-sharded") else 1
    return PER_CALL[strategy] * (1 + size / 100000) * sharded
