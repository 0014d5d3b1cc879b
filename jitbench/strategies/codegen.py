"""The class factory: a recipe's source rendered for a :class:`Shape` by a :class:`Template`,
executed once per (strategy, shape) into a real module, and what a generated object holds.

Design notes (why one class per shape, linecache, probes) in docs/design.md.
"""

from __future__ import annotations

import dataclasses
import functools
import linecache
import sys
import types
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from jitbench.errors import JitbenchError
from jitbench.strategies.computation import LAYER_FIELDS, layer_step, render_body

if TYPE_CHECKING:
    import jax


class Recipe(Protocol):
    """What the class factory needs of a strategy (:class:`jitbench.ways.record.Way`), and
    the kind of object its class is (``kinds.object_kind``'s words, "" where undeclared)."""

    name: str
    holder: str
    kind: str
    render: Callable[[Template], str]

    def check_available(self) -> None: ...


@dataclasses.dataclass(frozen=True)
class Shape:
    """The knobs of a generated class.

    ``n_arrays`` scales the pytree width (leaves per call), ``n_static`` the
    static part of the cache key, ``n_ops`` the size of the traced program.
    ``depth`` nests it: 0 is one flat level of fields (``a0``, ``s0``); a
    positive depth is a class holding ``layers``, a list of that many layer
    objects, each with its own ``weight`` and ``bias`` arrays and ``act`` flag
    (:data:`jitbench.strategies.computation.LAYER_FIELDS`), nested the way the strategy's
    users nest objects. A nested shape's layers are fixed, so the other knobs
    stay at 1 there.
    """

    n_arrays: int = 1
    n_static: int = 1
    n_ops: int = 1
    depth: int = 0

    def __post_init__(self) -> None:
        for name in ("n_arrays", "n_static", "n_ops", "depth"):
            value = getattr(self, name)
            least = 0 if name == "depth" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                kind = "a non-negative" if least == 0 else "a positive"
                raise JitbenchError(f"{name} must be {kind} integer, got {value!r}")
        if self.depth and (self.n_arrays, self.n_static, self.n_ops) != (1, 1, 1):
            raise JitbenchError(
                f"a nested shape (depth {self.depth}) has fixed layers (weight, bias, act): "
                "n_arrays, n_static and n_ops stay 1 there"
            )

    @property
    def array_fields(self) -> tuple[str, ...]:
        """The flat array fields (none at depth: the arrays are in the layers)."""
        return () if self.depth else tuple(f"a{i}" for i in range(self.n_arrays))

    @property
    def static_fields(self) -> tuple[str, ...]:
        """The flat static fields (none at depth: the flags are in the layers)."""
        return () if self.depth else tuple(f"s{i}" for i in range(self.n_static))

    @property
    def fields(self) -> tuple[str, ...]:
        """Every field, arrays first: the order of the generated ``__init__``."""
        return ("layers",) if self.depth else self.array_fields + self.static_fields

    @property
    def tag(self) -> str:
        """A short name for the shape: ``1a1s1ops``, ``4deep``."""
        if self.depth:
            return f"{self.depth}deep"
        return f"{self.n_arrays}a{self.n_static}s{self.n_ops}ops"


DEFAULT_SHAPE = Shape()


class Template:
    """The pieces of source a recipe needs for one shape, and the formatter that uses them.

    A recipe is a text with ``{placeholders}`` laid out as the final source
    (flush left); :meth:`render` fills in:

    ``params``        the fields as parameters: ``a0, s0``
    ``arrays``        ``a0``; ``statics``: ``s0``
    ``self_arrays``   ``self.a0``; ``self_statics``: ``self.s0``
    ``self_arrays_tuple``, ``self_statics_tuple``, ``other_statics_tuple``: ``(self.a0,)``...
    ``static_argnums`` the statics' positions when they come first: ``(0,)``
    ``init``          the body of ``__init__(self, a0, s0)`` that stores every field
    ``body``          the computation over plain names, indented for a function
    ``method_body``   the computation over ``self.`` fields, indented for a method
    ``layer``         for a nested shape, the layer class (see :meth:`layer`); else empty

    A nested shape (``depth`` > 0) fills the same placeholders for one field,
    ``layers``: ``method_body`` calls each layer in turn, ``body`` loops over a
    helper's ``acts`` (static) and ``params`` ((weight, bias) pairs), and
    ``self_arrays_tuple`` is ``(self.layers,)`` (the layers are children).
    """

    def __init__(self, shape: Shape, probe: bool = False) -> None:
        self.shape = shape
        self.probe = probe
        self.pieces = self._nested_pieces() if shape.depth else self._flat_pieces()
        self.pieces["layer"] = ""

    def _flat_pieces(self) -> dict[str, str]:
        shape = self.shape
        arrays, statics = shape.array_fields, shape.static_fields
        positions = [str(i) for i in range(shape.n_static)]
        return {
            "params": ", ".join(shape.fields),
            "arrays": ", ".join(arrays),
            "statics": ", ".join(statics),
            "self_arrays": ", ".join(f"self.{n}" for n in arrays),
            "self_statics": ", ".join(f"self.{n}" for n in statics),
            "self_arrays_tuple": tuple_source([f"self.{n}" for n in arrays]),
            "self_statics_tuple": tuple_source([f"self.{n}" for n in statics]),
            "other_statics_tuple": tuple_source([f"other.{n}" for n in statics]),
            "static_argnums": tuple_source(positions),
            "init": _indent([f"self.{n} = {n}" for n in shape.fields], 8),
            "body": self.computation(arrays, statics, 4),
            "method_body": self.computation(
                [f"self.{n}" for n in arrays], [f"self.{n}" for n in statics], 8
            ),
        }

    def _nested_pieces(self) -> dict[str, str]:
        """The same placeholders for a class holding ``layers`` (see the class docstring)."""
        weight, bias, act = LAYER_FIELDS
        gather = "tuple({} for layer in self.layers)"
        return {
            "params": "layers",
            "arrays": "params",
            "statics": "acts",
            "self_arrays": gather.format(f"(layer.{weight}, layer.{bias})"),
            "self_statics": gather.format(f"layer.{act}"),
            "self_arrays_tuple": "(self.layers,)",
            "self_statics_tuple": "()",
            "other_statics_tuple": "()",
            "static_argnums": "(0,)",
            "init": "self.layers = layers",
            "body": self._steps(
                [f"for ({weight}, {bias}), {act} in zip(params, acts):"]
                + [f"    {line}" for line in layer_step(weight, bias, act)]
                + ["return y"],
                4,
            ),
            "method_body": self._steps(
                ["for layer in self.layers:", "    y = layer(y)", "return y"], 8
            ),
        }

    def _steps(self, lines: list[str], indent: int) -> str:
        return _indent(["_probe()", *lines] if self.probe else lines, indent)

    def layer(self, text: str, read: str = "{}") -> str:
        """The ``{layer}`` piece: ``text`` (a layer class's source) for a nested shape,
        nothing for a flat one. Its ``{layer_step}`` is the layer's computation, with
        each array read as ``read`` formats it (``{}[...]`` for an ``nnx.Param``)."""
        if not self.shape.depth:
            return ""
        weight, bias, act = LAYER_FIELDS
        arrays = (read.format(f"self.{weight}"), read.format(f"self.{bias}"))
        lines = layer_step(*arrays, f"self.{act}")
        step = _indent([*lines, "return y"], 8)
        values = {"weight": weight, "bias": bias, "act": act, "layer_step": step}
        return text.strip("\n").format_map(values) + "\n\n\n"

    def computation(self, arrays: list[str], statics: list[str], indent: int) -> str:
        """The computation over these field expressions, for a body ``indent`` deep; with
        ``probe``, it first calls ``_probe()``, which runs at every trace under jit."""
        return self._steps(render_body(arrays, statics, self.shape.n_ops), indent)

    def fields(self, array_type: str, static_default: str = "") -> str:
        """Dataclass field declarations, indented for a class body: ``a0: jax.Array``...
        (nested: ``layers: list``)."""
        if self.shape.depth:
            return "layers: list"
        default = f" = {static_default}" if static_default else ""
        lines = [f"{name}: {array_type}" for name in self.shape.array_fields]
        lines += [f"{name}: int{default}" for name in self.shape.static_fields]
        return _indent(lines, 4)

    def render(self, text: str, **extra: str) -> str:
        """``text`` with every placeholder filled (``extra`` adds or overrides pieces)."""
        return text.format_map({**self.pieces, **extra})


def tuple_source(items: Sequence[str]) -> str:
    """The source of a tuple of ``items``: ``(a,)`` or ``(a, b)``."""
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


def _indent(lines: list[str], spaces: int) -> str:
    """Lines joined for a placeholder that already sits ``spaces`` deep."""
    return ("\n" + " " * spaces).join(lines)


def class_name(strategy: str) -> str:
    """``helper_function`` -> ``HelperFunction``: the generated class's name."""
    return "".join(part.capitalize() for part in strategy.split("_"))


# class -> (shape, the attribute that holds the fields ("" for the object itself), strategy)
_GENERATED: dict[type, tuple[Shape, str, str]] = {}


_JNP_IMPORT = "import jax.numpy as jnp\n"


def source(strategy: Recipe, shape: Shape, probe: bool = False) -> str:
    """The module source the recipe renders for ``shape`` (what ``jitbench show`` prints)."""
    text = strategy.render(Template(shape, probe))
    if shape.depth and "class Layer" not in text:
        raise JitbenchError(
            f"strategy {strategy.name!r} cannot render a nested shape (depth {shape.depth}): "
            "its recipe has no {layer} placeholder for the layer class"
        )
    # The jnp import goes where nothing calls it, as a user (or a linter) would leave it out.
    if "jnp." not in text.replace(_JNP_IMPORT, ""):
        text = text.replace(_JNP_IMPORT, "")
    return text.strip() + "\n"


class Probe:
    """Counts how often a probed class's method body ran (see :meth:`Template.computation`)."""

    def __init__(self) -> None:
        self.runs = 0

    def __call__(self) -> None:
        self.runs += 1


PROBES: dict[type, Probe] = {}


def make_class(strategy: Recipe, shape: Shape, probe: bool = False) -> type:
    """The generated class of ``strategy`` for ``shape``: rendered and executed once, cached
    (jit's cache needs one class per shape: see docs/design.md). ``probe=True`` builds a
    separate class whose body counts its runs (:data:`PROBES`), for tests only."""
    strategy.check_available()
    return _make_class(strategy, shape, probe)


@functools.cache  # keyed on all three arguments, however they are passed above
def _make_class(strategy: Recipe, shape: Shape, probe: bool) -> type:
    text = source(strategy, shape, probe)
    tag = f"{strategy.name}_{shape.tag}{'_probe' if probe else ''}"
    filename = f"<jitbench {tag}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    # A real module (dataclasses and pickle look classes up in sys.modules).
    module = types.ModuleType(f"jitbench.generated.{tag}")
    module.__file__ = filename
    sys.modules[module.__name__] = module
    if probe:
        module.__dict__["_probe"] = Probe()
    exec(compile(text, filename, "exec"), module.__dict__)
    name = class_name(strategy.name)
    cls = module.__dict__.get(name)
    if not isinstance(cls, type):
        raise JitbenchError(f"strategy {strategy.name!r} rendered no class named {name!r}")
    _GENERATED[cls] = (shape, strategy.holder, strategy.name)
    if probe:
        PROBES[cls] = module.__dict__["_probe"]
    return cls


def _generated(obj: object) -> tuple[Shape, str, str]:
    cls = obj if isinstance(obj, type) else type(obj)
    try:
        return _GENERATED[cls]
    except KeyError:
        raise JitbenchError(f"{cls.__name__} is not a class generated by jitbench") from None


def generated(obj: object) -> tuple[str, Shape] | None:
    """(strategy name, shape) of a generated instance or class, None for any other object."""
    found = _GENERATED.get(obj if isinstance(obj, type) else type(obj))
    return None if found is None else (found[2], found[0])


def shape_of(obj: object) -> Shape:
    """The :class:`Shape` of a generated instance or class."""
    return _generated(obj)[0]


def layer_class(cls: type) -> type:
    """The ``Layer`` class a generated nested class's module defines."""
    layer = getattr(sys.modules.get(cls.__module__), "Layer", None)
    if not isinstance(layer, type):
        raise JitbenchError(f"{cls.__name__}'s module defines no Layer class for its layers")
    return layer


def field_owner(obj: object) -> object:
    """The object whose attributes are the fields: ``obj``, or what it holds (an nnx module)."""
    holder = _generated(obj)[1]
    return getattr(obj, holder) if holder else obj


def field_value(value: object) -> object:
    """A field's value, read out of an ``nnx.Variable`` where the class wraps it in one."""
    return value.get_value() if hasattr(value, "get_value") else value


def fields_of(obj: object) -> dict[str, object]:
    """Every field of a generated instance by name, arrays first (for checks, not calls)."""
    owner = field_owner(obj)
    return {name: field_value(getattr(owner, name)) for name in shape_of(obj).fields}


def arrays_of(obj: object) -> list[jax.Array]:
    """The array fields of a generated instance, in field order."""
    fields = fields_of(obj)
    return [fields[name] for name in shape_of(obj).array_fields]


def statics_of(obj: object) -> list[int]:
    """The static fields of a generated instance, in field order."""
    fields = fields_of(obj)
    return [fields[name] for name in shape_of(obj).static_fields]
