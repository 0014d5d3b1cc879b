"""advise's printed code, run as printed: a way's code (``Way.code``) split as its user runs it
(:class:`Printed`), an object called through it (:class:`PrintedSubject`, a subject the audit
plays), and a way's code audited in a fresh process that imports the target's module as the
counting process does (:func:`run_printed`; ``python -m jitbench.ways.printed`` is that
process). Why: docs/advise.md, "The recommendation, run".
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import os
import re
import tempfile
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

from jitbench import child
from jitbench.auditing.audit import audit_subject
from jitbench.auditing.subject import Before, Walked
from jitbench.auditing.verdict import hazards
from jitbench.child import Json
from jitbench.devices import resolve, use_device
from jitbench.errors import JitbenchError, NoFigure, error_text
from jitbench.measure.case import Row
from jitbench.strategies.catalog import Names, Way
from jitbench.targets import Target, child_environment, load_target
from jitbench.ways import builders as build
from jitbench.ways.catalog import AS_WRITTEN, names_of, way_of

# The comment that marks a line its user runs again for a new object.
ONCE_PER_OBJECT = "once, outside the loop"
# The modules a way's code names, by the name it reads each by.
MODULES = {"jax": "jax", "eqx": "equinox", "nnx": "flax.nnx", "pz": "penzai.pz"}
# The hazards the recommended code must not have (docs/advise.md).
REFUSED = ("stale", "error", "leak")
# The seconds a fresh process may take to audit a way's code (a deep model's audit: minutes).
TIMEOUT_S = 1200.0


@dataclasses.dataclass(frozen=True)
class Printed:
    """A way's code split as its user runs it: ``setup``, run once (an import, definitions, a
    registration); ``per_object``, the lines marked "once, outside the loop", run again for
    every new object; ``call``, its last statement, the call a loop makes; ``result``, the
    name the call's result is read from where the line assigns it (``out`` of a split's
    ``out, state = ...``), "" where the call is an expression."""

    setup: str
    per_object: str
    call: str
    result: str = ""

    @classmethod
    def of(cls, code: str) -> Printed:
        lines = code.splitlines()
        *before, last = ast.parse(code).body

        def source(node: ast.stmt) -> str:  # from its first decorator on
            first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
            return "\n".join(lines[first - 1 : node.end_lineno])

        once = [node for node in before if ONCE_PER_OBJECT in lines[node.lineno - 1]]
        setup = [node for node in before if node not in once]
        result = ""
        if isinstance(last, ast.Assign):
            (target,) = last.targets
            first = target.elts[0] if isinstance(target, ast.Tuple) else target
            assert isinstance(first, ast.Name)
            result = first.id
        return cls("\n\n".join(map(source, setup)), "\n".join(map(source, once)), source(last),
                   result)  # fmt: skip


def namespace(target: Target, names: Names, raw: build.Raw, code: str) -> dict[str, object]:
    """What the user's module holds where ``code`` runs: the modules it names, ``partial``,
    the object's class (as shipped: the code's own import line imports it where it is a
    library's), the name the code reads the raw call by (``Names.binds``: the raw function,
    its jit decorator removed as the code says, or the call as written whose ``__wrapped__``
    it reads) and the call's arguments by their names."""
    space: dict[str, object] = {"partial": functools.partial, names.cls: type(target.obj)}
    for alias, module in MODULES.items():
        if re.search(rf"\b{alias}\.", code):
            space[alias] = importlib.import_module(module)
    root = names.fn.partition(".")[0]
    if names.binds == "raw":
        space[root] = raw
    elif names.binds == "written":
        space[root] = target.call
    values = (*target.inputs, *target.kwargs.values())
    space.update(zip([a.strip() for a in names.args.split(",") if a.strip()], values, strict=True))
    return space


class _Kept(tuple):
    """What the audit keeps of the object before a call (:meth:`Walked.before`), holding the
    object's :class:`_Slot` for as long as the audit keeps it."""

    slot: _Slot


class _Slot:
    """What a user's loop over one object holds: the code's names, with what the lines run once
    per object made for it (a partition, a split). It lives as long as the audit keeps the
    state before the object's call (:meth:`PrintedSubject.before`), as a loop keeps its own
    until it moves on to another object or ends: nothing of jitbench's keeps an object alive
    that the user's code would let go."""

    def __init__(self, obj: object, space: dict[str, object]) -> None:
        self.obj, self.space = obj, space


class PrintedSubject(Walked):
    """The target's object called through a way's code as printed (``Way.code``), run in a
    namespace holding what the user's module would (:func:`namespace`): its setup run once
    (a pytree registration of the class as shipped, a jit), the lines it marks once per
    object run for each new object, its last line at every call. Judged against the raw call
    without jit, as the way's row is; new objects are the factory's, never converted."""

    def __init__(self, target: Target, way: Way) -> None:
        self.raw = build.unjitted(target)
        names = names_of(target, self.raw)
        self.code = way.code(names)
        self.printed = Printed.of(self.code)
        self.var = names.var
        self.space = namespace(target, names, self.raw, self.code)
        where = f"<{way.label}, as printed>"
        try:
            exec(compile(self.printed.setup, where, "exec"), self.space)
        except Exception as exc:
            raise JitbenchError(f"its code raises as printed: {error_text(exc)}") from None
        self._per_object = compile(self.printed.per_object, where, "exec")
        self._call = compile(self.printed.call, where, "exec" if self.printed.result else "eval")
        self._slots: weakref.WeakValueDictionary[int, _Slot] = weakref.WeakValueDictionary()
        super().__init__(target)
        self.name = f"{target.name} ({way.label}, as printed)"
        self.filtered = way.filters  # the fields as the way's own call sees them

    def _slot(self, obj: object) -> _Slot:
        slot = self._slots.get(id(obj))
        if slot is None or slot.obj is not obj:
            slot = _Slot(obj, dict(self.space))
            self._run(slot, self._per_object)
            self._slots[id(obj)] = slot
        return slot

    def _run(self, slot: _Slot, code: object) -> object:
        slot.space[self.var] = slot.obj
        if code is self._call and not self.printed.result:
            return eval(code, slot.space)
        exec(code, slot.space)
        return slot.space.get(self.printed.result)

    def call(self, obj: object) -> Callable[[], object]:
        slot = self._slot(obj)
        return lambda: self._run(slot, self._call)

    def before(self, obj: object) -> Before:
        kept = _Kept(super().before(obj))
        kept.slot = self._slot(obj)
        return kept

    def unjitted(
        self, obj: object, inputs: tuple[object, ...], kwargs: dict[str, object]
    ) -> object:
        """The raw call's result (the oracle's call), as the way's row judges it."""
        return self.raw(obj, *inputs, **kwargs)


@dataclasses.dataclass(frozen=True)
class Run:
    """A way's code run as printed in a fresh process and audited: its hazards and their
    findings in words, or why it could not be audited (``failed``)."""

    way: str
    hazards: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()
    failed: str = ""

    @property
    def clean(self) -> bool:
        """Audited, never stale, never raising, nothing kept alive."""
        return not self.failed and not set(REFUSED) & set(self.hazards)

    def said(self) -> str:
        """What the run found, in words: the hazards it must not have and the first finding
        (the most severe), or why it could not be audited; "" where it is clean."""
        if self.failed:
            return self.failed
        bad = [h for h in self.hazards if h in REFUSED]
        if not bad:
            return ""
        return f"{', '.join(bad)}: {self.findings[0]}" if self.findings else ", ".join(bad)


def run_printed(
    rows: Sequence[Row], *, fields: str | Sequence[str | None] | None = None,
    arrays: int | None = None,
) -> list[Run]:  # fmt: skip
    """The audit of each row's way (``Row.way``; the call as written for :data:`AS_WRITTEN`) on
    its target, its code run as printed, on the CPU (a process cannot open an accelerator
    another one holds): the rows one after the other in one fresh process that imports their
    targets as the counting process does. A row sees what the rows before it did to their
    classes (a pytree registration): rows of one class need a process each. ``fields``: the
    audit's fields pattern, for every row or one per row."""
    env = {**os.environ, **child_environment(s for r in rows for s in r.specs)}
    patterns = [fields] * len(rows) if fields is None or isinstance(fields, str) else fields
    request: Json = {
        "rows": [{"row": dataclasses.replace(r, device="cpu").to_json(), "fields": f}
                 for r, f in zip(rows, patterns, strict=True)],
        "arrays": arrays,
    }  # fmt: skip
    ways = ", ".join(dict.fromkeys(str(r.way) for r in rows))
    with tempfile.TemporaryDirectory(prefix="jitbench-printed-") as folder:
        try:
            found = child.work(["-m", __name__], request, Path(folder), timeout=TIMEOUT_S,
                               what=f"the code of {ways}, run as printed",
                               env={**env, "JAX_PLATFORMS": "cpu"})  # fmt: skip
        except JitbenchError as exc:
            return [Run(str(r.way), failed=str(exc)) for r in rows]
    assert isinstance(found, list)
    runs = []
    for row, got in zip(rows, found, strict=True):
        reason = NoFigure.from_json(got)
        if reason is not None:
            runs.append(Run(str(row.way), failed=reason.reason))
        else:
            assert isinstance(got, dict)
            runs.append(Run(str(row.way), tuple(got["hazards"]), tuple(got["findings"])))
    return runs


def audited(request: Json) -> Json:
    """The fresh process's answer: for each row, the audit of its way as printed (of the call as
    written for :data:`AS_WRITTEN`), its hazards and findings by the names advise's rows use,
    or why it has none (a NoFigure's JSON: it cannot be built, its code raises as printed)."""
    assert isinstance(request, dict) and isinstance(request["rows"], list)
    answers: list[Json] = []
    for asked in request["rows"]:
        assert isinstance(asked, dict)
        row = Row.from_json(asked["row"])
        kwargs = {"fields": asked["fields"]}
        if request.get("arrays") is not None:
            kwargs["arrays"] = request["arrays"]
        try:
            if row.way == AS_WRITTEN:
                subject = dataclasses.replace(row, way=None).load()
            else:
                use_device(resolve(row.device))
                target = load_target(row.subject, call=row.call, inputs=row.inputs)
                subject = PrintedSubject(target, way_of(target, str(row.way)))
            audit = audit_subject(subject, **kwargs)  # type: ignore[arg-type]
        except Exception as exc:  # this row's answer: the next rows still run
            answers.append(NoFigure.of(exc).to_json())
            continue
        answers.append({"hazards": [str(h) for h in audit.hazards()], "findings": hazards(audit)})
    return answers


if __name__ == "__main__":
    child.serve(audited)
