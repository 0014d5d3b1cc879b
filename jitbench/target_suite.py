"""What the asv benchmarks of targets do: a user's own objects in the suite's grid.

A target (:mod:`jitbench.targets`) is named ``package.module:factory``, in
``JITBENCH_TARGETS`` (comma-separated) or declared by a benchmark module
(``jitbench init`` writes one into another project). Each target becomes the
rows of :mod:`jitbench.target_benchmarks`, one per target and device: the
target brings its own sizes and shapes, so the grid is target x device (x
change), and the built-in benchmarks keep their strategy x size x device grid
without a single n/a row for a target.

The parameter value of a row is the target's spec, known without importing
anything. At discovery each target's module is imported once: one that
cannot be imported (or has no such factory) is one line on stderr naming the
target and the module, and its rows fail with that line, while every other
benchmark of the suite is discovered as usual. The timing disciplines are
those of :mod:`jitbench.suite`.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from jitbench.errors import JitbenchError
from jitbench.targets import Target, load_target, resolve_name

TARGETS_ENV = "JITBENCH_TARGETS"

_reported: set[str] = set()


def target_specs(declared: Sequence[str] = ()) -> list[str]:
    """The targets of the grid: ``declared`` then ``JITBENCH_TARGETS``, each once, unimported."""
    listed = [s.strip() for s in os.environ.get(TARGETS_ENV, "").split(",")]
    return list(dict.fromkeys(s.strip() for s in [*declared, *listed] if s.strip()))


def problems(specs: Sequence[str]) -> dict[str, str]:
    """Why a target cannot be benchmarked, for each that cannot: imports its module.

    The factory is found but not called (that builds arrays, which starts a
    JAX backend; asv's discovery must not). Each problem is printed once per
    process as one line on stderr.
    """
    found = {}
    for spec in specs:
        try:
            factory = resolve_name(spec, "target")
            if not callable(factory):
                kind = type(factory).__name__
                raise JitbenchError(f"target {spec!r} is not callable: it is a {kind}")
        except JitbenchError as exc:
            found[spec] = f"{exc} (from {TARGETS_ENV} or a benchmark module's declared targets)"
            if spec not in _reported:
                _reported.add(spec)
                print(f"jitbench: error: {found[spec]}", file=sys.stderr, flush=True)
    return found


def _use_device(device: str) -> None:
    """Make ``device`` JAX's default for this process: the factory's arrays and calls go there."""
    import jax

    from jitbench.devices import parse_spec, resolve

    if parse_spec(device)[1]:
        raise NotImplementedError(f"a target is measured unsharded; {device!r} does not apply")
    jax.config.update("jax_default_device", resolve(device).devices[0])


@dataclasses.dataclass(frozen=True)
class TargetCase:
    """One row of a target benchmark: which target, on which device."""

    spec: str
    device: str

    @classmethod
    def of(cls, spec: str, device: str) -> TargetCase:
        """The row, its device made the default; n/a (NotImplementedError) for an absent device.

        A target that cannot be imported is a JitbenchError naming it: asv
        records its rows as failed, so a commit that breaks a target is seen.
        """
        _use_device(device)
        reason = problems([spec]).get(spec)
        if reason is not None:
            raise JitbenchError(reason)
        return cls(spec, device)

    def load(self) -> Target:
        """A new instance from the target's factory."""
        return load_target(self.spec)

    def cold_call(self) -> Callable[[], Any]:
        """The first call of a new instance, every in-memory cache cleared: it compiles."""
        from jitbench.measure import clear_caches

        call = self.load().function()
        clear_caches()
        return call


class PreparedTarget:
    """A target's call, already made once (compiled): the cached-call benchmarks' state."""

    def __init__(self, case: TargetCase) -> None:
        from jitbench.measure import block

        self._block = block
        self.function = case.load().function()
        block(self.function())

    def call(self) -> Any:
        """One call, waiting for the result."""
        return self._block(self.function())

    def dispatch(self) -> Any:
        """One call, not waiting: what the Python side costs per call."""
        return self.function()


def fresh_setup(spec: str, device: str) -> Callable[[], Any]:
    """Everything but the first call, in a new interpreter (on-disk cache off)."""
    from jitbench.measure import block, use_persistent_cache

    function = TargetCase.of(spec, device).load().function()
    use_persistent_cache(None)
    return lambda: block(function())


def fresh_code(spec: str, device: str) -> tuple[str, str]:
    """(stmt, setup) of asv's ``timeraw_`` for a target's first call in a fresh interpreter."""
    TargetCase.of(spec, device)
    text = (
        "from jitbench.target_suite import fresh_setup\n"
        f"first_call = fresh_setup({spec!r}, {device!r})\n"
    )
    return "first_call()", text


def after_change(case: TargetCase, change: str) -> Callable[[], Any]:
    """State for one 'call right after a change' sample of a target; returns the call to time.

    The audit's scenario (:class:`jitbench.object_audit.TargetScenario`, the
    same fields changed the same way) is played from cold caches, each step's
    call made, up to the first change named ``change`` (the first field of
    that kind); the call right after it is the one timed. A target without a
    field of that kind has no such change: n/a.
    """
    from jitbench import changes
    from jitbench import fields as fieldlib
    from jitbench.cache_audit import Step, error_text
    from jitbench.measure import block, clear_caches
    from jitbench.object_audit import TargetScenario, first_instance

    if change not in changes.TIMED_CHANGES:
        valid = ", ".join(changes.TIMED_CHANGES)
        raise JitbenchError(f"unknown change {change!r}; valid: {valid}")
    target = case.load()
    walked, _ = fieldlib.walk(first_instance(target))
    played, _ = fieldlib.choose(walked, None, fieldlib.DEFAULT_ARRAYS)
    clear_caches()
    scenario = TargetScenario.start(target, walked, played, [])
    plan = scenario.play()
    name = next(plan)
    while name != change:
        try:
            result, error = block(scenario.call()), ""
        except Exception as exc:
            result, error = None, error_text(exc)
        outcome, error = scenario.outcome(result, error)
        try:
            name = plan.send(Step(name, 0, 0, outcome, error))
        except StopIteration:
            raise NotImplementedError(
                f"target {case.spec!r} has no {change} change: its audit plays no such step"
            ) from None
    return lambda: block(scenario.call())


def audit_all(specs: Sequence[str], devices: Sequence[str]) -> dict[tuple[str, str], Any]:
    """Per (target, device) this process can serve: the audit's totals, or why it failed.

    A target whose audit raises a JitbenchError maps to that message (its rows
    fail with it); an absent device is left out (n/a).
    """
    from jitbench.cache_audit import TOTALS
    from jitbench.object_audit import audit_object

    found: dict[tuple[str, str], Any] = {}
    for device in devices:
        for spec in specs:
            try:
                case = TargetCase.of(spec, device)
                result = audit_object(case.load(), verdict=False)
            except NotImplementedError:
                continue
            except JitbenchError as exc:
                found[spec, device] = str(exc)
                continue
            found[spec, device] = {key: getattr(result, key) for key in TOTALS}
    return found


def hazard_count(totals: dict[tuple[str, str], Any], spec: str, device: str, key: str) -> int:
    """One total of one target's audit; n/a where the device is absent or the count unknown."""
    from jitbench.suite import skip

    entry = totals.get((spec, device))
    if entry is None:
        raise skip(NotImplementedError(f"{spec} on {device} is not available here"))
    if isinstance(entry, str):
        raise JitbenchError(entry)
    if entry[key] is None:
        reason = f"{spec}: {key} unknown (its instances cannot be weakly referenced)"
        raise skip(NotImplementedError(reason))
    return entry[key]
