"""Ways of jitting a user's call (``jitbench advise``), by kind of object, each built from the
user's own object and method: each an entry of :mod:`jitbench.strategies.catalog` (a
:class:`~jitbench.strategies.catalog.Way`), and its :class:`WaySubject` (see docs/advise.md).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import itertools
import os
import site
import sys
import sysconfig
import textwrap
from collections.abc import Callable

from jitbench.auditing.subject import Walked, call_args
from jitbench.errors import JitbenchError
from jitbench.strategies.catalog import AS_WRITTEN as AS_WRITTEN  # advise's first row
from jitbench.strategies.catalog import (
    BOUND_METHOD_JIT,
    EQUINOX_FILTER_JIT,
    EQX_PARTITION,
    FLAX_NNX_JIT,
    HELPER_FUNCTION,
    JIT_HELD_CALL,
    JIT_TAKING_OBJECT,
    NNX_CACHED_PARTIAL,
    NNX_JIT_PARTIAL,
    NNX_SPLIT_MERGE,
    NNX_SPLIT_OUTPUT,
    NNX_TAKING_OBJECT,
    NNX_TREE_MODE,
    PENZAI_FROZEN,
    PENZAI_VARIABLE_JIT,
    PYTREE_CLASS,
    STATIC_SELF_VALUE_HASH,
    WRITTEN,
    Names,
    Way,
)
from jitbench.targets import Target, kinds
from jitbench.ways import builders as build
from jitbench.ways.builders import Raw

# The kinds of object that have ways (kinds.object_kind's words, and "plain class").
NNX, EQX, PYTREE, PLAIN = "nnx.Module", "eqx.Module", "registered pytree", "plain class"
PENZAI = "penzai model (with Variables)"


def helper_body(raw: Raw, attributes: tuple[str, ...]) -> str | None:
    """The body of ``raw`` (a method, or a function of the object) with every
    ``self.<attribute>`` read as ``<attribute>``, indented once; None where it cannot be
    rewritten so (no source, ``self`` used otherwise, an attribute whose name the body
    already uses)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(raw)))
    except (OSError, TypeError, SyntaxError):
        return None
    function = tree.body[0] if tree.body else None
    if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef) or not function.args.args:
        return None
    this = function.args.args[0].arg
    used = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and n.id != this}
    used |= {a.arg for a in ast.walk(function.args) if isinstance(a, ast.arg)}
    if used & set(attributes):
        return None

    class Reads(ast.NodeTransformer):
        ok = True

        def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
            if isinstance(node.value, ast.Name) and node.value.id == this:
                if node.attr in attributes and isinstance(node.ctx, ast.Load):
                    return ast.copy_location(ast.Name(node.attr, ast.Load()), node)
                Reads.ok = False
            return self.generic_visit(node)

    body = [Reads().visit(statement) for statement in function.body]
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    left = any(isinstance(n, ast.Name) and n.id == this for b in body for n in ast.walk(b))
    if not Reads.ok or left or not body:
        return None
    return textwrap.indent("\n".join(ast.unparse(statement) for statement in body), "    ")


def names_of(target: Target, raw: Raw) -> Names:
    """The names the snippets use, from the object's class and the raw call's signature."""
    import jax

    obj = target.obj
    cls = type(obj).__name__
    held = isinstance(raw, build.HeldCall)
    try:  # a held function takes the inputs alone; a method or function the object first
        params = _positional(getattr(obj, raw.name)) if held else _positional(raw)[1:]
    except (TypeError, ValueError):
        params = []
    # The names up to a *args (linen's apply(variables, *args)): x<i> after it.
    args = params[: len(target.inputs)]
    args += [f"x{i}" for i in range(len(args), len(target.inputs))]
    args += list(target.kwargs)
    fn, unjitted, binds = _raw_named(target, raw)
    if isinstance(target.call, str):
        name = target.call.strip("_") or "call"
    else:  # the jitted function gets a name of its own: it calls the user's
        base = getattr(raw, "__name__", "")
        base = base if base.isidentifier() else fn.partition(".")[0]
        name = f"{base}_jit"
    module = (
        kinds.is_nnx_module(obj) or kinds.is_eqx_module(obj) or kinds.holds_penzai_variables(obj)
    )
    attributes = build.attributes(obj)
    children, aux = build.split_attributes(obj)  # none where it has no attributes
    state = "vars(obj)"
    own = [n for n, _ in attributes or ()]
    # Its attributes named where vars() holds nothing (__slots__ alone) or more than them (a
    # linen module's bookkeeping: an unhashable _state, an _id of each instance's own).
    if not hasattr(obj, "__dict__") or (attributes is not None and set(vars(obj)) != set(own)):
        state = "{" + ", ".join(f"{n!r}: obj.{n}" for n in own) + "}"
    var = "model" if module else "obj"
    if held:  # the snippets' functions take the object first: one that calls what it holds
        rest = "*args, **kwargs" if target.kwargs else "*args"
        fn = f"lambda {var}, {rest}: {var}.{raw.name}({rest})"
        unjitted, binds = f"{var}.{raw.name} as written", "object"
    library = installed(type(obj)) or (binds != "raw" and installed(raw))
    imports = _import_of(type(obj)) if installed(type(obj)) else ""
    # The body is copied into the user's code only where the class is the user's own.
    body = helper_body(raw, (*children, *aux)) if attributes is not None and not held else None
    names = Names(cls, fn, name, ", ".join(args), var, children, aux, state, unjitted=unjitted,
                  body="" if library else body or "", held=raw.name if held else "",
                  library=library, imports=imports, binds=binds)  # fmt: skip
    if any(kinds.is_key(leaf) for leaf in jax.tree_util.tree_leaves(attributes or [])):
        return dataclasses.replace(names, data="_data(leaf)", prelude=_KEY_DATA)
    return names


def _raw_named(target: Target, raw: Raw) -> tuple[str, str, str]:
    """How the code names the raw call (``Names.fn``), the comment saying where it comes from
    (``Names.unjitted``), and what its first name is (``Names.binds``): the method or
    function itself where the user wrote it without jit, or wrote the jit as a decorator on
    code of their own (which they remove); else what the jit as written keeps as
    ``__wrapped__``, reached through the class or the call as written: a library's method or
    function as shipped, or a wrapper kept under the jit (``jax.jit(quax.quaxify(run))``)."""
    written = build.written(target)
    layers = "" if isinstance(raw, build.HeldCall) else ".__wrapped__" * build.jit_layers(written)
    if isinstance(target.call, str):
        cls = type(target.obj).__name__
        if build.held_method(target, raw):  # self.jitted = jax.jit(self.calc): Cls.calc as is
            return f"{cls}.{raw.__name__}", f"{cls}.{raw.__name__} as written", "class"
        fn = f"{cls}.{target.call}"
        if not layers:
            return fn, f"{fn} as written", "class"
        if not installed(raw):
            return fn, f"the jit decorator removed from {fn}", "class"
        return fn + layers, f"{fn} as shipped, its jit taken off", "class"
    name = getattr(raw, "__name__", "")
    name = name if name.isidentifier() else ""
    # The user's modules that may name the call (the target factory's, the jit's, the raw
    # function's), a library's left out: the code runs where the user's names are.
    homes = [vars(sys.modules[m]) for m in dict.fromkeys(
        getattr(f, "__module__", None) or "" for f in (target.factory, written, raw)
    ) if m in sys.modules and not installed(sys.modules[m])]  # fmt: skip
    if name and any(home.get(name) is raw for home in homes):
        return name, f"{name} as written", "raw"
    if layers and name and not installed(raw) and any(h.get(name) is written for h in homes):
        return name, f"the jit decorator removed from {name}", "raw"  # @jax.jit on their own
    held_as = next((k for home in homes for k, v in home.items() if v is written), "")
    if layers and held_as:
        return held_as + layers, f"{held_as} without its jit", "written"
    if getattr(raw, "__name__", "") == "<lambda>":
        return "call", "call: the call's lambda as written", "raw"
    return "call", "call: the call as written, its jit taken off", "raw"


def _import_of(cls: type) -> str:
    """The line importing ``cls`` from the shortest public module of its package that holds it
    by its name (``from equinox.nn import Linear``, not ``equinox.nn._linear``; ``from
    jax.scipy.interpolate import RegularGridInterpolator``), else from its own module; "" for
    a class its own module does not hold by its name (one made inside a function)."""
    name, home = cls.__name__, cls.__module__
    own = sys.modules.get(home)
    if own is None or vars(own).get(name) is not cls:
        return ""
    top = home.partition(".")[0]
    public = sorted(
        (module for module, found in list(sys.modules.items())
         if (module == top or module.startswith(f"{top}."))
         and not any(part.startswith("_") for part in module.split("."))
         and getattr(found, "__dict__", {}).get(name) is cls),
        key=lambda module: (module.count("."), module),
    )  # fmt: skip
    return f"from {public[0] if public else home} import {name}"


def installed(thing: object) -> bool:
    """Whether ``thing`` (a class or a function) comes from an installed library, not the
    user's own code: its source file lies in one of the interpreter's site-packages folders
    (a project installed in development mode keeps its files where they are: its own)."""
    try:
        path = os.path.realpath(inspect.getfile(thing))  # type: ignore[arg-type]
    except TypeError:
        return False
    return any(path.startswith(folder) for folder in _library_folders())


@functools.cache
def _library_folders() -> tuple[str, ...]:
    folders = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
    folders |= {*site.getsitepackages(), site.getusersitepackages()}
    return tuple(os.path.join(os.path.realpath(f), "") for f in folders)


def _positional(function: Callable[..., object]) -> list[str]:
    """The names of ``function``'s parameters up to its ``*args`` (a signature's names)."""
    params = inspect.signature(function).parameters.values()
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in itertools.takewhile(lambda p: p.kind in positional, params)]


# A typed PRNG key has no bytes of its own (NumPy cannot read it): its key data's are hashed.
_KEY_DATA = """
def _data(leaf):   # a typed PRNG key (jax.random.key): its key data
    typed = hasattr(leaf, "dtype") and jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key)
    return jax.random.key_data(leaf) if typed else leaf

"""


# The ways of each kind of object, after the call as written.
PLAIN_WAYS = (PYTREE_CLASS, HELPER_FUNCTION, STATIC_SELF_VALUE_HASH)
PYTREE_WAYS = (JIT_TAKING_OBJECT, STATIC_SELF_VALUE_HASH)
PENZAI_WAYS = (PENZAI_VARIABLE_JIT, PENZAI_FROZEN)
EQX_WAYS = (EQUINOX_FILTER_JIT, JIT_TAKING_OBJECT, EQX_PARTITION, STATIC_SELF_VALUE_HASH)
NNX_WAYS = (
    NNX_TAKING_OBJECT,
    FLAX_NNX_JIT,
    NNX_TREE_MODE,
    NNX_JIT_PARTIAL,
    NNX_CACHED_PARTIAL,
    NNX_SPLIT_MERGE,
    NNX_SPLIT_OUTPUT,
)


def kind_of(obj: object) -> str:
    """The kind of object whose ways apply, or ``kinds.object_kind``'s words for one with
    none (an array, a number, a container: jit's own arguments already)."""
    if kinds.is_nnx_module(obj):
        return NNX
    if kinds.is_eqx_module(obj):
        return EQX
    if kinds.holds_penzai_variables(obj):
        return PENZAI
    if kinds.is_array(obj):
        return "an array"
    if obj is None or isinstance(obj, bool | int | float | complex | str):
        return f"a Python {type(obj).__name__}"
    if isinstance(obj, dict | list | tuple) and not kinds.is_named_tuple(obj):
        return f"a Python {type(obj).__name__} (a pytree of JAX's own)"
    described = kinds.object_kind(obj)
    if described in ("flax.struct dataclass", "pytree dataclass", "pytree"):
        return PYTREE
    return PLAIN if build.attributes(obj) is not None else described


def ways_for(kind: str, held: bool = False) -> tuple[Way, ...]:
    """The ways of an object of ``kind`` (:func:`kind_of`), the call as written first; only
    that one for a kind with no alternative. ``held``: the call is a function the object
    holds (``build.held``), which ``jax.jit`` of the call jits alone."""
    found = {NNX: NNX_WAYS, EQX: EQX_WAYS, PYTREE: PYTREE_WAYS, PLAIN: PLAIN_WAYS,
             PENZAI: PENZAI_WAYS}.get(kind, ())  # fmt: skip
    return (WRITTEN, *found, *((JIT_HELD_CALL,) if held and found else ()))


def ways_of(target: Target) -> tuple[Way, ...]:
    """The ways advise measures for ``target``: :func:`ways_for` its kind, and the jit made
    once where the call as written makes one at every call."""
    ways = ways_for(kind_of(target.obj), build.held(target))
    if len(ways) > 1 and build.jits_at_every_call(target):
        return (ways[0], BOUND_METHOD_JIT, *ways[1:])
    return ways


class WaySubject(Walked):
    """The target's object called the way ``way`` jits it, judged against the raw method under
    ``jax.disable_jit()``; JitbenchError where the way cannot be built for the object.
    ``checked`` False: built without the check that calls the object (whether the call writes
    into it), in a process rebuilding a way already built elsewhere, whose first call must be
    the first the object gets."""

    def __init__(self, target: Target, way: Way, *, checked: bool = True) -> None:
        self.way, self.raw = way, build.unjitted(target)
        if (reason := way.applies(target.obj)) is not None:  # the call as written always does
            raise JitbenchError(reason)
        self._convert = way.convert(target.obj) if way.convert else None
        self._bind = way.build(target.obj, self.raw) if way.build else None
        if self._bind is not None and build.as_written(target, self._bind):
            raise JitbenchError(f"the call as written already jits with {way.label}")
        if checked and way.copies and (written := build.writes(target, self.raw)):
            raise JitbenchError(
                f"the call writes into the object without jit ({written}): {way.label} calls "
                "a copy of it (flattened and rebuilt), so what the call writes is lost"
            )
        super().__init__(target)
        self.name = f"{target.name} ({way.label})"
        # Each way sees the fields as its own call does (docs/design.md, advise's ways).
        if way is not WRITTEN:
            self.filtered = way.filters

    def new(self, seed: int = 0) -> object:
        return self.converted(super().new(seed))

    def converted(self, made: object) -> object:
        """``made``, a new object of the target's, as this way calls it."""
        return made if self._convert is None else self._convert(made)

    def call(self, obj: object) -> Callable[[], object]:
        if self._bind is None:
            return super().call(obj)
        function, lead = self._bind(obj)
        inputs, kwargs = self.target.inputs, self.target.kwargs
        # The call holds the object, as the user's code does (a hoisted jit reads it weakly).
        return lambda _held=obj: function(*lead, *inputs, **kwargs)

    def code(self, obj: object) -> tuple[str, dict[str, object]]:
        if self._bind is None:
            return super().code(obj)
        function, lead = self._bind(obj)
        _, names = super().code(obj)  # obj among them: held, as above
        names.update({f"a{i}": value for i, value in enumerate(lead)}, function=function)
        args = [f"a{i}" for i in range(len(lead))] + call_args(self.target)
        return f"function({', '.join(args)})", names

    def unjitted(
        self, obj: object, inputs: tuple[object, ...], kwargs: dict[str, object]
    ) -> object:
        """The raw method's result (the oracle's call)."""
        return self.raw(obj, *inputs, **kwargs)


def way_of(target: Target, name: str) -> Way:
    """The way called ``name`` for ``target`` (JitbenchError: unknown, or it does not apply to
    the object's kind)."""
    # The hoisted jit is a way only of a call that jits at every call (running it twice
    # tells): asked for by name only, as advise's counting process asks for its row.
    hoisted = name == BOUND_METHOD_JIT.label
    valid = ways_of(target) if hoisted else ways_for(kind_of(target.obj), build.held(target))
    way = next((w for w in valid if w.label == name), None)
    if way is None:
        choices = ", ".join(w.label for w in valid)
        raise JitbenchError(f"unknown way {name!r} for {target.name!r}; valid: {choices}")
    return way


def way_subject(target: Target, name: str, *, checked: bool = True) -> WaySubject:
    """The subject of the way called ``name`` on ``target`` (:func:`way_of`; ``checked``: as
    :class:`WaySubject` takes it)."""
    return WaySubject(target, way_of(target, name), checked=checked)
