"""Whether two results agree: each leaf within its dtype's tolerance, the structure the
same (what :class:`~jitbench.ways.subject.Walked` judges a call's result by, against the call
without jit)."""

from __future__ import annotations

import numpy as np

from jitbench.targets import kinds


def tolerance(dtype: np.dtype) -> float:
    """sqrt(eps) of a floating dtype (float32: 3.5e-4), 0 for integers and bools."""
    import jax.numpy as jnp

    if not jnp.issubdtype(dtype, jnp.inexact):
        return 0.0
    return float(np.sqrt(jnp.finfo(dtype).eps))


def leaves_off(got: object, expected: object) -> dict[str, float] | str:
    """Where two results (pytrees) disagree: each leaf's path with its largest difference
    (``{}``: they agree), or their structure or a leaf's shape, in words."""
    import jax

    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want, want_tree = jax.tree_util.tree_flatten_with_path(expected)
    if not _same_structure(got_tree, want_tree):
        return f"in structure: {got_tree}, not {want_tree}"
    off = {}
    for a, (path, b) in zip(got_leaves, want, strict=True):
        where = "result" + jax.tree_util.keystr(path)
        if not (_numeric(a) and _numeric(b)):  # what a result passes along: a model's function
            if not _same(a, b):
                return f"in {where}: {a!r:.60}, not {b!r:.60}"
            continue
        # Two arrays of other dtypes are other results (a computation's dtype set to
        # bfloat16), whatever the tolerance of the narrower; a Python number has none to compare.
        if kinds.is_array(a) and kinds.is_array(b) and a.dtype != b.dtype:
            return f"in the dtype of {where}: {a.dtype}, not {b.dtype}"
        a, b = kinds.on_host(a), kinds.on_host(b)
        if a.shape != b.shape:
            return f"in the shape of {where}: {a.shape}, not {b.shape}"
        tol = max(tolerance(a.dtype), tolerance(b.dtype))
        a, b = (a.astype(np.float64), b.astype(np.float64)) if tol else (a, b)
        if not np.allclose(a, b, rtol=tol, atol=tol, equal_nan=True):
            off[where] = float(np.nanmax(np.abs(a.astype(np.float64) - b), initial=0.0))
    return off


def _same_structure(got: object, want: object) -> bool:
    """Whether two treedefs agree: equal, or the same node types with the same children, their
    aux data equal but where it holds an object compared by identity alone (a tag a flatten
    makes anew: jax-cfd's GridArray given an ``object()`` in its aux data), which has no value
    to compare, as a function a call makes anew has none (:func:`_same`)."""
    if got == want:
        return True
    if got.num_nodes != want.num_nodes or got.num_leaves != want.num_leaves:
        return False
    mine, theirs = got.node_data(), want.node_data()
    if mine is None or theirs is None:  # a leaf: the counts above agree, so both are
        return mine is theirs
    children = zip(got.children(), want.children(), strict=True)
    return (
        mine[0] is theirs[0]
        and _same_aux(mine[1], theirs[1])
        and all(_same_structure(a, b) for a, b in children)
    )


def _same_aux(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple | list):
        return len(a) == len(b) and all(_same_aux(x, y) for x, y in zip(a, b, strict=True))
    if type(a).__eq__ is object.__eq__:
        return True
    return _same(a, b)


def _numeric(leaf: object) -> bool:
    return kinds.is_array(leaf) or isinstance(leaf, bool | int | float | complex | np.generic)


def _same(a: object, b: object) -> bool:
    """Whether two leaves that are no numbers agree: the same object, equal, or both callable
    (a function a call makes anew has no value to compare)."""
    if a is b or (callable(a) and callable(b)):
        return True
    try:
        return bool(a == b)
    except Exception:  # an equality that is no bool (arrays inside): they differ
        return False
