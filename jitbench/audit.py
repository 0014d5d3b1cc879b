"""The cache audit: one scripted user scenario, and what jit's cache did at each step.

The scenario is what a user of a class does over its life: call it, flip a
flag and back, swap an array for a new one of the same and of another shape,
build an equal instance and a different one, then drop them all. Each change
goes through the strategy's ``update``, so frozen styles build new objects as
their users do. Per step the audit records the traces and backend compiles it
caused and whether the result matched :func:`jitbench.reference_calc`; in
total, the objects still alive after everything was dropped and collected.
"""

from __future__ import annotations

import dataclasses
import gc
import weakref
from typing import Any

import numpy as np

from jitbench.computation import reference_calc
from jitbench.devices import resolve
from jitbench.factory import DEFAULT_STATIC, check_size, make_instance, random_array
from jitbench.measure import block, clear_caches, count_compiles
from jitbench.strategies import Strategy, arrays_of, get_strategy, statics_of

STEPS = (
    "first_call",
    "repeat_call",
    "new_static",
    "static_back",
    "same_shape_array",
    "new_shape_array",
    "equal_instance",
    "other_instance",
)
DEFAULT_SIZE = 64
# float32 results against a float64 NumPy reference; stale results are off by
# at least |y| (a flag change) or a whole array, far beyond this tolerance.
RTOL = 1e-4
ATOL = 1e-4


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of the scenario: what it cost in traces/compiles and whether it was right."""

    name: str
    traces: int
    compiles: int
    correct: bool


@dataclasses.dataclass(frozen=True)
class AuditResult:
    """Every step of one strategy's scenario, and the totals a dashboard tracks."""

    strategy: str
    device: str
    size: int
    steps: tuple[Step, ...]
    leaked_instances: int

    @property
    def compiles(self) -> int:
        return sum(step.compiles for step in self.steps)

    @property
    def traces(self) -> int:
        return sum(step.traces for step in self.steps)

    @property
    def stale_results(self) -> int:
        return sum(not step.correct for step in self.steps)

    @property
    def repeat_call_compiles(self) -> int:
        """Compiles caused by calling an unchanged object again (>0: recompiles every call)."""
        return self.step("repeat_call").compiles

    def step(self, name: str) -> Step:
        return next(step for step in self.steps if step.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "device": self.device,
            "size": self.size,
            "steps": [dataclasses.asdict(step) for step in self.steps],
            "compiles": self.compiles,
            "traces": self.traces,
            "stale_results": self.stale_results,
            "leaked_instances": self.leaked_instances,
            "repeat_call_compiles": self.repeat_call_compiles,
        }


class _Scenario:
    """Holds the weak references that find leaked instances, and runs calls."""

    def __init__(self, strategy: Strategy, n_ops: int) -> None:
        self.strategy = strategy
        self.n_ops = n_ops
        self.refs: list[weakref.ref[Any]] = []
        self.steps: list[Step] = []

    def track(self, obj: Any) -> Any:
        if not any(ref() is obj for ref in self.refs):
            self.refs.append(weakref.ref(obj))
        return obj

    def call(self, name: str, obj: Any, y: Any) -> None:
        with count_compiles() as stats:
            result = np.asarray(block(obj.calc(y)))
        expected = reference_calc(arrays_of(obj), statics_of(obj), y, self.n_ops)
        correct = result.shape == expected.shape and bool(
            np.allclose(result, expected, rtol=RTOL, atol=ATOL)
        )
        self.steps.append(Step(name, stats.traces, stats.compiles, correct))


def _run_scenario(scenario: _Scenario, size: int, device: str) -> None:
    # A function of its own so that every local reference to an instance is
    # gone when it returns; only what JAX (or a cycle) holds stays alive.
    strategy = scenario.strategy
    placement = resolve(device)
    rng = np.random.default_rng(1)
    first, y = make_instance(strategy, size, device=device, n_ops=scenario.n_ops, seed=0)
    length = y.shape[-1]
    obj = scenario.track(first)
    scenario.call("first_call", obj, y)
    scenario.call("repeat_call", obj, y)
    obj = scenario.track(strategy.update(obj, s0=DEFAULT_STATIC + 1))
    scenario.call("new_static", obj, y)
    obj = scenario.track(strategy.update(obj, s0=DEFAULT_STATIC))
    scenario.call("static_back", obj, y)
    new_array = random_array(placement, (length,), "float32", rng)
    obj = scenario.track(strategy.update(obj, a0=new_array))
    scenario.call("same_shape_array", obj, y)
    wide_array = random_array(placement, (2, length), "float32", rng)
    obj = scenario.track(strategy.update(obj, a0=wide_array))
    scenario.call("new_shape_array", obj, y)
    fields = {name: getattr(obj, name) for name in obj._jb_shape.array_fields}
    fields.update({name: getattr(obj, name) for name in obj._jb_shape.static_fields})
    equal = scenario.track(type(obj)(**fields))
    scenario.call("equal_instance", equal, y)
    other, _ = make_instance(
        strategy, size, device=device, n_ops=scenario.n_ops, seed=2, statics=DEFAULT_STATIC + 1
    )
    scenario.call("other_instance", scenario.track(other), y)


def audit(
    strategy: str | Strategy, *, size: int = DEFAULT_SIZE, device: str = "cpu", n_ops: int = 1
) -> AuditResult:
    """Run the scenario for ``strategy`` from cold caches and report every step.

    Caches are cleared before and after, so one audit never sees another's
    compiled programs and leaves nothing of its own behind.
    """
    chosen = strategy if isinstance(strategy, Strategy) else get_strategy(strategy)
    chosen.check_available()
    size = check_size(size)
    resolve(device)
    scenario = _Scenario(chosen, n_ops)
    clear_caches()
    _run_scenario(scenario, size, device)
    gc.collect()
    leaked = sum(ref() is not None for ref in scenario.refs)
    clear_caches()
    return AuditResult(chosen.name, device, size, tuple(scenario.steps), leaked)
