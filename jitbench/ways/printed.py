"""advise's printed code, run as printed: a way's code (``Way.code``) split as its user runs it
(:class:`Printed`), and an object called through it (:class:`PrintedSubject`, a subject the
audit plays; :mod:`jitbench.measure.printed_audit` audits it in a fresh process). Why:
docs/advise.md, "The recommendation, run".
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import re
import weakref
from collections.abc import Callable

from jitbench.errors import JitbenchError, error_text
from jitbench.targets import Target
from jitbench.ways import calls
from jitbench.ways.names import Names, names_of
from jitbench.ways.record import Way
from jitbench.ways.subject import Before, Walked

# The comment that marks a line its user runs again for a new object.
ONCE_PER_OBJECT = "once, outside the loop"
# The modules a way's code names, by the name it reads each by.
MODULES = {"jax": "jax", "eqx": "equinox", "nnx": "flax.nnx", "pz": "penzai.pz"}


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


def namespace(target: Target, names: Names, raw: calls.Raw, code: str) -> dict[str, object]:
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
        self.raw = calls.unjitted(target)
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
