"""The changes a user makes to an object over its life, as one table.

The audit plays them all in order (:data:`SCENARIO`); the after-change
benchmark plays one (with what it needs first) and times the next call.
Fields change the way the strategy's users change them
(:meth:`jitbench.strategies.Strategy.update`: in place or a new object),
except the two new-instance steps, which call the constructor.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from jitbench.codegen import Shape, fields_of
from jitbench.devices import Placement
from jitbench.instances import DEFAULT_STATIC, make_instance, random_array
from jitbench.strategies import Strategy

NEW_STATIC = DEFAULT_STATIC + 1


@dataclasses.dataclass
class Subject:
    """The object a scenario changes, with what its changes need."""

    strategy: Strategy
    placement: Placement
    size: int
    shape: Shape
    obj: Any
    y: Any
    rng: np.random.Generator = dataclasses.field(default_factory=lambda: np.random.default_rng(1))

    probe: bool = False

    @classmethod
    def build(
        cls, strategy: Strategy, size: int, placement: Placement, shape: Shape, probe: bool = False
    ) -> Subject:
        obj, y = make_instance(strategy, size, placement, shape, probe=probe)
        return cls(strategy, placement, size, shape, obj, y, probe=probe)

    def call(self) -> Any:
        return self.obj.calc(self.y)


def _set_static(value: int) -> Callable[[Subject], Any]:
    def change(subject: Subject) -> Any:
        return subject.strategy.update(subject.obj, s0=value)

    return change


def _new_array(wide: bool) -> Callable[[Subject], Any]:
    def change(subject: Subject) -> Any:
        length = subject.y.shape[-1]
        shape = (2, length) if wide else (length,)
        new = random_array(subject.placement, shape, subject.rng)
        return subject.strategy.update(subject.obj, a0=new)

    return change


def _equal_instance(subject: Subject) -> Any:
    return type(subject.obj)(**fields_of(subject.obj))


def _other_instance(subject: Subject) -> Any:
    other, _ = make_instance(
        subject.strategy, subject.size, subject.placement, subject.shape, seed=2,
        statics=NEW_STATIC, probe=subject.probe,
    )  # fmt: skip
    return other


# name -> (what it does, how). Order matters: it is the audit's scenario.
CHANGES: dict[str, tuple[str, Callable[[Subject], Any]]] = {
    "new_static": ("a flag set to a value not seen before", _set_static(NEW_STATIC)),
    "seen_static": ("the flag set back to a value seen before", _set_static(DEFAULT_STATIC)),
    "same_shape_array": ("an array field replaced by one of the same shape", _new_array(False)),
    "new_shape_array": ("an array field replaced by one of a new shape", _new_array(True)),
    "equal_instance": ("a new instance built from the same field values", _equal_instance),
    "other_instance": ("a new instance with other values", _other_instance),
}
# What a change needs to have happened first (a value is 'seen' once called with).
PREREQUISITES = {"seen_static": ("new_static",)}
SCENARIO = ("first_call", "repeat_call", *CHANGES)
DESCRIPTIONS = {
    "first_call": "the first call of a new instance",
    "repeat_call": "the same call again, nothing changed",
    **{name: text for name, (text, _) in CHANGES.items()},
}
# The changes the after-change benchmark times (other_instance is a cold call).
TIMED_CHANGES = (
    "new_static",
    "seen_static",
    "same_shape_array",
    "new_shape_array",
    "equal_instance",
)


def apply(subject: Subject, change: str) -> None:
    """Make ``change`` to ``subject`` (its object is replaced where the style builds a new one)."""
    subject.obj = CHANGES[change][1](subject)
