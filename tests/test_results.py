"""Reading asv results into a frame, against results of real asv runs.

``asv_runs`` builds them once per test session from ``tests/asv_project``, a
tiny asv project with the suite's benchmark ids and parameters and cheap
bodies; test_report.py and test_compare.py import it from here.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import itertools
import json
import math
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from asv.results import Results

from jitbench import results
from jitbench.errors import JitbenchError
from jitbench.suite import catalog

pytestmark = pytest.mark.slow

FIXTURE = Path(__file__).parent / "asv_project"
MACHINE = "testbox"
CACHED = catalog.CACHED
MEMORY = catalog.MEMORY


def _fixture_module():
    """The fixture's own table of strategies and costs (one source for both sides)."""
    path = FIXTURE / "benchmarks" / "_fixture.py"
    spec = importlib.util.spec_from_file_location("asv_project_fixture", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# The fixture's strategies and their relative per-call cost.
_FIXTURE_TABLES = _fixture_module()
STRATEGIES: list[str] = _FIXTURE_TABLES.STRATEGIES
PER_CALL: dict[str, float] = _FIXTURE_TABLES.PER_CALL
# c3's cached call does this many times the work: far more than load makes of a
# timing, so every cached call of c3 is a regression however busy the machine.
SLOWDOWN = 20
# Benchmarks that only the newest commit, c3, ran.
LATER = (catalog.DISK_COLD, catalog.DISK_WARM, catalog.DISK_HITS, catalog.DEVICE_COUNT)
LATER += (catalog.HAZARDS["errors"], *catalog.TARGET_TWINS.values())
# The device grid of commit c3 (c1 and c2 have cpu and gpu only).
C3_DEVICES = ["cpu", "cpu-sharded", "gpu"]


@dataclass(frozen=True)
class AsvRuns:
    """Results of the fixture project at three commits on machine ``testbox``.

    c1: full suite (quick) but for the benchmarks added later (persistent cache,
        device count, audit errors), plus precise cached-call samples.
    c2: same code, precise cached-call samples only (an unchanged comparison).
        c1's and c2's samples come from alternating runs, so a burst of load
        from other processes cannot slow one side only.
    c3: size grid extended to 100000, device cpu-sharded added, cached call
        SLOWDOWN times slower, peakmem of pytree_class failing; full suite (quick)
        plus precise cached-call samples.
    """

    project: Path
    results: Path
    c1: str
    c2: str
    c3: str

    def result_file(self, commit: str) -> Path:
        return next((self.results / MACHINE).glob(f"{commit[:8]}-*.json"))

    def asv_result(self, commit: str) -> Results:
        return Results.load(str(self.result_file(commit)), MACHINE)


def asv_runs(tmp_path_factory: pytest.TempPathFactory) -> AsvRuns:
    """Build the fixture results (about 30 s); conftest's session fixture calls it once."""
    return _build(tmp_path_factory.mktemp("asv"))


def copy_results(runs: AsvRuns, dest: Path) -> Path:
    """A private copy of the results for tests that edit files."""
    return Path(shutil.copytree(runs.results, dest / "results"))


def _build(root: Path) -> AsvRuns:
    project = root / "project"
    shutil.copytree(FIXTURE, project, ignore=shutil.ignore_patterns("results", "html", ".asv"))
    home = root / "home"
    home.mkdir()
    # HOME keeps asv's ~/.asv-machine.json and git's config inside the temp dir.
    env = {k: v for k, v in os.environ.items() if not k.startswith("JITBENCH_FIXTURE_")}
    env.update(HOME=str(home), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid")
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid")

    def call(*args: str, extra: dict[str, str] | None = None, ok=(0,)) -> str:
        done = subprocess.run(
            args, cwd=project, env={**env, **(extra or {})}, capture_output=True, text=True
        )
        assert done.returncode in ok, f"{args}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
        return done.stdout.strip()

    def commit(day: int) -> str:
        date = {"GIT_AUTHOR_DATE": f"2024-01-0{day}T12:00:00Z"}
        date["GIT_COMMITTER_DATE"] = date["GIT_AUTHOR_DATE"]
        call("git", "add", "asv.conf.json", "benchmarks")
        call("git", "commit", "-q", "--allow-empty", "-m", f"day {day}", extra=date)
        return call("git", "rev-parse", "HEAD")

    def asv_run(commit_hash: str, *args: str, extra=None, ok=(0,)) -> None:
        call(
            *(sys.executable, "-m", "asv", "run", "--python=same", "--machine", MACHINE),
            *("--set-commit-hash", commit_hash, "--launch-method", "forkserver", *args),
            extra=extra,
            ok=ok,
        )

    # Five samples a run of the cpu combinations (asv keeps the others' results);
    # the first run replaces the quick run's single sample.
    precise = ("--bench", r"^bench_cached\.CachedCall\.time_cached_call\(.*'cpu'\)")
    precise += ("--record-samples",)
    precise += ("-a", "repeat=5", "-a", "rounds=1")
    more = (*precise, "--append-samples")
    call("git", "init", "-q", "-b", "main")
    c1 = commit(1)
    c2 = commit(2)
    call(sys.executable, "-m", "asv", "machine", "--yes", "--machine", MACHINE)
    later = catalog.regex(*LATER).removeprefix("^")
    asv_run(c1, "--quick", "--bench", f"^(?!{later})")
    for args in (precise, more, more):
        asv_run(c1, *args)
        asv_run(c2, *args)
    fixture = project / "benchmarks" / "_fixture.py"
    text = fixture.read_text()
    assert "SIZES = [10, 1000]" in text
    assert 'DEVICES = ["cpu", "gpu"]' in text
    text = text.replace("SIZES = [10, 1000]", "SIZES = [10, 1000, 100000]")
    fixture.write_text(text.replace('DEVICES = ["cpu", "gpu"]', f"DEVICES = {C3_DEVICES!r}"))
    c3 = commit(3)
    slow = {"JITBENCH_FIXTURE_SLOW": str(SLOWDOWN)}
    # asv run exits 2 when a benchmark failed, as pytree_class's peakmem does here.
    asv_run(c3, "--quick", extra={**slow, "JITBENCH_FIXTURE_FAIL": "pytree_class"}, ok=(0, 2))
    for args in (precise, more, more):
        asv_run(c3, *args, extra=slow)
    return AsvRuns(project, project / "results", c1, c2, c3)


def test_columns_and_types(frame):
    for column in (
        *("machine", "commit", "date", "env", "python", "jax", "benchmark", "kind"),
        *("strategy", "size", "device", "change", "n_arrays", "n_ops", "depth", "n_devices"),
        "instances",
        *("value", "unit", "ci_99_a", "ci_99_b", "q_25", "q_75", "number", "repeat"),
        *("samples", "status", "version"),
    ):
        assert column in frame, column
    integers = ("size", "n_arrays", "n_ops", "depth", "n_devices", "instances", "frames")
    for column in (*integers, "number", "repeat"):
        assert frame[column].dtype == "Int64", column
    for column in ("strategy", "device", "change", "machine", "benchmark", "status"):
        assert pd.api.types.is_string_dtype(frame[column]), column
    assert frame["value"].dtype == "float64"
    assert str(frame["date"].dt.tz) == "UTC"
    assert results.param_columns(frame) == [
        "strategy",
        "size",
        "device",
        "change",
        "n_arrays",
        "n_ops",
        "depth",
        "n_devices",
        "instances",
        "frames",
        "tracebacks",
        "target",
    ]
    assert set(frame["strategy"].dropna()) == set(STRATEGIES)
    assert set(frame["machine"]) == {MACHINE}


def test_kinds_units_and_params(runs, frame):
    kinds = frame.drop_duplicates("benchmark").set_index("benchmark")["kind"]
    assert kinds[catalog.COLD_FRESH] == "time"
    assert kinds[catalog.HAZARDS["stale_results"]] == "track"
    assert kinds[MEMORY] == "peakmem"
    units = frame.drop_duplicates("benchmark").set_index("benchmark")["unit"]
    assert units[catalog.HAZARDS["stale_results"]] == "stale results"
    assert units[catalog.HAZARDS["errors"]] == "errors"
    assert units[catalog.COMPILE] == "seconds"
    assert units[MEMORY] == "bytes"
    hazards = frame[frame["benchmark"] == catalog.HAZARDS["compiles"]]
    assert hazards["size"].isna().all() and hazards["device"].notna().all()
    fresh = frame[(frame["benchmark"] == catalog.COLD_FRESH) & (frame["commit"] == runs.c3)]
    assert sorted(set(fresh["size"])) == [10, 100000] and set(fresh["device"]) == {"cpu", "gpu"}
    widths = frame[frame["benchmark"] == catalog.WIDTH]
    assert sorted(set(widths["n_arrays"])) == [1, 10, 100, 1000]


def test_values_match_asv(runs, frame):
    result = runs.asv_result(runs.c3)
    params = result.get_result_params(CACHED)
    values = result.get_result_value(CACHED, params)
    expected = dict(zip(itertools.product(*params), values, strict=True))
    rows = frame[(frame["benchmark"] == CACHED) & (frame["commit"] == runs.c3)]
    assert len(rows) == len(expected) == len(STRATEGIES) * 3 * len(C3_DEVICES)
    for row in rows.itertuples():
        value = expected[(repr(row.strategy), str(row.size), repr(row.device))]
        if row.status == "ok":
            assert row.value == value
            if row.device == "cpu":
                assert isinstance(row.samples, list) and len(row.samples) == row.repeat == 15
            else:  # only cpu had precise runs; the rest keep the quick run's one sample
                assert row.samples is None and row.repeat == 1
        else:
            assert math.isnan(value) and math.isnan(row.value)


def test_skipped_and_failed(runs, frame):
    gpu = frame[frame["device"] == "gpu"]
    assert len(gpu) > 0 and (gpu["status"] == "skipped").all() and gpu["value"].isna().all()
    memory = frame[(frame["benchmark"] == MEMORY) & (frame["device"] == "cpu")]
    failed = memory[memory["status"] == "failed"]
    assert list(zip(failed["commit"], failed["strategy"], strict=True)) == [
        (runs.c3, "pytree_class")
    ]
    assert failed["value"].isna().all()
    raw = json.loads(runs.result_file(runs.c3).read_text())["results"][MEMORY][0]
    assert None in raw  # asv's own record of the failure


def test_parameter_grid_changed_between_commits(runs, frame):
    cold = frame[frame["benchmark"] == catalog.COLD]
    sizes = cold.groupby("commit")["size"].agg(lambda s: sorted(set(s)))
    assert sizes[runs.c1] == [10, 1000]
    assert sizes[runs.c3] == [10, 1000, 100000]


def test_bare_nan_and_infinity_tokens(runs, tmp_path):
    text = runs.result_file(runs.c1).read_text()
    assert "NaN" in text and "Infinity" in text  # asv writes them bare
    copy = copy_results(runs, tmp_path)
    path = next((copy / MACHINE).glob(f"{runs.c1[:8]}-*.json"))
    data = json.loads(path.read_text())
    track = data["results"][catalog.HAZARDS["traces"]][0]
    track[0], track[2] = math.inf, -math.inf
    path.write_text(json.dumps(data))
    assert "-Infinity" in path.read_text()
    loaded = results.load(copy, commit=runs.c1)
    traces = loaded[loaded["benchmark"] == catalog.HAZARDS["traces"]]
    assert list(traces["value"].iloc[[0, 2]]) == [math.inf, -math.inf]
    assert set(traces["status"].iloc[[0, 2]]) == {"ok"}


def test_corrupt_file_names_it_and_skip_bad_loads_the_rest(runs, tmp_path, capsys):
    copy = copy_results(runs, tmp_path)
    bad = next((copy / MACHINE).glob(f"{runs.c2[:8]}-*.json"))
    bad.write_text(bad.read_text()[:200])
    with pytest.raises(JitbenchError, match=bad.name) as error:
        results.load(copy)
    assert "\n" not in str(error.value) and "--skip-bad" in str(error.value)
    loaded = results.load(copy, skip_bad=True)
    assert bad.name in capsys.readouterr().err
    assert set(loaded["commit"]) == {runs.c1, runs.c3}


def test_unknown_names_list_the_available_ones(runs):
    with pytest.raises(JitbenchError, match=r"machine 'nobox'.*testbox"):
        results.load(runs.results, machine="nobox")
    with pytest.raises(JitbenchError, match=rf"commit 'ffff'.*{runs.c3[:8]}"):
        results.load(runs.results, commit="ffff")
    with pytest.raises(JitbenchError, match=r"env 'nope'.*existing"):
        results.load(runs.results, env="nope")
    with pytest.raises(JitbenchError, match="does not exist"):
        results.load(runs.results / "missing")


def test_a_results_path_that_is_a_file_is_named(runs):
    a_file = runs.result_file(runs.c1)
    with pytest.raises(JitbenchError) as error:
        results.load(a_file)
    assert str(error.value) == (
        f"results directory '{a_file}' is a file; pass asv's results_dir "
        "(a folder with one folder per machine)"
    )


def test_an_asv_without_the_private_requirements_is_one_line(runs, monkeypatch):
    # An asv release whose Results keeps its requirements elsewhere: one line naming what
    # moved, not every result file reported unreadable.
    def init_without_requirements(self, *args, **kwargs):
        init(self, *args, **kwargs)
        del self._requirements

    init = Results.__init__
    monkeypatch.setattr(Results, "__init__", init_without_requirements)
    with pytest.raises(JitbenchError) as error:
        results.load(runs.results, skip_bad=True)
    assert str(error.value) == (
        "asv 0.6.6 provides asv.results.Results._requirements; the installed asv "
        f"{importlib.metadata.version('asv')} lacks it: install asv==0.6.6"
    )


def test_commit_prefix_and_latest(runs, frame):
    one = results.load(runs.results, machine=MACHINE, commit=runs.c1[:7])
    assert set(one["commit"]) == {runs.c1}
    assert results.commits_by_date(frame) == [runs.c3, runs.c2, runs.c1]
    assert set(results.latest(frame)["commit"]) == {runs.c3}


def test_jax_version_from_requirements_or_env_name(runs, tmp_path):
    copy = copy_results(runs, tmp_path)
    source = next((copy / MACHINE).glob(f"{runs.c2[:8]}-*.json"))
    for env_name, requirements, expected in (
        ("virtualenv-py3.11-jax0.4.30", {}, "0.4.30"),
        ("virtualenv-py3.11-pinned", {"jax": "0.5.1"}, "0.5.1"),
        ("virtualenv-py3.11-cuda", {"pip+jax[cuda12]": "0.6.2", "jaxlib": "0.6.1"}, "0.6.2"),
    ):
        data = json.loads(source.read_text())
        data.update(env_name=env_name, requirements=requirements)
        (source.parent / f"{runs.c2[:8]}-{env_name}.json").write_text(json.dumps(data))
        loaded = results.load(copy, env=env_name)
        assert set(loaded["jax"]) == {expected}
    assert results.load(copy, commit=runs.c1)["jax"].isna().all()


def test_release_key_orders_by_version():
    releases = ["0.10.2", "0.9.2", "nightly", "0.12.0.1", "0.4.30"]
    assert sorted(releases, key=results.release_key) == [
        "0.4.30",
        "0.9.2",
        "0.10.2",
        "0.12.0.1",
        "nightly",
    ]


def test_importing_jitbench_loads_no_pandas():
    code = "import sys, jitbench; print('pandas' in sys.modules, 'jitbench.results' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
