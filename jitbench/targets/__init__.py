"""A target: a user's own object with a jitted method and the call to measure, and how to load
one by name (``package.module:factory``, the factory kept to build new instances as the user
does). Importing this module imports neither JAX nor the user's packages: loading does.
Design notes: docs/design.md.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.abc
import importlib.machinery
import json
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence

from jitbench.errors import JitbenchError

DEFAULT_CALL = "__call__"
Call = str | Callable[..., object]  # a method's name, or a function: call(obj, *inputs)
# Where a child process finds the top-level modules its parent imported through a finder
# of its own (asv's suite folder): JSON {name: folder}, read by :func:`resolve_name`.
IMPORT_ROOTS_ENV = "JITBENCH_IMPORT_ROOTS"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class Inputs:
    """The arguments of a target's call, keyword ones included: ``Inputs(x, training=False)``
    (what an ``--inputs`` function may return, or a :class:`Target`'s ``inputs``)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.args, self.kwargs = args, kwargs

    def __repr__(self) -> str:
        return f"Inputs(*{self.args!r}, **{self.kwargs!r})"


@dataclasses.dataclass(frozen=True)
class Target:
    """An object, the arguments of its call, and which call to measure.

    ``call`` is a method name (``obj.call(*inputs, **kwargs)``) or a function taking
    the object first (``call(obj, *inputs, **kwargs)``: a jitted function over a
    model). ``inputs`` may be an :class:`Inputs` (keyword arguments too). ``factory``
    builds a new instance as the user does (``None`` when the object was handed over
    as it is; then a copy stands in for a new one).
    """

    obj: object
    inputs: tuple[object, ...] | Inputs = ()
    call: Call = DEFAULT_CALL
    name: str = ""
    factory: Callable[[], object] | None = None
    kwargs: dict[str, object] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.inputs, Inputs):
            object.__setattr__(self, "kwargs", {**self.kwargs, **self.inputs.kwargs})
            object.__setattr__(self, "inputs", self.inputs.args)
        object.__setattr__(self, "inputs", tuple(self.inputs))
        if not self.name:
            object.__setattr__(self, "name", type(self.obj).__name__)

    @property
    def call_name(self) -> str:
        """The call as a user reads it: ``__call__``, ``calc`` or ``module.function``."""
        if isinstance(self.call, str):
            return self.call
        module = getattr(self.call, "__module__", None) or "?"
        name = getattr(self.call, "__qualname__", "?")
        # A wrapper keeps its function's names (jax.jit(quax.quaxify(run)) is "run"): the
        # name its module holds it by, where that is another.
        space = vars(sys.modules[module]) if module in sys.modules else {}
        held = [k for k, v in space.items() if v is self.call]
        return f"{module}.{name if name in held or not held else held[0]}"

    def function(self) -> Callable[[], object]:
        """The call on this object with its inputs, as a zero-argument function."""
        return self.function_of(self.obj)

    def function_of(self, obj: object) -> Callable[[], object]:
        """The same call on another instance ``obj`` (a changed or a new one)."""
        inputs, kwargs = self.inputs, self.kwargs
        if isinstance(self.call, str):
            method = getattr(obj, self.call)
            return lambda: method(*inputs, **kwargs)
        function = self.call
        return lambda: function(obj, *inputs, **kwargs)

    def new_instance(self) -> object:
        """A new object from the factory; JitbenchError when there is none or it raises."""
        if self.factory is None:
            raise JitbenchError(f"target {self.name!r} has no factory to build a new instance")
        made = _called(self.factory, f"target factory {self.name!r}")
        return made.obj if isinstance(made, Target) else made


class _RootFinder(importlib.abc.MetaPathFinder):
    """Finds the one top-level module ``name`` in ``folder`` alone, as asv's own finder
    imports its suite folder: nothing else in that folder becomes importable."""

    def __init__(self, name: str, folder: str) -> None:
        self.name, self.folder = name, folder

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [self.folder])


def import_roots(specs: Iterable[str | None]) -> dict[str, str]:
    """{top-level module: folder} of the ``package.module:name`` specs whose module this
    process imported from where its ``sys.path`` would not find it (asv imports its suite
    folder through a finder of its own), for a child process (:func:`child_environment`)."""
    roots = {}
    for spec in specs:
        top = (spec or "").partition(":")[0].partition(".")[0]
        module = sys.modules.get(top)
        folder = _folder(getattr(module, "__spec__", None))
        if folder is None:
            continue
        found = importlib.machinery.PathFinder.find_spec(top)
        if _folder(found) != folder:
            roots[top] = folder
    return roots


def _folder(spec: importlib.machinery.ModuleSpec | None) -> str | None:
    """The folder a top-level module's ``spec`` finds it in (a package's parent)."""
    if spec is None:
        return None
    locations = list(spec.submodule_search_locations or [])
    if locations:
        return os.path.dirname(os.path.abspath(locations[0]))
    return os.path.dirname(os.path.abspath(spec.origin)) if spec.origin else None


def child_environment(specs: Iterable[str | None]) -> dict[str, str]:
    """What a child process of this one needs in its environment to import what this one
    imports for ``specs``: this process's ``sys.path`` (as ``PYTHONPATH``) and the
    :func:`import_roots`."""
    path = os.pathsep.join(dict.fromkeys(os.path.abspath(p or os.curdir) for p in sys.path))
    return {"PYTHONPATH": path, IMPORT_ROOTS_ENV: json.dumps(import_roots(specs))}


def use_import_roots(roots: Mapping[str, str]) -> None:
    """Import each top-level module of ``roots`` from its folder (:func:`import_roots`)."""
    known = {(f.name, f.folder) for f in sys.meta_path if isinstance(f, _RootFinder)}
    for name, folder in roots.items():
        if (name, folder) not in known:
            sys.meta_path.insert(0, _RootFinder(name, folder))


@functools.cache
def _roots_from_environment() -> None:
    text = os.environ.get(IMPORT_ROOTS_ENV, "")
    if text:
        use_import_roots(json.loads(text))


def resolve_name(spec: str, what: str) -> object:
    """The object named ``package.module:attribute`` (dotted attributes allowed)."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise JitbenchError(f"{what} {spec!r} must be package.module:name, with a ':'")
    _roots_from_environment()
    try:
        value: object = importlib.import_module(module_name)
    except Exception as exc:
        raise JitbenchError(
            f"{what} {spec!r}: cannot import module {module_name!r}: {_first_line(exc)}"
        ) from None
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise JitbenchError(f"{what} {spec!r}: {module_name!r} has no attribute {attribute!r}")
        value = getattr(value, part)
    return value


def _called(function: Callable[[], object], what: str) -> object:
    """What ``function`` returns; a JitbenchError naming ``what`` where it raises."""
    try:
        return function()
    except Exception as exc:
        raise JitbenchError(f"{what} raised {_first_line(exc)}") from None


def _methods(obj: object) -> list[str]:
    names = [n for n in dir(obj) if not n.startswith("_") and callable(getattr(obj, n, None))]
    return (["__call__"] if callable(obj) else []) + names


def check_call(target: Target) -> None:
    """JitbenchError unless the target's call names a callable method or is a function."""
    if not isinstance(target.call, str):
        if not callable(target.call):
            raise JitbenchError(f"call {target.call!r} of target {target.name!r} is not callable")
        return
    method = getattr(target.obj, target.call, None)
    if method is None or not callable(method):
        kind = "no method" if method is None else "a non-callable attribute"
        valid = ", ".join(_methods(target.obj)) or "none"
        raise JitbenchError(
            f"target {target.name!r} ({type(target.obj).__name__}) has {kind} "
            f"{target.call!r}; its methods: {valid}"
        )


def resolve_callable(spec: str, what: str) -> Callable[..., object]:
    """:func:`resolve_name`, and a JitbenchError unless what it names is callable."""
    found = resolve_name(spec, what)
    if not callable(found):
        raise JitbenchError(f"{what} {spec!r} is not callable: it is a {type(found).__name__}")
    return found


def load_target(spec: str, *, call: str | None = None, inputs: str | None = None) -> Target:
    """The target that the factory ``package.module:factory`` builds.

    ``call``: a method name, or ``package.module:function`` called as
    ``function(obj, *inputs)``; ``inputs``: ``package.module:function``
    returning the arguments. Either overrides what a factory returning a
    :class:`Target` chose. Every failure is one JitbenchError naming the value.
    """
    return as_target(spec, call=call, inputs=inputs)


def as_target(target: object, *, call: Call | None = None, inputs: object = None) -> Target:
    """Every entry point's target (``jitbench.audit_object``, ``time_object``,
    ``advise_object``, ``assert_jit_safe``, the command line), from any of its forms.

    ``target``: a :class:`Target`; a ``package.module:factory`` spec; a factory function
    (it builds each new instance as the project does); or the object itself. ``call``: a
    method name, a function called as ``call(obj, *inputs)``, or its
    ``package.module:function`` spec. ``inputs``: a ``package.module:function`` spec
    returning them, an :class:`Inputs`, a tuple or list, or one value. ``call`` and
    ``inputs`` override what a factory's :class:`Target` chose. Every failure is one
    JitbenchError naming the value.
    """
    import inspect

    if isinstance(target, str) or inspect.isfunction(target):
        spec = isinstance(target, str)
        name = target if spec else f"{target.__module__}:{target.__qualname__}"
        factory = resolve_callable(target, "target") if spec else target
        made = _called(factory, f"target factory {name!r}")
        made = made if isinstance(made, Target) else Target(made)
        found = dataclasses.replace(made, name=name, factory=made.factory or factory)
    elif isinstance(target, Target):
        found = target
    else:
        found = Target(target)
    if call is not None:
        if not isinstance(call, str) and not callable(call):
            raise JitbenchError(
                f"call {call!r} must be a method name or a function called as call(obj, *inputs)"
            )
        if isinstance(call, str) and ":" in call:  # package.module:function, as --call
            call = resolve_name(call, "call")
        found = dataclasses.replace(found, call=call)
    if inputs is not None:
        if isinstance(inputs, str) and ":" in inputs:  # package.module:function, as --inputs
            inputs = _called(resolve_callable(inputs, "inputs"), f"inputs {inputs!r}")
        if not isinstance(inputs, Inputs):
            inputs = tuple(inputs) if isinstance(inputs, tuple | list) else (inputs,)
        kwargs = inputs.kwargs if isinstance(inputs, Inputs) else found.kwargs
        found = dataclasses.replace(found, inputs=inputs, kwargs=kwargs)
    check_call(found)
    return found
