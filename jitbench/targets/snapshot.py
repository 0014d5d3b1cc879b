"""A copy of a user's object as it is now, for the oracle: what cannot change is shared."""

from __future__ import annotations

import copy
from typing import TypeVar

import numpy as np

from jitbench.targets import fields as fieldlib
from jitbench.targets import kinds

T = TypeVar("T")


def snapshot(value: T) -> T:
    """``copy.deepcopy`` sharing functions, jitted functions, classes and frozensets (a copied
    one would be a new static) and JAX arrays (immutable: a copy would only cost memory)."""
    memo: dict[int, object] = {}
    stack, seen = [value], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        # A frozenset too: its items are keys (lineax's tags are compared by identity).
        shared = (
            kinds.is_function(node) or kinds.is_jitted(node) or isinstance(node, type | frozenset)
        )
        if shared or (kinds.is_array(node) and not isinstance(node, np.ndarray)):
            memo[id(node)] = node
        elif (graph := _nnx_copy(node)) is not None:
            memo[id(node)] = graph
        else:
            stack += [child for _, _, child in fieldlib.children(node) or ()]
    copied = copy.deepcopy(value, memo)
    # Equinox keeps a module made without __init__ alive for good (kinds.py).
    kinds.release_equinox_modules(list(memo.values()))
    return copied


def _nnx_copy(node: object) -> object:
    """An nnx graph's (a module, an optimizer), Variable's or State's copy sharing its arrays
    (a donating call is refused: scenario.Play), else None: nnx's deepcopy ignores the memo
    and copies every array, and a deep-copied Variable flattens as one leaf (flax 0.12)."""
    if kinds.is_variable(node) or kinds.is_nnx_state(node):
        import jax

        return jax.tree_util.tree_map(lambda leaf: leaf, node)
    if not kinds.is_nnx_graph(node):
        return None
    from flax import nnx

    graphdef, state = nnx.split(node)
    return nnx.merge(graphdef, _nnx_copy(state))
