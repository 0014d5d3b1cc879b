"""The case runtime: a :class:`Row` names what an asv row measures and loads its subject;
:class:`Prepared` (cached call, dispatch), cold, fresh-process and staged first calls, and
the audit's totals per row (what each measures: docs/benchmarks.md).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from jitbench.auditing.audit import audit_subject
from jitbench.child import Json
from jitbench.compiles import clear_caches, count_compiles, use_persistent_cache
from jitbench.devices import Placement, ensure_host_devices, parse_spec, resolve, use_device
from jitbench.errors import DeviceUnavailable, JitbenchError, NoFigure
from jitbench.options import DEFAULT_SIZE
from jitbench.strategies.codegen import DEFAULT_SHAPE, Shape
from jitbench.targets import (
    IMPORT_ROOTS_ENV,
    check_call,
    import_roots,
    load_target,
    resolve_callable,
    use_import_roots,
)
from jitbench.ways.registry import STRATEGIES, get_strategy
from jitbench.ways.subject import Generated, Subject, free_arguments, subject_of, way_subject

TARGETS_ENV = "JITBENCH_TARGETS"
_reported: set[str] = set()


@dataclasses.dataclass(frozen=True)
class Row:
    """What to measure, one record for every process that measures it (asv's setup, the
    fresh interpreter, the counting process, a population's): ``subject``, a strategy at
    ``size`` and ``shape`` or a target (``package.module:factory``, ``size`` None), on
    ``device``. A target's ``call`` and ``inputs`` override its factory's; ``way`` calls it
    one of ``jitbench advise``'s ways. ``instances``: how many live at once (a population).

    What a count plants or changes around the call (docs/counting.md): ``slowdown`` (a
    fraction) plants work that grows the call's count by that fraction; ``calibrated`` runs
    that calibration and plants nothing (the row a slowed one is judged against); ``twin``
    counts the strategy's hand-written twin on the generated instance's arrays; ``frames``
    adds frames above the counted loop; ``tracebacks`` False turns JAX's traceback capture
    off.
    """

    subject: str
    device: str = "cpu"
    size: int | None = None
    shape: Shape = DEFAULT_SHAPE
    call: str | None = None
    inputs: str | None = None
    way: str | None = None
    instances: int = 1
    slowdown: float = 0.0
    twin: bool = False
    calibrated: bool = False
    frames: int = 0
    tracebacks: bool = True

    def load(self, checked: bool = True) -> Subject:
        """The subject; NotImplementedError (asv: n/a) where it cannot run here (``checked``
        False: a way built without calling the object first, :class:`WaySubject`)."""
        if self.subject in STRATEGIES or ":" not in self.subject:  # no target spec: a strategy
            strategy = get_strategy(self.subject)
            strategy.check_available()
            placement = resolve(self.device)
            return Generated(strategy, placement, self.size or DEFAULT_SIZE, self.shape)
        use_device(resolve(self.device))
        reason = target_problems([self.subject]).get(self.subject)
        if reason is not None:
            raise JitbenchError(reason)
        target = load_target(self.subject, call=self.call, inputs=self.inputs)
        if self.way is not None:
            return way_subject(target, self.way, checked=checked)
        return subject_of(target)

    @property
    def built(self) -> Row:
        """The row as its object is built and called: what a count changes around it left out
        (rows equal here share one object)."""
        return dataclasses.replace(self, slowdown=0.0, calibrated=False, frames=0, tracebacks=True)

    @property
    def specs(self) -> tuple[str | None, ...]:
        """The import specs it names: where a child process must import from."""
        return self.subject, self.call, self.inputs

    def to_json(self) -> dict[str, Json]:
        return dataclasses.asdict(self)  # the shape too, as a dict: from_json rebuilds it

    @classmethod
    def from_json(cls, data: Json) -> Row:
        if not isinstance(data, dict) or not isinstance(data.get("shape"), dict):
            raise JitbenchError(f"not a row to measure: {data!r}")
        return cls(**{**data, "shape": Shape(**data["shape"])})


def target_specs(declared: Sequence[str] = ()) -> list[str]:
    """The targets of the grid: ``declared`` then ``JITBENCH_TARGETS``, each once, unimported."""
    listed = os.environ.get(TARGETS_ENV, "").split(",")
    return list(dict.fromkeys(s.strip() for s in [*declared, *listed] if s.strip()))


def target_problems(specs: Sequence[str]) -> dict[str, str]:
    """Why a target cannot be measured, for each that cannot: imports its module, never
    calls the factory (that starts a backend); each problem printed once per process."""
    found = {}
    for spec in specs:
        try:
            resolve_callable(spec, "target")
        except JitbenchError as exc:
            found[spec] = f"{exc} (from {TARGETS_ENV} or a benchmark module's declared targets)"
            if spec not in _reported:
                _reported.add(spec)
                print(f"jitbench: error: {found[spec]}", file=sys.stderr, flush=True)
    return found


def targets_built(suite: str, releases: str = "") -> int:
    """Build every target of the suite folder ``suite`` (its ``bench_targets.TARGETS`` and
    ``JITBENCH_TARGETS``) as this commit's project builds it, importing the folder as asv
    does, and make its call once, waiting for the result: one line for each that cannot be
    built or called (the exception's first line; ``releases``, those every commit is
    measured with, named), and 1 where one cannot (0 where all can)."""
    folder = Path(suite).resolve()
    use_import_roots({folder.name: str(folder.parent)})
    tree = ast.parse((folder / "bench_targets.py").read_text())
    declared = next(
        (ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)
         and any(getattr(t, "id", None) == "TARGETS" for t in node.targets)), [],
    )  # fmt: skip
    failed = 0
    for spec in target_specs(declared):
        reason = _cannot_call(spec, releases)
        if reason:
            print(f"jitbench: this commit is skipped: {reason}{_undeclared(reason)}", flush=True)
            failed = 1
    return failed


def _cannot_call(spec: str, releases: str) -> str:
    """Why the target ``spec`` cannot be built or called at this commit, or ""."""
    try:
        target = load_target(spec)
        check_call(target)
    except JitbenchError as exc:
        return str(exc)
    import jax

    try:
        jax.block_until_ready(subject_of(target).call(target.obj)())
    except NotImplementedError:  # a row asv shows as n/a: not this commit's failure
        return ""
    except Exception as exc:
        lines = str(exc).strip().splitlines()
        first = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
        under = f" under {releases}" if releases else ""
        return f"target {spec!r}: its call raised {first}{under}"
    return ""


def _undeclared(reason: str) -> str:
    """How to add the package of a module the reason says is missing, where no part of that
    package is installed (a module the project itself lost is no missing package)."""
    found = re.search(r"No module named '([\w.]+)'", reason)
    if found is None:
        return ""
    top = found.group(1).partition(".")[0]
    if importlib.util.find_spec(top) is not None:
        return ""
    return (
        f"; if the project imports {top} without declaring it, install its package in every "
        f'commit\'s environment: one line in the "req" of asv.conf.json\'s matrix, "{top}": [""]'
    )


# --- The call, as code of its own -----------------------------------------------------------


def call_code(subject: Subject, obj: object) -> tuple[str, dict[str, object]]:
    """The subject's call on ``obj`` as one expression and the names it reads; a function
    strategy's is ``function(s0, a0, x0)`` on the object's fields, no object."""
    if isinstance(subject, Generated) and subject.strategy.function:
        target = subject.target
        names = {f"x{i}": value for i, value in enumerate(target.inputs)}
        function, fields = free_arguments(subject.strategy, obj)
        names.update(fields, function=function)
        args = [*fields, *(f"x{i}" for i in range(len(target.inputs)))]
        return f"function({', '.join(args)})", names
    return subject.code(obj)


def compiled(source: str, names: dict[str, object], what: str) -> Callable[..., object]:
    """``source`` (a module's text defining ``what``) compiled with ``names`` as its globals."""
    namespace = dict(names)
    exec(compile(source, f"<jitbench {what}>", "exec"), namespace)
    return namespace[what]


# ``n`` calls back to back and one wait for the last result: what a training loop gets.
LOOP_SOURCE = """
def loop(n):
    for _ in range(n):
        out = {expr}
    return block_until_ready(out)
"""
# ``n`` calls, each timed until it returns, the wait for its result outside the window: the
# host's dispatch onto an idle device (on an accelerator, back-to-back dispatches queue up).
DISPATCH_EACH_SOURCE = """
def dispatch_each(n):
    spent = 0.0
    for _ in range(n):
        start = clock()
        out = {expr}
        spent += clock() - start
        block_until_ready(out)
    return spent
"""
# Calls made back to back before a wait, in the CPU's dispatch figures: XLA's CPU client runs
# at most 32 computations at once per device (``max_inflight_computations_per_device``), and
# a further call waits for one to finish, which makes a figure the computation's pace.
DISPATCH_RUN = 30
# ``n`` calls back to back in runs of DISPATCH_RUN, each run timed until its last call returns
# and that call's result waited for outside the window: the host's dispatch in a loop, never
# behind a full queue (the CPU's dispatch row, docs/benchmarks.md).
DISPATCH_LOOP_SOURCE = """
def dispatch_loop(n):
    spent = 0.0
    while n > 0:
        run = min(n, DISPATCH_RUN)
        start = clock()
        for _ in range(run):
            out = {expr}
        spent += clock() - start
        block_until_ready(out)
        n -= run
    return spent
"""


class Prepared:
    """A new instance of ``subject``, called once (compiled): ``call`` (waits for the
    result), ``dispatch`` (does not), ``loop(n)``, ``dispatch_each(n)`` and
    ``dispatch_loop(n)``, each code of its own."""

    def __init__(self, subject: Subject, obj: object = None, seed: int = 0) -> None:
        self.subject, self.obj = subject, subject.new(seed) if obj is None else obj
        import jax

        expr, names = call_code(subject, self.obj)
        names["block_until_ready"] = jax.block_until_ready  # bound once: no import per call
        names["clock"] = time.perf_counter
        names["DISPATCH_RUN"] = DISPATCH_RUN
        source = f"def call():\n    return block_until_ready({expr})\n"
        self.call = compiled(source, names, "call")
        self.dispatch = compiled(f"def dispatch():\n    return {expr}\n", names, "dispatch")
        self.loop = compiled(LOOP_SOURCE.format(expr=expr), names, "loop")
        self.dispatch_each = compiled(
            DISPATCH_EACH_SOURCE.format(expr=expr), names, "dispatch_each"
        )
        self.dispatch_loop = compiled(
            DISPATCH_LOOP_SOURCE.format(expr=expr), names, "dispatch_loop"
        )
        self.call()


class Reused(Prepared):
    """A :class:`Prepared` whose calls hit jit's cache; NotImplementedError (asv: n/a) for
    a strategy that compiles on every call."""

    def __init__(self, subject: Subject) -> None:
        super().__init__(subject)
        with count_compiles() as again:
            self.call()
        if again.compiles:
            raise NotImplementedError(
                f"{subject.name} compiles on every call: see its trace and compile rows"
            )


def cold_call(subject: Subject) -> Callable[[], object]:
    """The first call of a new instance, every in-memory cache cleared: it compiles."""
    import jax

    call, wait = subject.call(subject.new()), jax.block_until_ready
    clear_caches()
    return lambda: wait(call())


def fresh(row: str) -> Callable[[], object]:
    """In a new interpreter: everything but the first call (the on-disk cache off) of the
    row ``row`` (its JSON)."""
    subject = Row.from_json(json.loads(row)).load()
    import jax

    call, wait = subject.call(subject.new()), jax.block_until_ready
    use_persistent_cache(None)
    return lambda: wait(call())


def fresh_code(row: Row) -> tuple[str, str]:
    """(stmt, setup) of asv's ``timeraw_`` for the row's first call in a fresh interpreter
    (the row loaded here first: an unavailable one is n/a without a new process)."""
    row.load()
    # asv starts the interpreter in its environment; the roots let it import the target from
    # where this process did (asv's suite folder, imported through asv's own finder).
    roots = json.dumps(import_roots(row.specs))
    setup = (
        f"import os\nos.environ[{IMPORT_ROOTS_ENV!r}] = {roots!r}\n"
        f"from jitbench.measure.case import fresh\n"
        f"first_call = fresh({json.dumps(row.to_json())!r})\n"
    )
    return "first_call()", setup


def host_device_subject(strategy: str, size: int, n_devices: int) -> Subject:
    """A strategy's call sharded over ``n_devices`` host devices (the CPU backend must not
    have started yet)."""
    ensure_host_devices(n_devices)
    import jax

    found = jax.devices("cpu")
    if len(found) != n_devices:
        raise DeviceUnavailable(
            f"{n_devices} host devices asked for, the CPU backend has {len(found)}"
        )
    chosen = get_strategy(strategy)
    chosen.check_available()
    placement = Placement("cpu-sharded", tuple(found), sharded=True)
    return Generated(chosen, placement, size * n_devices)


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


def first_call_stages(subject: Subject) -> Stages:
    """One cold first call, timed whole and stage by stage (``jax.monitoring`` durations)."""
    call = cold_call(subject)
    with count_compiles() as stats:
        start = time.perf_counter()
        call()
        seconds = time.perf_counter() - start
    return Stages(stats.trace_seconds, stats.lower_seconds, stats.compile_seconds, seconds)


STAGE_CALLS = 5
StageKey = tuple[str, int, str, int]


def typical_stages(subject: Subject, calls: int = STAGE_CALLS, warm_up: bool = True) -> Stages:
    """The median of ``calls`` cold first calls, with that call's own stages (not per-stage
    medians); ``warm_up``: one uncounted cold call first."""
    if warm_up:
        first_call_stages(subject)
    runs = sorted((first_call_stages(subject) for _ in range(calls)), key=lambda r: r.call)
    return runs[(len(runs) - 1) // 2]


def stage_table(
    strategies: list[str], sizes: list[int], specs: list[str], values: tuple[int, ...] = (1,),
    calls: int = STAGE_CALLS, axis: str = "n_ops",
) -> dict[StageKey, Stages]:  # fmt: skip
    """:func:`typical_stages` of every combination this process can run, keyed (strategy,
    size, device, value of the shape's ``axis``: ``n_ops`` or ``depth``); unsharded specs."""
    table = {}
    for spec in specs:
        for name in strategies:
            warmed = False
            for size in sizes:
                for value in values:
                    try:
                        subject = Row(name, spec, size, Shape(**{axis: value})).load()
                    except NotImplementedError:
                        continue
                    table[name, size, spec, value] = typical_stages(subject, calls, not warmed)
                    warmed = True
    return table


def hazard_totals(rows: Sequence[Row]) -> dict[tuple[str, str], dict[str, int | None] | NoFigure]:
    """The audit's totals per (subject, device) this process can serve: an absent device is
    left out (n/a), a subject whose audit fails maps to why (its rows fail with it)."""
    if any(parse_spec(row.device) == ("cpu", True) for row in rows):
        ensure_host_devices()  # before the first resolve starts the CPU backend
    found: dict[tuple[str, str], dict[str, int | None] | NoFigure] = {}
    for row in rows:
        try:
            found[row.subject, row.device] = audit_subject(row.load()).totals()
        except NotImplementedError:
            continue
        except JitbenchError as exc:
            found[row.subject, row.device] = NoFigure(str(exc), failed=True)
    return found
