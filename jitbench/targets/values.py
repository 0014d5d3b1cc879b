"""New values for a field, the kind its users set: another valid value, a new array; None where
none is known (see docs/design.md).
"""

from __future__ import annotations

import contextlib
import enum
import functools
import re
import types
from collections.abc import Sequence

import numpy as np

from jitbench.targets import kinds


def new_number(value: bool | int | float) -> bool | int | float:
    """A bool flipped; a number scaled within its sign and magnitude (|x| < 1 halved, else
    doubled; 0 becomes 1; inf and nan, a best fitness not found yet, +-1), its type kept."""
    if isinstance(value, bool):
        return not value
    if value == 0 or not np.isfinite(value):
        return type(value)(-1 if value < 0 else 1)
    if isinstance(value, int):
        return value * 2
    return value / 2 if abs(value) < 1 else value * 2


def fresh_function(function: object) -> object:
    """A new function object of the same code whose closure holds new floats (scaled as
    :func:`new_number` scales them, through the functions, partials and tuples it holds: what a new
    learning rate makes of an optax optimizer's functions), a bound method's bound to the same
    object; None for a builtin. Without a float held, it computes what the old one did."""
    return _fresh(function, {})


def _fresh(value: object, made: dict[int, object]) -> object:
    """``value`` with its floats and functions new, or None; ``made``: the copies, by id."""
    if id(value) in made:
        return made[id(value)]
    if isinstance(value, float):
        return new_number(value)
    if type(value) is tuple or kinds.is_named_tuple(value):  # a list is shared state: kept
        items = [_kept(item, made) for item in value]
        return tuple(items) if type(value) is tuple else type(value)(*items)
    if isinstance(value, functools.partial):
        inner = _fresh(value.func, made)
        args = _kept(value.args, made)
        keywords = {k: _kept(v, made) for k, v in value.keywords.items()}
        return None if inner is None else functools.partial(inner, *args, **keywords)
    if isinstance(value, types.MethodType):
        inner = _fresh(value.__func__, made)
        return None if inner is None else types.MethodType(inner, value.__self__)
    if not isinstance(value, types.FunctionType):
        return None
    cells = value.__closure__
    fresh = types.FunctionType(
        value.__code__, value.__globals__, value.__name__, value.__defaults__,
        None if cells is None else tuple(types.CellType() for _ in cells),
    )  # fmt: skip
    made[id(value)] = fresh
    for new, old in zip(fresh.__closure__ or (), cells or (), strict=True):
        with contextlib.suppress(ValueError):  # a cell not filled yet: left empty
            new.cell_contents = _kept(old.cell_contents, made)
    fresh.__kwdefaults__ = value.__kwdefaults__
    fresh.__dict__.update(value.__dict__)
    return functools.update_wrapper(fresh, value, assigned=("__qualname__", "__doc__"))


def _kept(value: object, made: dict[int, object]) -> object:
    """A closure's or tuple's item made new where it can be, else itself."""
    new = _fresh(value, made)
    return value if new is None else new


# The new values tried for one field, at most: each is a call without jit (edit.refused).
MAX_TRIED = 3


def candidates(value: object, choices: Sequence[object] = ()) -> list[object]:
    """The new values a user would set in a field holding ``value``, in the order they are
    tried (at most :data:`MAX_TRIED`; ``[]`` where none is known): the others of its declared
    ``choices`` (a ``Literal``'s, an enum's, a constructor's check's, dtypes: see
    :mod:`jitbench.targets.declared`), the other members of its enum, :func:`numbers`, a fresh
    function, a set less one item; a string needs declared choices."""
    if options := [c for c in choices if not _equal(c, value)]:
        return options[:MAX_TRIED]
    if isinstance(value, enum.Enum):
        return [m for m in type(value) if m != value][:MAX_TRIED]
    if isinstance(value, bool | int | float):
        return numbers(value)
    if callable(value):
        fresh = fresh_function(value)
        return [] if fresh is None else [fresh]
    if isinstance(value, frozenset | set) and value:
        return [smaller_set(value)]
    return []


def _equal(a: object, b: object) -> bool:
    """Whether two declared values are the same (a dtype compared with None is not)."""
    try:
        return a is b or bool(a == b)
    except Exception:
        return False


def numbers(value: bool | int | float) -> list[bool | int | float]:
    """A number's new values in the order they are tried: :func:`new_number`'s, then the
    other way (a count halved, a tolerance doubled), then for an int the least of its sign
    (1: a limit or a count matters most at its smallest; ``time_limit=1`` ends an episode at
    its first step); a bool, its other value. Never 0 where it was not (a count of none)."""
    first = new_number(value)
    if isinstance(value, bool) or value == 0 or not np.isfinite(value):
        return [first]
    if isinstance(value, int):
        back = value // 2 if value > 0 else -(-value // 2)
        found = [first, back, 1 if value > 0 else -1]
    else:
        found = [first, value * 2 if abs(value) < 1 else value / 2]
    kept = [v for v in found if v != 0 and v != value]
    return list(dict.fromkeys(kept))[:MAX_TRIED]


def played(value: object, choices: Sequence[object] = (), pick: int = 0) -> object:
    """The value the scenario sets in a field holding ``value``: its ``pick``-th candidate
    (edit.refused chose it), the first where there are fewer; None where none is known."""
    options = candidates(value, choices)
    return (options[pick] if pick < len(options) else options[0]) if options else None


def new_value(value: object, choices: Sequence[object] = ()) -> object:
    """Another valid value for a field holding ``value``: its first candidate (None where none
    is known)."""
    return played(value, choices)


def smaller_set(value: frozenset | set) -> frozenset | set:
    """The set less one item, of its type: a tag or an option dropped, as a user builds the
    object without it. The item is the last by type and repr, an address left out (the same
    one at every run). An empty set has no other value known (an item would be made up)."""

    def key(item: object) -> tuple[str, str]:
        return type(item).__qualname__, re.sub(r" at 0x[0-9a-fA-F]+", "", repr(item))

    dropped = max(value, key=key)
    return type(value)(item for item in value if item is not dropped)


def unseen(value: object, choices: Sequence[object] = (), pick: int = 0) -> object:
    """A value other than ``value`` and the one the scenario played (its ``pick``-th
    candidate): the played value's own first candidate, where that is not ``value`` again (a
    bool's other value is all there is)."""
    once = played(value, choices, pick)
    twice = played(once, choices)
    return once if twice is None or _equal(twice, value) else twice


def new_array(
    like: object, rng: np.random.Generator, shape: tuple[int, ...] | None = None
) -> object:
    """An array of new values shaped ``shape`` (default: ``like``'s) in ``like``'s range (its
    sign and bounds kept; a constant array varies around its value), of its dtype, weak type
    and placement (a jax array goes where ``like`` is; a NumPy one stays NumPy); a typed PRNG
    key, new key data (what a split gives)."""
    shape = tuple(like.shape) if shape is None else tuple(shape)
    if kinds.is_key(like):
        import jax

        data = jax.random.key_data(like)  # any uint32 words are a key: key(0)'s are zeros
        new = rng.integers(0, 2**32, (*shape, *data.shape[like.ndim :]), dtype=np.uint32)
        device = next(iter(data.devices()))
        placed = jax.device_put(new, device) if kinds.is_committed(data) else new
        return jax.random.wrap_key_data(placed, impl=jax.random.key_impl(like))
    host = np.asarray(like)
    finite = host[np.isfinite(host)] if host.dtype.kind in "fc" else host  # inf: none found yet
    low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if low == high:  # a constant: values around it, of its sign
        low, high = (low / 2, low * 2) if low > 0 else (low * 2, low / 2) if low < 0 else (-1, 1)
    if host.dtype.kind in "iub":
        values = rng.integers(int(low), int(high) + 1, shape).astype(host.dtype)
    else:
        values = rng.uniform(low, high, shape).astype(host.dtype)
    values = _valid(host, values)
    if isinstance(like, np.ndarray):
        return values
    import jax

    if like.weak_type:  # a weak-typed array (jnp.asarray(1.0)): replaced by one as weak
        return jax.lax.full_like(like, 0, shape=shape).at[...].set(values)
    if not kinds.is_committed(like):  # as jnp.asarray places it: a committed copy keys apart
        return jax.numpy.asarray(values)
    sharding = like.sharding
    if shape != tuple(like.shape) and isinstance(sharding, jax.sharding.NamedSharding):
        # the new leading axis is not sharded; the others stay as they were
        spec = jax.sharding.PartitionSpec(None, *sharding.spec)
        sharding = jax.sharding.NamedSharding(sharding.mesh, spec)
    return jax.device_put(values, sharding)


def _valid(host: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` kept as valid as ``host`` is: symmetric, positive definite (lineax's operator)
    or ordered (interpax's grid; an integer grid strictly, no point twice: JAX's
    RegularGridInterpolator divides by each step) as it is (why: docs/design.md)."""
    square = host.ndim >= 2 and host.shape[-1] == host.shape[-2] > 1
    if square and host.dtype.kind == "f" and values.shape[-2:] == host.shape[-2:]:
        if np.allclose(host, np.swapaxes(host, -1, -2)):
            sym = (values + np.swapaxes(values, -1, -2)) / 2
            least = np.linalg.eigvalsh(host.astype(np.float64)).min()
            if least > 0:  # moved by at most half its least eigenvalue
                noise = sym - sym.mean()
                norm = np.linalg.norm(noise, ord=2, axis=(-2, -1), keepdims=True)
                sym = host + 0.5 * least * noise / np.where(norm > 0, norm, 1.0)
            return sym.astype(host.dtype)
    if host.ndim and host.shape[-1] > 1 and values.ndim and host.dtype.kind in "iuf":
        steps = np.diff(host, axis=-1)
        if (steps > 0).all() or (steps < 0).all():
            values = np.sort(values, axis=-1)
            if host.dtype.kind in "iu":  # strictly: a repeated point divides by zero
                at = np.arange(values.shape[-1], dtype=values.dtype)
                values = np.maximum.accumulate(values - at, axis=-1) + at
            values = values if (steps > 0).all() else values[..., ::-1]
    return values


def new_shape(like: object) -> tuple[int, ...]:
    """The scenario's new shape for an array: a leading axis of 2 (``(64,)`` -> ``(2, 64)``)."""
    return (2, *like.shape)
