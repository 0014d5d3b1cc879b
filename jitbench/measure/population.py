"""Many live instances of one strategy: what a process holding a population pays, for its
first instance and for a jit made after it (jax issue 39078; see docs/scaling.md).
"""

from __future__ import annotations

import gc
import json
import resource
import sys
import tempfile
import timeit
import weakref
from collections.abc import Callable
from pathlib import Path
from types import FrameType

from jitbench import child
from jitbench.child import Json
from jitbench.compiles import block, use_persistent_cache
from jitbench.errors import JitbenchError, NoFigure, opted_in
from jitbench.measure.case import Prepared, Row
from jitbench.measure.timing import sample
from jitbench.ways.subject import Subject

# The populations of the asv family: one, a hundred, and past the 8,192 live jitted
# functions of jax issue 39078.
INSTANCE_COUNTS = (1, 100, 10_000)
OPT_IN_ENV = "JITBENCH_INSTANCES"


# The figures one process measures of one population (see measure()); the asv family
# records each as track_NAME.
FIGURES = (
    "first_call", "first_call_dispatch", "after_jit_call", "after_jit_dispatch",
    "after_jit_python_calls", "build_seconds", "peak_rss", "kept_alive",
)  # fmt: skip
# The figures that are no seconds, and their units.
UNITS = {"after_jit_python_calls": "calls", "peak_rss": "bytes", "kept_alive": "instances"}
# Seconds one population's process may take (10,000 instances that each compile).
TIMEOUT_S = 3600
# The program of a population's process (child.work's worker).
PROGRAM = ("-m", "jitbench.measure.population")


def opt_in_reason() -> str:
    return (
        "many live instances are opt-in (a compile per instance for several strategies, "
        f"minutes): nox -s instances, or {OPT_IN_ENV}=1 asv run -b Population"
    )


class Population:
    """``n`` instances of ``subject``, each called once and kept; ``first`` calls instance 0,
    ``after`` a new jit object made and compiled once the population exists, as user code
    jits after a population."""

    def __init__(self, subject: Subject, n: int) -> None:
        import jax

        if n < 1:
            raise JitbenchError(f"a population needs at least one instance, got {n}")
        self.members = [Prepared(subject, seed=seed) for seed in range(n)]
        first = self.members[0]
        self.first, self.first_dispatch = first.call, first.dispatch
        # An array argument for the jit made after the population: the subject's own input.
        self.y = next(iter(subject.target.inputs), None)
        if self.y is None:
            self.y = jax.numpy.ones(8)
        self.after_function = jax.jit(lambda y: y * 2.0 + 1.0)
        block(self.after_function(self.y))

    def after(self) -> object:
        """A cached call of the jitted function created after the population."""
        return block(self.after_function(self.y))

    def after_dispatch(self) -> object:
        return self.after_function(self.y)

    def kept_alive(self) -> int:
        """How many instances outlive the population once it lets go of them and the
        collector ran: held by something else (jit's caches, for a static ``self``)."""
        refs = [weakref.ref(member.obj) for member in self.members]
        self.members.clear()
        self.first = self.first_dispatch = None  # type: ignore[assignment]
        gc.collect()
        return sum(ref() is not None for ref in refs)


def python_calls(function: Callable[..., object], *args: object, calls: int = 10) -> float:
    """Python functions entered per call of ``function(*args)`` (after one call to warm it):
    none on jit's C++ fast path, several on every call that falls back to Python."""
    function(*args)
    entered = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal entered
        if event == "call":
            entered += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        for _ in range(calls):
            function(*args)
    finally:
        sys.setprofile(previous)
    return entered / calls


def measure(row: Row) -> dict[str, float]:
    """Every figure of :data:`FIGURES` for ``row.instances`` live instances of the row's
    subject, in this process (built with the on-disk cache in a temporary folder; times in
    seconds per call; ``kept_alive`` last: it lets the population go)."""
    subject = row.load()
    with tempfile.TemporaryDirectory(prefix="jitbench-population-") as folder:
        use_persistent_cache(folder)
        start = timeit.default_timer()
        population = Population(subject, row.instances)
        build = timeit.default_timer() - start
        use_persistent_cache(None)
    figures = {
        "first_call": sample(population.first, repeat=7, number=200).median,
        "first_call_dispatch": sample(population.first_dispatch, repeat=7, number=200).median,
        "after_jit_call": sample(population.after, repeat=7, number=200).median,
        "after_jit_dispatch": sample(population.after_dispatch, repeat=7, number=200).median,
        "after_jit_python_calls": python_calls(population.after_function, population.y),
        "build_seconds": build,
        # ru_maxrss is in KiB on Linux: the process's peak, population included.
        "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0,
    }
    figures["kept_alive"] = population.kept_alive()
    return figures


def store() -> Path | NoFigure:
    """A new folder (in the system's temporary one) where a run's populations are kept once
    measured (:func:`lookup`), one JSON file each; or, when not opted in
    (:data:`OPT_IN_ENV`), the one reason no population is measured."""
    if not opted_in(OPT_IN_ENV):
        return NoFigure(opt_in_reason())
    return Path(tempfile.mkdtemp(prefix="jitbench-populations-"))


def _measured(row: Row) -> Json:
    """One population's figures from a fresh process (:func:`main`), or why there are none."""
    what = f"{row.instances} instances of {row.subject}"
    with tempfile.TemporaryDirectory(prefix="jitbench-population-") as folder:
        try:
            return child.work(PROGRAM, row.to_json(), Path(folder), what=what, timeout=TIMEOUT_S)
        except JitbenchError as exc:
            return NoFigure(str(exc), failed=True).to_json()


def lookup(
    found: Path | NoFigure, strategy: str, n: int, device: str, size: int
) -> dict[str, float]:
    """The figures of one population, measured on first use (one process at a time, as
    asv runs its benchmarks); NotImplementedError (asv: n/a) or JitbenchError if none."""
    if isinstance(found, NoFigure):
        found.throw()
    path = found / f"{strategy}-{n}-{device}-{size}.json"
    if path.exists():
        entry = json.loads(path.read_text())
    else:
        entry = _measured(Row(strategy, device, size, instances=n))
        path.write_text(json.dumps(entry))
    missing = NoFigure.from_json(entry)
    if missing is not None:
        missing.throw()
    return entry


def main() -> None:
    """``python -m jitbench.measure.population REQUEST RESULT``: the figures of the population
    a row's JSON asks for (:func:`measure`), as JSON; or why there are none."""
    child.serve(lambda request: measure(Row.from_json(request)))


if __name__ == "__main__":
    main()
