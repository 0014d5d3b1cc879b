"""Fidelity: a generated instance costs what the same class written by hand costs.

Counted, not timed: ``sys.setprofile`` sees every Python function call
('call') and every call of a C function from Python ('c_call'), so one cached
call of a generated instance must make exactly the calls its hand-written twin
(:mod:`jitbench.strategies.twins`) makes. A per-call loop, lookup or extra frame of
jitbench's on the call path shows up as extra calls.
"""

from __future__ import annotations

import collections
import dataclasses
import gc
import os
import sys
from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import numpy as np
import pytest
from jax_releases import runnable

import jitbench
from jitbench import compiles as measure
from jitbench.devices import resolve
from jitbench.strategies import recipes
from jitbench.strategies.codegen import (
    Shape,
    Template,
    field_owner,
    field_value,
    fields_of,
    layer_class,
)
from jitbench.strategies.computation import reference_layers
from jitbench.strategies.twins import NESTED_TWINS, TWINS, nested_twin, twin
from jitbench.ways.registry import Strategy, get_strategy

NAMES = list(jitbench.STRATEGIES)
CPU = resolve("cpu")
PACKAGE = os.path.dirname(jitbench.__file__)
# A new jit object per call traces and compiles at every call, and the calls JAX's
# tracing makes vary by a few between calls (its bounded internal caches: an
# lru_cache evicts, a regex runs): compare the fewest over several calls.
NOISY = {"jit_per_call": 7}
WIDE = Shape(n_arrays=10, n_static=3)
NESTED = Shape(depth=4)


def profile(call: Callable[[], Any]) -> list[tuple[str, str, str]]:
    """(event, name, file) of every 'call' and 'c_call' event during ``call()``."""
    events = []

    def hook(frame, event, arg):
        if event == "call":
            events.append((event, frame.f_code.co_name, frame.f_code.co_filename))
        elif event == "c_call":
            events.append((event, getattr(arg, "__qualname__", repr(type(arg))), ""))

    gc.collect()
    gc.disable()  # no collection (and no weakref callback) in the middle of a count
    sys.setprofile(hook)
    try:
        call()
    finally:
        sys.setprofile(None)
        gc.enable()
    return events


def cached_calls(obj: Any, y: Any, samples: int = 1) -> list[tuple[str, str, str]]:
    """The events of one cached call of ``obj.calc(y)`` (the fewest of ``samples`` calls).

    JAX's caches are cleared first: how many keys they hold (other shapes, other
    shardings from earlier tests) changes how many ``__eq__`` calls a lookup makes.
    """
    jax.clear_caches()
    for _ in range(3):  # compile, and let every lazy first-time path run
        jax.block_until_ready(obj.calc(y))
    return min((profile(lambda: obj.calc(y)) for _ in range(samples)), key=len)


def _multiset(events):
    return collections.Counter((event, name) for event, name, _ in events)


def twin_of(name: str, obj: Any) -> Any:
    fields = fields_of(obj)
    return twin(name)(fields["a0"], fields["s0"])


def _assert_same_calls(name: str, obj: Any, hand: Any, y: Any) -> None:
    samples = NOISY.get(name, 1)
    generated, written = cached_calls(obj, y, samples), cached_calls(hand, y, samples)
    assert len(generated) == len(written)
    if name not in NOISY:
        difference = _multiset(generated)
        difference.subtract(_multiset(written))
        assert not +difference and not -difference, difference


def test_every_built_in_strategy_has_a_twin():
    assert list(TWINS) == NAMES


@pytest.mark.parametrize("name", runnable(NAMES))
def test_cached_call_makes_the_calls_of_the_hand_written_twin(name):
    obj, y = jitbench.make_instance(get_strategy(name), 8, CPU)
    hand = twin_of(name, obj)
    _assert_same_calls(name, obj, hand, y)
    np.testing.assert_allclose(obj.calc(y), hand.calc(y), rtol=1e-6)


# --- Nested: a class holding layers (weight, bias, act) ----------------------------------------


def layer_values(obj: Any) -> list[tuple[Any, Any, bool]]:
    """(weight, bias, act) of each layer of a generated nested instance, in order."""
    return [
        (field_value(layer.weight), field_value(layer.bias), layer.act)
        for layer in field_owner(obj).layers
    ]


def nested_instance(name: str) -> tuple[Any, Any]:
    """A generated nested instance and its input, its layers' flags alternating (True
    first): ``make_instance`` sets every flag, and both branches of a layer are checked."""
    obj, y = jitbench.make_instance(get_strategy(name), 8, CPU, NESTED)
    layer = layer_class(type(obj))
    values = layer_values(obj)
    return type(obj)([layer(w, b, i % 2 == 0) for i, (w, b, _) in enumerate(values)]), y


def nested_twin_of(name: str, obj: Any) -> Any:
    """The nested twin of ``name`` over the same arrays and flags as ``obj``'s layers."""
    cls = nested_twin(name)
    return cls([cls.Layer(weight, bias, act) for weight, bias, act in layer_values(obj)])


def test_the_nested_twins_cover_the_same_strategies():
    assert list(NESTED_TWINS) == list(TWINS)


@pytest.mark.parametrize("name", runnable(NAMES))
def test_nested_cached_call_makes_the_calls_of_the_hand_written_twin(name):
    obj, y = nested_instance(name)
    assert [act for _, _, act in layer_values(obj)] == [True, False, True, False]
    hand = nested_twin_of(name, obj)
    _assert_same_calls(name, obj, hand, y)
    result = obj.calc(y)
    np.testing.assert_allclose(result, hand.calc(y), rtol=1e-5)
    np.testing.assert_allclose(result, reference_layers(layer_values(obj), y), rtol=1e-5)


@pytest.mark.parametrize("shape", [Shape(), WIDE, NESTED], ids=["default", "wide", "nested"])
@pytest.mark.parametrize("name", runnable(NAMES))
def test_nothing_of_jitbench_on_the_call_path(name, shape):
    obj, y = jitbench.make_instance(get_strategy(name), 8, CPU, shape)
    calls = {(file, fn) for event, fn, file in cached_calls(obj, y) if event == "call"}
    ours = {(file, fn) for file, fn in calls if file.startswith(PACKAGE)}
    # Once a process counted compiles, jax.monitoring calls the counter's listeners at
    # every trace and compile event (jit_per_call's every call), whether counting or not.
    listeners = {(measure.__file__, "_on_event")}
    assert ours <= listeners, ours
    if name != "jit_per_call":
        assert not ours


# --- Ten arrays, three flags ------------------------------------------------------------------
# Independent references, written by hand here (not generated, not the twins).


class _WideFields:
    def __init__(self, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, s0, s1, s2):
        self.a0 = a0
        self.a1 = a1
        self.a2 = a2
        self.a3 = a3
        self.a4 = a4
        self.a5 = a5
        self.a6 = a6
        self.a7 = a7
        self.a8 = a8
        self.a9 = a9
        self.s0 = s0
        self.s1 = s1
        self.s2 = s2


@partial(jax.jit, static_argnums=(0, 1, 2))
def _wide_calc(s0, s1, s2, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, y):
    x = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9
    acc = x * y
    acc = acc * y + s0 if s0 % 2 else acc + s0
    acc = acc * y + s1 if s1 % 2 else acc + s1
    acc = acc * y + s2 if s2 % 2 else acc + s2
    return acc


class WideHelperFunction(_WideFields):
    def calc(self, y):
        return _wide_calc(
            self.s0, self.s1, self.s2,
            self.a0, self.a1, self.a2, self.a3, self.a4,
            self.a5, self.a6, self.a7, self.a8, self.a9,
            y,
        )  # fmt: skip


class WideEager(_WideFields):
    def calc(self, y):
        x = (
            self.a0 + self.a1 + self.a2 + self.a3 + self.a4
            + self.a5 + self.a6 + self.a7 + self.a8 + self.a9
        )  # fmt: skip
        acc = x * y
        acc = acc * y + self.s0 if self.s0 % 2 else acc + self.s0
        acc = acc * y + self.s1 if self.s1 % 2 else acc + self.s1
        acc = acc * y + self.s2 if self.s2 % 2 else acc + self.s2
        return acc


@jax.tree_util.register_pytree_node_class
class WidePytreeClass(_WideFields):
    @jax.jit
    def calc(self, y):
        return WideEager.calc(self, y)

    def tree_flatten(self):
        children = (
            self.a0, self.a1, self.a2, self.a3, self.a4,
            self.a5, self.a6, self.a7, self.a8, self.a9,
        )  # fmt: skip
        return children, (self.s0, self.s1, self.s2)

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        return cls(*children, *aux_data)


@partial(
    jax.tree_util.register_dataclass,
    data_fields=["a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"],
    meta_fields=["s0", "s1", "s2"],
)
@dataclasses.dataclass(frozen=True)
class WidePytreeDataclass:
    a0: jax.Array
    a1: jax.Array
    a2: jax.Array
    a3: jax.Array
    a4: jax.Array
    a5: jax.Array
    a6: jax.Array
    a7: jax.Array
    a8: jax.Array
    a9: jax.Array
    s0: int
    s1: int
    s2: int

    @jax.jit
    def calc(self, y):
        return WideEager.calc(self, y)


class WideStaticSelfValueHash(_WideFields):
    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        return WideEager.calc(self, y)

    def __hash__(self):
        return hash((
            self.s0, self.s1, self.s2,
            self.a0.tobytes(), self.a1.tobytes(), self.a2.tobytes(), self.a3.tobytes(),
            self.a4.tobytes(), self.a5.tobytes(), self.a6.tobytes(), self.a7.tobytes(),
            self.a8.tobytes(), self.a9.tobytes(),
        ))  # fmt: skip

    def __eq__(self, other):
        return (
            isinstance(other, WideStaticSelfValueHash)
            and (self.s0, self.s1, self.s2) == (other.s0, other.s1, other.s2)
            and np.array_equal(self.a0, other.a0)
            and np.array_equal(self.a1, other.a1)
            and np.array_equal(self.a2, other.a2)
            and np.array_equal(self.a3, other.a3)
            and np.array_equal(self.a4, other.a4)
            and np.array_equal(self.a5, other.a5)
            and np.array_equal(self.a6, other.a6)
            and np.array_equal(self.a7, other.a7)
            and np.array_equal(self.a8, other.a8)
            and np.array_equal(self.a9, other.a9)
        )


WIDE_REFERENCES = {
    "eager": WideEager,
    "helper_function": WideHelperFunction,
    "pytree_class": WidePytreeClass,
    "pytree_dataclass": WidePytreeDataclass,
    "static_self_value_hash": WideStaticSelfValueHash,
}
# Strategies whose cached call does no Python work per field (flattened in C++, or
# nothing to flatten): a wide instance makes exactly the calls of a default one.
WIDTH_FREE = [
    "bound_method_jit",
    "helper_function",
    "static_self_id_hash",
    "pytree_class",
    "pytree_dataclass",
    "flax_struct_dataclass",
    "aot_compiled",
    "jit_function",
]


@pytest.mark.parametrize("name", sorted(WIDE_REFERENCES))
def test_wide_cached_call_makes_the_calls_of_a_hand_written_class(name):
    obj, y = jitbench.make_instance(get_strategy(name), 8, CPU, WIDE, statics=3)
    hand = WIDE_REFERENCES[name](**fields_of(obj))
    assert len(cached_calls(obj, y)) == len(cached_calls(hand, y))
    np.testing.assert_allclose(obj.calc(y), hand.calc(y), rtol=1e-5)


@pytest.mark.parametrize("name", WIDTH_FREE)
def test_width_adds_no_python_call(name):
    counts = []
    for shape in (Shape(), WIDE):
        obj, y = jitbench.make_instance(get_strategy(name), 8, CPU, shape)
        counts.append(len(cached_calls(obj, y)))
    assert counts[0] == counts[1]


@pytest.mark.parametrize(
    "name",
    runnable(
        [n for n in NAMES if n not in WIDTH_FREE and n not in WIDE_REFERENCES and n not in NOISY]
    ),
)
def test_width_adds_the_libraries_own_per_field_work(name):
    """Where the library walks the fields in Python (equinox, nnx), each one adds a fixed
    number of calls: ten arrays and three flags cost the default shape's calls plus nine
    times what one more array adds plus what two more flags add, nothing else."""

    def count(shape):
        obj, y = jitbench.make_instance(get_strategy(name), 8, CPU, shape)
        return len(cached_calls(obj, y))

    base = count(Shape())
    per_array = count(Shape(n_arrays=2)) - base
    two_flags = count(Shape(n_static=3)) - base
    assert per_array > 0
    assert count(WIDE) == base + 9 * per_array + two_flags


# --- The counter sees what it must --------------------------------------------------------------


def _helper_variant(old: str, new: str, extra: str = "") -> Strategy:
    """helper_function's recipe with its call line changed, as a strategy of its own."""
    text = recipes.HELPER_FUNCTION.replace(old, new).replace("HelperFunction", "HelperVariant")
    assert text != recipes.HELPER_FUNCTION.replace("HelperFunction", "HelperVariant")

    def render(t: Template) -> str:
        return t.render(text) + extra

    return Strategy("helper_variant", "helper_function, changed", "test", render)


def test_the_count_sees_one_extra_frame():
    through = "\n\ndef _through(f, *args):\n    return f(*args)\n"
    variant = _helper_variant("return _calc(", "return _through(_calc, ", through)
    obj, y = jitbench.make_instance(variant, 8, CPU)
    hand = twin_of("helper_function", obj)
    assert len(cached_calls(obj, y)) == len(cached_calls(hand, y)) + 1


def test_the_count_sees_a_per_call_loop():
    # The fields read by name in a loop: at least a getattr per field.
    loop = "return _calc(*[getattr(self, n) for n in ('s0', 'a0')], y)"
    variant = _helper_variant("return _calc({self_statics}, {self_arrays}, y)", loop)
    obj, y = jitbench.make_instance(variant, 8, CPU)
    hand = twin_of("helper_function", obj)
    assert len(cached_calls(obj, y)) >= len(cached_calls(hand, y)) + 2
