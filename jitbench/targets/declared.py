"""What a class declares of the values a field may take, read from the class itself: a
``Literal`` or an ``Enum`` in the field's annotation (or the value's own ``Enum``), a dtype
(annotated as one, or held), the values its constructor compares the argument with; and
whether its constructor refuses a value (its own checks, read from its source and run on
that value alone, or the constructor tried). See docs/design.md.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import enum
import functools
import inspect
import textwrap
import types
import typing
from collections.abc import Mapping
from typing import Literal

import numpy as np

from jitbench.errors import error_text
from jitbench.targets import kinds

# The methods a constructor runs whose checks count as its own: dataclasses' and equinox's
# hooks after ``__init__``.
CONSTRUCTOR = ("__init__", "__post_init__", "__check_init__")
# What a constructor's check may be made of to be run on a value alone: names, attribute
# reads, comparisons, arithmetic, literals, calls of Python's builtins (isinstance, len).
_SAFE = (
    ast.Expression, ast.BoolOp, ast.boolop, ast.UnaryOp, ast.unaryop, ast.BinOp, ast.operator,
    ast.Compare, ast.cmpop, ast.Name, ast.Load, ast.Attribute, ast.Constant, ast.Tuple,
    ast.List, ast.Set, ast.Subscript, ast.Slice, ast.Call, ast.keyword, ast.JoinedStr,
    ast.FormattedValue,
)  # fmt: skip
# How a refusal reads: "RegularGridInterpolator's constructor refuses bounds_error=True: ...".
REFUSES = "'s constructor refuses "
# The builtins a check may call: they read and compare, and change nothing.
_BUILTINS = frozenset({"isinstance", "issubclass", "len", "callable", "hasattr", "abs", "min",
                       "max", "all", "any", "round", "sorted", "sum"})  # fmt: skip
# What a declared choice may be: a value a user writes.
_SCALAR = (str, int, float, bool, type(None), enum.Enum)


def float_dtypes(value: object) -> tuple[object, ...]:
    """JAX's floating dtypes other than ``value``'s (None: JAX's default, float32), in the form
    ``value`` has (a ``np.dtype`` or a scalar type): the narrower first, the widest of them
    first, then the wider, then those as wide (float32: bfloat16, float16; float64 where x64
    is on); none for a dtype that is not floating."""
    import jax
    import jax.numpy as jnp

    names = ["bfloat16", "float16", "float32"] + (["float64"] if jax.config.jax_enable_x64 else [])
    now = jnp.dtype("float32" if value is None else value)
    if not jnp.issubdtype(now, jnp.floating):
        return ()
    width = now.itemsize

    def order(name: str) -> tuple[int, int]:
        size = jnp.dtype(name).itemsize
        return (0, -size) if size < width else (1, size) if size > width else (2, 0)

    others = sorted((n for n in names if jnp.dtype(n) != now), key=order)
    typed = isinstance(value, np.dtype)
    return tuple(jnp.dtype(n) if typed else getattr(jnp, n) for n in others)


def choices(owner: object, name: object, value: object) -> tuple[object, ...]:
    """The values ``owner``'s field ``name`` may take, as its class declares them (``()``
    where it declares none): the value's own ``Enum``'s members; a ``Literal``'s arguments or
    an ``Enum``'s members in the field's annotation; other floating dtypes for a dtype field
    (annotated as one, or holding one); else the values its constructor compares the
    argument with (``if method not in ("linear", "nearest"): raise``)."""
    if isinstance(value, enum.Enum):
        return tuple(type(value))
    if kinds.is_dtype(value):
        return float_dtypes(value)
    if not isinstance(name, str):
        return ()
    if found := _annotated(type(owner), name, value):
        return found
    # A value it compares with only to refuse it (``if name == "": raise``) is none to play.
    return tuple(v for v in _compared(type(owner), name, value) if not refusal(owner, name, v))


def _annotated(cls: type, name: str, value: object) -> tuple[object, ...]:
    """A ``Literal``'s arguments, an ``Enum``'s members, or floating dtypes, by the field's
    annotation (:func:`_hint`; an ``Optional`` or a union included), of the value's own
    type where it has one: equinox's ``in_features: int | Literal["scalar"]`` holding 64
    declares no other int."""
    hint = _hint(cls, name)
    if hint is None:
        return ()
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    parts = typing.get_args(hint) if union else (hint,)
    literal = [a for p in parts if typing.get_origin(p) is Literal for a in typing.get_args(p)]
    literal = [a for a in literal if value is None or type(a) is type(value)]
    if literal:
        return tuple(literal)
    enums = [p for p in parts if isinstance(p, type) and issubclass(p, enum.Enum)]
    if enums and value is None:
        return tuple(enums[0])
    if np.dtype in parts and (value is None or isinstance(value, str)):
        return float_dtypes(None if value is None else np.dtype(value))
    return ()


def _hint(cls: type, name: str) -> object:
    """The field's annotation: the class's own, else its constructor's argument of that name
    (an nnx module's fields are set in ``__init__``); None where none resolves."""
    own, init = _hints(cls)
    return own.get(name, init.get(name))


@functools.lru_cache(maxsize=256)
def _hints(cls: type) -> tuple[dict[str, object], dict[str, object]]:
    """The annotations of the class and of its ``__init__``'s arguments, resolved (those of
    one that does not resolve: none)."""
    init = inspect.getattr_static(cls, "__init__", None)
    found = []
    for owner in (cls, init if isinstance(init, types.FunctionType) else None):
        try:
            found.append(typing.get_type_hints(owner) if owner is not None else {})
        except Exception:  # an annotation that does not resolve: none declared
            found.append({})
    return found[0], found[1]


class _Function(typing.NamedTuple):
    """One of a constructor's functions: its tree, its globals, and the names under which it
    reads the field (a parameter ``self.name = name`` stores, and ``self.name``)."""

    tree: ast.FunctionDef
    globals: dict[str, object]
    locals: frozenset[str]  # its parameters and the names it assigns
    parameter: str | None  # the parameter that is the field, if any


@functools.lru_cache(maxsize=1024)
def _functions(cls: type, name: str) -> tuple[_Function, ...]:
    """The constructor's functions with a source (``CONSTRUCTOR``), each with how it names
    the field ``name``; a generated one (a dataclass's ``__init__``) has none."""
    found = []
    for tree, spaces in _trees(cls):
        args = [a.arg for a in (*tree.args.posonlyargs, *tree.args.args, *tree.args.kwonlyargs)]
        stored = {
            node.value.id for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name) and any(_is_self(t, name) for t in node.targets)
        }  # fmt: skip
        parameter = name if name in args else next(iter(stored & set(args)), None)
        assigned = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                    and isinstance(n.ctx, ast.Store)}  # fmt: skip
        found.append(_Function(tree, spaces, frozenset({*args, *assigned}), parameter))
    return tuple(found)


@functools.lru_cache(maxsize=256)
def _trees(cls: type) -> tuple[tuple[ast.FunctionDef, dict[str, object]], ...]:
    """(parsed source, globals) of each constructor function ``cls`` has a source for."""
    found = []
    for method in CONSTRUCTOR:
        function = inspect.getattr_static(cls, method, None)
        if not isinstance(function, types.FunctionType):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(function))
            tree = ast.parse(source).body[0]
        except (OSError, TypeError, SyntaxError, IndexError):  # generated: no source
            continue
        if isinstance(tree, ast.FunctionDef):
            found.append((tree, function.__globals__))
    return tuple(found)


def _is_self(node: ast.AST, name: str) -> bool:
    return (
        isinstance(node, ast.Attribute) and node.attr == name
        and isinstance(node.value, ast.Name) and node.value.id == "self"
    )  # fmt: skip


def _is_field(node: ast.AST, name: str, function: _Function) -> bool:
    """Whether ``node`` reads the field: ``self.name`` or its parameter."""
    parameter = isinstance(node, ast.Name) and node.id == function.parameter
    return parameter or _is_self(node, name)


def _compared(cls: type, name: str, value: object) -> tuple[object, ...]:
    """The values the constructor compares the field with, of the value's type, in order:
    a membership test's collection (a literal, or a module's constant: a tuple, a set, a
    dict's keys) and equality with a string."""
    found: list[object] = []
    for function in _functions(cls, name):
        for node in ast.walk(function.tree):
            if not isinstance(node, ast.Compare) or len(node.ops) != 1:
                continue
            left, op, right = node.left, node.ops[0], node.comparators[0]
            if isinstance(op, ast.In | ast.NotIn) and _is_field(left, name, function):
                found += _collection(right, function)
            elif isinstance(op, ast.Eq | ast.NotEq):
                for field, other in ((left, right), (right, left)):
                    string = isinstance(other, ast.Constant) and isinstance(other.value, str)
                    if string and _is_field(field, name, function):
                        found.append(other.value)
    kind = type(value)
    typed = [v for v in found if value is None or type(v) is kind]
    return tuple(dict.fromkeys(typed))


def _collection(node: ast.AST, function: _Function) -> list[object]:
    """The items of a literal collection, or of a module constant it names (a dict's keys)."""
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        items = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        return items if len(items) == len(node.elts) else []
    if not _names_only(node) or _root(node) in function.locals:
        return []
    try:
        found = eval(compile(ast.Expression(node), "<check>", "eval"), function.globals, {})
    except Exception:
        return []
    items = list(found) if isinstance(found, tuple | list | set | frozenset | Mapping) else []
    return items if items and all(isinstance(i, _SCALAR) for i in items) else []


def _names_only(node: ast.AST) -> bool:
    """A name or a chain of attribute reads on one (``METHODS``, ``module.METHODS``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)


def _root(node: ast.AST) -> str:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def refusal(owner: object, name: object, value: object) -> str:
    """Why ``owner``'s class's constructor refuses ``value`` for its field ``name`` by its own
    checks of that argument alone, read from its source (``if self.bounds_error: raise
    ...``), in its own error ("" where none refuses it, or none can be run on it alone)."""
    if not isinstance(name, str) or isinstance(owner, type):
        return ""
    cls = type(owner)
    for function in _functions(cls, name):
        if why := _checked(function, name, value):
            return f"{cls.__name__}{REFUSES}{name}={shown(value)}: {why}"
    return ""


def tried(owner: object, name: object, value: object, built: dict[int, bool]) -> str:
    """Why ``owner``'s class's constructor refuses ``value`` for its field ``name``, tried:
    given that value and every other argument from the field of its name, where each it
    needs is one ("" where it takes it, or it cannot be tried: an argument it needs that is
    no field, or one it refuses as the object is now). ``built``: whether each owner, by id,
    was built as it is (the object's fields stay alive while it is used)."""
    if not isinstance(name, str) or isinstance(owner, type):
        return ""
    given = _arguments(owner)
    if given is None or name not in given:
        return ""
    cls = type(owner)
    if id(owner) not in built:
        try:
            cls(**given)
            built[id(owner)] = True
        except Exception:  # refused as it is: the try tells nothing of the new value
            built[id(owner)] = False
    if not built[id(owner)]:
        return ""
    try:
        cls(**{**given, name: value})
    except Exception as exc:
        return f"{cls.__name__}{REFUSES}{name}={shown(value)}: {error_text(exc)}"
    return ""


def shown(value: object) -> str:
    text = getattr(value, "__name__", None) if kinds.is_dtype(value) else None
    text = text or repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _checked(function: _Function, name: str, value: object) -> str:
    """The error the function's own top-level checks raise for ``value`` ("" for none): an
    ``if`` (or ``elif`` chain) whose body raises, an ``else`` that raises, an ``assert``, each
    made of the field, constants and the module's names alone."""
    scope = {"self": types.SimpleNamespace(**{name: value})}
    if function.parameter:
        scope[function.parameter] = value
    for statement in function.tree.body:
        if isinstance(statement, ast.Assert):
            holds = _evaluated(statement.test, function, name, scope)
            if holds is not None and not holds[0]:
                message = statement.msg and _evaluated(statement.msg, function, name, scope)
                return error_text(AssertionError(*(message or ())))
        node = statement
        while isinstance(node, ast.If):
            holds = _evaluated(node.test, function, name, scope)
            if holds is None:
                break
            if holds[0]:
                if why := _raised(node.body, function, name, scope):
                    return why
                break
            if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
                node = node.orelse[0]
                continue
            if why := _raised(node.orelse, function, name, scope):
                return why
            break
    return ""


def _raised(body: list[ast.stmt], function: _Function, name: str, scope: dict) -> str:
    """The error of a ``raise`` among ``body``'s statements, in its own words where they are
    made of what the check may read, else as written; "" where none raises."""
    for statement in body:
        if isinstance(statement, ast.Raise) and statement.exc is not None:
            made = _evaluated(statement.exc, function, name, scope, raising=True)
            exc = made[0] if made else None
            if isinstance(exc, type) and issubclass(exc, BaseException):
                with contextlib.suppress(Exception):
                    exc = exc()
            if isinstance(exc, BaseException):
                return error_text(exc)
            return f"raise {ast.unparse(statement.exc)}"
    return ""


def _evaluated(
    node: ast.expr, function: _Function, name: str, scope: dict, raising: bool = False
) -> tuple[object] | None:
    """``(value,)`` of ``node`` run on the field's value alone, or None where it reads
    anything else (another argument, a local, another field) or does more than read and
    compare (a call of anything but a builtin; ``raising``: an exception's constructor too)."""
    for part in ast.walk(node):
        if not isinstance(part, _SAFE):
            return None
        if isinstance(part, ast.Name) and part.id not in scope and part.id in function.locals:
            return None
        if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name):
            if part.value.id == "self" and part.attr != name:
                return None
        if isinstance(part, ast.Call) and not _allowed_call(part.func, function, raising):
            return None
    try:
        code = compile(ast.Expression(node), "<check>", "eval")
        return (eval(code, function.globals, dict(scope)),)
    except Exception:
        return None


def _allowed_call(func: ast.expr, function: _Function, raising: bool) -> bool:
    """A call of one of Python's builtins (``isinstance``), or of an exception's class."""
    if not isinstance(func, ast.Name) or func.id in function.locals:
        return False
    found = function.globals.get(func.id, getattr(builtins, func.id, None))
    if raising and isinstance(found, type) and issubclass(found, BaseException):
        return True
    return func.id in _BUILTINS and found is getattr(builtins, func.id)


def _arguments(owner: object) -> dict[str, object] | None:
    """The constructor's arguments, each from the field of its name (those with a default
    and no such field left out); None where one it needs has none."""
    cls = type(owner)
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return None
    given: dict[str, object] = {}
    for parameter in parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if parameter.kind is parameter.POSITIONAL_ONLY or not hasattr(owner, parameter.name):
            if parameter.default is parameter.empty:
                return None
            continue
        given[parameter.name] = getattr(owner, parameter.name)
    return given
