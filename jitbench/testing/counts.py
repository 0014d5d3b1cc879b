"""The counts snapshot: instructions per cached call and per dispatch, counted under Valgrind
in a process of their own, against a baseline file committed in the project.

Imports neither JAX nor the counting machinery (the plugin loads this module in every pytest
run): :func:`versions`, :func:`spec_of`, :func:`check_counts` and ``_count`` import it
when called, this module's only imports inside functions. Design notes in docs/design.md.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import platform
import time
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypedDict

from jitbench.errors import JitbenchError, NoFigure
from jitbench.options import COUNT_TOLERANCE

BASELINE_NAME = "jitbench-counts.json"
# What a baseline counts: the target, call and inputs specs, and the device.
What = dict[str, str | None]


class Entry(TypedDict, total=False):
    """A baseline's entry, as the file holds it: what it counts, the instructions per kind
    of call, and the versions they were counted with."""

    target: str
    call: str | None
    inputs: str | None
    device: str
    instructions: dict[str, float]
    versions: dict[str, str]


# What a check judges: the host's share of a cached call and of a dispatch (the calling
# thread outside XLA's run of the program, see docs/counting.md); the whole call's counts are
# written beside them. A baseline written before the host's share was counted is judged by
# the counts it has.
GATED = ("host_call", "host_dispatch")
UPDATE_FLAG = "--jitbench-update-counts"
REFRESH = f"refresh it with pytest {UPDATE_FLAG} (check_counts(update=True) elsewhere)"
# The file's format, and the packages whose versions a count depends on (see docs/testing.md).
FORMAT = 1
PACKAGES = ("jax", "jaxlib", "numpy", "flax", "equinox", "filelock", "jitbench")
ABSENT = "absent"
_LIBRARY_FOLDERS = (
    f"/usr/lib/{platform.machine()}-linux-gnu",
    f"/lib/{platform.machine()}-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/lib64",
    "/lib",
    "/usr/local/lib",
)


class CountsImproved(UserWarning):
    """A count fell by more than the tolerance: the baseline no longer holds the gain."""


@dataclasses.dataclass(frozen=True)
class CountsCheck:
    """One check's outcome: the counts now (instructions per call, by figure: ``call``,
    ``dispatch``, ``host_call``, ``host_dispatch``), the baseline's (None where this check
    wrote it) and the file."""

    key: str
    counts: dict[str, float]
    baseline: dict[str, float] | None
    path: Path

    def ratio(self, kind: str) -> float:
        """Now over the baseline for the figure ``kind`` (e.g. ``host_call``)."""
        if self.baseline is None:
            raise JitbenchError(f"{self.key}: the baseline was written by this check")
        return self.counts[kind] / self.baseline[kind]

    @property
    def judged(self) -> list[str]:
        """The figures the check judges: :data:`GATED` where the baseline has them, else every
        figure both have (a baseline written before the host's share was counted)."""
        if self.baseline is None:
            return []
        common = [kind for kind in self.baseline if kind in self.counts]
        return [kind for kind in GATED if kind in common] or common


def versions() -> dict[str, str]:
    """What a count depends on besides the project's code: Python, the machine, tcmalloc and
    :data:`PACKAGES` (``absent`` where one is not installed)."""
    from jitbench.measure.counting.callgrind import allocator

    found = {"python": platform.python_version(), "machine": platform.machine()}
    found["tcmalloc"] = _library_file(allocator())
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = ABSENT
    return found


def _library_file(library: str) -> str:
    """A shared library's versioned file name (``libtcmalloc_minimal.so.4.5.16``)."""
    folders = [*os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep), *_LIBRARY_FOLDERS]
    for path in (os.path.join(f, library) for f in folders if f):  # an absolute one: itself
        if os.path.exists(path):
            return os.path.basename(os.path.realpath(path))
    return os.path.basename(library)


def spec_of(value: str | Callable[..., object], what: str) -> str:
    """``package.module:name`` of a function (which the counting process imports), or the
    spec given, checked; JitbenchError naming the value otherwise."""
    from jitbench.targets import resolve_name

    if isinstance(value, str):
        found = resolve_name(value, what)
        if not callable(found):
            raise JitbenchError(f"{what} {value!r} is not callable: it is a {type(found).__name__}")
        return value
    if not callable(value):
        raise JitbenchError(
            f"{what} {value!r} must be a module-level function or its 'package.module:name'"
        )
    spec = f"{getattr(value, '__module__', None)}:{getattr(value, '__qualname__', None)}"
    try:
        found = resolve_name(spec, what)
    except JitbenchError:
        found = None
    if found is not value:
        raise JitbenchError(
            f"{what} {value!r} cannot be imported by name as {spec!r} (defined inside a "
            "function, or not where its module says): the counting process imports it; "
            "give a module-level function or its 'package.module:name'"
        )
    return spec


def read(path: Path) -> dict[str, Entry]:
    """The entries of a baseline file by key (none where it does not exist)."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        entries = data["entries"]
    except (ValueError, KeyError, TypeError) as exc:
        raise JitbenchError(
            f"{path} is not a jitbench counts file ({type(exc).__name__}: {exc}); "
            f"remove it and {REFRESH}"
        ) from None
    return dict(entries)


def write(path: Path, key: str, entry: Entry) -> None:
    """Set ``key``'s entry in the file (kept sorted), replacing the file at once."""
    entries = {**read(path), key: entry}
    data = {
        "format": FORMAT,
        "about": "instructions per cached call and per dispatch of the calling thread, whole "
        "and outside XLA's run of the program (host_), counted by jitbench under Valgrind; "
        f"{REFRESH}",
        "entries": dict(sorted(entries.items())),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(partial, path)


def _skip(reason: str) -> Exception:
    """unittest's skip, which pytest reports as a skip too."""
    import unittest

    return unittest.SkipTest(reason)


def _differ(old: Mapping[str, object], new: Mapping[str, object]) -> tuple[str, str]:
    """The entries in which two dicts differ, as ``name value, ...`` for each."""
    names = [n for n in {**old, **new} if old.get(n) != new.get(n)]
    old_text, new_text = (
        ", ".join(f"{n} {side.get(n, ABSENT)}" for n in names) for side in (old, new)
    )
    return old_text, new_text


def check_counts(
    target: str | Callable[..., object],
    *,
    key: str,
    baseline: str | os.PathLike[str] = BASELINE_NAME,
    call: str | Callable[..., object] | None = None,
    inputs: str | Callable[[], object] | None = None,
    device: str = "cpu",
    tolerance: float = COUNT_TOLERANCE,
    update: bool = False,
    progress: Callable[[str], None] | None = None,
) -> CountsCheck:
    """Count ``target``'s cached call and dispatch under Valgrind and compare them with the
    baseline of ``key`` in the file ``baseline``.

    ``target`` is a factory returning the object (or a :class:`jitbench.Target`), as a
    module-level function or its ``package.module:factory``; ``call`` a method name or
    a function called as ``call(obj, *inputs)``; ``inputs`` a function returning the
    arguments (the counting process imports them by name, with this process's
    ``sys.path``). ``update`` writes the counts as the baseline. ``progress`` is told, in
    one line, when the counting process starts (the pytest fixture shows it); a process
    that fails or outlives its limit is an AssertionError of one line, with its seconds.

    The check judges the host's share of the call and of the dispatch (:data:`GATED`; the
    whole call's counts, which on a compute-heavy model are mostly XLA's kernels, are written
    beside them). Raises AssertionError when a judged count grew beyond ``tolerance`` (old,
    new and ratio), or when the file has no entry for ``key``; unittest.SkipTest (a skip
    under pytest) where Valgrind or tcmalloc is missing, or where the baseline was counted
    with other versions (both named). A count that fell beyond the tolerance warns
    :class:`CountsImproved`.
    """
    __tracebackhide__ = True  # pytest: the failure is the caller's line
    spec = spec_of(target, "target")
    call_spec = call if isinstance(call, str) and ":" not in call else None
    if call is not None and call_spec is None:
        call_spec = spec_of(call, "call")
    inputs_spec = None if inputs is None else spec_of(inputs, "inputs")
    if isinstance(tolerance, bool) or not isinstance(tolerance, int | float) or tolerance < 0:
        raise JitbenchError(f"tolerance {tolerance!r} must be a fraction, 0 or more (e.g. 0.01)")
    path = Path(baseline)
    what: What = {"target": spec, "call": call_spec, "inputs": inputs_spec, "device": device}
    from jitbench.measure.counting import callgrind

    reason = callgrind.unavailable_reason()
    if reason is not None:
        raise _skip(f"instruction counts not checked: {reason}")
    now = versions()
    entry = None if update else read(path).get(key)
    if not update:
        _check_entry(entry, key, path, what, now)
    if progress is not None:
        progress(f"jitbench: counting {spec} under Valgrind, in a process of its own")
    counts = _count(what)
    if update:
        write(path, key, {**what, "instructions": counts, "versions": now})
        return CountsCheck(key, counts, None, path)
    assert entry is not None
    checked = CountsCheck(key, counts, entry["instructions"], path)
    _judge(checked, spec, device, tolerance)
    return checked


def _check_entry(
    entry: Entry | None, key: str, path: Path, what: What, now: dict[str, str]
) -> None:
    """Fail without a baseline or with one of something else; skip one of other versions."""
    __tracebackhide__ = True
    if entry is None:
        raise AssertionError(f"no baseline count of {key} in {path}: {REFRESH}, then commit it")
    counted = {name: entry.get(name) for name in what}
    if counted != what:
        old, new = _differ(counted, what)
        raise AssertionError(
            f"the baseline of {key} in {path} counts {old}; this test counts {new}: {REFRESH}"
        )
    if entry.get("versions") != now:
        old, new = _differ(entry.get("versions") or {}, now)
        raise _skip(
            f"instruction counts not compared: the baseline of {key} was counted with {old}, "
            f"this run has {new}, and counts depend on them: {REFRESH}"
        )


def _count(what: What) -> dict[str, float]:
    """The target's counts per kind of call, from one Valgrind process of its own."""
    __tracebackhide__ = True
    from jitbench.measure.counting import instructions

    kinds = instructions.KINDS
    row = instructions.Row(what["target"], what["device"], call=what["call"], inputs=what["inputs"])
    start = time.monotonic()
    try:
        (found,) = instructions.count_rows([row], timeout=instructions.TIMEOUT_S)
    except JitbenchError as exc:  # one line: the process failed or ran out of time
        raise AssertionError(f"{exc} (after {time.monotonic() - start:.0f} s)") from None
    if isinstance(found, NoFigure):
        if found.failed:
            raise AssertionError(f"counting {what['target']} failed: {found.reason}")
        raise _skip(f"instruction counts not checked: {found.reason}")
    figures = {kind: getattr(found, kind) for kind in (*kinds, *(f"host_{k}" for k in kinds))}
    return {kind: round(value) for kind, value in figures.items() if value is not None}


def _judge(checked: CountsCheck, spec: str, device: str, tolerance: float) -> None:
    """AssertionError where a count grew beyond ``tolerance``; a warning where one fell
    (``jitbench.results.compare.count_mark``'s rule, without pandas)."""
    __tracebackhide__ = True
    assert checked.baseline is not None
    lines = [
        f"  {kind.replace('_', ' ')}: {checked.baseline[kind]:,.0f} -> "
        f"{checked.counts[kind]:,.0f} instructions, ratio {checked.ratio(kind):.4f}"
        for kind in checked.judged
    ]
    where = f"{spec} on {device}, the baseline of {checked.key} in {checked.path}"
    ratios = [checked.ratio(kind) for kind in checked.judged]
    if any(r > 1 + tolerance for r in ratios):
        raise AssertionError(
            f"instructions per call grew beyond the tolerance {tolerance} ({where}):\n"
            + "\n".join(lines)
            + f"\nif the change is intended, {REFRESH}"
        )
    if any(r * (1 + tolerance) < 1 for r in ratios):
        warnings.warn(
            CountsImproved(
                f"instructions per call fell beyond the tolerance {tolerance} ({where}): "
                + "; ".join(line.strip() for line in lines)
                + f"; to keep the gain, {REFRESH}"
            ),
            stacklevel=3,
        )
