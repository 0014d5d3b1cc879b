"""Ways of jitting a user's call (``jitbench advise``), by kind of object, each built from the
user's own object and method: a :class:`Way` and its :class:`WaySubject` (see docs/advise.md).
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
from collections.abc import Callable
from typing import Any

from jitbench.auditing.subject import Walked, call_args
from jitbench.errors import JitbenchError
from jitbench.strategies.codegen import tuple_source
from jitbench.targets import Target, kinds
from jitbench.ways import builders as build
from jitbench.ways.builders import Bound

AS_WRITTEN = "as written"
# The kinds of object that have ways (kinds.object_kind's words, and "plain class").
NNX, EQX, PYTREE, PLAIN = "nnx.Module", "eqx.Module", "registered pytree", "plain class"


_NO_BODY = "    ...  # the body of {fn}, with these names for self.<name>"


def helper_body(raw: Callable[..., Any], attributes: tuple[str, ...]) -> str | None:
    """The body of ``raw`` (a method, or a function of the object) with every
    ``self.<attribute>`` read as ``<attribute>``, indented once; None where it cannot be
    rewritten so (no source, ``self`` used otherwise, an attribute whose name the body
    already uses)."""
    import ast
    import textwrap

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


@dataclasses.dataclass(frozen=True)
class Names:
    """What a way's code snippet reads: the class, the call and its arguments."""

    cls: str
    fn: str  # the raw function as the user names it: Scaler.calc, forward
    name: str  # the jitted call's name: calc (a method's), forward_jit (a function's)
    args: str  # the call's arguments after the object: y / x, key
    var: str  # the object's name in the snippet: model, obj
    children: tuple[str, ...] = ()
    aux: tuple[str, ...] = ()
    state: str = "vars(obj)"  # the object's attributes as a dict (slots named one by one)
    data: str = "leaf"  # what an array's hashed bytes are read from (a typed key: its data)
    prelude: str = ""  # a helper the snippet needs first
    unjitted: str = ""  # the comment on where the raw function comes from
    body: str = _NO_BODY  # the raw function's body, self.<name> read as <name> (indented)
    held: str = ""  # the field holding the function called (build.HeldCall), if it is one


def names_of(target: Target, raw: Callable[..., Any]) -> Names:
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
    if isinstance(target.call, str):
        method = raw.__name__ if build.held_method(target, raw) else target.call
        fn, name = f"{cls}.{method}", target.call.strip("_") or "call"
    else:  # the jitted function gets a name of its own: it calls the user's
        fn = getattr(raw, "__name__", "")
        fn = fn if fn.isidentifier() else "call"  # a lambda: named as the snippet reads it
        name = f"{fn}_jit"
    module = kinds.is_nnx_module(obj) or kinds.is_eqx_module(obj)
    attributes = build.attributes(obj)
    children, aux = build.split_attributes(obj)  # none where it has no attributes
    state = "vars(obj)"
    own = [n for n, _ in attributes or ()]
    # Its attributes named where vars() holds nothing (__slots__ alone) or more than them (a
    # linen module's bookkeeping: an unhashable _state, an _id of each instance's own).
    if not hasattr(obj, "__dict__") or (attributes is not None and set(vars(obj)) != set(own)):
        state = "{" + ", ".join(f"{n!r}: obj.{n}" for n in own) + "}"
    var = "model" if module else "obj"
    decorated = build.written(target) is not raw and not build.held_method(target, raw)
    unjitted = f"the jit decorator removed from {fn}" if decorated else f"{fn} as written"
    if fn == "call" and getattr(raw, "__name__", "") == "<lambda>":
        unjitted = "call: the call's lambda as written"
    if held:  # the snippets' functions take the object first: one that calls what it holds
        rest = "*args, **kwargs" if target.kwargs else "*args"
        fn = f"lambda {var}, {rest}: {var}.{raw.name}({rest})"
        unjitted = f"{var}.{raw.name} as written"
    body = helper_body(raw, (*children, *aux)) if attributes is not None and not held else None
    names = Names(cls, fn, name, ", ".join(args), var, children, aux, state, unjitted=unjitted,
                  body=body or _NO_BODY, held=raw.name if held else "")  # fmt: skip
    if any(kinds.is_key(leaf) for leaf in jax.tree_util.tree_leaves(attributes or [])):
        return dataclasses.replace(names, data="_data(leaf)", prelude=_KEY_DATA)
    return names


def _positional(function: Callable[..., Any]) -> list[str]:
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


# --- The ways --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Way:
    """One way of jitting the call: its name, what it costs its user (``caveat``), the code to
    write (``snippet``, formatted with :class:`Names`), how it is built (``build(obj, raw)``
    returns ``bind``: ``bind(obj)`` is a :data:`~jitbench.ways.builders.Bound`), why it cannot be
    (``applies``), ``convert`` (a new instance into the object the way calls) and whether
    its call hashes non-array leaves (``filters``)."""

    name: str
    caveat: str
    snippet: str
    build: Callable[[Any, Callable[..., Any]], Callable[[Any], Bound]] | None = None
    applies: Callable[[Any], str | None] = lambda obj: None
    convert: Callable[[Any], Callable[[Any], Any]] | None = None
    filters: bool = False  # the call hashes non-array leaves (eqx.filter_jit)
    body: bool = False  # its code carries the call's body (:func:`helper_body`)
    # Its jit takes a copy of the object (a pytree flattened and rebuilt): what the call writes
    # into the object is not written back, so it is not built for a call that writes.
    copies: bool = False

    def code(self, names: Names) -> str:
        """The snippet for this object's class and call."""
        fields = dataclasses.asdict(names)
        fields["comma_args"] = f", {names.args}" if names.args else ""
        fields["body"] = names.body.replace("{fn}", names.fn)
        for part in ("children", "aux"):
            attributes = getattr(names, part)
            fields[f"{part}_of"] = tuple_source([f"o.{n}" for n in attributes])
            fields[f"self_{part}"] = tuple_source([f"self.{n}" for n in attributes])
            fields[f"set_{part}"] = tuple_source([f"obj.{n}" for n in attributes])
            fields[f"bare_{part}"] = tuple_source(attributes)
        return self.snippet.format(**fields).strip("\n")


WRITTEN = Way(AS_WRITTEN, "", "")

VALUE_HASH = Way(
    "static self, value hash",
    "the object is hashed at every call (any array it holds copied to the host), and every "
    "object jit compiled for stays alive in its cache: memory grows with every new value",
    """{prelude}
def _key(obj):   # every field: arrays by shape, dtype and bytes, static data written out
    leaves, structure = jax.tree_util.tree_flatten({state})
    return str(structure), tuple(   # str: a PyTreeDef's hash omits static data
        (leaf.shape, str(leaf.dtype), {data}.tobytes()) if hasattr({data}, "tobytes") else leaf
        for leaf in leaves
    )

{cls}.__hash__ = lambda self: hash(_key(self))
{cls}.__eq__ = lambda self, other: type(other) is type(self) and _key(self) == _key(other)
{name} = partial(jax.jit, static_argnums=0)({fn})   # {unjitted}
{name}({var}{comma_args})
""",
    build.value_hash,
    build.value_hash_applies,
    filters=True,  # every leaf is hashed, numbers too
)

JIT_TAKING_OBJECT = Way(
    "jax.jit, object as argument",
    "every non-array field must be static (auxiliary data); a number leaf is traced",
    """
{name} = jax.jit({fn})   # {unjitted}
{name}({var}{comma_args})
""",
    build.taking_object("jax:jit"),
    build.leaves_traceable,
    copies=True,
)

PLAIN_WAYS = (
    Way(
        "pytree registration",
        "the class must be rebuilt from its attributes without __init__; every non-array "
        "attribute is static (hashed, compared): a new value compiles once",
        """
def _unflatten(aux, children):
    obj = object.__new__({cls})
    {set_children} = children
    {set_aux} = aux
    return obj

jax.tree_util.register_pytree_node({cls}, lambda o: ({children_of}, {aux_of}), _unflatten)
{name} = jax.jit({fn})   # {unjitted}
{name}({var}{comma_args})
""",
        build.taking_object("jax:jit"),
        build.plain_applies,
        build.plain_pytree,
        copies=True,
    ),
    Way(
        "helper function",
        "the method's body moves to a module-level function; every attribute it reads is "
        "passed in (flags static), so a new attribute is a new argument to add",
        """
@partial(jax.jit, static_argnums=0)
def _{name}(statics, arrays{comma_args}):
    {bare_aux}, {bare_children} = statics, arrays
{body}

def {name}(self{comma_args}):   # {fn}'s new body: write it in its place
    return _{name}({self_aux}, {self_children}{comma_args})

{name}({var}{comma_args})
""",
        build.helper_function,
        build.plain_applies,
        body=True,
        copies=True,
    ),
    VALUE_HASH,
)

# Offered only where the call as written makes a new jit at every call (ways_of).
HOISTED = Way(
    "jit made once, outside the loop",
    "the jit closes over the object as it is when made: a change made to it in place after is "
    "not seen (make the jit again after the change, or pass the changed value as an "
    "argument); a new object needs a jit of its own",
    """
{name} = jax.jit(partial({fn}, {var}))   # once, outside the loop
{name}({args})
""",
    build.hoisted,
)

PYTREE_WAYS = (JIT_TAKING_OBJECT, VALUE_HASH)

# Offered where the call is a function the object holds (build.HeldCall), whatever its kind.
JIT_HELD_CALL = Way(
    "jax.jit of the call",
    "the function the object holds is jitted alone, once per function: a new instance holding "
    "new functions (hk.transform called again) compiles again; the object is no argument",
    """
{name} = jax.jit({var}.{held})   # once, outside the loop
{name}({args})
""",
    build.jit_held_call,
)

EQX_WAYS = (
    Way(
        "eqx.filter_jit",
        "every call flattens the module and hashes its non-array leaves (a Python number "
        "too: a new value compiles)",
        """
{name} = eqx.filter_jit({fn})
{name}({var}{comma_args})
""",
        build.taking_object("equinox:filter_jit"),
        filters=True,
    ),
    JIT_TAKING_OBJECT,
    Way(
        "jax.jit over eqx.partition",
        "the partition is made once per model, outside the loop: a changed model must be "
        "partitioned again, and the static part is hashed at every call",
        """
params, static = eqx.partition({var}, eqx.is_array)   # once, outside the loop

@partial(jax.jit, static_argnums=1)
def {name}(params, static{comma_args}):
    return {fn}(eqx.combine(params, static){comma_args})

{name}(params, static{comma_args})
""",
        build.partition_once,
        build.partition_applies,
        filters=True,  # a number is no array: eqx.partition puts it in the hashed part
    ),
    VALUE_HASH,
)

NNX_WAYS = (
    # flax 0.12's nnx.Module is a pytree: plain jax.jit takes it, as flax's docs show.
    dataclasses.replace(
        JIT_TAKING_OBJECT,
        caveat="the module is a pytree (flax 0.12 and later): every call flattens it, its "
        "Variables traced and its other attributes hashed; what the call writes into it (a "
        "BatchNorm's statistics, a counter) is not written back, so a call that writes needs "
        "nnx.jit",
        applies=build.nnx_pytree_applies,
    ),
    Way(
        "nnx.jit",
        "every call walks the module's graph in Python (the cost grows with its size)",
        """
{name} = nnx.jit({fn})
{name}({var}{comma_args})
""",
        build.taking_object("flax.nnx:jit"),
    ),
    Way(
        "nnx.jit(graph=False)",
        "tree mode: the module must be a tree: a Variable or sub-module reachable from two "
        "attributes (shared weights) makes the call raise",
        """
{name} = nnx.jit({fn}, graph=False)
{name}({var}{comma_args})
""",
        build.taking_object("flax.nnx:jit", graph=False),
        build.tree_mode_applies,
    ),
    Way(
        "nnx.jit_partial",
        "the model is flattened once, when the partial is made: a change to it made after "
        "(a new attribute value, a swapped sub-module) needs a new partial",
        """
{name} = nnx.jit_partial({fn}, {var}, graph=False)   # once, outside the loop
{name}({args})
""",
        build.jit_partial,
        build.tree_mode_applies,
    ),
    Way(
        "nnx.cached_partial",
        "the model's graph is cached when the partial is made: a structural change to it "
        "made after needs a new partial",
        """
{name} = nnx.cached_partial(nnx.jit({fn}), {var})   # once, outside the loop
{name}({args})
""",
        build.cached_partial,
    ),
    Way(
        "jax.jit over nnx.split",
        "the model is split once and its state fed back: a change made to the model after "
        "the split is not seen (split again, or nnx.update the model from the state)",
        """
graphdef, state = nnx.split({var})   # once, outside the loop

@jax.jit
def {name}(graphdef, state{comma_args}):
    {var} = nnx.merge(graphdef, state)
    out = {fn}({var}{comma_args})
    return out, nnx.state({var})

out, state = {name}(graphdef, state{comma_args})   # nnx.update({var}, state) when done
""",
        build.split_merge,
    ),
)


def kind_of(obj: Any) -> str:
    """The kind of object whose ways apply, or ``kinds.object_kind``'s words for one with
    none (an array, a number, a container: jit's own arguments already)."""
    if kinds.is_nnx_module(obj):
        return NNX
    if kinds.is_eqx_module(obj):
        return EQX
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
    found = {NNX: NNX_WAYS, EQX: EQX_WAYS, PYTREE: PYTREE_WAYS, PLAIN: PLAIN_WAYS}.get(kind, ())
    return (WRITTEN, *found, *((JIT_HELD_CALL,) if held and found else ()))


def ways_of(target: Target) -> tuple[Way, ...]:
    """The ways advise measures for ``target``: :func:`ways_for` its kind, and the jit made
    once where the call as written makes one at every call."""
    ways = ways_for(kind_of(target.obj), build.held(target))
    if len(ways) > 1 and build.jits_at_every_call(target):
        return (ways[0], HOISTED, *ways[1:])
    return ways


class WaySubject(Walked):
    """The target's object called the way ``way`` jits it, judged against the raw method under
    ``jax.disable_jit()``; JitbenchError where the way cannot be built for the object."""

    def __init__(self, target: Target, way: Way) -> None:
        self.way, self.raw = way, build.unjitted(target)
        if (reason := way.applies(target.obj)) is not None:  # the call as written always does
            raise JitbenchError(reason)
        if way.body and helper_body(self.raw, sum(build.split_attributes(target.obj), ())) is None:
            raise JitbenchError(
                "its code is the call's body with self.<name> read as <name>, and this body "
                "reads the object otherwise (a method of it, or itself), or has no source"
            )
        self._convert = way.convert(target.obj) if way.convert else None
        self._bind = way.build(target.obj, self.raw) if way.build else None
        if self._bind is not None and build.as_written(target, self._bind):
            raise JitbenchError(f"the call as written already jits with {way.name}")
        if way.copies and (written := build.writes(target, self.raw)):
            raise JitbenchError(
                f"the call writes into the object without jit ({written}): {way.name} calls "
                "a copy of it (flattened and rebuilt), so what the call writes is lost"
            )
        super().__init__(target)
        self.name = f"{target.name} ({way.name})"
        # Each way sees the fields as its own call does (docs/design.md, advise's ways).
        if way is not WRITTEN:
            self.filtered = way.filters

    def new(self, seed: int = 0) -> Any:
        made = super().new(seed)
        return made if self._convert is None else self._convert(made)

    def call(self, obj: Any) -> Callable[[], Any]:
        if self._bind is None:
            return super().call(obj)
        function, lead = self._bind(obj)
        inputs, kwargs = self.target.inputs, self.target.kwargs
        # The call holds the object, as the user's code does (a hoisted jit reads it weakly).
        return lambda _held=obj: function(*lead, *inputs, **kwargs)

    def code(self, obj: Any) -> tuple[str, dict[str, Any]]:
        if self._bind is None:
            return super().code(obj)
        function, lead = self._bind(obj)
        _, names = super().code(obj)  # obj among them: held, as above
        names.update({f"a{i}": value for i, value in enumerate(lead)}, function=function)
        args = [f"a{i}" for i in range(len(lead))] + call_args(self.target)
        return f"function({', '.join(args)})", names

    def unjitted(self, obj: Any, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The raw method's result (the oracle's call)."""
        return self.raw(obj, *inputs, **kwargs)


def way_subject(target: Target, name: str) -> WaySubject:
    """The subject of the way called ``name`` on ``target`` (JitbenchError: unknown, or it
    does not apply to the object's kind)."""
    # The hoisted jit is a way only of a call that jits at every call (running it twice
    # tells): asked for by name only, as advise's counting process asks for its row.
    hoisted = name == HOISTED.name
    valid = ways_of(target) if hoisted else ways_for(kind_of(target.obj), build.held(target))
    way = next((w for w in valid if w.name == name), None)
    if way is None:
        choices = ", ".join(w.name for w in valid)
        raise JitbenchError(f"unknown way {name!r} for {target.name!r}; valid: {choices}")
    return WaySubject(target, way)
