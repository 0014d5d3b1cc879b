"""The cache audit, pinned step by step as observed, per JAX release range.

These are observations, not what the documentation promises: when a JAX
release changes them, this test fails and the README's findings need a look.
Observed with JAX 0.4.30 (equinox 0.11.10, flax 0.9.0), 0.9.0 and 0.9.1
(equinox 0.13.8, flax 0.12.6), 0.10.2 (equinox 0.13.8, flax 0.12.8) and
0.12.0.1 (equinox 0.13.8, flax 0.12.12), on the CPU with one device and
sharded over four host devices (the same cells on both); the audit rows of
the releases between them in each range were observed alike.

Each cell is ``traces/compiles`` (:attr:`Step.cell`) with ``!`` for a stale
(wrong) result and `` E`` for a call that raised; ``?`` in place of the trace
count means "0 or 1, depending on the process" (see ``static_self_value_hash``).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import re
from functools import partial

import jax
import pytest
from jax_releases import JAX, Release, for_release, in_range, runnable

import jitbench
from jitbench.auditing import scenario
from jitbench.auditing.audit import audit
from jitbench.auditing.result import AuditResult, Step
from jitbench.compiles import block, clear_caches, count_compiles, read_back
from jitbench.devices import resolve
from jitbench.hazards import TOTALS
from jitbench.options import DEFAULT_SIZE
from jitbench.strategies.codegen import PROBES, fields_of
from jitbench.vocabulary import Hazard, Outcome, StepName
from jitbench.ways.registry import Strategy

DEVICES = ["cpu", "cpu-sharded"]
NAMES = list(jitbench.STRATEGIES)
STEPS = (
    "first_call",
    "repeat_call",
    "new_static",
    "seen_static",
    "same_shape_array",
    "new_shape_array",
    "equal_instance",
    "other_instance",
)

# --- The pinned table --------------------------------------------------------------------------
# strategy -> (the cells of the steps above, in order; instances still alive after the scenario)

# Recompiles exactly when the key changes, reuses the program of a flag value seen before.
CORRECT = ("1/1 0/0 1/1 0/0 0/0 1/1 0/0 0/0", 0)

# The rows from JAX 0.10 on (one trace event per traced call); the releases before replace
# the rows whose trace counts differ (see RELEASES).
COMMON: dict[str, tuple[str, int]] = {
    # Op-by-op dispatch: each of the two primitives (mul, add) compiles once per shape.
    "eager": ("2/2 0/0 0/0 0/0 0/0 2/2 0/0 0/0", 0),
    # The wrapper closes over the attributes it saw first: every change in place is missed;
    # the per-instance wrapper is a cycle the collector frees, so nothing leaks.
    "bound_method_jit": ("1/1 0/0 0/0! 0/0 0/0! 0/0! 1/1 1/1", 0),
    "helper_function": CORRECT,
    # Identity hash: changes in place go unseen, and jit's cache keeps all three instances.
    "static_self_id_hash": ("1/1 0/0 0/0! 0/0 0/0! 0/0! 1/1 1/1", 3),
    "pytree_class": CORRECT,
    "pytree_dataclass": CORRECT,
    # A new jit object per call: it traces and compiles at every call, unchanged object too.
    "jit_per_call": ("1/1 1/1 1/1 1/1 1/1 1/1 1/1 1/1", 0),
    "equinox_filter_jit": CORRECT,
    "flax_struct_dataclass": CORRECT,
    "flax_nnx_jit": CORRECT,
    # The executable takes the arrays only, the flag is baked in: a flag change is stale,
    # an array of another shape raises (pinned in test_aot_error_names_the_mismatch); an
    # equal instance lowers its own executable, which jit's caches serve, and a new one
    # compiles.
    "aot_compiled": ("1/1 0/0 0/0! 0/0 0/0 0/0 E 0/0 1/1", 0),
    "equinox_module_jax_jit": CORRECT,
    # The arrays are Variables shared with what the jitted call sees, so array changes
    # are seen; the flag is read once (the cached graph / the split), so a flag change is
    # stale (and setting it back is correct again, with the program of the first call).
    "nnx_cached_partial": ("1/1 0/0 0/0! 0/0 0/0 1/1 0/0 1/1", 0),
    "nnx_split_merge": ("1/1 0/0 0/0! 0/0 0/0 1/1 0/0 1/1", 0),
    # Tree mode: the module is a pytree whose treedef holds the flag, so a flag change is
    # a new key, and a new instance of the class finds the program of its equal.
    "nnx_tree_mode": CORRECT,
    # Flattened once at construction: the flag sits in the flattened treedef (stale after
    # a change), the Variables' values are seen; each instance's wrapper is a jax.jit of
    # its own, so even an equal instance traces and compiles anew.
    "nnx_jit_partial": ("1/1 0/0 0/0! 0/0 0/0 1/1 1/1 1/1", 0),
    # The floor: helper_function's jitted function called on the fields, as it is correct.
    "jit_function": CORRECT,
}

# The steps of static_self_value_hash that JAX 0.9 and 0.10 get wrong (see its rows below).
VALUE_HASH_STALE = ("new_static", "same_shape_array", "new_shape_array", "equal_instance")

# Before 0.10 jax.monitoring also reports the traces of jax.numpy's own jitted functions
# that the method's trace calls: two more where the body first meets a shape (first_call,
# new_shape_array, or equal_instance where the new shape went unseen before), none where
# jnp's caches already hold it (new_static). Compiles and outcomes are as from 0.10 on.
NESTED = "3/1 0/0 1/1 0/0 0/0 3/1 0/0 0/0"
NESTED_ROWS: dict[str, tuple[str, int] | None] = {
    "bound_method_jit": ("3/1 0/0 0/0! 0/0 0/0! 0/0! 3/1 1/1", 0),
    "helper_function": (NESTED, 0),
    "static_self_id_hash": ("3/1 0/0 0/0! 0/0 0/0! 0/0! 3/1 1/1", 3),
    "pytree_class": (NESTED, 0),
    "pytree_dataclass": (NESTED, 0),
    "jit_per_call": ("3/1 1/1 1/1 1/1 1/1 3/1 1/1 1/1", 0),
    "equinox_filter_jit": (NESTED, 0),
    "flax_struct_dataclass": (NESTED, 0),
    "flax_nnx_jit": (NESTED, 0),
    "aot_compiled": ("3/1 0/0 0/0! 0/0 0/0 0/0 E 0/0 1/1", 0),
    "equinox_module_jax_jit": (NESTED, 0),
    "nnx_cached_partial": ("3/1 0/0 0/0! 0/0 0/0 3/1 0/0 1/1", 0),
    "nnx_split_merge": ("3/1 0/0 0/0! 0/0 0/0 3/1 0/0 1/1", 0),
    "nnx_tree_mode": (NESTED, 0),
    # It needs flax>=0.12.8, which needs jax>=0.10 (these releases' flax is 0.12.6 at most).
    "nnx_jit_partial": None,
    "jit_function": (NESTED, 0),
}
# 0.9.0 and 0.9.0.1 also report the nested traces jnp's tracing cache served: every traced
# call reports three or four (a fresh jit object per call too: jit_per_call's 4/1).
NESTED_SERVED = "4/1 0/0 3/1 0/0 0/0 4/1 0/0 0/0"


@dataclasses.dataclass(frozen=True)
class Observed:
    """What the audit shows on releases ``first <= release < end`` where it differs by release.

    ``rows``: the pinned rows that replace COMMON's (None: the strategy cannot run with any
    flax these releases admit). ``correct``: the row of a strategy that recompiles exactly
    when the key changes (CORRECT from 0.10 on). ``ghost_traces``: (strategy, step) where
    ``jax.monitoring`` reports a trace although the method's body did not run (JAX's tracing
    cache served the call): no explanation comes with it, and the probe counts 0.
    ``nested_traces``: whether ``jax.monitoring`` also counts the traces of jnp's jitted
    functions nested in the body's (before 0.10): then a traced step reports more traces
    than the body ran, and JAX explains the body's trace only. ``explained``: (strategy,
    step) -> how many misses JAX explains where that is not one per traced call.
    ``shapes_named``: strategy -> the argument path that new_shape_array's explanation names
    with both shapes (for the others JAX's closest-key heuristic names pytree metadata), in
    the words of ``shape_change`` (a regular expression; ``{path}`` is the path).
    ``aot_relower_traces``: trace events of ``.lower()`` for a signature lowered before
    (the audit never does that; an AOT user building an equal instance does).
    ``wide_program``: helper_function's row with ``n_ops=3`` (two more cos stages).
    """

    first: Release
    end: Release | None
    rows: dict[str, tuple[str, int] | None]
    correct: str
    ghost_traces: frozenset[tuple[str, str]]
    nested_traces: bool
    explained: dict[tuple[str, str], int]
    shapes_named: dict[str, str]
    shape_change: str
    aot_relower_traces: int
    wide_program: str


# Both nnx strategies pass the arrays as state, whose path JAX names with the shapes.
NNX_SHAPES = {"nnx_cached_partial": "self.states[0][0]", "nnx_split_merge": "state['a0'].value"}
# How JAX names an argument whose shape changed: up to 0.5.3, and (with the sharding) from 0.9.
SEEN_NOW_GIVEN = r"\* at {path}, seen f32\[64\], but now given f32\[2,64\]$"
NOW_AND_BEFORE = r"\* at {path}, now f32\[2,64\]\(.*\) and before f32\[64\]\(.*\)"

# The value-hashed self found stale from 0.9.0 to 0.10.2 (see the 0.10 row's comment).
VALUE_HASH_GHOSTS = frozenset(("static_self_value_hash", s) for s in VALUE_HASH_STALE)

# What 0.9.1 to 0.10.0 (exclusive) observe alike: nested traces counted, stale value hash.
LATE_NESTED = dict(
    correct=NESTED,
    ghost_traces=VALUE_HASH_GHOSTS,
    nested_traces=True,
    explained={},
    shapes_named=NNX_SHAPES,
    shape_change=NOW_AND_BEFORE,
    aot_relower_traces=0,
    wide_program="5/1 0/0 1/1 0/0 0/0 5/1 0/0 0/0",
)

# One entry per range of releases, oldest first; older releases go in front (where a release
# emits trace events its tracing cache served, e.g. for an AOT .lower(), they are ghosts).
# Not pinned: 0.4.36-0.8.3, where the audit cannot run as pinned here: flax_nnx_jit raises
# with the only flax releases jax 0.4.36-0.5.0 admit (0.10.0-0.10.4 reject jax.Array
# attributes), and from 0.6.0 to 0.8.3 JAX's explanation of static_self_value_hash's misses
# raises an AssertionError where the call alone returns the right result.
RELEASES = (
    Observed(
        (0, 4, 30),
        (0, 4, 36),
        rows={
            **NESTED_ROWS,
            # Correct: the mutated self is a new key each time.
            "static_self_value_hash": ("3/1 0/0 1/1 0/0 1/1 3/1 0/0 1/1", 2),
            # equinox 0.11 (equinox 0.11.11 on needs jax 0.4.38) runs two eager jnp
            # operations on its first call (convert_element_type, explained as called from
            # equinox, and an add): two more traces and programs.
            "equinox_filter_jit": ("5/3 0/0 1/1 0/0 0/0 3/1 0/0 0/0", 0),
            # They need flax>=0.12.1 (Variable.set_value), which needs jax>=0.8.1.
            "nnx_cached_partial": None,
            "nnx_split_merge": None,
            "nnx_tree_mode": None,
        },
        correct=NESTED,
        ghost_traces=frozenset(),
        nested_traces=True,
        explained={("equinox_filter_jit", "first_call"): 2},
        # Every argument whose shape changed is named with both shapes.
        shapes_named={
            "helper_function": "a0",
            "equinox_filter_jit": "dynamic_nodonate['first'][0]",
        },
        shape_change=SEEN_NOW_GIVEN,
        aot_relower_traces=0,
        wide_program="5/1 0/0 1/1 0/0 0/0 5/1 0/0 0/0",  # two nested traces more per cos stage
    ),
    Observed(
        (0, 9),
        (0, 9, 1),
        rows={
            "bound_method_jit": ("4/1 0/0 0/0! 0/0 0/0! 0/0! 4/1 3/1", 0),
            "helper_function": (NESTED_SERVED, 0),
            "static_self_id_hash": ("4/1 0/0 0/0! 0/0 0/0! 0/0! 4/1 3/1", 3),
            # Stale from here to 0.10.2 (see the 0.10 row); its stale steps report one trace
            # event here (never none in 240 processes of 0.9.0 and 0.9.0.1).
            "static_self_value_hash": ("4/1 0/0 1/0! 0/0 1/0! 1/0! 0/0! 3/1", 2),
            "pytree_class": (NESTED_SERVED, 0),
            "pytree_dataclass": (NESTED_SERVED, 0),
            "jit_per_call": ("4/1 4/1 3/1 4/1 4/1 4/1 4/1 3/1", 0),
            "equinox_filter_jit": (NESTED_SERVED, 0),
            "flax_struct_dataclass": (NESTED_SERVED, 0),
            "flax_nnx_jit": (NESTED_SERVED, 0),
            "aot_compiled": ("4/1 0/0 0/0! 0/0 0/0 0/0 E 1/0 3/1", 0),
            "equinox_module_jax_jit": (NESTED_SERVED, 0),
            "nnx_cached_partial": ("4/1 0/0 0/0! 0/0 0/0 4/1 0/0 3/1", 0),
            "nnx_split_merge": ("4/1 0/0 0/0! 0/0 0/0 4/1 0/0 3/1", 0),
            "nnx_tree_mode": (NESTED_SERVED, 0),
            "nnx_jit_partial": None,
            "jit_function": (NESTED_SERVED, 0),
        },
        correct=NESTED_SERVED,
        ghost_traces=VALUE_HASH_GHOSTS,
        nested_traces=True,
        explained={},
        shapes_named=NNX_SHAPES,
        shape_change=NOW_AND_BEFORE,
        aot_relower_traces=1,  # a trace event for the lowering its tracing cache served
        wide_program="8/1 0/0 7/1 0/0 0/0 8/1 0/0 0/0",
    ),
    Observed(
        (0, 9, 1),
        (0, 9, 2),
        rows={
            **NESTED_ROWS,
            # Stale (see the 0.10 row); one trace event on each stale step (in 180 processes).
            "static_self_value_hash": ("3/1 0/0 1/0! 0/0 1/0! 1/0! 0/0! 1/1", 2),
        },
        **LATE_NESTED,
    ),
    Observed(
        (0, 9, 2),
        (0, 10),
        rows={
            **NESTED_ROWS,
            # As 0.9.1, except that a stale step's trace event is missing in some processes.
            "static_self_value_hash": ("3/1 0/0 ?/0! 0/0 ?/0! ?/0! ?/0! 1/1", 2),
        },
        **LATE_NESTED,
    ),
    Observed(
        (0, 10),
        (0, 11),
        rows={
            # The JAX docs' value hash, mutated in place as the docs' example does: the
            # cache entry's key *is* the mutated object, so later lookups find the old
            # program: stale after every change, and a new equal instance gets it too;
            # two instances stay alive in jit's cache. Whether a trace event fires on the
            # stale steps depends on the process (not on Python's hash seed alone: it varies
            # with the seed fixed); it never lowers or compiles, and the body never runs there.
            "static_self_value_hash": ("1/1 0/0 ?/0! 0/0 ?/0! ?/0! ?/0! 1/1", 2),
        },
        correct=CORRECT[0],
        ghost_traces=VALUE_HASH_GHOSTS,
        nested_traces=False,
        explained={},
        shapes_named=NNX_SHAPES,
        shape_change=NOW_AND_BEFORE,
        aot_relower_traces=0,
        wide_program=CORRECT[0],
    ),
    Observed(
        (0, 11),
        None,
        rows={
            # Fixed: a changed value is a new key (traced and compiled), a value seen
            # before reuses its program; the cache still keeps two instances alive.
            "static_self_value_hash": ("1/1 0/0 1/1 0/0 1/1 1/1 0/0 1/1", 2),
        },
        correct=CORRECT[0],
        ghost_traces=frozenset(),
        nested_traces=False,
        explained={},
        shapes_named={
            **NNX_SHAPES,
            "helper_function": "a0",
            "equinox_filter_jit": "dynamic_nodonate['first'][0]",
        },
        shape_change=NOW_AND_BEFORE,
        aot_relower_traces=0,
        wide_program=CORRECT[0],
    ),
)


def observed() -> Observed:
    return for_release([(r.first, r.end, r) for r in RELEASES])


def expected_rows() -> dict[str, tuple[str, int] | None]:
    rows = {**COMMON, **observed().rows}
    assert sorted(rows) == sorted(NAMES), "every registered strategy needs a pinned row"
    return rows


@functools.cache
def _audit(name: str, device: str, probe: bool = False):
    """One audit per (strategy, device, probe) for the whole module (each takes ~0.3 s)."""
    return audit(jitbench.get_strategy(name), resolve(device), probe=probe)


def _counts(stats) -> tuple[int, int, int]:
    return stats.traces, stats.lowerings, stats.compiles


def _matches(got: str, want: str) -> bool:
    """A cell against its pinned value, where a leading ``?`` allows 0 or 1 traces."""
    if want.startswith("?"):
        return got[0] in "01" and got[1:] == want[1:]
    return got == want


def test_releases_do_not_overlap_and_cover_this_jax():
    for before, after in itertools.pairwise(RELEASES):
        assert before.end is not None and before.end <= after.first
    assert sum(in_range(r.first, r.end) for r in RELEASES) == 1, JAX


def test_scenario_is_the_pinned_order():
    assert scenario.SCENARIO == STEPS
    assert list(StepName) == [*STEPS, *scenario.FED_BACK]


def cells_of(cells: str) -> list[str]:
    """A pinned row's cells: space-separated, where `` E`` is a mark."""
    return re.findall(r"\S+(?: E)?", cells)


def traces_of(cells: str) -> int:
    """The trace events a row (without ``?``) adds up to."""
    return sum(int(cell.split("/")[0]) for cell in cells_of(cells))


# The steps of a built-in's row where jit has seen all the call needs: a compile there is a
# recompile, unless the call raised.
SEEN = ("repeat_call", "seen_static", "same_shape_array", "equal_instance")


def recompiles_of(cells: str) -> int:
    """The recompiles a built-in's row holds: seen steps that compiled without an error."""
    return sum(
        int(cell.split("/")[1].split()[0].rstrip("!")) > 0 and not cell.endswith(" E")
        for step, cell in zip(STEPS, cells_of(cells), strict=True)
        if step in SEEN
    )


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", runnable(NAMES))
def test_audit_per_step(name, device):
    cells, leaked = expected_rows()[name]
    result = _audit(name, device)
    assert (result.subject, result.device, result.size) == (name, device, DEFAULT_SIZE)
    assert tuple(s.name for s in result.steps) == STEPS
    got = [s.cell for s in result.steps]
    want = cells_of(cells)
    assert all(_matches(g, w) for g, w in zip(got, want, strict=True)), (got, want)
    assert result.leaked_instances == leaked
    assert all(s.body_runs is None for s in result.steps)  # no probe asked for


@pytest.mark.parametrize("device", DEVICES)
def test_aot_error_names_the_mismatch(device):
    step = _audit("aot_compiled", device).step("new_shape_array")
    assert step.outcome == "error" and step.cell == "0/0 E"
    assert step.error.startswith(
        "TypeError: Argument types differ from the types for which this computation was compiled."
    )
    assert "Argument 'a0' compiled with float32[64] and called with float32[2,64]" in step.error
    others = [s for s in _audit("aot_compiled", device).steps if s.name != "new_shape_array"]
    assert all(s.error == "" for s in others)


def test_totals_add_up():
    rows = expected_rows()
    result = _audit("bound_method_jit", "cpu")
    traces = traces_of(rows["bound_method_jit"][0])  # 3 from 0.10 on
    got = (result.compiles, result.traces, result.stale_results, result.errors)
    assert got == (3, traces, 3, 0)
    assert result.repeat_call_compiles == 0
    # An equal new instance compiles again (self is hashed by identity): a recompile.
    assert result.recompiles == recompiles_of(rows["bound_method_jit"][0]) == 1
    per_call = _audit("jit_per_call", "cpu")
    expected = recompiles_of(rows["jit_per_call"][0])
    assert (per_call.repeat_call_compiles, per_call.recompiles) == (1, expected) == (1, 4)
    aot = _audit("aot_compiled", "cpu")
    assert (aot.compiles, aot.stale_results, aot.errors) == (2, 1, 1)
    as_dict = aot.to_dict()
    assert {key: as_dict[key] for key in TOTALS} == {
        "compiles": 2,
        "traces": traces_of(rows["aot_compiled"][0]),
        "stale_results": 1,
        "errors": 1,
        "leaked_instances": 0,
        "recompiles": 0,
        "repeat_call_compiles": 0,
    }
    assert (as_dict["strategy"], as_dict["device"], as_dict["size"]) == ("aot_compiled", "cpu", 64)
    assert [s["name"] for s in as_dict["steps"]] == list(STEPS)
    assert as_dict["steps"][5]["outcome"] == "error"
    assert set(as_dict["steps"][0]) == {f.name for f in dataclasses.fields(Step)}


def test_cell_marks():
    step = StepName.REPEAT_CALL
    assert Step(step, 1, 2, Outcome.CORRECT).cell == "1/2"
    assert Step(step, 0, 0, Outcome.STALE).cell == "0/0!"
    assert Step(step, 0, 0, Outcome.ERROR, "TypeError: x").cell == "0/0 E"
    assert Step(step, 0, 0, Outcome.NOT_APPLICABLE, "TypeError: x").cell == "0/0 n/a"
    assert Step(step, 0, 0, Outcome.UNJUDGED).cell == "0/0 ?"
    assert Step(step, 1, 1, Outcome.CORRECT).correct
    assert not Step(step, 1, 1, Outcome.STALE).correct


def test_a_step_shows_one_hazard_counted_once():
    # A stale result is its hazard; a compile where nothing new was seen a recompile, unless
    # the call raises without jit too; counted by hazard, never by an outcome's word.
    steps = (
        Step(StepName.FIRST_CALL, 1, 1, Outcome.CORRECT),
        Step(StepName.REPEAT_CALL, 1, 1, Outcome.STALE),
        Step(StepName.SEEN_STATIC, 1, 1, Outcome.CORRECT),
        Step(StepName.EQUAL_INSTANCE, 1, 1, Outcome.NOT_APPLICABLE, "TypeError: x"),
        Step(StepName.NEW_STATIC, 1, 1, Outcome.ERROR, "TypeError: y"),
    )
    assert [s.hazard for s in steps] == [
        None, Hazard.STALE, Hazard.RECOMPILE, None, Hazard.ERROR,
    ]  # fmt: skip
    result = AuditResult("x", "cpu", 4, steps, leaked_instances=0, leaked_arrays=2)
    assert result.hazards() == {Hazard.STALE: 1, Hazard.ERROR: 1, Hazard.LEAK: 2,
                                Hazard.RECOMPILE: 1}  # fmt: skip
    assert (result.stale_results, result.errors, result.not_applicable) == (1, 1, 1)
    assert json.loads(json.dumps(result.to_dict()))["steps"][1]["outcome"] == "stale"


def test_program_size_does_not_change_the_audit():
    # n_ops adds cos stages: the outcome check must follow them (no false "stale").
    # (Where nested traces count, each cos stage adds jnp's own.)
    result = audit(jitbench.get_strategy("helper_function"), resolve("cpu"), n_ops=3)
    assert " ".join(s.cell for s in result.steps) == observed().wide_program


def test_audit_rejects_bad_input():
    strategy = jitbench.get_strategy("eager")
    with pytest.raises(jitbench.JitbenchError, match="size must be a positive integer, got 0"):
        audit(strategy, resolve("cpu"), size=0)
    ghost = Strategy("ghost", "s", "m", strategy.render, requires=("no_such_package_jitbench",))
    with pytest.raises(jitbench.StrategyUnavailable, match="no_such_package_jitbench"):
        audit(ghost, resolve("cpu"))


# --- An independent trace counter ----------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", runnable(NAMES))
def test_probe_counts_the_traces_monitoring_reports(name, device):
    """``body_runs`` (a side effect in the generated body) against ``jax.monitoring``'s traces."""
    result = _audit(name, device, probe=True)
    ghosts, nested = observed().ghost_traces, observed().nested_traces
    plain = _audit(name, device)
    for step, same in zip(result.steps, plain.steps, strict=True):
        assert step.compiles == same.compiles and step.outcome == same.outcome, step.name
        if name == "eager":
            # No jit: the body runs at every call; monitoring counts JAX's primitive traces.
            assert step.body_runs == 1, step
        elif (name, step.name) in ghosts:
            # A trace event without a trace: JAX's tracing cache served the call.
            assert step.body_runs == 0 and step.traces in (0, 1), step
        elif nested:
            # The body ran once where the step traced; the other events are jnp's own
            # (their number is in the pinned rows).
            assert step.body_runs == min(step.traces, 1), step
        else:
            assert step.body_runs == step.traces, step


def test_aot_lower_of_a_seen_signature():
    strategy = jitbench.get_strategy("aot_compiled")
    clear_caches()
    obj, y = jitbench.make_instance(strategy, 8, resolve("cpu"), probe=True)
    block(obj.calc(y))
    again = type(obj)(**fields_of(obj))  # an equal instance lowers the same signature again
    probe, runs = PROBES[type(obj)], PROBES[type(obj)].runs
    with count_compiles() as stats:
        block(again.calc(y))
    assert probe.runs == runs  # JAX's tracing cache served the lowering
    assert _counts(stats) == (observed().aot_relower_traces, 0, 0)


# --- JAX's explanations ------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", runnable(NAMES))
def test_every_trace_comes_with_jax_s_reason(name, device):
    known = observed()
    for step in _audit(name, device).steps:
        if name == "eager" or (name, step.name) in known.ghost_traces or step.traces == 0:
            # Eager traces JAX's own primitives only, which JAX does not explain; a
            # ghost trace (see Observed) and a step without a trace have no miss.
            assert step.explanations == (), step
        else:
            # Where nested traces count, JAX explains the traced call, not jnp's inside it.
            default = 1 if known.nested_traces else step.traces
            want = known.explained.get((name, step.name), default)
            assert len(step.explanations) == want, step
            assert all(e.startswith("TRACING CACHE MISS") for e in step.explanations), step


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    "name", runnable([*sorted(NNX_SHAPES), "helper_function", "equinox_filter_jit"])
)
def test_new_shape_explanation_names_the_argument_and_both_shapes(name, device):
    known = observed()
    path = known.shapes_named.get(name)
    (text,) = _audit(name, device).step("new_shape_array").explanations
    naming = re.search(
        known.shape_change.replace("{path}", re.escape(path or "?")), text, flags=re.M
    )
    if path is None:
        # This release names what differs in the closest previous key instead.
        assert naming is None and "pytree metadata" in text, text
    else:
        assert naming is not None, text


# --- The JAX docs' strategy 2, as the docs write it ------------------------------------------

# What the docs' example prints after `c.mul = False` (the docs expect 3.0); observed in
# every release from 0.4.30 on.
DOCS_STRATEGY_TWO = [((0, 4, 30), (0, 9), 3.0), ((0, 9), (0, 11), 6.0), ((0, 11), None, 3.0)]


def test_docs_strategy_two_example():
    """The JAX docs' own strategy 2 class, mutated as the docs do.

    From 0.9 to 0.10 the mutated object is the cache key itself, so the old program
    is found again (6.0, stale) and a never-mutated equal instance gets it too;
    before 0.9 and from 0.11 on the docs' 3.0 is what comes out.
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

    after = for_release(DOCS_STRATEGY_TWO)
    c = CustomClass(2, True)
    assert c.calc(3.0) == 6.0
    c.mul = False
    assert c.calc(3.0) == after
    assert CustomClass(2, False).calc(3.0) == after  # never mutated
    assert CustomClass(2, True).calc(3.0) == 6.0


@pytest.mark.parametrize("name", ["pytree_class", "flax_nnx_jit"])
def test_programs_read_back_from_disk_count_as_compiles(name):
    # advise audits inside read_back: what each clear makes JAX compile again is read from
    # JAX's persistent cache. A program read back must count as the compile it replaces.
    if not jitbench.get_strategy(name).available:
        pytest.skip(f"{name} needs its library")
    cold = audit(jitbench.get_strategy(name), resolve("cpu"))
    with read_back():
        audit(jitbench.get_strategy(name), resolve("cpu"))  # fills the cache
        with count_compiles() as stats:
            again = audit(jitbench.get_strategy(name), resolve("cpu"))
    assert stats.persistent_cache_hits > 0  # read back, not compiled
    assert [s.cell for s in again.steps] == [s.cell for s in cold.steps]
    assert [(s.traces, s.compiles) for s in again.steps] == [
        (s.traces, s.compiles) for s in cold.steps
    ]
    assert not jax.config.jax_enable_compilation_cache  # off again after the block


def test_a_trace_that_raised_keeps_what_it_closed_over_until_the_audit_releases_it():
    """JAX 0.12.1 keeps an array a jit closes over alive for ever once that jit's trace raises
    (each constant's finalizer holds the trace, the trace the constant): the audit's steps
    whose change the call cannot take raise inside the trace, so it releases such traces
    before it counts what stays alive (compiles.release_failed_traces)."""
    import gc
    import weakref

    import jax.numpy as jnp

    from jitbench.compiles import release_failed_traces

    def failed() -> weakref.ref:
        closed = jnp.arange(4.0) + 1.0
        with pytest.raises(TypeError):  # raises while it traces
            jax.jit(lambda x: (x * closed).reshape(3))(jnp.ones(4))
        return weakref.ref(closed)

    existing = {id(o) for o in gc.get_objects()}
    ref = failed()
    gc.collect()
    assert ref() is not None  # JAX's error path keeps it
    assert release_failed_traces(existing) >= 1
    gc.collect()
    assert ref() is None
    assert release_failed_traces(existing) == 0  # a trace that ended is left as it is


def test_what_a_raising_trace_closed_over_is_no_leak_of_the_object():
    """A module jitted once per object (a closure over it, kept on it), whose `n` changed makes
    the trace raise, with jit and without (n/a): its arrays, constants of that failed trace,
    are not counted as left alive by the object (without the release, 5 arrays were)."""
    import equinox as eqx
    import jax.numpy as jnp

    class Stepper(eqx.Module):
        n: int
        kernel: jax.Array
        scale: jax.Array

        def __call__(self, u):
            return (u * self.kernel * self.scale).reshape(self.n)

    def rollout(stepper, u):
        jitted = stepper.__dict__.get("_jitted")
        if jitted is None:
            jitted = jax.jit(lambda u: stepper(u))
            object.__setattr__(stepper, "_jitted", jitted)
        return jitted(u)

    def make():
        return Stepper(4, jnp.arange(4.0) + 1.0, jnp.ones(4) * 2.0)

    target = jitbench.Target(make(), (jnp.ones(4),), call=rollout, factory=make)
    result = jitbench.audit_object(target, verdict=False)
    assert result.step(StepName.SAME_SHAPE_ARRAY).outcome is Outcome.NOT_APPLICABLE  # n
    assert result.leaked_instances == 0 and result.leaked_arrays == 0
