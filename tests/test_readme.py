"""The README's examples run as written, and its pages are what make_readme generates."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import blocks
import pytest
from blocks import count_blocks
from test_audit import observed

import jitbench
from jitbench import results
from jitbench.auditing.audit import audit
from jitbench.devices import resolve
from jitbench.suite import catalog
from jitbench.ways import registry

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAKE_README = ROOT / "docs" / "make_readme.py"
BEGIN = re.compile(r"<!-- BEGIN generated: ([\w-]+) -->")


def _pages() -> dict[str, tuple[str, ...]]:
    """make_readme's PAGES: each page and the generated blocks it holds."""
    return blocks.PAGES


def _markdown_files() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def _design_notes() -> list[Path]:
    """The package's design notes: its README.md and one per folder."""
    return [ROOT / "jitbench" / "README.md", *sorted((ROOT / "jitbench").glob("*/README.md"))]


def _block(marker: str) -> str:
    text = "".join(page.read_text() for page in _markdown_files())
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    return next(block for block in blocks if marker in block)


def test_custom_strategy_example_registers_and_is_correct(monkeypatch):
    monkeypatch.setattr(registry, "STRATEGIES", dict(jitbench.STRATEGIES))
    exec(compile(_block("my_strategies.py"), "my_strategies.py", "exec"), {})
    strategy = registry.STRATEGIES["closure_per_flags"]
    result = audit(strategy, resolve("cpu"))
    assert [s.cell for s in result.steps] == observed().correct.split()
    assert result.stale_results == 0 and result.leaked_instances == 0
    assert "return _compiled(self.s0)(self.a0, y)" in strategy.source()


def test_stale_trap_example_is_stale():
    namespace: dict = {}
    code = "import jax\n" + _block("class Scaler")
    first, second = (m.start() for m in re.finditer(r"^calc\(3\.0\)", code, flags=re.M))
    code = f"{code[:first]}first = {code[first:second]}second = {code[second:]}"
    exec(compile(code, "README", "exec"), namespace)
    assert namespace["first"] == 6.0 and namespace["second"] == 6.0


def test_every_generated_block_is_on_its_page_once():
    """Each page holds exactly the blocks make_readme writes there, each opened and closed once."""
    pages = _pages()
    assert set(pages) == {str(p.relative_to(ROOT)) for p in _markdown_files()}
    for page, names in pages.items():
        text = (ROOT / page).read_text()
        assert tuple(BEGIN.findall(text)) == names, page
        for name in names:
            assert text.count(f"<!-- END generated: {name} -->") == 1, (page, name)


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces to -."""
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_every_link_between_the_pages_resolves():
    """Relative links and images of the README, docs pages and design notes name files and
    headings that exist; the README links every docs page, and it or the contributing page
    every folder's notes."""
    linked = set()
    contributing = ROOT / "docs" / "contributing.md"
    for page in [*_markdown_files(), *_design_notes()]:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            found = (page.parent / path).resolve() if path else page
            assert found.is_file(), f"{page.name}: {target}"
            if anchor:
                assert anchor in _anchors(found.read_text()), f"{page.name}: {target}"
            if page in (README, contributing):
                linked.add(found)
    assert {*_markdown_files()[1:], *_design_notes()} <= linked


def test_every_file_a_page_names_exists():
    """Project files named in code spans (`jitbench/...py`, `docs/...md`) exist: the pages keep
    up with the code's moves."""
    named = r"`((?:jitbench|docs)/[\w/.-]+\.(?:py|md|json))"
    for page in [*_markdown_files(), *sorted((ROOT / "jitbench").glob("**/README.md"))]:
        for path in re.findall(named, page.read_text()):
            assert (ROOT / path).is_file(), f"{page.relative_to(ROOT)}: {path}"


def _readme_jax() -> str:
    return re.search(r"`jitbench audit` \(JAX ([\w.]+),", README.read_text()).group(1)


@pytest.mark.slow
def test_pages_are_what_make_readme_generates():
    """``nox -s readme`` on this checkout rewrites no page: every generated block comes from
    committed files (make_readme --check writes nothing and prints a diff of what differs)."""
    import jax

    if jax.__version__ != _readme_jax():
        pytest.skip(f"the pages show JAX {_readme_jax()}'s audit; this is JAX {jax.__version__}")
    done = subprocess.run(
        [sys.executable, str(MAKE_README), "--check"], cwd=ROOT, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    assert done.stdout == ""


def test_async_dispatch_sentence_quotes_the_newest_probe_file(tmp_path, monkeypatch):
    """The sentence gives each invocation's min-max per mode, in the file's order, from the
    newest machine's file, and names a process count that differs from the first's."""
    module = count_blocks
    monkeypatch.setattr(module, "PROBES", tmp_path)
    assert module.async_dispatch_block().startswith("No probe of this kind is committed yet")

    def invocation(date: str, processes: int, scale: float) -> dict:
        medians = {"default": [6e-6, 5e-6], "sync": [4e-6, 4.5e-6], "pinned": [12e-6, 13e-6]}
        found = {mode: [v * scale for v in values] for mode, values in medians.items()}
        return {"date": date, "size": 1000, "processes": processes, "medians_s": found}

    old = {"machine": "old", "jax": "0.11.0", "invocations": [invocation("2026-01-01", 8, 1)]}
    new = {
        "machine": "box",
        "jax": "0.12.0.1",
        "invocations": [invocation("2026-02-01", 8, 1), invocation("2026-02-02", 16, 2)],
    }
    (tmp_path / "old.json").write_text(json.dumps(old))
    (tmp_path / "box.json").write_text(json.dumps(new))
    assert module.async_dispatch_block() == (
        "`python docs/async_dispatch.py` on machine box (JAX 0.12.0.1, 2026-02-01, 2026-02-02; "
        "`helper_function` at 1,000 elements, the median of one process, 8 processes per mode), "
        "two invocations: 5.00μs-6.00μs and 10.0μs-12.0μs (16 processes) with JAX's default, "
        "4.00μs-4.50μs and 8.00μs-9.00μs (16 processes) with `jax_cpu_enable_async_dispatch` "
        "off, and 12.0μs-13.0μs and 24.0μs-26.0μs (16 processes) pinned to one core "
        "(`docs/async_dispatch/box.json`)."
    )


def _counted_run(folder: Path, source: Path, commit: str, date: int, scale: float) -> None:
    """A copy of the asv results file ``source`` under ``folder``: another commit and date,
    every count multiplied by ``scale``."""
    data = json.loads(source.read_text())
    data.update(commit_hash=commit, date=date)
    for name in catalog.INSTRUCTIONS.values():
        column = data["results"][name]
        column[0] = [v * scale for v in column[0]]  # asv writes NaN where n/a: stays NaN
    (folder / f"{commit[:8]}-{data['env_name']}.json").write_text(json.dumps(data))


def test_counts_table_is_the_newest_counted_run(tmp_path):
    """The counts block's table is the newest ``nox -s instructions`` run of results/: each
    strategy's two counts as that file holds them, in the strategy list's order, and a
    strategy it could not count named below the table instead of a row."""
    committed = sorted((ROOT / "results").glob("*/*-pytest-codspeed*.json"))
    assert committed, "results/ holds no nox -s instructions run"
    source = max(committed, key=lambda p: json.loads(p.read_text())["date"])
    machine = tmp_path / "results" / source.parent.name
    machine.mkdir(parents=True)
    (tmp_path / "results" / "benchmarks.json").write_text(
        (ROOT / "results" / "benchmarks.json").read_text()
    )
    (machine / "machine.json").write_text((source.parent / "machine.json").read_text())
    date = json.loads(source.read_text())["date"]
    _counted_run(machine, source, "a" * 40, date, 1.0)
    _counted_run(machine, source, "b" * 40, date - 86_400_000, 2.0)  # a day older
    block = count_blocks.counts_block(results.load(tmp_path / "results"))

    raw = json.loads(source.read_text())["results"]
    strategies = [s.strip("'") for s in raw[catalog.INSTRUCTIONS["call"]][1][0]]
    expected = {
        name: (f"{call:,.0f}", f"{dispatch:,.0f}")
        for name, call, dispatch in zip(
            strategies,
            raw[catalog.INSTRUCTIONS["call"]][0],
            raw[catalog.INSTRUCTIONS["dispatch"]][0],
            strict=True,
        )
        if not math.isnan(call)
    }
    # The counts, then (where the floor was counted) each divided by the floor's.
    rows = re.findall(r"^\| (\w+) +\| +([\d,]+) \| +([\d,]+) \|", block, flags=re.M)
    assert {name: (call, dispatch) for name, call, dispatch in rows} == expected
    assert [name for name, *_ in rows] == [s for s in jitbench.STRATEGIES if s in expected]
    assert "commit `aaaaaaaa`" in block
    uncounted = [s for s in strategies if s not in expected]
    assert uncounted and all(f"**{name}**" in block for name in uncounted)


@pytest.mark.slow
def test_the_complete_run_measured_every_benchmark_of_the_default_grid():
    """The run the README quotes has a figure for each benchmark ``nox -s bench`` runs: a
    setup_cache that fails leaves a whole family unmeasured, and its blocks say n/a."""
    from jitbench.report import choice

    frame = results.load(ROOT / "results")
    picked = choice.choose(frame)
    key = max(picked.runs, key=picked.pairs.__getitem__)
    run = frame[frame[["machine", "commit", "env"]].apply(tuple, axis=1) == key]
    opt_in = {
        *catalog.COUNTED,
        *catalog.POPULATED,
        *catalog.DEVICE_ROWS,
        *catalog.TARGET_TWINS.values(),
    }
    default = set(catalog.ALL) - opt_in
    missing = default - set(run.loc[run["value"].notna(), "benchmark"])
    # Added to the suite after the committed run (its family, Hazards, is measured there):
    # the next nox -s bench fills it, and this set must then be emptied.
    assert missing == NEWER_THAN_THE_COMMITTED_RUN, key


NEWER_THAN_THE_COMMITTED_RUN = {catalog.HAZARDS["recompiles"]}
