"""The cache audit: the scenario played on a subject, and what jit's cache did at each step
(traces, compiles, JAX's reasons, the oracle's outcome) and what it left alive; entry points
:func:`audit_subject`, :func:`audit` (a built-in strategy), :func:`audit_object`.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import gc
import inspect
import sys
import time
import types
import weakref

from jitbench.auditing.result import AuditResult, Step
from jitbench.auditing.scenario import FED_BACK, WITHOUT_JIT_TOO, Play, attempt, replay
from jitbench.auditing.verdict import judge
from jitbench.compiles import (
    clear_caches,
    count_compiles,
    explain_misses,
    release_failed_traces,
)
from jitbench.devices import DEVICE_SPECS, Placement, resolve
from jitbench.errors import JitbenchError
from jitbench.options import DEFAULT_SIZE
from jitbench.strategies.codegen import PROBES, Probe, Shape
from jitbench.targets import Call, as_target, kinds
from jitbench.targets import fields as fieldlib
from jitbench.vocabulary import Outcome, StepName
from jitbench.ways.registry import STRATEGIES, Strategy
from jitbench.ways.subject import Generated, Subject, device_and_size, subject_of

# At most this many nodes of one object are followed for the leak check (a deep model's
# every layer, not every array of a huge one), and progress shows after this many seconds.
TRACKED_NODES = 20_000
PROGRESS_AFTER_S = 10.0


class _Alive:
    """Weak references to what the scenario built, inner objects and arrays included."""

    def __init__(self) -> None:
        # What exists now is frozen (gc.freeze), where nothing else froze objects: later
        # collections and walks of the collector's objects then see what the scenario built
        # alone (a process that imported a large library holds millions of objects, a second
        # a full collection); what it built is what the collector tracks and did not freeze,
        # or what it never tracks. Elsewhere every object is listed now, and held, not only
        # its id: a freed object's id is soon another object's.
        gc.collect(1)  # the young garbage (a probe just dropped); older garbage holds no new object
        self.frozen = gc.get_freeze_count() == 0
        self.kept = [] if self.frozen else gc.get_objects()
        self.before = {id(o) for o in self.kept}
        if self.frozen:
            gc.freeze()
        self.roots: dict[int, weakref.ref[object]] = {}
        self.inner: dict[int, tuple[weakref.ref[object], bool]] = {}  # ..., of the first one
        self.arrays: dict[int, weakref.ref[object]] = {}
        self.first: weakref.ref[object] | None = None
        # Classes of instances no weak reference reaches (__slots__ alone): counted by type.
        self.unreferenced: set[type] = set()
        # The classes of the objects called whose weak reference weakref.ref refused.
        self.refused: set[str] = set()

    def _ref(self, node: object) -> weakref.ref[object] | None:
        with contextlib.suppress(TypeError):
            return weakref.ref(node)
        return None

    def track(self, obj: object, returned: bool = False) -> None:
        """Track ``obj`` and what it holds; ``returned``: an object the jitted call returned,
        whose auxiliary data (an e3nn IrrepsArray's irreps) is the compiled program's own output
        structure, held by jit once per program, not built by the scenario."""
        first = not self.roots and not self.inner
        young = {id(o) for o in gc.get_objects()} if self.frozen else set()
        if self._ref(obj) is None:  # tried, so that the verdict can say why none is followed
            self.refused.add(type(obj).__name__)
        stack, seen = [(obj, 0)], set()
        while stack and len(seen) < TRACKED_NODES:
            node, depth = stack.pop()
            if id(node) in seen or depth > fieldlib.MAX_DEPTH:
                continue
            if depth and kinds.is_library_internal(node):
                continue  # a library's own bookkeeping (nnx's metadata), unless it is audited
            seen.add(id(node))
            if self.frozen:
                new = id(node) in young or not gc.is_tracked(node)
            else:
                new = id(node) not in self.before
            if new and kinds.is_array(node) and (ref := self._ref(node)) is not None:
                if not _known(self.arrays, node):
                    self.arrays[id(node)] = ref
            elif new and depth == 0 and _is_instance(node) and self._ref(node) is None:
                self.unreferenced.add(type(node))
            elif new and _is_instance(node) and (ref := self._ref(node)) is not None:
                if depth == 0 and not _known(self.roots, node):
                    self.roots[id(node)] = ref
                    self.first = self.first or ref
                elif depth > 0 and not _known(self.roots, node) and not _known(self.inner, node):
                    self.inner[id(node)] = (ref, first)
            held = _built(node) if returned else _held(node)
            stack += [(child, depth + 1) for child in held]

    def alive(self) -> tuple[int | None, int, int]:
        """Objects that grow with every instance (None: none could be tracked), the arrays it
        built, and the first instance's inner objects that outlive it, alive now. What a
        trace that raised keeps (a step's change the call cannot take) is released first: it
        is JAX's error path that keeps it (compiles.release_failed_traces), not the object."""
        release_failed_traces(self.before)
        # Frozen, what existed is out of the collector's list: what it lists now is new.
        existed = collections.Counter(type(o) for o in self.kept if type(o) in self.unreferenced)
        self.kept = []
        built = [r() for r in [*self.roots.values(), *(ref for ref, _ in self.inner.values())]]
        kinds.release_equinox_modules([obj for obj in built if obj is not None])
        del built
        gc.collect()
        roots = sum(ref() is not None for ref in self.roots.values())
        later = sum(ref() is not None for ref, first in self.inner.values() if not first)
        # The first instance's inner objects, where they outlive it (what it holds is its own).
        first_dead = self.first is None or self.first() is None
        held = sum(ref() is not None for ref, first in self.inner.values() if first and first_dead)
        arrays = sum(ref() is not None for ref in self.arrays.values())
        if self.unreferenced:  # a walk over every object: only where one is needed
            now = collections.Counter(type(o) for o in gc.get_objects())
            roots += sum(max(now[kind] - existed[kind], 0) for kind in self.unreferenced)
        tracked = self.roots or self.inner or self.unreferenced
        return (roots + later if tracked else None), arrays, held

    def close(self) -> None:
        """What was frozen back with the collector's other objects."""
        if self.frozen:
            gc.unfreeze()
            self.frozen = False

    def __enter__(self) -> _Alive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _known(
    table: dict[int, weakref.ref[object]] | dict[int, tuple[weakref.ref[object], bool]],
    node: object,
) -> bool:
    """Whether ``table`` tracks ``node`` itself, not a freed object whose id it reuses."""
    entry = table.get(id(node))
    ref = entry[0] if isinstance(entry, tuple) else entry
    return ref is not None and ref() is node


def _held(node: object) -> list[object]:
    """What ``node`` keeps alive: its fields, or what a function holds (blackjax's closures)."""
    if isinstance(node, types.MethodType):
        return [node.__self__]
    if isinstance(node, functools.partial):
        return [node.func, *node.args, *node.keywords.values()]
    if isinstance(node, types.FunctionType):
        return [*_cells(node), *(node.__defaults__ or ())]
    return [child for _, _, child in fieldlib.children(node) or ()]


def _built(node: object) -> list[object]:
    """What jit builds anew of ``node`` it returns: its pytree children, not its aux data."""
    return [child for _, child in kinds.pytree_children(node) or ()]


def _cells(function: types.FunctionType) -> list[object]:
    found = []
    for cell in function.__closure__ or ():
        with contextlib.suppress(ValueError):  # a cell not yet filled
            found.append(cell.cell_contents)
    return found


def _is_instance(node: object) -> bool:
    """An instance of a class (a model, a layer), not a container, function, type or array."""
    if isinstance(node, type | dict | list | tuple | str | bytes) or kinds.is_function(node):
        return False
    return hasattr(node, "__dict__") or hasattr(type(node), "__slots__")


def _step(play: Play, name: str, probe: Probe | None, every_call: bool = False) -> Step:
    """One step's call, counted and explained. A raising call is made once more without
    explanations (JAX 0.6-0.8's explainer can itself fail): where only the first raised,
    the second's result and counts stand, unless the second ran on what the first call left
    behind (the call without jit cannot run on it, or it holds the first's tracers). Where
    the second raised too, or ran on what the first broke, the first call's error, judged on
    the state before it, stands: the user's call is blamed only for its own failure."""
    runs = probe.runs if probe else 0
    play.keep()
    with count_compiles() as stats, explain_misses() as messages:
        result, error, _ = attempt(play)
    first = (error, play.before, play.raised_in, stats, messages)
    broken = False
    if error:
        play.keep()
        with count_compiles() as again:
            result, retried, _ = attempt(play)
        if not retried:  # the explainer's failure, not the call's
            stats, messages = again, [f"JAX's cache-miss explainer raised {error}"]
        broken, error = bool(retried), retried
    try:
        outcome, error = play.judge(result, error, stats.traces > 0, stats.compiles > 0)
        broken = broken or bool(first[0] and not error and outcome == "n/a")
    except JitbenchError:
        if not first[0] or error:
            raise
        broken = True
    if broken:
        error, play.before, play.raised_in, stats, messages = first
        outcome, error = play.judge(None, error, stats.traces > 0, stats.compiles > 0)
    field, how = play.changed[-1]
    runs = probe.runs - runs if probe else None
    role = play.roles.get(field, "")
    # A change jit traced or compiled for (the call compiling at every call aside) shows the
    # field in its key, whatever the walk read from the object: its label says so from then on.
    keyed = (stats.compiles or stats.traces) and not every_call
    keyed = keyed and name in (StepName.NEW_STATIC, StepName.SAME_SHAPE_ARRAY)
    if keyed and role == "number":
        role = play.roles[field] = "hashed"  # a number the call hashes (a filter inside it)
    elif keyed and role == "plain" and field in play.kinds:
        kind = play.kinds[field]  # a static self's attribute
        role = play.roles[field] = {"static": "aux", "number": "hashed", "array": "valued"}[kind]
    role = fieldlib.ROLES.get(role, "")
    return Step(name, stats.traces, stats.compiles, outcome, error, tuple(messages), runs,
                field, how, role)  # fmt: skip


def _steps(
    subject: Subject, played: list[fieldlib.Field], alive: _Alive, probe: Probe | None
) -> tuple[list[Step], dict[str, float]]:
    # A function of its own, for the leak check (why: docs/design.md).
    play = Play(subject, played)
    # Two steps per field of every kind; a loop's two steps (FED_BACK) are known only at the
    # end: the count grows then.
    total, start = 4 + 2 * len(played), time.perf_counter()
    steps: list[Step] = []

    def visit(name: str) -> Outcome | None:
        alive.track(play.obj, returned=name in FED_BACK)
        # A call that compiles again with nothing changed (a jit made inside it) says
        # nothing by compiling after a new number: it is not read as hashing it.
        every_call = any(s.name == StepName.REPEAT_CALL and s.compiles for s in steps)
        steps.append(_step(play, name, probe, every_call))
        seconds, done = time.perf_counter() - start, len(steps)
        if seconds >= PROGRESS_AFTER_S:  # a line per step on stderr once it has run a while
            where = f" {steps[-1].field}" if steps[-1].field else ""
            print(f"jitbench: audit of {subject.name}: step {done} of {max(done, total)} "
                  f"({name}{where}), {seconds:.0f} s", file=sys.stderr, flush=True)  # fmt: skip
        if name == StepName.FIRST_CALL and steps[-1].outcome != Outcome.CORRECT:
            return None  # the audit stops on it (a call that raised may break the object)
        return steps[-1].outcome

    replay(play, visit)
    return _unkeyed(steps, played), play.judging.noise or {}


def _unkeyed(steps: list[Step], played: list[fieldlib.Field]) -> list[Step]:
    """``steps``, a field's label read from a compile (:func:`_step`) taken back where its
    value set back compiled again: a value jit keys on reuses the program of a value seen
    before, so one that compiles again tells nothing of how jit sees the field (a jit made
    for each object compiles for every new object: exponax's steppers), and the walk's
    label stands."""
    walked = {f.path: fieldlib.ROLES.get(f.role, "") for f in played}
    again = {s.field for s in steps if s.name == StepName.SEEN_STATIC and s.compiles}
    return [dataclasses.replace(s, role=walked[s.field]) if s.field in again else s for s in steps]


def run(
    subject: Subject, played: list[fieldlib.Field], probe: Probe | None = None
) -> tuple[tuple[Step, ...], tuple[int | None, int, int], dict[str, float], tuple[str, ...]]:
    """Play the scenario on ``subject`` from cold caches: its steps, what it built still
    alive once it is dropped and the collector ran (see :meth:`_Alive.alive`), the result's
    leaves left out of the comparisons (:class:`~jitbench.ways.subject.Judging`), and the
    classes of the objects called that took no weak reference."""
    with _Alive() as alive:
        clear_caches()
        steps, noise = _steps(subject, played, alive, probe)
        gc.collect()
        leaked = alive.alive()
    clear_caches()
    return tuple(steps), leaked, noise, tuple(sorted(alive.refused))


def audit_subject(
    subject: Subject,
    *,
    fields: str | None = None,
    arrays: int = fieldlib.DEFAULT_ARRAYS,
    verdict: bool = False,
    probe: object = None,
) -> AuditResult:
    """The scenario on ``subject`` from cold caches: every step, the fields changed and how,
    what was left out, and (``verdict``) the hazards in words and the built-in it matches.
    ``probe``: an object as ``subject.new()`` builds it, whose fields are walked (None: a new
    one; advise's ways share one: a model's building is seconds on a TPU).

    ``fields``: a glob or regular expression over field paths (``layers[0].*``); by
    default every static field and the first ``arrays`` array fields play. A first call
    that differs from the oracle on every leaf of its result is a JitbenchError; on some
    only, those are left out (``skipped``: see :class:`~jitbench.ways.subject.Judging`).
    """
    probe = subject.new() if probe is None else probe
    walked, skipped = subject.fields(probe)
    played, left = fieldlib.choose(walked, fields, arrays)
    if fields is not None and not played:
        paths = ", ".join(f.path for f in walked) or "none"
        raise JitbenchError(f"the fields pattern {fields!r} matches no field; the fields: {paths}")
    played, refused = subject.playable(probe, played)
    # A target's size: the element count of the first array field played (0: none is).
    size = subject.size if isinstance(subject, Generated) else device_and_size(probe, played)[1]
    del probe
    counter = None
    if isinstance(subject, Generated) and subject.probe:
        counter = PROBES[subject.strategy.make_class(subject.shape, probe=True)]
    steps, (leaked, arrays_alive, held), noise, refused_ref = run(subject, played, counter)
    first = steps[0]
    # A first call that raises under jit alone is the object's error hazard, and the audit's
    # last step; one that cannot run without jit either has nothing to audit.
    if first.outcome not in (Outcome.CORRECT, Outcome.ERROR):
        what = "strategy" if isinstance(subject, Generated) else "target"
        raise JitbenchError(f"the first call of {what} {subject.name!r}: {_first_failure(first)}")
    # No scenario was played: what a failed trace keeps is no leak.
    if first.outcome == Outcome.ERROR:
        leaked, arrays_alive, held = None, 0, 0
    result = AuditResult(
        subject.name, subject.device, size, steps, leaked, arrays_alive, held,
        skipped=(
            *((s.path, s.reason) for s in [*skipped, *refused, *left]),
            *((where, _noisy(noise)) for where in noise),
        ),
        builtin=isinstance(subject, Generated) and subject.name == subject.strategy.name,
        unreferenced=refused_ref if leaked is None and first.outcome is Outcome.CORRECT else (),
    )  # fmt: skip
    return with_verdict(result, subject) if verdict else result


def with_verdict(result: AuditResult, subject: Subject) -> AuditResult:
    """``result`` with its verdict: the hazards in words and the built-in strategy it matches
    (their audits run once per process), for the subject's object, by its kind
    (kinds.object_kind) and the packages it and its call use (its jit wrapper's included)."""
    obj, call = subject.target.obj, subject.target.call
    if isinstance(call, str):
        call = inspect.getattr_static(type(obj), call, None)
    called = {type(call).__module__, getattr(call, "__module__", None) or ""}
    uses = fieldlib.libraries(obj) | {name.split(".")[0] for name in called if name}
    spec = result.device if result.device in DEVICE_SPECS else "cpu"
    kind, python = kinds.object_kind(obj), kinds.flattened_in_python(obj)
    lines, match = judge(result, kind, builtin_audits(spec), uses, python)
    return dataclasses.replace(result, verdict=lines, matches=match)


@functools.cache
def builtin_audits(spec: str) -> dict[str, AuditResult]:
    """Every available built-in strategy's audit on ``spec`` (run once per process): what a
    user's object's audit is matched against."""
    placement = resolve(spec)
    # A function strategy (the floor) calls no object: a user's object never matches it.
    chosen = {name: s for name, s in STRATEGIES.items() if s.available and not s.function}
    return {name: audit(s, placement) for name, s in chosen.items()}


def _first_failure(step: Step) -> str:
    if step.outcome == "n/a" and WITHOUT_JIT_TOO in step.error:
        return f"it raises under jit: {step.error}"
    if step.outcome == "n/a":
        return f"the call without jit (the oracle) raises: {step.error}"
    return f"its result under jit differs from the call without jit {step.error}".rstrip()


def _noisy(noise: dict[str, float]) -> str:
    return (
        "under jit and without it, differs at the first call, where nothing can be stale yet, "
        f"by up to {max(noise.values()):.2g} (floating point): not compared"
    )


def audit(
    strategy: Strategy, placement: Placement, *, size: int = DEFAULT_SIZE, n_ops: int = 1,
    probe: bool = False,
) -> AuditResult:  # fmt: skip
    """The audit of a built-in strategy's generated class (``probe``: its probed twin, whose
    body counts its runs: :attr:`Step.body_runs`)."""
    return audit_subject(Generated(strategy, placement, size, Shape(n_ops=n_ops), probe=probe))


def audit_object(
    target: object, *, call: Call | None = None, inputs: object = None, fields: str | None = None,
    arrays: int = fieldlib.DEFAULT_ARRAYS, verdict: bool = True,
) -> AuditResult:  # fmt: skip
    """The cache audit of a user's object (see :func:`audit_subject`), with its verdict (imports
    JAX); ``target``, ``call`` and ``inputs`` in any form :func:`jitbench.targets.as_target`
    takes."""
    target = as_target(target, call=call, inputs=inputs)
    return audit_subject(subject_of(target), fields=fields, arrays=arrays, verdict=verdict)
