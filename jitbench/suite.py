"""What the asv benchmarks do, kept here so it can be unit-tested.

The modules in ``benchmarks/`` only declare parameters and timing attributes
and call into this module. Three timing disciplines are used:

* **cold** (first call, stages, call after a change): asv's ``setup`` builds
  the state before every sample and each sample times exactly one call,
  which is the quantity of interest;
* **cached** (steady-state call, dispatch, width scaling): no ``setup`` hook.
  asv_runner 0.3 times one call per sample whenever a setup hook exists, and
  a cached call of a few microseconds must be timed over many calls. So the
  state is built on the first call of the benchmark body (:class:`Cached`)
  and the benchmark's ``timer`` (an asv attribute) is :func:`clock`, which
  stops while that build runs. Every sample is then a plain ``timeit`` loop
  over ``number`` cached calls (``number`` is explicit: asv's calibration
  reads the wall clock, which the build would fool), and ``--quick``'s
  single call is a cached call too, not the build;
* **tracks** (audit counts, stage seconds) record a number, not a time.
"""

from __future__ import annotations

import atexit
import importlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from typing import Any

from jitbench.audit import audit
from jitbench.devices import resolve
from jitbench.errors import JitbenchError
from jitbench.factory import DEFAULT_STATIC, make_instance, random_array
from jitbench.measure import (
    block,
    clear_caches,
    clear_memory_caches,
    count_compiles,
    use_persistent_cache,
)
from jitbench.strategies import STRATEGIES, get_strategy

DEFAULT_SIZES = (10, 1_000, 100_000, 1_000_000)
DEVICES = ("cpu", "cpu-sharded", "gpu", "gpu-sharded", "tpu")
CHANGES = ("new_static", "seen_static", "same_shape_array", "new_shape_array", "equal_instance")
WIDTHS = (1, 10, 100, 1000)
PROGRAM_SIZES = (1, 10, 100, 1000)
SCALING_SIZE = 10
SCALING_DEVICE = "cpu"
DEVICE_COUNTS = (1, 2, 4, 8)


def load_plugins() -> None:
    """Import the modules named in ``JITBENCH_PLUGINS`` (comma-separated).

    Each may call :func:`jitbench.register_strategy`; the suite reads the
    registry after this, so registered strategies join the grid.
    """
    names = os.environ.get("JITBENCH_PLUGINS", "").split(",")
    for name in filter(None, (n.strip() for n in names)):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise JitbenchError(f"cannot import JITBENCH_PLUGINS module {name!r}: {exc}") from None


def edge_sizes() -> list[int]:
    """The smallest and largest size: the grid of the fresh-interpreter disk-cache benchmarks.

    Each of their samples starts an interpreter (about a second here), so they
    cover the two ends of the size range to keep the default run in budget.
    """
    return sorted({min(sizes()), max(sizes())})


def strategy_names() -> list[str]:
    """Every registered strategy, available here or not (asv needs one grid everywhere)."""
    load_plugins()
    return list(STRATEGIES)


def sizes() -> list[int]:
    """The size grid: ``JITBENCH_SIZES`` (comma-separated) or the default four sizes."""
    text = os.environ.get("JITBENCH_SIZES", "").strip()
    if not text:
        return list(DEFAULT_SIZES)
    values = []
    for item in text.split(","):
        try:
            value = int(item)
        except ValueError:
            value = 0
        if value < 1:
            raise JitbenchError(
                f"JITBENCH_SIZES has {item.strip()!r}; expected positive integers like '10,1000'"
            )
        values.append(value)
    return values


def skip(exc: NotImplementedError) -> NotImplementedError:
    """The exception that makes asv record n/a when raised from a benchmark body.

    asv skips a NotImplementedError raised in ``setup``, but from the body
    only its own SkipNotImplemented; outside asv a plain one is returned.
    """
    try:
        from asv_runner.benchmarks.mark import SkipNotImplemented
    except ImportError:
        return exc
    return SkipNotImplemented(str(exc))


class Prepared:
    """An instance and its ``y``, already called once (compiled)."""

    def __init__(self, strategy: str, size: int, device: str, **shape: int) -> None:
        self.strategy = get_strategy(strategy)
        self.obj, self.y = make_instance(self.strategy, size, device=device, **shape)
        block(self.obj.calc(self.y))

    def call(self) -> Any:
        """One call, waiting for the result."""
        return block(self.obj.calc(self.y))

    def dispatch(self) -> Any:
        """One call, not waiting: what the Python side costs per call."""
        return self.obj.calc(self.y)


_build_seconds = 0.0


def clock() -> float:
    """``time.perf_counter`` less the seconds spent building :class:`Cached` state."""
    return time.perf_counter() - _build_seconds


class Cached:
    """Base of the cached-call benchmarks: state built on the first timed call.

    Subclasses call ``self.cached(*params)`` in the body; every call after the
    first is one attribute read and the call itself. The build's seconds are
    taken off :func:`clock`, the timer asv uses for these benchmarks.
    """

    timer = staticmethod(clock)
    _prepared: Prepared | None = None

    def cached(self, strategy: str, size: int, device: str, **shape: int) -> Prepared:
        if self._prepared is None:
            global _build_seconds
            start = time.perf_counter()
            try:
                self._prepared = Prepared(strategy, size, device, **shape)
            except NotImplementedError as exc:
                raise skip(exc) from None
            finally:
                _build_seconds += time.perf_counter() - start
        return self._prepared


def require(strategy: str, device: str) -> None:
    """Raise NotImplementedError (asv: n/a) unless ``strategy`` can run on ``device`` here."""
    get_strategy(strategy).check_available()
    resolve(device)


def cold_instance(strategy: str, size: int, device: str, **shape: int) -> tuple[Any, Any]:
    """A new instance and its ``y`` with every in-memory cache cleared: the next call compiles."""
    chosen = get_strategy(strategy)
    obj, y = make_instance(chosen, size, device=device, **shape)
    clear_caches()
    return obj, y


def first_call_stages(strategy: str, size: int, device: str, **shape: int) -> dict[str, float]:
    """Seconds spent tracing, lowering and compiling in one cold first call."""
    obj, y = cold_instance(strategy, size, device, **shape)
    with count_compiles() as stats:
        block(obj.calc(y))
    return {
        "trace": stats.trace_seconds,
        "lower": stats.lower_seconds,
        "compile": stats.compile_seconds,
    }


def after_change(strategy: str, size: int, device: str, change: str) -> Callable[[], Any]:
    """State for one 'call right after a change' sample; returns the call to time.

    Caches are cleared, the instance is built and called (compiled), then
    changed through the strategy's ``update`` as its users would change it.
    """
    if change not in CHANGES:
        raise JitbenchError(f"unknown change {change!r}; valid: {', '.join(CHANGES)}")
    chosen = get_strategy(strategy)
    obj, y = cold_instance(strategy, size, device)
    block(obj.calc(y))
    length = y.shape[-1]
    if change == "new_static":
        obj = chosen.update(obj, s0=DEFAULT_STATIC + 1)
    elif change == "seen_static":
        obj = chosen.update(obj, s0=DEFAULT_STATIC + 1)
        block(obj.calc(y))
        obj = chosen.update(obj, s0=DEFAULT_STATIC)
    elif change in ("same_shape_array", "new_shape_array"):
        import numpy as np

        shape = (length,) if change == "same_shape_array" else (2, length)
        new = random_array(resolve(device), shape, "float32", np.random.default_rng(7))
        obj = chosen.update(obj, a0=new)
    else:
        fields = {name: getattr(obj, name) for name in obj._jb_shape.array_fields}
        fields.update({name: getattr(obj, name) for name in obj._jb_shape.static_fields})
        obj = type(obj)(**fields)
    return lambda: block(obj.calc(y))


AUDIT_TOTALS = ("compiles", "traces", "stale_results", "leaked_instances", "repeat_call_compiles")


def audit_all(strategies: list[str], devices: tuple[str, ...]) -> dict[tuple[str, str], Any]:
    """Audit totals for every strategy and device this host can run (skipped ones absent)."""
    totals: dict[tuple[str, str], Any] = {}
    for device in devices:
        for name in strategies:
            try:
                result = audit(name, device=device)
            except NotImplementedError:
                continue
            totals[name, device] = {key: getattr(result, key) for key in AUDIT_TOTALS}
    return totals


def fill_disk_cache(strategy: str, size: int, device: str) -> str:
    """A new temporary directory holding the compiled first call of this combination.

    Compiled in this process with JAX's on-disk cache pointed at the new
    directory; the caller removes it (see :func:`remove_disk_cache`).
    """
    path = tempfile.mkdtemp(prefix="jitbench-jax-cache-")
    try:
        obj, y = make_instance(strategy, size, device=device)
        use_persistent_cache(path)
        clear_memory_caches()
        block(obj.calc(y))
    except BaseException:
        remove_disk_cache(path)
        raise
    finally:
        use_persistent_cache(None)
    return path


def remove_disk_cache(path: str | None) -> None:
    if path:
        shutil.rmtree(path, ignore_errors=True)


def disk_cache_hits(strategy: str, size: int, device: str, path: str) -> int:
    """Persistent-cache hits (``jax.monitoring``) of a cold first call against ``path``."""
    obj, y = make_instance(strategy, size, device=device)
    use_persistent_cache(path)
    clear_memory_caches()
    try:
        with count_compiles() as stats:
            block(obj.calc(y))
    finally:
        use_persistent_cache(None)
    return stats.persistent_cache_hits


def fresh_process_setup(
    strategy: str, size: int, device: str, disk_cache: str | None = None
) -> Callable[[], Any]:
    """Setup code of the fresh-interpreter first call: everything but the call.

    Runs in a new interpreter started by asv's ``timeraw_`` benchmarks, so the
    in-memory caches are empty. ``disk_cache`` is None (on-disk cache off),
    ``"empty"`` (a new empty cache directory, removed at exit) or the path of
    a directory filled by :func:`fill_disk_cache`.
    """
    from jitbench.devices import ensure_host_devices

    ensure_host_devices()
    obj, y = make_instance(strategy, size, device=device)
    if disk_cache == "empty":
        disk_cache = tempfile.mkdtemp(prefix="jitbench-jax-cache-")
        atexit.register(remove_disk_cache, disk_cache)
    use_persistent_cache(disk_cache)
    return lambda: block(obj.calc(y))


def fresh_process_code(
    strategy: str, size: int, device: str, disk_cache: str | None = None
) -> tuple[str, str]:
    """(stmt, setup) for asv's ``timeraw_``: only the first call is timed."""
    require(strategy, device)
    setup = (
        "from jitbench.suite import fresh_process_setup\n"
        f"first_call = fresh_process_setup({strategy!r}, {size!r}, {device!r}, {disk_cache!r})\n"
    )
    return "first_call()", setup


def device_count_code(strategy: str, n_devices: int) -> tuple[str, str]:
    """(stmt, setup) for a fresh interpreter with ``n_devices`` host devices, sharded over all.

    The setup builds and compiles; the statement is one dispatch (no wait),
    which asv repeats ``number`` times per sample.
    """
    get_strategy(strategy).check_available()
    setup = (
        "import os\n"
        "flags = os.environ.get('XLA_FLAGS', '').split()\n"
        "flags = [f for f in flags if not f.startswith('--xla_force_host_platform_device_count')]\n"
        f"flags.append('--xla_force_host_platform_device_count={n_devices}')\n"
        "os.environ['XLA_FLAGS'] = ' '.join(flags)\n"
        "from jitbench.suite import Prepared\n"
        f"prepared = Prepared({strategy!r}, {SCALING_SIZE * n_devices!r}, 'cpu-sharded')\n"
        "call = prepared.dispatch\n"
    )
    return "call()", setup
