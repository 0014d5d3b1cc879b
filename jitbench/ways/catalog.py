"""The catalog of ways to jit a method: one :class:`~jitbench.ways.record.Way` per way, read by
the suite and by ``jitbench advise`` alike. A way the suite builds has a ``render`` (the class a
user would write, :mod:`jitbench.strategies.codegen`); a way advise builds from a user's own
object has a ``build`` (:mod:`jitbench.ways.builders`) and a ``snippet`` (the code printed); a
built-in strategy that advise offers too is one entry with both (``pytree_class`` is advise's
"pytree registration"). Then the ways of each kind of object (:func:`ways_of`). Never imports
JAX; design notes in docs/design.md.
"""

from __future__ import annotations

import dataclasses

from jitbench.errors import JitbenchError
from jitbench.strategies import library_recipes, recipes
from jitbench.targets import Target, kinds
from jitbench.ways import builders as build
from jitbench.ways import calls
from jitbench.ways.record import Way

# --- The catalog: the built-in strategies in the suite's order, then advise's ways alone ----

OBJECT = "plain object"  # kinds.object_kind's word for an instance of an ordinary class
EAGER = Way(
    "eager",
    "plain Python method, no jit: the baseline",
    "op-by-op dispatch of jax.numpy, nothing cached",
    recipes.eager,
    kind=OBJECT,
)

# Offered by advise only where the call as written makes a new jit at every call (ways_of).
BOUND_METHOD_JIT = Way(
    "bound_method_jit",
    "jax.jit(obj.calc) wrapped once per instance and reused",
    "attributes are closed over at trace time; the key ignores them (stale after a change)",
    recipes.bound_method_jit,
    kind=OBJECT,
    label="jit made once, outside the loop",
    caveat="the jit closes over the object as it is when made: a change made to it in place "
    "after is not seen (make the jit again after the change, or pass the changed value as an "
    "argument); a new object needs a jit of its own",
    snippet="""
{name} = jax.jit(partial({fn}, {var}))   # once, outside the loop
{name}({args})
""",
    build=build.hoisted,
)

HELPER_FUNCTION = Way(
    "helper_function",
    "method calls a module-level jitted function, flags static (JAX docs, strategy 1)",
    "flags as static_argnums, arrays as dynamic arguments",
    recipes.helper_function,
    kind=OBJECT,
    label="helper function",
    caveat="a module-level function takes every attribute the call reads, its arrays traced "
    "and the rest static (hashed: a new value compiles once): a new attribute is a new "
    "argument to add",
    snippet="""
@partial(jax.jit, static_argnums=0)
def _{name}(statics, arrays{comma_args}):
{unpack}
{body}

def {name}(self{comma_args}):   # {fn}'s new body: write it in its place
    return _{name}({self_aux}, {self_children}{comma_args})

{name}({var}{comma_args})
""",
    wrapping="""
@partial(jax.jit, static_argnums=0)
def _{name}(statics, arrays{comma_args}):
    {var} = object.__new__({cls})   # rebuilt from its attributes, {cls} as it is
{rebuild}
    return {fn}({var}{comma_args})   # {unjitted}

def {name}({var}{comma_args}):   # called in place of the call as written
    return _{name}({var_aux}, {var_children}{comma_args})

{name}({var}{comma_args})
""",
    build=build.helper_function,
    applies=build.plain_applies,
    body=True,
    copies=True,
)

STATIC_SELF_VALUE_HASH = Way(
    "static_self_value_hash",
    "static self with __hash__/__eq__ over field values (JAX docs, strategy 2)",
    "self is static and hashed by value; arrays hashed by content, baked in as constants",
    recipes.static_self_value_hash,
    kind=OBJECT,
    label="static self, value hash",
    caveat="the object is hashed at every call (any array it holds copied to the host), and "
    "every object jit compiled for stays alive in its cache: memory grows with every new value",
    snippet="""{prelude}
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
    wrapping="""{prelude}
def _key(obj):   # every field: arrays by shape, dtype and bytes, static data written out
    leaves, structure = jax.tree_util.tree_flatten({state})
    return str(structure), tuple(   # str: a PyTreeDef's hash omits static data
        (leaf.shape, str(leaf.dtype), {data}.tobytes()) if hasattr({data}, "tobytes") else leaf
        for leaf in leaves
    )

class _Hashed:   # {cls} as it is, hashed and compared by its values
    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return hash(_key(self.obj))

    def __eq__(self, other):
        same = type(other) is _Hashed and type(other.obj) is type(self.obj)
        return same and _key(self.obj) == _key(other.obj)

@partial(jax.jit, static_argnums=0)
def _{name}(hashed{comma_args}):
    return {fn}(hashed.obj{comma_args})   # {unjitted}

def {name}({var}{comma_args}):   # called in place of the call as written
    return _{name}(_Hashed({var}){comma_args})

{name}({var}{comma_args})
""",
    build=build.value_hash,
    applies=build.value_hash_applies,
    filters=True,  # every leaf is hashed, numbers too
)

PYTREE_CLASS = Way(
    "pytree_class",
    "register_pytree_node_class, plain jax.jit on the method (JAX docs, strategy 3)",
    "arrays are children, flags aux data; Python tree_flatten at every call",
    recipes.pytree_class,
    kind="pytree",
    label="pytree registration",
    caveat="the class must be rebuilt from its attributes without __init__; every non-array "
    "attribute is static (hashed, compared): a new value compiles once",
    snippet="""
def _unflatten(aux, children):
    obj = object.__new__({cls})
{set_parts}
    return obj

jax.tree_util.register_pytree_node({cls}, lambda o: ({children_of}, {aux_of}), _unflatten)
{name} = jax.jit({fn})   # {unjitted}
{name}({var}{comma_args})
""",
    build=build.taking_object("jax:jit"),
    applies=build.plain_applies,
    convert=build.plain_pytree,
    copies=True,
)

EQUINOX_FILTER_JIT = Way(
    "equinox_filter_jit",
    "eqx.Module with eqx.filter_jit on the method",
    "arrays partitioned from everything else at every call; frozen, dataclasses.replace",
    library_recipes.equinox_filter_jit,
    requires=("equinox",),
    extra="equinox",
    kind="eqx.Module",
    label="eqx.filter_jit",
    caveat="every call flattens the module and hashes its non-array leaves (a Python number "
    "too: a new value compiles)",
    snippet="""
{name} = eqx.filter_jit({fn})
{name}({var}{comma_args})
""",
    build=build.taking_object("equinox:filter_jit"),
    filters=True,
)

FLAX_NNX_JIT = Way(
    "flax_nnx_jit",
    "nnx.Module with nnx.jit on the method",
    "graph traversal in Python at every call; mutable, changed in place",
    library_recipes.flax_nnx_jit,
    requires=("flax",),
    extra="flax",
    kind="nnx.Module",
    label="nnx.jit",
    caveat="every call walks the module's graph in Python (the cost grows with its size)",
    snippet="""
{name} = nnx.jit({fn})
{name}({var}{comma_args})
""",
    build=build.taking_object("flax.nnx:jit"),
)

NNX_CACHED_PARTIAL = Way(
    "nnx_cached_partial",
    "nnx.jit method called through nnx.cached_partial(Model.calc, model) (flax's guide)",
    "graph traversal cached once; arrays are shared Variables, flag changes unseen (stale)",
    library_recipes.nnx_cached_partial,
    requires=("flax>=0.12.1",),
    extra="flax",
    holder="model",
    kind=OBJECT,
    label="nnx.cached_partial",
    caveat="the model's graph is cached when the partial is made: a structural change to it "
    "made after needs a new partial",
    snippet="""
jitted = nnx.jit({fn})
{name} = nnx.cached_partial(jitted, {var})   # once, outside the loop
{name}({args})
""",
    build=build.cached_partial,
)

NNX_SPLIT_MERGE = Way(
    "nnx_split_merge",
    "nnx.split once, jax.jit over (graphdef, state) with nnx.merge inside (flax's guide)",
    "a plain jit of two pytrees; the split is not redone, so flag changes are unseen",
    library_recipes.nnx_split_merge,
    requires=("flax>=0.12.1",),
    extra="flax",
    holder="model",
    kind=OBJECT,
    label="jax.jit over nnx.split",
    caveat="the model is split once and its state fed back: a change made to the model after "
    "the split is not seen (split again, or nnx.update the model from the state)",
    snippet="""
graphdef, state = nnx.split({var})   # once, outside the loop

@jax.jit
def {name}(graphdef, state{comma_args}):
    {var} = nnx.merge(graphdef, state)
    out = {fn}({var}{comma_args})
    return out, nnx.state({var})

out, state = {name}(graphdef, state{comma_args})   # nnx.update({var}, state) when done
""",
    build=build.split_merge,
)

# For a call that writes nothing: the same split, the jit closing over the graphdef and
# returning the output alone (no state written back: the fastest loop of the nnx ways on a
# chip, docs/advise.md).
NNX_SPLIT_OUTPUT = Way(
    "jax.jit over nnx.split, output only",
    caveat="the model is split once and the jit made for it closes over its graphdef: a change "
    "made to the model after the split is not seen, a new model is split and compiled again, "
    "and what the call writes is lost (not built for a call that writes)",
    snippet="""
graphdef, state = nnx.split({var})   # once, outside the loop

@jax.jit
def {name}(state{comma_args}):   # once, outside the loop: it closes over this graphdef
    return {fn}(nnx.merge(graphdef, state){comma_args})

out = {name}(state{comma_args})
""",
    build=build.split_output,
    copies=True,
)

NNX_TREE_MODE = Way(
    "nnx_tree_mode",
    "nnx.Module with nnx.jit(graph=False) on the method: tree mode, no graph traversal",
    "the module is a plain pytree to jax.jit: Variables are leaves, flags in the treedef",
    library_recipes.nnx_tree_mode,
    requires=("flax>=0.12.6",),
    extra="flax",
    kind="nnx.Module",
    label="nnx.jit(graph=False)",
    caveat="tree mode: the module must be a tree: a Variable or sub-module reachable from two "
    "attributes (shared weights) makes the call raise",
    snippet="""
{name} = nnx.jit({fn}, graph=False)
{name}({var}{comma_args})
""",
    build=build.taking_object("flax.nnx:jit", graph=False),
    applies=build.tree_mode_applies,
)

NNX_JIT_PARTIAL = Way(
    "nnx_jit_partial",
    "nnx.jit_partial(Model.calc, model, graph=False): the module flattened once (tree mode)",
    "the Variables are flattened at construction: their values are seen, flags unseen (stale)",
    library_recipes.nnx_jit_partial,
    requires=("flax>=0.12.8",),
    extra="flax",
    holder="model",
    kind=OBJECT,
    label="nnx.jit_partial",
    caveat="the model is flattened once, when the partial is made: a change to it made after "
    "(a new attribute value, a swapped sub-module) needs a new partial",
    snippet="""
{name} = nnx.jit_partial({fn}, {var}, graph=False)   # once, outside the loop
{name}({args})
""",
    build=build.jit_partial,
    applies=build.tree_mode_applies,
)

# The built-in strategies, in the suite's order (jitbench.strategies registers them).
BUILT_IN = (
    EAGER,
    BOUND_METHOD_JIT,
    HELPER_FUNCTION,
    Way(
        "static_self_id_hash",
        "partial(jax.jit, static_argnums=0) with the default identity hash",
        "self is static and hashed by id: changes go unseen (stale), instances kept alive",
        recipes.static_self_id_hash,
        kind=OBJECT,
    ),
    STATIC_SELF_VALUE_HASH,
    PYTREE_CLASS,
    Way(
        "pytree_dataclass",
        "frozen dataclass registered with jax.tree_util.register_dataclass",
        "data and meta fields flattened in C++; changed with dataclasses.replace",
        recipes.pytree_dataclass,
        kind="pytree dataclass",
    ),
    Way(
        "jit_per_call",
        "a new jax.jit(self._calc) wrapper made inside every call (anti-pattern)",
        "a fresh jit object per call; what it reuses depends on JAX's tracing caches",
        recipes.jit_per_call,
        kind=OBJECT,
    ),
    EQUINOX_FILTER_JIT,
    Way(
        "flax_struct_dataclass",
        "flax.struct.dataclass, flags as pytree_node=False, jax.jit on the method",
        "a register_dataclass pytree under the hood; frozen, changed with .replace",
        library_recipes.flax_struct_dataclass,
        requires=("flax",),
        extra="flax",
        kind="flax.struct dataclass",
    ),
    FLAX_NNX_JIT,
    Way(
        "aot_compiled",
        "jax.jit(f).lower(...).compile() on the first call, the executable kept and called",
        "no cache lookup: flags baked in, changes in place unseen (stale), a new shape raises",
        recipes.aot_compiled,
        raises_on=("new_shape_array",),
        kind=OBJECT,
    ),
    Way(
        "equinox_module_jax_jit",
        "eqx.Module with plain jax.jit on the method",
        "the module is a pytree; equinox builds a bound-method pytree at every attribute access",
        library_recipes.equinox_module_jax_jit,
        requires=("equinox",),
        extra="equinox",
        kind="eqx.Module",
    ),
    NNX_CACHED_PARTIAL,
    NNX_SPLIT_MERGE,
    NNX_TREE_MODE,
    NNX_JIT_PARTIAL,
    Way(
        "jit_function",
        "the floor: helper_function's jitted _calc called on the arrays, no object",
        "jax.jit of a free function: the least a call of this computation costs in JAX",
        recipes.jit_function,
        function="_calc",
        kind=OBJECT,
    ),
)

# --- Advise's ways that are no built-in strategy ----------------------------------------

AS_WRITTEN = "as written"
WRITTEN = Way(AS_WRITTEN)

JIT_TAKING_OBJECT = Way(
    "jax.jit, object as argument",
    caveat="every non-array field must be static (auxiliary data); a number leaf is traced",
    snippet="""
{name} = jax.jit({fn})   # {unjitted}
{name}({var}{comma_args})
""",
    build=build.taking_object("jax:jit"),
    applies=build.leaves_traceable,
    copies=True,
)

# flax 0.12's nnx.Module is a pytree: plain jax.jit takes it, as flax's docs show.
NNX_TAKING_OBJECT = dataclasses.replace(
    JIT_TAKING_OBJECT,
    caveat="the module is a pytree (flax 0.12 and later): every call flattens it, its "
    "Variables traced and its other attributes hashed; what the call writes into it (a "
    "BatchNorm's statistics, a counter) is not written back, so a call that writes needs "
    "nnx.jit",
    applies=build.nnx_pytree_applies,
)

# penzai's two ways for a model holding Variables (its docs: pz.variable_jit, and frozen
# variables passed through jax.jit).
PENZAI_VARIABLE_JIT = Way(
    "pz.variable_jit",
    caveat="every call unbinds the model's Variables, passes their values to jit and writes "
    "the new values back (Python at every call, growing with the number of Variables)",
    snippet="""
{name} = pz.variable_jit({fn})
{name}({var}{comma_args})
""",
    build=build.taking_object("penzai.pz:variable_jit"),
)

PENZAI_FROZEN = Way(
    "jax.jit, frozen variables",
    caveat="every call freezes the model's Variables into their values (pz.freeze_variables), a "
    "pytree jit flattens; what the call writes into a Variable is not written back, so a call "
    "that writes needs pz.variable_jit",
    snippet="""
{name} = jax.jit({fn})   # {unjitted}
{name}(pz.freeze_variables({var}){comma_args})
""",
    build=build.frozen_variables,
    applies=build.penzai_applies,
    copies=True,
)

# Offered where the call is a function the object holds (calls.HeldCall), whatever its kind.
JIT_HELD_CALL = Way(
    "jax.jit of the call",
    caveat="the function the object holds is jitted alone, once per function: a new instance "
    "holding new functions (hk.transform called again) compiles again; the object is no "
    "argument",
    snippet="""
{name} = jax.jit({var}.{held})   # once, outside the loop
{name}({args})
""",
    build=build.jit_held_call,
)

EQX_PARTITION = Way(
    "jax.jit over eqx.partition",
    caveat="the partition is made once per model, outside the loop: a changed model must be "
    "partitioned again, and the static part is hashed at every call",
    snippet="""
params, static = eqx.partition({var}, eqx.is_array)   # once, outside the loop

@partial(jax.jit, static_argnums=1)
def {name}(params, static{comma_args}):
    return {fn}(eqx.combine(params, static){comma_args})

{name}(params, static{comma_args})
""",
    build=build.partition_once,
    applies=build.partition_applies,
    filters=True,  # a number is no array: eqx.partition puts it in the hashed part
)


# The kinds of object that have ways (kinds.object_kind's words, and "plain class").
NNX, EQX, PYTREE, PLAIN = "nnx.Module", "eqx.Module", "registered pytree", "plain class"
PENZAI = "penzai model (with Variables)"

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
    return PLAIN if calls.attributes(obj) is not None else described


def ways_for(kind: str, held: bool = False) -> tuple[Way, ...]:
    """The ways of an object of ``kind`` (:func:`kind_of`), the call as written first; only
    that one for a kind with no alternative. ``held``: the call is a function the object
    holds (``calls.held``), which ``jax.jit`` of the call jits alone."""
    found = {NNX: NNX_WAYS, EQX: EQX_WAYS, PYTREE: PYTREE_WAYS, PLAIN: PLAIN_WAYS,
             PENZAI: PENZAI_WAYS}.get(kind, ())  # fmt: skip
    return (WRITTEN, *found, *((JIT_HELD_CALL,) if held and found else ()))


def ways_of(target: Target) -> tuple[Way, ...]:
    """The ways advise measures for ``target``: :func:`ways_for` its kind, and the jit made
    once where the call as written makes one at every call."""
    ways = ways_for(kind_of(target.obj), calls.held(target))
    if len(ways) > 1 and calls.jits_at_every_call(target):
        return (ways[0], BOUND_METHOD_JIT, *ways[1:])
    return ways


def way_of(target: Target, name: str) -> Way:
    """The way called ``name`` for ``target`` (JitbenchError: unknown, or it does not apply to
    the object's kind)."""
    # The hoisted jit is a way only of a call that jits at every call (running it twice
    # tells): asked for by name only, as advise's counting process asks for its row.
    hoisted = name == BOUND_METHOD_JIT.label
    valid = ways_of(target) if hoisted else ways_for(kind_of(target.obj), calls.held(target))
    way = next((w for w in valid if w.label == name), None)
    if way is None:
        choices = ", ".join(w.label for w in valid)
        raise JitbenchError(f"unknown way {name!r} for {target.name!r}; valid: {choices}")
    return way
