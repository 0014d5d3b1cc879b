"""``jitbench.suite.catalog`` names every benchmark of the suite, the fixture project, the report.

The suite's and the fixture's benchmarks are listed by asv's own discovery
(``asv_runner.discovery.list_benchmarks``, what ``asv run`` reads), each in a
fresh interpreter: both suites are packages named ``benchmarks``. A benchmark
renamed in one place only fails here.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from jitbench.suite import catalog
from jitbench.suite.asvrun import merge_description

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "benchmarks"
FIXTURE = Path(__file__).parent / "asv_project" / "benchmarks"
REPORT = ROOT / "jitbench" / "report"
# A real target (tests/target_models.py), so the suite lists its target benchmarks.
TARGET = "target_models:make_model"
DISCOVER = (
    "import sys\n"
    "from asv_runner.discovery import list_benchmarks\n"
    "with open(sys.argv[2], 'w') as fp:\n"
    "    list_benchmarks(sys.argv[1], fp)\n"
)


def _discover(folder: Path, tmp_path: Path, targets: str = TARGET) -> dict[str, dict]:
    """asv's description of every benchmark under ``folder``, by name (``targets``: the
    targets of ``JITBENCH_TARGETS``, whose rows the suite lists)."""
    listing = tmp_path / f"{folder.parent.name}.json"
    paths = (str(Path(__file__).parent), os.environ.get("PYTHONPATH", ""))
    path = os.pathsep.join(p for p in paths if p)
    subprocess.run(
        [sys.executable, "-c", DISCOVER, str(folder), str(listing)],
        check=True,
        capture_output=True,
        cwd=tmp_path,
        env=dict(os.environ, JITBENCH_TARGETS=targets, PYTHONPATH=path),
    )
    return {b["name"]: b for b in json.loads(listing.read_text())}


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> dict[str, dict]:
    return _discover(SUITE, tmp_path_factory.mktemp("suite"))


@pytest.fixture(scope="module")
def fixture(tmp_path_factory) -> dict[str, dict]:
    return _discover(FIXTURE, tmp_path_factory.mktemp("fixture"))


def test_catalog_lists_each_name_once():
    assert len(set(catalog.ALL)) == len(catalog.ALL)
    assert set(catalog.HAZARDS.values()) <= set(catalog.ALL)


def test_suite_benchmarks_are_the_catalog(suite):
    assert set(suite) == set(catalog.ALL)


def test_only_the_device_classes_share_a_setup_cache(suite):
    """asv keys a setup_cache by its function's module and line, and runs it once for every
    class using that function: two classes sharing one read each other's results, which only
    the device rows mean to (one process measures their whole grid)."""
    owners: dict[str, set[str]] = {}
    for name, bench in suite.items():
        if bench.get("setup_cache_key"):
            owners.setdefault(bench["setup_cache_key"], set()).add(name.rsplit(".", 1)[0])
    shared = {key: classes for key, classes in owners.items() if len(classes) > 1}
    device_classes = {name.rsplit(".", 1)[0] for name in catalog.DEVICE_ROWS}
    assert list(shared.values()) == [device_classes], owners


def test_fixture_benchmarks_are_the_catalog_with_the_suites_parameters(suite, fixture):
    assert set(fixture) == set(catalog.ALL)
    for name in catalog.ALL:
        assert fixture[name]["type"] == suite[name]["type"], name
        assert fixture[name]["param_names"] == suite[name]["param_names"], name


def _report_modules() -> dict[str, ast.Module]:
    return {path.name: ast.parse(path.read_text()) for path in sorted(REPORT.glob("*.py"))}


def test_the_report_names_no_benchmark_of_its_own():
    prefixes = tuple(sorted({name.split(".", 1)[0] + "." for name in catalog.ALL}))
    for module, tree in _report_modules().items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                assert not node.value.startswith(prefixes), (module, node.value)


def test_every_name_the_report_reads_is_in_the_catalog_and_it_reads_them_all():
    read = set()
    for module, tree in _report_modules().items():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "catalog"
            ):
                value = getattr(catalog, node.attr, None)
                assert value is not None, (module, node.attr)
                if node.attr == "ALL" or callable(value):
                    continue
                if isinstance(value, dict):
                    names = list(value.values())
                else:
                    names = list(value) if isinstance(value, tuple) else [value]
                assert set(names) <= set(catalog.ALL), (module, node.attr)
                read |= set(names)
    assert read == set(catalog.ALL)


def test_the_committed_description_is_what_a_full_run_here_writes(tmp_path):
    """results/benchmarks.json is what a run of the whole grid on this host leaves there
    (asv's description of the suite, merged into the committed one as every run's is): the
    README's first command, nox -s bench, leaves the checkout as it was."""
    found = _discover(SUITE, tmp_path, targets="")
    committed = json.loads((ROOT / "results" / "benchmarks.json").read_text())
    after = {**found, "version": committed["version"]}
    merged = merge_description(committed, after)
    changed = sorted(name for name in merged if merged[name] != committed.get(name))
    assert merged is committed, f"a full run here would change: {changed}"
