"""The cache audit of a user's own object: its fields changed as its users change them,
judged against its own call without jit.

The scenario is the built-in one (:data:`jitbench.changes.SCENARIO`) played on
the fields :func:`jitbench.fields.walk` finds, through the same runner
(:func:`jitbench.cache_audit.run_scenario`): the first call and a repeat; per
static field a new value, then the value it had; per array field an array of
the same shape with new values, then one with a leading axis of 2 (the array
field played before is set back to its shape first, so that every field meets
the shapes of the first call; the last new shape stays for the equal instance,
as in the built-in scenario, unless the call cannot take it even without jit);
then an equal instance (the factory's new object with every field set to the
current object's values) and a different one (the factory's new object with
new values in its played array fields; its statics are left as the factory
makes them, since a combination of statics never seen is a compile every
strategy pays). Without a factory a deep copy of the object stands in for a
new instance.

The oracle is the same call under ``jax.disable_jit()`` on the object as it is
then, compared leaf by leaf with a tolerance of the square root of the
result dtype's machine epsilon (relative and absolute; exact for integers).
A step whose reference raises is "n/a": the user's own error (a shape the
model cannot take), not a hazard. The oracle sees what the jitted call sees
wherever the object's Python code runs again without jit: plain jit, static
``self``, equinox's ``filter_jit`` and ``nnx.jit`` (checked against the
built-in strategies' independent NumPy reference in the tests). It does *not*
where the object keeps a compiled executable or a cached traversal that
``disable_jit`` does not bypass: an AOT ``.lower().compile()`` executable runs
its baked-in flag under ``disable_jit`` too, and ``nnx.cached_partial`` /
a kept ``nnx.split`` replay the graph they cached, so their stale results
look correct to this oracle. Random-number state that a call advances (nnx
``Rngs``, dropout) also makes the two calls differ.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Generator
from typing import Any

import numpy as np

from jitbench import fields as fieldlib
from jitbench.cache_audit import AuditResult, Outcome, Step, error_text, run_scenario
from jitbench.errors import JitbenchError
from jitbench.measure import block
from jitbench.targets import Target, check_call


def tolerance(dtype: Any) -> float:
    """sqrt(eps) of a floating dtype (float32: 3.5e-4), 0 for integers and bools."""
    import jax.numpy as jnp

    if not jnp.issubdtype(dtype, jnp.inexact):
        return 0.0
    return float(np.sqrt(jnp.finfo(dtype).eps))


def same_result(got: Any, expected: Any) -> bool:
    """Whether two results (pytrees) agree leaf by leaf: structure, shapes and values."""
    import jax

    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(expected)
    if got_tree != want_tree:
        return False
    for a, b in zip(got_leaves, want_leaves, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return False
        tol = max(tolerance(a.dtype), tolerance(b.dtype))
        wide = np.float64 if tol else None
        if not np.allclose(a.astype(wide), b.astype(wide), rtol=tol, atol=tol, equal_nan=True):
            return False
    return True


def reference(target: Target, obj: Any) -> Any:
    """The target's call on ``obj`` without jit, every array computed."""
    import jax

    with jax.disable_jit():
        return block(target.function_of(obj)())


def first_instance(target: Target) -> Any:
    """A new instance to play on: the factory's, else a deep copy (the user's object stays)."""
    if target.factory is not None:
        return target.new_instance()
    try:
        return copy.deepcopy(target.obj)
    except Exception as exc:
        raise JitbenchError(
            f"target {target.name!r} has no factory and cannot be copied "
            f"({error_text(exc)}); give a factory that builds it"
        ) from None


@dataclasses.dataclass
class TargetScenario:
    """A user's object played through the scenario; ``changed`` collects (field, how) per step."""

    target: Target
    obj: Any
    walked: list[fieldlib.Field]
    played: list[fieldlib.Field]
    changed: list[tuple[str, str]]
    pristine: Any = None
    rng: np.random.Generator = dataclasses.field(default_factory=lambda: np.random.default_rng(1))

    @classmethod
    def start(
        cls,
        target: Target,
        walked: list[fieldlib.Field],
        played: list[fieldlib.Field],
        changed: list[tuple[str, str]],
    ) -> TargetScenario:
        """A scenario on a new instance (without a factory: a copy, and a pristine one)."""
        obj = first_instance(target)
        pristine = None if target.factory is not None else copy.deepcopy(obj)
        return cls(target, obj, walked, played, changed, pristine)

    def call(self) -> Any:
        return self.target.function_of(self.obj)()

    def outcome(self, result: Any, error: str) -> tuple[Outcome, str]:
        """Against the call without jit; where that raises, n/a with its error."""
        try:
            expected = reference(self.target, self.obj)
        except Exception as exc:
            return "n/a", error_text(exc)
        if error:
            return "error", error
        return ("correct" if same_result(result, expected) else "stale"), ""

    def _set(self, field: fieldlib.Field, value: Any) -> None:
        self.obj = fieldlib.set_field(self.obj, field, value)

    def _new(self) -> Any:
        if self.target.factory is not None:
            return self.target.new_instance()
        return copy.deepcopy(self.pristine)

    def play(self) -> Generator[str, Step, None]:
        self.changed.append(("", ""))
        yield "first_call"
        self.changed.append(("", ""))
        yield "repeat_call"
        for field in (f for f in self.played if f.kind == "static"):
            before = fieldlib.get_field(self.obj, field)
            self._set(field, fieldlib.next_value(before))
            self.changed.append((field.path, field.how))
            yield "new_static"
            self._set(field, before)
            self.changed.append((field.path, field.how))
            yield "seen_static"
        restore: tuple[fieldlib.Field, Any] | None = None
        last: Step | None = None
        for field in (f for f in self.played if f.kind == "array"):
            how = field.how
            if restore is not None:
                self._set(*restore)
                how += f" ({restore[0].path} set back to its shape first)"
            same = fieldlib.new_array(fieldlib.get_field(self.obj, field), self.rng)
            self._set(field, same)
            self.changed.append((field.path, how))
            yield "same_shape_array"
            self._set(field, fieldlib.new_array(same, self.rng, fieldlib.new_shape(same)))
            self.changed.append((field.path, field.how))
            last = yield "new_shape_array"
            restore = (field, same)
        how = "the factory's new object, every field set to the current values"
        if restore is not None and last is not None and last.outcome == "n/a":
            self._set(*restore)
            how += f" ({restore[0].path} set back to its shape first: the call cannot take it)"
        equal = self._new()
        for field in self.walked:
            equal = fieldlib.set_field(equal, field, fieldlib.get_field(self.obj, field))
        self.obj = equal
        self.changed.append(("", how))
        yield "equal_instance"
        other = self._new()
        arrays = [f for f in self.played if f.kind == "array"]
        for field in arrays:
            like = fieldlib.get_field(other, field)
            other = fieldlib.set_field(other, field, fieldlib.new_array(like, self.rng))
        if not arrays and self.played:
            field = self.played[0]
            value = fieldlib.next_value(fieldlib.get_field(other, field))
            other = fieldlib.set_field(other, field, value)
        self.obj = other
        changed = ", ".join(f.path for f in arrays) or ", ".join(f.path for f in self.played[:1])
        self.changed.append(("", f"the factory's new object, new values in {changed or 'nothing'}"))
        yield "other_instance"


def _first_failure(step: Step) -> str:
    if step.outcome == "n/a":
        return f"the call without jit (the oracle) raises: {step.error}"
    if step.outcome == "error":
        return f"it raises under jit: {step.error}"
    return "its result under jit differs from the call without jit"


def _device_and_size(obj: Any, played: list[fieldlib.Field]) -> tuple[str, int]:
    import jax

    for field in played:
        if field.kind == "array":
            value = fieldlib.get_field(obj, field)
            devices = getattr(value, "devices", None)
            platform = next(iter(devices())).platform if devices else "cpu"
            return platform, int(np.prod(value.shape))
    return jax.default_backend(), 0


def audit_object(
    target: Target,
    *,
    fields: str | None = None,
    arrays: int = fieldlib.DEFAULT_ARRAYS,
    verdict: bool = True,
) -> AuditResult:
    """The cache audit of ``target``'s call: every step, the fields changed and how, what
    was skipped, and (``verdict``) the hazards in words and the built-in strategy it matches.

    ``fields``: a glob or regular expression over field paths (``layers[0].*``);
    by default every static field and the first ``arrays`` array fields play.
    A call that raises on the first step (with or without jit) is a JitbenchError.
    """
    check_call(target)
    probe = first_instance(target)
    walked, skipped = fieldlib.walk(probe)
    played, left = fieldlib.choose(walked, fields, arrays)
    if fields is not None and not played:
        paths = ", ".join(f.path for f in walked) or "none"
        raise JitbenchError(f"--fields {fields!r} matches no field; the fields: {paths}")
    device, size = _device_and_size(probe, played)
    kind = fieldlib.object_kind(probe)
    del probe
    changed: list[tuple[str, str]] = []

    steps, leaked = run_scenario(lambda: TargetScenario.start(target, walked, played, changed))
    first = steps[0]
    if first.outcome != "correct":
        raise JitbenchError(f"the first call of target {target.name!r}: {_first_failure(first)}")
    result = AuditResult(
        target.name,
        device,
        size,
        steps,
        leaked,
        changed=tuple(changed),
        skipped=tuple((s.path, s.reason) for s in [*skipped, *left]),
    )
    if not verdict:
        return result
    from jitbench.verdict import judge

    lines, match = judge(result, kind)
    return dataclasses.replace(result, verdict=lines, matches=match)
