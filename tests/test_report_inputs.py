"""``jitbench report``'s inputs beyond one run: several JAX releases, the audit JSON, bad input.

Results of real asv runs (see test_results.asv_runs); the JAX releases are
copies of one run's result file rewritten as asv virtualenvs for other
releases, read back through asv's own reader like any result.
"""

from __future__ import annotations

import ast
import contextlib
import io
import itertools
import json
import math
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_report import ERRORS, STALE, _asv, _cli, _index, _links_exist
from test_results import CACHED, MACHINE, STRATEGIES, copy_results

from jitbench import report
from jitbench.cli import main
from jitbench.errors import JitbenchError
from jitbench.report.releases import COUNTS
from jitbench.suite import catalog

pytestmark = pytest.mark.slow

# JAX releases the release test claims for copies of commit c3's results, each
# with a factor on every time, in an order that is not the release order.
RELEASES = {"0.10.2": 1.0, "0.9.2": 2.0, "0.12.0.1": 0.5}
IN_ORDER = ["0.9.2", "0.10.2", "0.12.0.1"]


def test_renamed_benchmarks_are_named_in_the_notes(runs, tmp_path):
    copy = copy_results(runs, tmp_path)
    path = runs.result_file(runs.c3)
    data = json.loads((copy / MACHINE / path.name).read_text())
    old = "bench_cold.ColdCall.timeraw_first_call_fresh_process"
    data["results"][old] = data["results"].pop(catalog.COLD_FRESH)
    # Results of a suite from before targets: no target twin reports the benchmark either.
    data["results"].pop(catalog.TARGET_TWINS[catalog.COLD_FRESH], None)
    (copy / MACHINE / path.name).write_text(json.dumps(data))
    out = tmp_path / "reports"
    report.write_report(copy, out)
    index = _index(out)
    assert f"renamed or removed), not shown: {old}" in index
    assert f"no results for {catalog.COLD_FRESH}" in index
    assert "first_call_fresh_process_s" not in pd.read_csv(out / "tables" / "summary.csv")


def test_several_envs_get_a_section_each(runs, tmp_path):
    copy = copy_results(runs, tmp_path)
    source = next((copy / MACHINE).glob(f"{runs.c3[:8]}-*.json"))
    data = json.loads(source.read_text())
    data["env_name"] = "virtualenv-py3.11-jax0.4.30"
    (source.parent / f"{runs.c3[:8]}-virtualenv-py3.11-jax0.4.30.json").write_text(json.dumps(data))
    out = tmp_path / "reports"
    # Chosen by commit: every env of it (without, the env of unknown JAX is left out).
    report.write_report(copy, out, commit=runs.c3[:8])
    index = _index(out)
    headings = [line for line in index.splitlines() if line.startswith("## ")]
    # Machine and JAX release (asv recorded an interpreter's path, no version, for Python).
    assert headings == ["## testbox, jax 0.4.30", "## testbox"]
    links = _links_exist(out, "index.md")
    assert len({link.split("/")[0] for link in links}) == 2
    # One JAX release known (the other env records none): no release page.
    assert not (out / "releases.md").exists()


def _as_release(source: Path, jax: str, factor: float, hazards: dict) -> Path:
    """``source`` written again as an asv virtualenv for JAX ``jax``; times x ``factor``.

    ``hazards``: {(benchmark, strategy, device): value} to set in the copy.
    """
    data = json.loads(source.read_text())
    requirements = {**data["requirements"], "jax": jax, "jaxlib": jax}
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    data["env_name"] = f"virtualenv-py{python}-jax{jax}-jaxlib{jax}"
    data.update(python=python, requirements=requirements)
    data["params"] = {**data["params"], "python": python, **requirements}
    columns = data["result_columns"]
    for name, row in data["results"].items():
        values = row[columns.index("result")]
        if name.split(".")[-1].startswith("time"):
            row[columns.index("result")] = [
                v * factor if isinstance(v, float) and math.isfinite(v) else v for v in values
            ]
        for index, combo in enumerate(itertools.product(*row[columns.index("params")])):
            key = (name, *(ast.literal_eval(v) for v in combo))
            if key in hazards:
                values[index] = hazards[key]
    target = source.with_name(f"{data['commit_hash'][:8]}-{data['env_name']}.json")
    target.write_text(json.dumps(data))
    return target


@pytest.fixture(scope="module")
def releases(runs, tmp_path_factory):
    """c3's results as three JAX releases (and not the original env), and their report."""
    folder = tmp_path_factory.mktemp("releases")
    copy = copy_results(runs, folder)
    source = copy / MACHINE / runs.result_file(runs.c3).name
    stale = catalog.HAZARDS["stale_results"]
    changed = {
        # The oldest release: pytree_class stale too; the newest: the stale strategy fixed.
        # eager not measured in the oldest (n/a), which is no change.
        "0.9.2": {
            (stale, "pytree_class", "cpu"): 2,
            **{(catalog.HAZARDS[c], "eager", "cpu"): None for c in COUNTS},
        },
        "0.12.0.1": {(stale, STALE, "cpu"): 0},
    }
    for jax, factor in RELEASES.items():
        _as_release(source, jax, factor, changed.get(jax, {}))
    source.unlink()
    out = folder / "reports"
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        report.write_report(copy, out)
    return out, copy, stderr.getvalue()


def test_release_page_compares_hazards_per_release(runs, releases):
    out, _, stderr = releases
    assert not re.search(r"^\[\d+/\d+\]", stderr, flags=re.M)  # progress on a terminal only
    index = _index(out)
    assert "[JAX releases compared](releases.md)" in index
    assert 'href="releases.html"' in (out / "index.html").read_text(encoding="utf-8")
    sections = [
        index.index(
            f"## testbox, jax {jax}, python {sys.version_info.major}.{sys.version_info.minor}\n"
        )
        for jax in IN_ORDER
    ]
    assert sections == sorted(sections)  # in release order
    page = (out / "releases.md").read_text(encoding="utf-8")
    assert f"## testbox, commit {runs.c3[:8]}" in page
    cpu = page.split("### Hazards per JAX release: cpu\n")[1].split("###")[0]
    header = next(line for line in cpu.splitlines() if line.startswith("| strategy"))
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "strategy",
        *(f"jax {jax}" for jax in IN_ORDER),
        "changed",
    ]
    rows = {
        cells[0].split()[0]: cells[1:]
        for line in cpu.splitlines()
        if line.startswith("| ") and not line.startswith("| strategy")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert rows["eager"] == ["n/a", "none", "none", ""]
    assert rows["pytree_class"] == ["stale 2", "none", "none", "yes"]
    assert rows[STALE] == ["stale 1", "stale 1", "none", "yes"]
    assert rows["bound_method_jit"] == ["leaks 1"] * 3 + [""]
    assert rows[ERRORS] == ["errors 1, recompiles every call 1"] * 3 + [""]
    assert "### Hazards per JAX release: cpu-sharded" in page


def test_release_page_plots_and_csv_follow_the_release_order(runs, releases):
    out = releases[0]
    links = _links_exist(out, "releases.md")
    name = f"releases-{MACHINE}-{runs.c3[:8]}"
    for measure in ("cached_call", "dispatch", "first_call"):
        assert f"releases/plots/{name}-{measure}.png" in links
    html = (out / "releases.html").read_text(encoding="utf-8")
    assert html.count("data:image/png;base64,") == 3 and "<table>" in html
    table = pd.read_csv(out / "releases" / "tables" / f"{name}.csv", dtype={"jax": str})
    assert table["jax"].tolist()[:3] == IN_ORDER
    values = _asv(runs.asv_result(runs.c3), CACHED)
    rows = table[(table["device"] == "cpu") & (table["size"] == 10)].set_index(["strategy", "jax"])
    for strategy in STRATEGIES:
        for jax, factor in RELEASES.items():
            expected = values[strategy, 10, "cpu"] * factor
            assert rows.loc[(strategy, jax), "cached_call_s"] == pytest.approx(expected)
    assert rows.loc[("pytree_class", "0.9.2"), "stale_results"] == 2
    assert set(table) >= {"dispatch_s", "first_call_s", "errors", "leaked_instances"}


def test_audit_explanations_from_the_audit_json(runs, tmp_path):
    code, stdout, _ = _cli(
        "audit", "--format", "json", "--strategy", "helper_function", "--strategy", "aot_compiled"
    )
    assert code == 0
    audit = tmp_path / "audit.json"
    audit.write_text(stdout)
    out = tmp_path / "reports"
    report.write_report(runs.results, out, audit_json=audit)
    steps = pd.read_csv(out / "tables" / "audit-explanations.csv")
    shown = {(r.strategy, r.step): r for r in steps.itertuples()}
    assert ("helper_function", "new_static") in shown
    # JAX's own words (they differ between releases), without the line naming the location.
    audited = {r["strategy"]: {s["name"]: s for s in r["steps"]} for r in json.loads(stdout)}
    words = audited["helper_function"]["new_shape_array"]["explanations"][0]
    assert words.startswith("TRACING CACHE MISS")
    expected = " ".join(words.split("\n", 1)[1].split())
    shown_words = shown["helper_function", "new_shape_array"].explanation
    assert expected.startswith(shown_words.removesuffix("…"))
    error = shown["aot_compiled", "new_shape_array"]
    assert error.outcome == "error" and error.explanation.startswith("TypeError")
    assert not any(step == "first_call" for _, step in shown)
    assert not steps["explanation"].str.contains("TRACING CACHE MISS").any()
    hazards = _index(out).split("## Hazards")[1].split("## Break-even")[0]
    assert shown_words in hazards and "jitbench audit --format json >" not in hazards


def test_a_targets_audit_json_is_explained_under_its_name(runs, tmp_path):
    target = "user_models:custom_class"
    argv = ["audit", target, "--call", "calc", "--inputs", "user_models:vector", "--format", "json"]
    code, stdout, _ = _cli(*argv)
    assert code == 0 and json.loads(stdout)[0]["target"] == target
    audit = tmp_path / "audit.json"
    audit.write_text(stdout)
    out = tmp_path / "reports"
    report.write_report(runs.results, out, audit_json=audit)
    steps = pd.read_csv(out / "tables" / "audit-explanations.csv")
    # The default hash is the object's id: an equal instance compiles again.
    assert set(steps["strategy"]) == {target}
    assert "equal_instance" in set(steps["step"])


def test_bad_input_writes_nothing(runs, tmp_path, capsys):
    out = tmp_path / "reports"
    with pytest.raises(JitbenchError, match="machine 'nobox'"):
        report.write_report(runs.results, out, machine="nobox")
    with pytest.raises(JitbenchError, match="inside the results dir"):
        report.write_report(runs.results, runs.results / "reports")
    for text, match in (("{", "is not JSON"), ('{"a": 1}', "jitbench audit --format json")):
        bad = tmp_path / "audit.json"
        bad.write_text(text)
        with pytest.raises(JitbenchError, match=match) as error:
            report.write_report(runs.results, out, audit_json=bad)
        assert "\n" not in str(error.value) and "audit.json" in str(error.value)
    with pytest.raises(JitbenchError, match="cannot read audit JSON"):
        report.write_report(runs.results, out, audit_json=tmp_path / "missing.json")
    assert not out.exists() and not (runs.results / "reports").exists()
    argv = ["report", "--results", str(runs.results), "--out", str(out), "--commit", "abc"]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert error.startswith("jitbench: error: no results for commit 'abc'")
    assert not out.exists()


def test_skip_bad_reports_the_rest(runs, tmp_path):
    copy = copy_results(runs, tmp_path)
    bad = copy / MACHINE / runs.result_file(runs.c2).name
    bad.write_text(bad.read_text()[:200])
    out = tmp_path / "reports"
    code, _, stderr = _cli("report", "--results", str(copy), "--out", str(out))
    assert code == 2 and bad.name in stderr.strip().splitlines()[-1] and not out.exists()
    code, stdout, stderr = _cli("report", "--results", str(copy), "--out", str(out), "--skip-bad")
    assert code == 0 and stdout.splitlines()[-1] == str(out / "index.html")
    assert f"skipping unreadable {bad}" in stderr
    assert runs.c1[:8] in _index(out) and runs.c2[:8] not in _index(out)


AUDIT_STEP = {
    "name": "first_call", "traces": 1, "compiles": 1, "outcome": "correct", "error": "",
    "explanations": [], "body_runs": None,
}  # fmt: skip


@pytest.mark.parametrize(
    ("entry", "step", "at", "shown", "form"),
    [
        ({}, {"compiles": "3"}, "entry 1 step 2 field 'compiles'", '"3"', "an integer"),
        ({}, {"traces": True}, "entry 1 step 2 field 'traces'", "true", "an integer"),
        ({}, {"explanations": "why"}, "entry 1 step 2 field 'explanations'", '"why"',
         "a list of strings"),
        ({}, {"error": None}, "entry 1 step 2 field 'error'", "null", "a string"),
        ({"size": "64"}, {}, "entry 1 field 'size'", '"64"', "an integer"),
    ],
    ids=["compiles", "traces", "explanations", "error", "size"],
)  # fmt: skip
def test_audit_json_of_wrong_types_names_file_and_field(tmp_path, entry, step, at, shown, form):
    path = tmp_path / "audit.json"
    result = {"strategy": "eager", "device": "cpu", "size": 8, **entry}
    result["steps"] = [AUDIT_STEP, {**AUDIT_STEP, "name": "repeat_call", **step}]
    path.write_text(json.dumps([result]))
    with pytest.raises(JitbenchError) as error:
        report.audit.load(path)
    assert str(error.value) == (
        f"audit JSON '{path}' {at} is {shown}, not {form}; "
        "expected the output of 'jitbench audit --format json'"
    )


def test_audit_json_of_wrong_types_writes_no_report(runs, tmp_path, capsys):
    path = tmp_path / "audit.json"
    steps = [{**AUDIT_STEP, "compiles": "1"}]
    path.write_text(json.dumps([{"strategy": "eager", "steps": steps}]))
    out = tmp_path / "reports"
    argv = ["report", "--results", str(runs.results), "--out", str(out), "--audit-json", str(path)]
    assert main(argv) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"jitbench: error: audit JSON '{path}' entry 1 step 1 field 'compiles' is \"1\", not an "
        "integer; expected the output of 'jitbench audit --format json'"
    )
    assert not out.exists()
