"""Many live instances: what a population keeps alive, and whether later jits keep the fast path."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax_releases import runnable

from jitbench.errors import JitbenchError, NoFigure, opted_in
from jitbench.measure import population
from jitbench.measure.case import Row
from jitbench.measure.population import Population, python_calls

# What a small population shows (JAX 0.10.2 and 0.12.0.1 alike): jit's cache keeps every
# instance of a static self hashed by id, nothing else outlives its population.
KEPT_ALIVE = {"static_self_id_hash": 5}
SMALL = 5


def test_a_jit_call_on_the_fast_path_enters_no_python_function():
    function = jax.jit(lambda y: y + 1.0)
    y = jnp.ones(3)
    assert python_calls(function, y) == 0
    with jax.disable_jit():
        assert python_calls(function, y) > 0  # the Python path, every call


@pytest.mark.parametrize("name", runnable(["helper_function", "static_self_id_hash",
                                           "bound_method_jit", "nnx_jit_partial"]))  # fmt: skip
def test_a_population_keeps_what_jits_cache_holds(name):
    crowd = Population(Row(name, "cpu", 10).load(), SMALL)
    assert len(crowd.members) == SMALL
    assert crowd.first() is not None and crowd.after() is not None
    # A few live wrappers are far below jax issue 39078's 8,192: the jit made after
    # them takes the C++ path, as it does with no population at all.
    assert python_calls(crowd.after_function, crowd.y) == 0
    assert crowd.kept_alive() == KEPT_ALIVE.get(name, 0)


def test_one_process_measures_every_figure():
    figures = population._measured(Row("bound_method_jit", "cpu", 10, instances=100))
    assert set(figures) == set(population.FIGURES)
    assert figures["after_jit_python_calls"] == 0
    assert figures["kept_alive"] == 0
    assert figures["first_call_dispatch"] > 0 and figures["peak_rss"] > 0


def test_a_bad_strategy_is_one_error_line():
    entry = population._measured(Row("no_such", "cpu", 10))
    assert list(entry) == ["failed"]
    assert entry["failed"].startswith("unknown strategy 'no_such'; valid: eager,")


def test_a_population_is_measured_once_when_its_row_asks(monkeypatch, tmp_path):
    monkeypatch.setenv(population.OPT_IN_ENV, "1")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the store's folder goes here
    found = population.store()
    assert isinstance(found, Path) and not list(found.iterdir())
    figures = population.lookup(found, "helper_function", 2, "cpu", 10)
    assert figures["after_jit_python_calls"] == 0
    (written,) = found.iterdir()  # only the row asked for was measured
    assert written.name == "helper_function-2-cpu-10.json"
    # The other figures of the row read the file: an edited file is what they get.
    written.write_text(json.dumps({**figures, "kept_alive": 7}))
    assert population.lookup(found, "helper_function", 2, "cpu", 10)["kept_alive"] == 7
    with pytest.raises(JitbenchError, match="unknown strategy 'no_such'"):
        population.lookup(found, "no_such", 1, "cpu", 10)


def test_the_family_is_opt_in(monkeypatch):
    monkeypatch.delenv(population.OPT_IN_ENV, raising=False)
    found = population.store()
    assert found == NoFigure(population.opt_in_reason())
    with pytest.raises(NotImplementedError, match="nox -s instances"):
        population.lookup(found, "helper_function", 1, "cpu", 10)
    monkeypatch.setenv(population.OPT_IN_ENV, " 1 ")
    assert opted_in(population.OPT_IN_ENV)


def test_the_grid_crosses_the_live_jit_limit_of_jax_issue_39078():
    assert min(population.INSTANCE_COUNTS) == 1
    assert max(population.INSTANCE_COUNTS) > 8192


def test_an_empty_population_is_refused():
    with pytest.raises(JitbenchError, match="at least one instance, got 0"):
        Population(Row("helper_function", "cpu", 10).load(), 0)
