"""What a way's printed code reads (:class:`Names`: the class, the raw call, its arguments)
and how each is named from the user's object and call (:func:`names_of`), the body of the
call rewritten without ``self`` (:func:`helper_body`), and whether a class or function is an
installed library's (:func:`installed`).
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

from jitbench.targets import Target, kinds
from jitbench.ways import calls
from jitbench.ways.calls import Raw


@dataclasses.dataclass(frozen=True)
class Names:
    """What a way's code snippet reads: the class, the call and its arguments."""

    cls: str
    fn: str  # the raw function as the user reaches it: Scaler.calc, forward, Catch.step.__wrapped__
    name: str  # the jitted call's name: calc (a method's), forward_jit (a function's)
    args: str  # the call's arguments after the object: y / x, key
    var: str  # the object's name in the snippet: model, obj
    children: tuple[str, ...] = ()
    aux: tuple[str, ...] = ()
    state: str = "vars(obj)"  # the object's attributes as a dict (slots named one by one)
    data: str = "leaf"  # what an array's hashed bytes are read from (a typed key: its data)
    prelude: str = ""  # a helper the snippet needs first
    unjitted: str = ""  # the comment on where the raw function comes from
    body: str = ""  # the raw function's body, self.<name> read as <name> (indented); "": none
    held: str = ""  # the field holding the function called (calls.HeldCall), if it is one
    # The object's class (or the raw call) is an installed library's: the code wraps the class
    # as shipped, never edits it (a way's ``wrapping`` snippet), and imports it (``imports``).
    library: bool = False
    imports: str = ""
    # What the first name of ``fn`` is in the user's code: "class" (a method: Catch.step),
    # "raw" (the user's function, as written or its jit decorator removed), "written" (the
    # call as written, whose ``__wrapped__`` the code reads), "object" (a function it holds).
    binds: str = "class"


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
    held = isinstance(raw, calls.HeldCall)
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
    attributes = calls.attributes(obj)
    children, aux = calls.split_attributes(obj)  # none where it has no attributes
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
    written = calls.written(target)
    layers = "" if isinstance(raw, calls.HeldCall) else ".__wrapped__" * calls.jit_layers(written)
    if isinstance(target.call, str):
        cls = type(target.obj).__name__
        if calls.held_method(target, raw):  # self.jitted = jax.jit(self.calc): Cls.calc as is
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
