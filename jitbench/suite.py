"""What the asv benchmarks do, kept here so it can be unit-tested.

The modules in ``benchmarks/`` declare parameters and timing attributes and
call into this module, which turns asv's parameter names into a
:class:`Case` once (strategy, placement, size, shape) and works on that.
Three timing disciplines are used:

* **cold** (first call, stages, call after a change): asv's ``setup`` builds
  the state before every sample and each sample times exactly one call;
* **cached** (steady-state call, dispatch, width and device-count scaling):
  no ``setup`` hook. asv_runner 0.3 times one call per sample whenever a
  setup hook exists, and a cached call of a few microseconds must be timed
  over many calls. So the state is built on the first call of the benchmark
  body (:class:`Cached`) and the benchmark's ``timer`` (an asv attribute) is
  :func:`clock`, which stops while that build runs. Every sample is then a
  plain ``timeit`` loop over ``number`` cached calls (``number`` is explicit:
  asv's calibration reads the wall clock, which the build would fool), and
  ``--quick``'s single call is a cached call too, not the build;
* **tracks** (audit counts, stage seconds) record a number, not a time.

Every benchmark process serves one device spec and starts from asv's
forkserver, which imported JAX without starting a backend; resolving the
spec (:func:`jitbench.devices.resolve`) sets up the host devices it needs
before the backend starts.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping
from typing import Any

from jitbench import changes
from jitbench.cache_audit import TOTALS, audit
from jitbench.codegen import DEFAULT_SHAPE, Shape
from jitbench.devices import DEVICE_SPECS, Placement, ensure_host_devices, host_devices, resolve
from jitbench.errors import DeviceUnavailable, JitbenchError
from jitbench.instances import make_instance
from jitbench.measure import block, clear_caches, count_compiles
from jitbench.strategies import STRATEGIES, Strategy, get_strategy, load_plugins

DEFAULT_SIZES = (10, 1_000, 100_000, 1_000_000)
WIDTHS = (1, 10, 100, 1000)
PROGRAM_SIZES = (1, 10, 100, 1000)
# Layers of a nested class (codegen.Shape.depth): flax's benchmark model has 5 blocks.
DEPTHS = (1, 4, 16, 64)
DEVICE_COUNTS = (1, 2, 4, 8)
SCALING_SIZE = 10
SCALING_DEVICE = "cpu"
SIZES_ENV = "JITBENCH_SIZES"
DEVICES_ENV = "JITBENCH_DEVICES"


def strategy_names() -> list[str]:
    """Every registered strategy (plugins loaded), available here or not."""
    load_plugins()
    return list(STRATEGIES)


def _env_list(
    name: str,
    default: list[Any],
    parse: Callable[[str], Any],
    form: str,
    environ: Mapping[str, str] | None = None,
) -> list[Any]:
    text = (os.environ if environ is None else environ).get(name, "").strip()
    if not text:
        return default
    values = []
    for item in (i.strip() for i in text.split(",")):
        try:
            values.append(parse(item))
        except (ValueError, JitbenchError):
            raise JitbenchError(f"{name} has {item!r}; expected {form}") from None
    return values


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def _device_spec(text: str) -> str:
    if text not in DEVICE_SPECS:
        raise ValueError(text)
    return text


def sizes(environ: Mapping[str, str] | None = None) -> list[int]:
    """The size grid: ``JITBENCH_SIZES`` (comma-separated) or the default four sizes.

    ``environ`` is the environment to read (default this process's): a command
    checks the one it is about to give asv before asv starts.
    """
    form = "positive integers like '10,1000'"
    return _env_list(SIZES_ENV, list(DEFAULT_SIZES), _positive, form, environ)


def edge_sizes() -> list[int]:
    """The smallest and largest size: the grid of the new-process benchmarks."""
    return sorted({min(sizes()), max(sizes())})


def devices(environ: Mapping[str, str] | None = None) -> list[str]:
    """The device grid: ``JITBENCH_DEVICES`` or the specs this host can serve.

    Grids therefore differ between machines (a GPU host adds ``gpu`` and
    ``gpu-sharded``); asv stores each result with its own parameter values.
    A spec this host cannot serve is refused here, at benchmark discovery: a
    grid of it would be a run of nothing but n/a that exits 0.
    """
    form = f"device specs from {', '.join(DEVICE_SPECS)}"
    here = host_devices()
    chosen = _env_list(DEVICES_ENV, here, _device_spec, form, environ)
    absent = [spec for spec in chosen if spec not in here]
    if absent:
        raise JitbenchError(
            f"{DEVICES_ENV} has {absent[0]!r}, which this host cannot serve; "
            f"this host has: {', '.join(here)}"
        )
    return chosen


def check_environment(environ: Mapping[str, str]) -> None:
    """Raise JitbenchError for a grid variable of ``environ`` that benchmark discovery refuses.

    Run before starting asv with ``environ``, so that a bad value is one line
    here rather than a failure inside asv's discovery of the suite.
    """
    sizes(environ)
    devices(environ)


def unsharded_devices() -> list[str]:
    """The device grid without ``-sharded`` specs: for benchmarks where sharding adds nothing."""
    return [d for d in devices() if not d.endswith("-sharded")]


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


@dataclasses.dataclass(frozen=True)
class Case:
    """One parameter combination, resolved: what to build, how big, and where."""

    strategy: Strategy
    size: int
    placement: Placement
    shape: Shape = DEFAULT_SHAPE

    @classmethod
    def of(cls, strategy: str, size: int, device: str, **shape: int) -> Case:
        """Resolve asv's parameters; NotImplementedError (asv: n/a) when unavailable here."""
        chosen = get_strategy(strategy)
        chosen.check_available()
        return cls(chosen, size, resolve(device), Shape(**shape))

    def instance(self, **kwargs: Any) -> tuple[Any, Any]:
        return make_instance(self.strategy, self.size, self.placement, self.shape, **kwargs)

    def cold_instance(self) -> tuple[Any, Any]:
        """A new instance and its ``y``, every in-memory cache cleared: the next call compiles."""
        obj, y = self.instance()
        clear_caches()
        return obj, y


class Prepared:
    """An instance and its ``y``, already called once (compiled)."""

    def __init__(self, case: Case) -> None:
        self.obj, self.y = case.instance()
        block(self.obj.calc(self.y))

    @classmethod
    def around(cls, obj: Any, y: Any) -> Prepared:
        """Another object (a hand-written twin), prepared the same way."""
        prepared = cls.__new__(cls)
        prepared.obj, prepared.y = obj, y
        block(obj.calc(y))
        return prepared

    def call(self) -> Any:
        """One call, waiting for the result."""
        return block(self.obj.calc(self.y))

    def dispatch(self) -> Any:
        """One call, not waiting: what the Python side costs per call."""
        return self.obj.calc(self.y)


class Reused(Prepared):
    """A :class:`Prepared` whose calls hit jit's cache, or NotImplementedError (asv: n/a)
    for a strategy that compiles on every call: its timing is a compile's, which the
    trace and compile benchmarks measure, and at depth it takes seconds a sample."""

    def __init__(self, case: Case) -> None:
        super().__init__(case)
        with count_compiles() as again:
            self.call()
        if again.compiles:
            raise NotImplementedError(
                f"{case.strategy.name} compiles on every call: see its trace and compile rows"
            )


_build_seconds = 0.0


def clock() -> float:
    """``time.perf_counter`` less the seconds spent building :class:`Cached` state."""
    return time.perf_counter() - _build_seconds


class OneCallTiming:
    """asv's timing settings for a sample of one call after a ``setup`` that prepares it:
    the built-in families' (``benchmarks/common.py``) and the targets' read them here."""

    number = 1
    repeat = (3, 10, 1.0)
    warmup_time = 0.0


class ManyCallsTiming:
    """asv's timing settings for samples of cached calls (see :class:`Cached`).

    Three rounds: asv pools the samples of three processes, started at three
    points of the run, so that neither a process that happens to start in a
    slow state (where XLA's CPU worker thread sits, with asynchronous
    dispatch) nor a busy minute of the machine sets the figure alone.
    """

    number = 30
    # Up to 10 samples in half a second: a cached call reaches 10 (30 calls take
    # milliseconds), a sample of a call that compiles every time (jit_per_call: 30
    # compiles, about a second) is enough alone. With three samples at least, that one
    # strategy's samples were a fifth of the default grid's minutes.
    repeat = (1, 10, 0.5)
    warmup_time = 0.05
    rounds = 3


class Cached:
    """Base of the cached-call benchmarks: state built on the first timed call.

    Subclasses call ``self.cached(case_factory)`` in the body; every call
    after the first is one attribute read and the call itself. The build's
    seconds are taken off :func:`clock`, the timer asv uses for these benchmarks.
    """

    timer = staticmethod(clock)
    _prepared: Any = None

    def cached(self, case: Callable[[], Any], prepare: Callable[[Any], Any] | None = None) -> Any:
        """The state ``prepare(case())`` (a :class:`Prepared` by default), built on first use."""
        if self._prepared is None:
            global _build_seconds
            start = time.perf_counter()
            try:
                self._prepared = (prepare or Prepared)(case())
            except NotImplementedError as exc:
                raise skip(exc) from None
            finally:
                _build_seconds += time.perf_counter() - start
        return self._prepared


def host_device_case(strategy: str, n_devices: int) -> Case:
    """A call sharded over ``n_devices`` host devices (this process's backend must not exist yet).

    XLA fixes the host device count when the CPU backend starts; every asv
    process starts without one, so each count gets its own process.
    """
    ensure_host_devices(n_devices)
    import jax

    found = jax.devices("cpu")
    if len(found) != n_devices:
        raise DeviceUnavailable(
            f"{n_devices} host devices asked for, the CPU backend has {len(found)}"
        )
    placement = Placement("cpu-sharded", tuple(found), sharded=True)
    chosen = get_strategy(strategy)
    chosen.check_available()
    return Case(chosen, SCALING_SIZE * n_devices, placement)


@dataclasses.dataclass(frozen=True)
class Stages:
    """Seconds of one cold first call: its trace, lowering and compile, and the whole call."""

    trace: float
    lower: float
    compile: float
    call: float

    @property
    def remainder(self) -> float:
        """The call minus its three stages: dispatch, argument handling, running the program."""
        return self.call - self.trace - self.lower - self.compile


def first_call_stages(case: Case) -> Stages:
    """One cold first call, timed whole and stage by stage (``jax.monitoring`` durations)."""
    obj, y = case.cold_instance()
    with count_compiles() as stats:
        start = time.perf_counter()
        block(obj.calc(y))
        seconds = time.perf_counter() - start
    return Stages(stats.trace_seconds, stats.lower_seconds, stats.compile_seconds, seconds)


STAGE_CALLS = 5
StageKey = tuple[str, int, str, int]


def typical_stages(case: Case, calls: int = STAGE_CALLS, warm_up: bool = True) -> Stages:
    """The median of ``calls`` cold first calls, with that call's own stages.

    One call and its parts, not per-stage medians: those could come from
    different calls and add up to more than any of them, and a separate
    process's figure for the call (the cold-call benchmark's) differs by the
    process-to-process spread of a compile. The uncounted call first makes the
    process state match the cold-call benchmark's samples: its first sample
    pays the one-time costs (the process's first compile, the strategy's first
    use) and its median leaves them out.
    """
    if warm_up:
        first_call_stages(case)
    runs = sorted((first_call_stages(case) for _ in range(calls)), key=lambda r: r.call)
    return runs[(len(runs) - 1) // 2]


def stage_table(
    strategies: list[str],
    sizes: list[int],
    specs: list[str],
    values: tuple[int, ...] = (1,),
    calls: int = STAGE_CALLS,
    axis: str = "n_ops",
) -> dict[StageKey, Stages]:
    """:func:`typical_stages` of every combination this process can run, keyed
    (strategy, size, device, value of the shape's ``axis``: ``n_ops`` or ``depth``);
    one uncounted cold call per strategy first.

    One process measures them all (asv's ``setup_cache``), so the device specs
    must not need conflicting host-device counts (pass unsharded specs).
    """
    table = {}
    for spec in specs:
        for name in strategies:
            warmed = False
            for size in sizes:
                for value in values:
                    try:
                        case = Case.of(name, size, spec, **{axis: value})
                    except NotImplementedError:
                        continue
                    table[name, size, spec, value] = typical_stages(case, calls, not warmed)
                    warmed = True
    return table


def after_change(case: Case, change: str) -> Callable[[], Any]:
    """State for one 'call right after a change' sample; returns the call to time.

    Caches are cleared, the instance is built and called (compiled), then
    changed (after what the change needs first, see ``changes.PREREQUISITES``).
    """
    if change not in changes.TIMED_CHANGES:
        valid = ", ".join(changes.TIMED_CHANGES)
        raise JitbenchError(f"unknown change {change!r}; valid: {valid}")
    if change in case.strategy.raises_on:
        raise NotImplementedError(
            f"{case.strategy.name} raises on {change} by design (see jitbench audit)"
        )
    clear_caches()
    subject = changes.Subject.build(case.strategy, case.size, case.placement, case.shape)
    block(subject.call())
    for earlier in changes.PREREQUISITES.get(change, ()):
        changes.apply(subject, earlier)
        block(subject.call())
    changes.apply(subject, change)
    return lambda: block(subject.call())


def audit_all(names: list[str], specs: list[str]) -> dict[tuple[str, str], dict[str, int]]:
    """Audit totals for every strategy and device this process can serve (others absent)."""
    if any(spec.startswith("cpu") and spec.endswith("-sharded") for spec in specs):
        ensure_host_devices()  # before the first resolve starts the CPU backend
    totals: dict[tuple[str, str], dict[str, int]] = {}
    for spec in specs:
        for name in names:
            try:
                result = audit(get_strategy(name), resolve(spec))
            except NotImplementedError:
                continue
            totals[name, spec] = {key: getattr(result, key) for key in TOTALS}
    return totals
