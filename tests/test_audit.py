"""The cache audit, pinned step by step as observed.

Observed with JAX 0.10.2 / jaxlib 0.10.2 (CPU), equinox 0.13.8, flax 0.12.8.
These are observations, not what the documentation promises: when a JAX
release changes them, this test fails and the README's findings need a look.
Each cell is "traces/compiles", with "!" for a stale (wrong) result and "?"
for a trace count that varies between processes (see below).
"""

from __future__ import annotations

from functools import partial

import jax
import pytest

import jitbench
from jitbench.audit import STEPS, audit

CORRECT_PYTREE = "1/1 0/0 1/1 0/0 0/0 1/1 0/0 0/0"
OBSERVED = {
    # Eager dispatch compiles each primitive once per shape (two primitives here).
    "eager": ("2/2 0/0 0/0 0/0 0/0 2/2 0/0 0/0", 0),
    # The wrapper closes over the attributes it saw first: every change is missed.
    "bound_method_jit": ("1/1 0/0 0/0! 0/0 0/0! 0/0! 1/1 1/1", 0),
    "helper_function": (CORRECT_PYTREE, 0),
    # id hash: changes unseen, and jit's cache keeps all three instances alive.
    "static_self_id_hash": ("1/1 0/0 0/0! 0/0 0/0! 0/0! 1/1 1/1", 3),
    # Value hash, mutated in place as the JAX docs' example does: the cache
    # entry's key *is* the mutated object, so later lookups find the old
    # program: stale after every change, and a new equal instance gets it too.
    # Whether a trace event fires on those steps depends on Python's hash
    # seed (it does not lower or compile either way), hence "?".
    "static_self_value_hash": ("1/1 0/0 ?/0! 0/0 ?/0! ?/0! 0/0! 1/1", 2),
    "pytree_class": (CORRECT_PYTREE, 0),
    "pytree_dataclass": (CORRECT_PYTREE, 0),
    # A new jit object per call never hits the cache, not even for the same object.
    "jit_per_call": ("1/1 1/1 1/1 1/1 1/1 1/1 1/1 1/1", 0),
    "equinox_filter_jit": (CORRECT_PYTREE, 0),
    "flax_struct_dataclass": (CORRECT_PYTREE, 0),
    "flax_nnx_jit": (CORRECT_PYTREE, 0),
}


def _cells(result):
    return [f"{s.traces}/{s.compiles}{'' if s.correct else '!'}" for s in result.steps]


@pytest.mark.parametrize("device", ["cpu", "cpu-sharded"])
@pytest.mark.parametrize("name", list(OBSERVED))
def test_audit_per_step(name, device):
    expected, leaked = OBSERVED[name]
    result = audit(name, device=device)
    assert [s.name for s in result.steps] == list(STEPS)
    for step, got, want in zip(STEPS, _cells(result), expected.split(), strict=True):
        if want.startswith("?"):
            assert got[0] in "01" and got[1:] == want[1:], (step, got, want)
        else:
            assert got == want, (step, got, want)
    assert result.leaked_instances == leaked


def test_totals_add_up():
    result = audit("bound_method_jit")
    assert result.compiles == 3 and result.traces == 3
    assert result.stale_results == 3
    assert result.repeat_call_compiles == 0
    assert audit("jit_per_call").repeat_call_compiles == 1
    as_dict = result.to_dict()
    assert as_dict["stale_results"] == 3 and len(as_dict["steps"]) == len(STEPS)


def test_audit_rejects_bad_input():
    with pytest.raises(jitbench.JitbenchError, match="unknown strategy"):
        audit("nope")
    with pytest.raises(jitbench.JitbenchError, match="size must be a positive integer"):
        audit("eager", size=0)
    with pytest.raises(jitbench.DeviceUnavailable):
        audit("eager", device="gpu")


def test_docs_strategy_two_example_is_stale_after_mutation():
    """The JAX docs' own strategy 2 class, mutated as the docs do.

    The docs print 6 then 3; JAX 0.10.2 prints 6 then 6, and a never-mutated
    instance equal to the mutated one gets the stale program too.
    """

    class CustomClass:
        def __init__(self, x, mul):
            self.x = x
            self.mul = mul

        @partial(jax.jit, static_argnums=0)
        def calc(self, y):
            if self.mul:
                return self.x * y
            return y

        def __hash__(self):
            return hash((self.x, self.mul))

        def __eq__(self, other):
            return isinstance(other, CustomClass) and (self.x, self.mul) == (other.x, other.mul)

    c = CustomClass(2, True)
    assert c.calc(3.0) == 6.0
    c.mul = False
    assert c.calc(3.0) == 6.0  # stale: the docs expect 3.0
    assert CustomClass(2, False).calc(3.0) == 6.0  # stale too, never mutated
    assert CustomClass(2, True).calc(3.0) == 6.0
