"""Regenerate the generated blocks of the README and docs/ pages (``nox -s readme``).

Never edit a block by hand: each sits between ``<!-- BEGIN generated: NAME -->``
and ``<!-- END generated: NAME -->`` in one of :data:`PAGES`, and every figure
in it comes from a file a clone has: the committed asv results (through
``jitbench report``'s own tables and ``jitbench.results``, asv's reader), the
per-release audits in ``docs/history/`` (``docs/release_audits.py``), the
validation summaries in ``docs/validation/`` and ``docs/counts/`` (``nox -s validate``), the
async-dispatch probes in ``docs/async_dispatch/`` (``docs/async_dispatch.py``), the recorded
``jitbench advise`` runs in ``docs/advise/`` (``docs/advise_examples.py``);
the code listings and the audit come from the installed jitbench and JAX.
Nothing in a page depends on where the clone lives. ``--check`` writes
nothing and exits 1 when a page differs from what it would write.
"""

from __future__ import annotations

import argparse
import difflib
import http.server
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pandas as pd

import jitbench
from jitbench import document, results
from jitbench.document import Bold, Code, Page, Paragraph
from jitbench.figure import seconds as fit_seconds
from jitbench.report import (
    choice,
    device,
    fit_tables,
    plots,
    population,
    sections,
    write_report,
)
from jitbench.report import releases as release_page
from jitbench.report.fits import text as fit_text
from jitbench.report.run import Run
from jitbench.report.summary import FLOOR
from jitbench.suite import catalog, grid

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
RESULTS = ROOT / "results"
AUDITS = DOCS / "history"
VALIDATIONS = DOCS / "validation"
PROBES = DOCS / "async_dispatch"
COUNTS = DOCS / "counts"
RUN_SIZE = 10
# The releases on each side of every change the history shows, for the evidence rows.
EDGE_STRATEGY = "static_self_value_hash"


def splice(text: str, name: str, body: str) -> str:
    """``text`` with the generated block ``name`` replaced by ``body``."""
    begin, end = f"<!-- BEGIN generated: {name} -->", f"<!-- END generated: {name} -->"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), flags=re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"no generated block {name!r} where make_readme puts it")
    return pattern.sub(lambda _: f"{begin}\n{body.strip()}\n{end}", text)


def section(markdown: str, heading: str) -> str:
    """The body of the report section titled ``heading`` (up to its CSV link or next heading)."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip("#").strip() == heading)
    body = []
    for line in lines[start + 1 :]:
        if line.startswith("#") or line.startswith("CSV:"):
            break
        body.append(line)
    return "\n".join(body).strip()


class Runs:
    """The committed results: the complete run and the newest JAX history.

    Both are :mod:`jitbench.report.choice`'s, as ``jitbench report`` shows
    them: the complete run is the chosen run with the most (benchmark,
    strategy) pairs across machines, its instructions per call folded in; the
    history the newest (machine, commit) with results from two JAX releases or more.
    """

    def __init__(self, tmp: Path) -> None:
        # Every block reads this one load of results/ (thousands of rows, seconds).
        self.frame = frame = results.load(RESULTS)
        picked = choice.choose(frame)
        self.machine, self.commit, self.env = max(picked.runs, key=picked.pairs.__getitem__)
        self.counts_from = picked.counts.get((self.machine, self.commit, self.env))
        one = choice.Choice((self.full_key,), picked.counts, (), picked.pairs)
        self.full = choice.apply(frame, one)
        if picked.history is None:
            raise SystemExit("the committed results hold no JAX history: run nox -s jax_history")
        self.history_machine, self.history_commit, _ = picked.history
        self.tmp = tmp
        # Generated plots to copy into docs/: {destination: source}.
        self.images: dict[Path, Path] = {}
        # The parts of jitbench report's pages the blocks quote, made as the report makes
        # them: the full run's headline tables and cached-call plot, and the page across
        # JAX releases (the whole report, one run per release, takes minutes).
        self.report = self.tmp / "full"
        run = Run(_with_params(self.full).reset_index(drop=True), self.report)
        sections.headline(run)
        plots.plot_cached(run)
        self.headline_md = document.markdown(Page("headline", run.blocks))
        depth = Run(run.frame, self.report)
        fit_tables.depth_fits(depth)
        plots.plot_depth(depth)
        self.depth_md = document.markdown(Page("depth", depth.blocks))
        history = results.select(frame, machine=self.history_machine, commit=self.history_commit)
        self.releases = self.tmp / "history"
        self.releases_md = document.markdown(
            release_page.page(release_page.groups(_with_params(history)), self.releases)
        )

    @property
    def full_key(self) -> choice.Key:
        return self.machine, self.commit, self.env

    @property
    def jax(self) -> str:
        return str(self.full["jax"].iloc[0])


def _with_params(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every parameter column the report's tables index, as the report fills it."""
    frame = frame.copy()
    for column in results.PARAM_ORDER:
        if column not in frame:
            frame[column] = pd.Series(pd.NA, index=frame.index, dtype="object")
    return frame


def newest_run(frame: pd.DataFrame, benchmarks: tuple[str, ...], command: str) -> pd.DataFrame:
    """The rows of ``benchmarks`` in the newest run that measured one of them
    (:func:`jitbench.report.choice.newest_measuring`); stops naming ``command`` (which runs
    them) where the committed results hold none."""
    key = choice.newest_measuring(frame, benchmarks)
    if key is None:
        raise SystemExit(f"the committed results hold no run of {command}: run it")
    machine, commit, env = key
    run = results.select(frame, machine=machine, commit=commit, env=env)
    return run[run["benchmark"].isin(benchmarks)]


def run_block(runs: Runs) -> str:
    machine = json.loads((RESULTS / runs.machine / "machine.json").read_text())
    date = runs.full["date"].iloc[0]
    table = section(runs.headline_md, f"cpu, size {RUN_SIZE}")
    plot = runs.report / "plots" / "cached-call-vs-size-cpu.png"
    runs.images[DOCS / plot.name] = plot
    source = runs.counts_from
    counted = (
        " Instructions per call from `nox -s instructions`"
        + (f" at commit `{source[1][:8]}`" if source[1] != runs.commit else "")
        + " (same machine and JAX release)."
        if source is not None
        else ""
    )
    return "\n".join(
        [
            f"A real run of the default grid (`nox -s bench`) on machine **{runs.machine}** "
            f"({machine['cpu']}, {machine['num_cpu']} cores, "
            f"{int(machine['ram']) / 2**30:.0f} GiB), commit `{runs.commit[:8]}`, "
            f"{date:%Y-%m-%d}, JAX {runs.jax}, env `{runs.env}`.{counted} Device `cpu`, "
            f"{RUN_SIZE} float32 elements (the report has every size and device):",
            "",
            table,
            "",
            f"![cached call against array size, one line per strategy](docs/{plot.name})",
        ]
    )


def bench_time_block(runs: Runs) -> str:
    """How long the complete run's benchmarks took: from its result file's start times and
    durations (asv's environment build and JAX's install come on top)."""
    machine = json.loads((RESULTS / runs.machine / "machine.json").read_text())
    (path,) = (RESULTS / runs.machine).glob(f"{runs.commit[:8]}-{runs.env}.json")
    record = json.loads(path.read_text())
    columns = record["result_columns"]
    rows = [dict(zip(columns, row, strict=False)) for row in record["results"].values()]
    timed = [r for r in rows if r.get("started_at") is not None and r.get("duration")]
    start = min(r["started_at"] for r in timed) / 1000
    end = max(r["started_at"] / 1000 + r["duration"] for r in timed)
    return (
        f"On **{runs.machine}** ({machine['num_cpu']} cores) the default grid's benchmarks "
        f"took {(end - start) / 60:.0f} minutes under Python {record['python']} (the run "
        "below), after a few minutes of installing JAX into the session and asv's "
        "environment."
    )


def findings_block(runs: Runs) -> str:
    """What the ecosystem's fixes buy, with the figures of the run above."""
    rows = runs.full[(runs.full["device"] == "cpu") & (runs.full["size"] == RUN_SIZE)]
    value = rows.set_index(["benchmark", "strategy"])["value"]

    def us(benchmark: str, strategy: str) -> float:
        return float(value[benchmark, strategy]) * 1e6

    def pair(base: str, other: str, what: str) -> str:
        a, b = us(catalog.DISPATCH, base), us(catalog.DISPATCH, other)
        return f"`{other}` dispatches in {b:.1f} μs against {a:.1f} μs for `{base}` ({what})"

    lines = [
        f"What the ecosystem's recommended fixes buy (dispatch only, `cpu`, size {RUN_SIZE}, "
        f"JAX {runs.jax}, from the run above):",
        "",
        "- " + pair("flax_nnx_jit", "nnx_cached_partial", "flax's `nnx.cached_partial`"),
        "- " + pair("flax_nnx_jit", "nnx_split_merge", "`jax.jit` over `nnx.split` state"),
        "- " + pair("flax_nnx_jit", "nnx_tree_mode", "tree mode, `nnx.jit(graph=False)`"),
        "- " + pair("flax_nnx_jit", "nnx_jit_partial", "`nnx.jit_partial`, flattened once"),
        "- " + pair("equinox_filter_jit", "equinox_module_jax_jit", "plain `jax.jit`, same module"),
        "- " + pair("helper_function", "aot_compiled", "the executable called, no cache lookup"),
        "- " + pair("pytree_class", "pytree_dataclass", "C++ flattening instead of Python"),
    ]
    return "\n".join(lines)


def depth_block(runs: Runs) -> str:
    """What each nested layer costs, per strategy, from the run above."""
    table = section(runs.depth_md, "Cost per nested layer")
    plot = runs.report / "plots" / "cached-call-vs-depth.png"
    runs.images[DOCS / plot.name] = plot
    fits = depth_fits_of(runs)

    def per_layer(strategy: str) -> str:
        found = fits.loc[strategy, [f"dispatch_per_layer{end}_s" for end in ("", "_lo", "_hi")]]
        return fit_text(*found)

    lines = [
        f"From the README's default-grid run (machine **{runs.machine}**, JAX {runs.jax}; "
        f"{', '.join(map(str, grid.DEPTHS))} layers, `bench_scaling.CallVsDepth` and "
        "`CompileVsDepth`; the cached call includes running the layers, dispatch does not "
        "wait for them).",
        "",
        table,
        "",
        f"![cached call and dispatch against nesting depth]({plot.name})",
    ]
    pairs = [("flax_nnx_jit", "nnx_jit_partial"), ("equinox_filter_jit", "pytree_dataclass")]
    if all(s in fits.index for pair in pairs for s in pair):
        lines += [
            "",
            "Dispatch per layer (95% interval in brackets): " + per_layer("flax_nnx_jit")
            + " for `flax_nnx_jit` (graph traversal in Python) against "
            + per_layer("nnx_jit_partial") + " for `nnx_jit_partial`, and "
            + per_layer("equinox_filter_jit") + " for `equinox_filter_jit` (its filter over "
            + "every leaf) against " + per_layer("pytree_dataclass")
            + " for `pytree_dataclass` (flattened in C++).",
        ]  # fmt: skip
    return "\n".join(lines)


def instances_block(runs: Runs) -> str:
    """The newest run of the many-live-instances family: where each strategy's fast path
    goes, and dispatch against the population."""
    chosen = newest_run(runs.frame, catalog.POPULATED, "nox -s instances")
    machine, commit = chosen["machine"].iloc[0], chosen["commit"].iloc[0]
    run = Run(_with_params(chosen).reset_index(drop=True), runs.tmp / "instances")
    population.section(run)
    population.plot(run)
    cliffs = pd.read_csv(run.out / "tables" / "population-cliffs.csv").fillna("")
    plot = run.out / "plots" / "dispatch-vs-instances-cpu.png"
    runs.images[DOCS / plot.name] = plot
    return "\n".join(
        [
            f"`nox -s instances` on machine **{machine}**, commit `{commit[:8]}`, "
            f"JAX {chosen['jax'].iloc[0]}, `cpu`: per strategy the largest population that "
            "run built, and the population from which a `jax.jit` made after it enters "
            "Python on every call (its C++ fast path lost); the report has every figure:",
            "",
            cliffs.drop(columns=["device", "hazard"]).to_markdown(index=False),
            "",
            f"![dispatch against live instances, one line per strategy]({plot.name})",
        ]
    )


def depth_fits_of(runs: Runs) -> pd.DataFrame:
    """The per-layer fits of the run above, by strategy."""
    return pd.read_csv(runs.report / "tables" / "depth-scaling.csv").set_index("strategy")


def history_block(runs: Runs) -> str:
    table = section(runs.releases_md, "Hazards per JAX release: cpu")
    plot = next((runs.releases / release_page.STEM / "plots").glob("*cached_call.png"))
    target = DOCS / "cached-call-vs-jax-release.png"
    runs.images[target] = plot
    return "\n".join(
        [
            f"`nox -s jax_history` at commit `{runs.history_commit[:8]}` on machine "
            f"{runs.history_machine}, device `cpu`.",
            "",
            table,
            "",
            f"![cached call against JAX release, one line per strategy]({target.name})",
            "",
            evidence_block(),
        ]
    )


def release_audits() -> list[dict]:
    """The committed ``docs/history/audit-jax*.json``, oldest release first."""
    found = [json.loads(p.read_text()) for p in AUDITS.glob("audit-jax*.json")]
    if not found:
        raise SystemExit(f"no audits in {AUDITS.relative_to(ROOT)}: run docs/release_audits.py")
    return sorted(found, key=lambda record: results.release_key(record["jax"]))


def evidence_block() -> str:
    """``static_self_value_hash``'s audit rows under each JAX release, oldest first."""
    rows, made = [], set()
    for record in release_audits():
        (audit,) = [a for a in record["audit"] if a["strategy"] == EDGE_STRATEGY]
        cells = [f"{s['traces']}/{s['compiles']}" + _mark(s["outcome"]) for s in audit["steps"]]
        rows.append([record["jax"], *cells])
        made.add((record["jitbench_commit"][:8], record["date"]))
    steps = [s["name"] for s in audit["steps"]]
    table = pd.DataFrame(rows, columns=["jax", *steps])
    when = ", ".join(f"`{commit}` on {date}" for commit, date in sorted(made))
    return "\n".join(
        [
            f"`{EDGE_STRATEGY}` step by step under each release (`jitbench audit --format json` "
            f"in a virtualenv of each, by `docs/release_audits.py` at jitbench commit {when}, "
            "kept in `docs/history/audit-jax<release>.json`; `!` = stale):",
            "",
            table.to_markdown(index=False, disable_numparse=True),
        ]
    )


def _mark(outcome: str) -> str:
    return {"correct": "", "stale": " !", "error": " E"}[outcome]


def timing_block(runs: Runs) -> str:
    from asv.results import Results

    path = next(
        p
        for p in (RESULTS / runs.machine).glob(f"{runs.commit[:8]}-*.json")
        if Results.load(str(p)).env_name == runs.env
    )
    result = Results.load(str(path))
    described = json.loads((RESULTS / "benchmarks.json").read_text())
    rows, total = [], 0.0
    for name in catalog.ALL:
        seconds = result.duration.get(name)
        if seconds is None:
            continue
        total += seconds
        bench = described.get(name, {})
        timed = bench.get("type") == "time"
        rows.append(
            [
                f"`{name}`",
                str(bench.get("number", "")) if timed else "",
                str(bench.get("repeat", "")) if timed else "",
                str(bench.get("rounds", "")),
                f"{seconds:.0f} s",
            ]
        )
    caches = {k: v for k, v in result.duration.items() if k.startswith("<setup_cache")}
    total += sum(caches.values())
    table = pd.DataFrame(rows, columns=["benchmark", "calls a sample", "samples", "rounds", "took"])
    return "\n".join(
        [
            "Timing settings and the seconds each benchmark took in the run the README shows "
            f"(machine **{runs.machine}**, commit `{runs.commit[:8]}`: {total / 60:.1f} minutes "
            f"of benchmarking in all, {sum(caches.values()):.0f} s of them in `setup_cache`; "
            "asv's own start-up and environment build not included):",
            "",
            table.to_markdown(index=False, disable_numparse=True),
            "",
            stages_sentence(runs),
        ]
    )


def stages_sentence(runs: Runs) -> str:
    """How the stages of the run above compare with the cold first calls, on cpu."""
    cpu = runs.full[runs.full["device"] == "cpu"]
    value = cpu.pivot_table(index=["strategy", "size"], columns="benchmark", values="value")
    stages = value[[catalog.TRACE, catalog.LOWER, catalog.COMPILE]].sum(axis=1, min_count=3)

    def shares(whole: str) -> tuple[pd.Series, str]:
        share = (stages / value[whole]).dropna()
        over = share[share > 1]
        text = f"{share.min():.0%}-{share.max():.0%} (median {share.median():.0%})"
        if not over.empty:
            worst = over.idxmax()
            text += (
                f", more than all of it in {len(over)} rows (most: `{worst[0]}` at size "
                f"{worst[1]:,}, {over.max():.2f}x)"
            )
        return share, text

    own, own_text = shares(catalog.STAGE_CALL)
    _, cold_text = shares(catalog.COLD)
    agree = (value[catalog.STAGE_CALL] / value[catalog.COLD]).dropna()
    return (
        f"In that run the three stages make up {own_text} of the cold first call they were "
        f"measured in (`Stages.track_call_seconds`; {len(own)} strategy and size rows on "
        f"`cpu`), and {cold_text} of `ColdCall`'s median for the same row. That median comes "
        f"from other processes, and the stages' own call is {agree.min():.0%}-{agree.max():.0%} "
        "of it: on this machine a compile takes a different time from one process to the next."
    )


def newest(folder: Path, date: Callable[[dict], str]) -> dict | None:
    """The newest committed record in ``folder`` (one file per machine), by ``date``."""
    records = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    return max(records, key=date, default=None)


def validation_block() -> str:
    """The summary of the committed ``nox -s validate`` run (docs/validation/MACHINE.json)."""
    from jitbench.validate.writer import header, verdicts

    record = newest(VALIDATIONS, lambda r: r["started"])
    if record is None:
        raise SystemExit(f"no validation run in {VALIDATIONS.relative_to(ROOT)}: nox -s validate")
    about = (
        Code("nox -s validate"),
        " on machine ",
        Bold(record["machine"]),
        " (",
        Code(f"docs/validation/{record['machine']}.json"),
        "):",
    )
    return document.markdown_blocks(
        [Paragraph(about), Paragraph(header(record)), verdicts(record["summary"])]
    )


def counts_block(frame: pd.DataFrame) -> str:
    """Instructions per call from the newest committed ``nox -s instructions`` run (results/),
    and the checks of the committed counts phase (docs/counts/MACHINE.json).

    The table is the family's own run, in the asv environment a user's
    ``nox -s instructions`` builds: a count depends on the packages installed
    (README), and the counts phase counts in nox's environment, which has more.
    """
    from jitbench.validate.writer import header, verdicts

    record = newest(COUNTS, lambda r: r["started"])
    if record is None:
        raise SystemExit(
            f"no counts phase in {COUNTS.relative_to(ROOT)}: nox -s validate -- --phases counts"
        )
    run = newest_run(frame, tuple(catalog.INSTRUCTIONS.values()), "nox -s instructions")
    machine, commit = run["machine"].iloc[0], run["commit"].iloc[0]
    columns = {
        name: f"instructions per {'cached call' if kind == 'call' else kind}"
        for kind, name in catalog.INSTRUCTIONS.items()
    }
    table = run.pivot_table(
        index="strategy", columns="benchmark", values="value", dropna=False, observed=False
    ).reindex(columns=list(columns))
    order = [name for name in jitbench.STRATEGIES if name in table.index]
    table = table.reindex(order).rename(columns=columns).rename_axis(columns=None)
    missing = table.index[table.isna().all(axis=1)]
    table = table.drop(index=missing)
    if FLOOR in table.index:  # each count over the floor's (jax.jit of a free function)
        for column in list(table.columns):
            table[f"{column} / floor"] = table[column] / table.loc[FLOOR, column]
    table = table.reset_index()
    for column in table.columns[1:]:
        form = "{:.2f}" if column.endswith("/ floor") else "{:,.0f}"
        table[column] = [form.format(v) for v in table[column]]
    reasons = record["counts"].get("not_counted", {})
    skipped = "; ".join(
        f"**{name}**" + (f", {reasons[name].removeprefix('n/a: ')}" if name in reasons else "")
        for name in missing
    )
    return "\n".join(
        [
            f"`nox -s instructions` on machine **{machine}**, commit `{commit[:8]}`, JAX "
            f"{run['jax'].iloc[0]}, Python {run['python'].iloc[0]}: the calling thread's "
            f"instructions per call, size {int(run['size'].min())} on cpu, one Valgrind "
            "process per strategy:",
            "",
            table.to_markdown(index=False, colalign=("left", *["right"] * (table.shape[1] - 1))),
            "",
            *([f"Not counted: {skipped}.", ""] if skipped else []),
            f"`nox -s validate -- --phases counts` on machine **{record['machine']}** "
            f"(`docs/counts/{record['machine']}.json`): {header(record)} Its processes run in "
            "nox's environment, which holds more packages than asv's, so its checks stand "
            "beside the table, not its counts:",
            "",
            document.markdown_blocks([verdicts(record["summary"])]),
        ]
    )


# docs/counts_cnn.py's checks of flax's MNIST CNN, in order, and each one's figures.
CNN_CHECKS = {"baseline": "baseline", "unchanged": "unchanged model", "planted": "2% planted"}
CNN_FIGURES = {
    "call": "cached call",
    "dispatch": "dispatch",
    "host_call": "host's share, cached call",
    "host_dispatch": "host's share, dispatch",
}


def cnn_counts_block() -> str:
    """The checks of flax's MNIST CNN as a project's counts check runs them, from the newest
    committed ``python docs/counts_cnn.py`` (docs/counts/cnn/MACHINE.json)."""
    record = newest(COUNTS / "cnn", lambda r: r["started"])
    if record is None:
        raise SystemExit("no record in docs/counts/cnn: python docs/counts_cnn.py")
    checks = record["checks"]
    rows = []
    for key, label in CNN_CHECKS.items():
        found, row = checks[key], {"check": label}
        for kind, column in CNN_FIGURES.items():
            value = f"{found['counts'][kind]:,.0f}"
            if found["baseline"]:
                value += f" ({found['counts'][kind] / found['baseline'][kind]:.4f})"
            row[column] = value
        said = found["said"]
        row["the check"] = said if said in ("written", "passed") else "failed"
        rows.append(row)
    versions = record["versions"]
    # The failure's lines of old, new and ratio (its first line names a temporary file).
    planted = [line for line in checks["planted"]["said"].splitlines() if line.startswith("  ")]
    return "\n".join(
        [
            f"`python docs/counts_cnn.py` on machine **{record['machine']}** "
            f"({record['cpus']} CPUs, {record['valgrind']}, JAX {versions['jax']}, flax "
            f"{versions['flax']}, Python {versions['python']}; {record['started']}): "
            "instructions per call of flax's MNIST CNN (a batch of 32), each check in a "
            "process of its own, a ratio to the baseline in brackets; the check judges the "
            "host's share:",
            "",
            pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True),
            "",
            *(
                [
                    "The planted step's check failed: instructions per call grew beyond the "
                    "tolerance 0.01,",
                    "",
                    "```",
                    *planted,
                    "```",
                ]
                if planted
                else ["The planted step's check passed: not flagged."]
            ),
        ]
    )


def _counted_family(runs: Runs, benchmarks: dict[str, str], name: str) -> Run | None:
    """The newest committed run of a counted family, as the report reads it; None if none."""
    values = tuple(benchmarks.values())
    measured = runs.frame[runs.frame["benchmark"].isin(values) & runs.frame["value"].notna()]
    if measured.empty:
        return None
    chosen = newest_run(runs.frame, values, "nox -s instructions")
    return Run(_with_params(chosen).reset_index(drop=True), runs.tmp / name)


def _about(run: Run) -> str:
    row = run.frame.iloc[0]
    return (
        f"`nox -s instructions` on machine **{row['machine']}**, commit `{row['commit'][:8]}`, "
        f"JAX {row['jax']}, cpu, size {grid.SCALING_SIZE}"
    )


def _not_counted(benchmarks: dict[str, str]) -> str:
    (family,) = {name.rsplit(".", 1)[0] for name in benchmarks.values()}
    return f"The committed results hold no count of `{family}` yet (`nox -s instructions`)."


def _counted_table(table: pd.DataFrame, columns: dict[str, str]) -> str:
    table = table[["strategy", *columns]].rename(columns=columns)
    for column in columns.values():
        table[column] = [f"{v:+,.0f}" if "%" not in column else f"{v:+.1f}%" for v in table[column]]
    return table.to_markdown(index=False, colalign=("left", *["right"] * len(columns)))


def _caller_depth(runs: Runs) -> tuple[Run, pd.DataFrame, int] | None:
    """The newest run that counted ``InstructionsVsCallerDepth``, its per-strategy slopes
    per frame (tracebacks on and off) with what the most frames add to the cached call in
    percent, and that number of frames; None where no run counted it."""
    run = _counted_family(runs, catalog.INSTRUCTIONS_VS_CALLER_DEPTH, "caller-depth")
    if run is None:
        return None
    on = fit_tables.counted_slopes(run, "frame")
    off = fit_tables.counted_slopes(run, "frame_no_tracebacks")
    table = on if off is None else on.merge(off, on="strategy", how="left")
    calls = run.rows(catalog.INSTRUCTIONS_VS_CALLER_DEPTH["call"])
    calls = calls[(calls["tracebacks"] == "on") & (calls["status"] == "ok")]
    at = calls.pivot_table(index="strategy", columns="frames", values="value")
    last = max(grid.CALLER_FRAMES)
    table[f"{last} frames, %"] = table["strategy"].map(100 * (at[last] / at[0] - 1))
    return run, table, last


def caller_depth_block(runs: Runs) -> str:
    """What each frame of the caller's stack adds to a counted call, per strategy (least
    squares over 0, 10 and 50 frames more), JAX's tracebacks on and off, and what 50 frames
    add to the cached call; from the newest run that counted ``InstructionsVsCallerDepth``."""
    found = _caller_depth(runs)
    if found is None:
        return _not_counted(catalog.INSTRUCTIONS_VS_CALLER_DEPTH)
    run, table, last = found
    columns = {
        "call_per_frame_instructions": "per frame, cached call",
        "dispatch_per_frame_instructions": "per frame, dispatch",
        "call_per_frame_no_tracebacks_instructions": "per frame, tracebacks off",
        f"{last} frames, %": f"{last} frames more, cached call %",
    }
    columns = {k: v for k, v in columns.items() if k in table}
    return "\n".join(
        [
            f"{_about(run)}: the instructions each frame of the caller's stack adds to a call "
            f"(least squares over {', '.join(map(str, grid.CALLER_FRAMES))} frames more than "
            "the counting loop's 2; tracebacks off: jaxlib's private switch), and what "
            f"{last} frames more add to a cached call:",
            "",
            _counted_table(table, columns),
        ]
    )


# The README's sentence on the stack names these two: the cheapest way and nnx's.
STACK_EXAMPLES = ("helper_function", "flax_nnx_jit")


def stack_block(runs: Runs) -> str:
    """The README's summary of the caller-depth counts: the median instructions a frame adds
    to a cached call and to a dispatch of the strategies, and what the most frames add to
    :data:`STACK_EXAMPLES`' cached calls (the table is in docs/counting.md)."""
    found = _caller_depth(runs)
    if found is None:
        return _not_counted(catalog.INSTRUCTIONS_VS_CALLER_DEPTH)
    run, table, last = found
    table = table.set_index("strategy")
    call = table["call_per_frame_instructions"].median()
    dispatch = table["dispatch_per_frame_instructions"].median()
    more = " and ".join(
        f"{table.loc[s, f'{last} frames, %']:+.1f}% to `{s}`'s" for s in STACK_EXAMPLES
    )
    return (
        f"JAX walks the caller's whole Python stack at every dispatch and every wait for a "
        f"result, so where a method is called from matters: each frame above the call adds "
        f"{call:,.0f} instructions to a cached call (median over the strategies; "
        f"{dispatch:,.0f} to a dispatch), and {last} frames more add {more} cached call "
        f"({_about(run)}; per strategy, and with JAX's tracebacks off: "
        "[docs/counting.md](docs/counting.md#cost-per-frame-of-the-caller))."
    )


def counted_depth_block(runs: Runs) -> str:
    """What each nested layer adds to a counted call, per strategy (least squares over the
    depths of ``InstructionsVsDepth``), from the newest run that counted it."""
    run = _counted_family(runs, catalog.INSTRUCTIONS_VS_DEPTH, "counted-depth")
    if run is None:
        return _not_counted(catalog.INSTRUCTIONS_VS_DEPTH)
    table = fit_tables.counted_slopes(run, "layer")
    columns = {
        "call_per_layer_instructions": "per layer, cached call",
        "dispatch_per_layer_instructions": "per layer, dispatch",
    }
    return "\n".join(
        [
            f"{_about(run)}: the instructions each nested layer adds to a call (least squares "
            f"over {', '.join(map(str, grid.DEPTHS))} layers):",
            "",
            _counted_table(table, {k: v for k, v in columns.items() if k in table}),
        ]
    )


def _ranges(invocations: list[dict], mode: str) -> str:
    """Each invocation's min-max of the per-process medians, in μs, as a sentence part."""
    parts = []
    for run in invocations:
        found = run["medians_s"][mode]
        text = f"{min(found) * 1e6:.1f}-{max(found) * 1e6:.1f}"
        if run["processes"] != invocations[0]["processes"]:
            text += f" ({run['processes']} processes)"
        parts.append(text)
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def async_dispatch_block() -> str:
    """The committed ``docs/async_dispatch.py`` invocations (docs/async_dispatch/MACHINE.json)."""
    record = newest(PROBES, lambda r: r["invocations"][-1]["date"])
    if record is None:
        return (
            "No probe of this kind is committed yet: `python docs/async_dispatch.py` writes "
            "`docs/async_dispatch/<machine>.json`, and `nox -s readme` quotes it here."
        )
    found = record["invocations"]
    first = found[0]
    dates = sorted({run["date"] for run in found})
    count = {1: "one invocation", 2: "two invocations", 3: "three invocations"}
    return (
        f"`python docs/async_dispatch.py` on machine {record['machine']} (JAX {record['jax']}, "
        f"{', '.join(dates)}; `helper_function` at {first['size']:,} elements, the median of "
        f"one process, {first['processes']} processes per mode), "
        f"{count.get(len(found), f'{len(found)} invocations')}: {_ranges(found, 'default')} μs "
        f"with JAX's default, {_ranges(found, 'sync')} μs with "
        f"`jax_cpu_enable_async_dispatch` off, and {_ranges(found, 'pinned')} μs pinned to one "
        f"core (`docs/async_dispatch/{record['machine']}.json`)."
    )


ECOSYSTEM = DOCS / "ecosystem"


def ecosystem_block() -> str:
    """jitbench beside flax's and JAX's own benchmarks (docs/ecosystem/MACHINE-DEVICE.json)."""
    records = [json.loads(p.read_text()) for p in sorted(ECOSYSTEM.glob("*.json"))]
    if not records:
        raise SystemExit(f"no run in {ECOSYSTEM.relative_to(ROOT)}: python docs/ecosystem.py")
    parts = []
    for r in records:
        rows = [
            {
                "their benchmark": f"{row['benchmark']}: {row['theirs']}",
                "jitbench time": f"{row['target']}, {row['measure']}",
                "theirs": _us(row["theirs_s"]),
                "jitbench": _us(row["jitbench_s"]),
                "jitbench / theirs": f"{row['jitbench_s'] / row['theirs_s']:.2f}",
            }
            for row in r["rows"]
        ]
        parts += [
            f"`python docs/ecosystem.py` on machine **{r['machine']}**, device {r['device']} "
            f"(JAX {r['jax']}, Python {r['python']}, {r['date']}; flax's loop of "
            f"{r['flax_steps']:,} steps includes its first call; "
            f"`docs/ecosystem/{r['machine']}-{r['device']}.json`):",
            "",
            pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True),
            "",
            f"On the same call, `jax.block_until_ready(x)`, which jitbench's cached call "
            f"waits with, took {_us(r['wait_difference_s'])} more than `x.block_until_ready()`, "
            f"which JAX's benchmark calls.",
            "",
        ]
    return "\n".join(parts[:-1])


def _changed_by(strategy) -> str:
    """How the audit changes the strategy's objects, as it changes a user's: the walk's
    change of each field (``jitbench.targets.edit``), flags and arrays apart where they
    differ, on the object that holds them."""
    from jitbench.auditing.subject import Generated
    from jitbench.devices import resolve

    subject = Generated(strategy, resolve("cpu"), 8)
    found = subject.fields(subject.target.obj)[0]
    words = {f.kind: f"({f.how})" if " " in f.how else f"`{f.how}`" for f in found}
    style = f"flags {words['static']}, arrays {words['array']}"
    if len(set(words.values())) == 1:
        style = words["array"]
    holder = found[0].path.rpartition(".")[0]
    return f"{style} on `.{holder}`" if holder else style


def strategies_table_block() -> str:
    """The registry's strategies, in its order: what each is and how its objects change."""
    from jitbench.strategies import STRATEGIES

    rows = [[f"`{s.name}`", s.summary, _changed_by(s)] for s in STRATEGIES.values()]
    table = pd.DataFrame(rows, columns=["name", "what the user writes", "changed by"])
    return table.to_markdown(index=False, disable_numparse=True)


def hazards_block() -> str:
    """What ``assert_jit_safe`` fails on and ``advise`` reports, from ``jitbench.hazards``."""
    from jitbench.hazards import FOUND

    rows = [[f"`{name}`", words] for name, words in FOUND.items()]
    return pd.DataFrame(rows, columns=["name", "what it means"]).to_markdown(index=False)


# The README's Scaler jitted with partial(jax.jit, static_argnums=0) and the default hash.
SCALER = """\
class Scaler:
    def __init__(self, x, mul):
        self.x, self.mul = x, mul

    @partial(jax.jit, static_argnums=0)
    def calc(self, y):
        return self.x * y if self.mul else y
"""


def assert_message_block() -> str:
    """``assert_jit_safe``'s failure on :data:`SCALER`, whole, as it prints."""
    import functools

    import jax
    import jax.numpy as jnp

    from jitbench.testing import assert_jit_safe

    namespace = {"jax": jax, "partial": functools.partial}
    exec(SCALER, namespace)
    try:
        assert_jit_safe(namespace["Scaler"](2.0, True), call="calc", inputs=(jnp.arange(4.0),))
    except AssertionError as exc:
        lines = str(exc).splitlines()
    else:
        raise SystemExit("the README's Scaler passed assert_jit_safe: docs/testing.md says not")
    return "```\nAssertionError: " + "\n".join(lines) + "\n```"


def strategies_block() -> str:
    """The generated source of every built-in strategy at the default shape."""
    from jitbench.strategies import STRATEGIES

    parts = []
    for strategy in STRATEGIES.values():
        parts += [
            f"<details><summary><code>{strategy.name}</code>: {strategy.summary}</summary>",
            "",
            "```python",
            strategy.source().rstrip(),
            "```",
            "</details>",
            "",
        ]
    return "\n".join(parts)


def audit_block() -> str:
    """``jitbench audit`` on this machine's JAX, as a Markdown table."""
    import jax

    from jitbench.auditing.audit import audit
    from jitbench.auditing.scenario import SCENARIO
    from jitbench.devices import resolve
    from jitbench.strategies import STRATEGIES

    placement = resolve("cpu")
    header = ["strategy", *SCENARIO, "stale", "errors", "leaked"]
    rows = []
    for strategy in STRATEGIES.values():
        result = audit(strategy, placement)
        cells = [f"{s.traces}/{s.compiles}{_mark(s.outcome)}" for s in result.steps]
        totals = [result.stale_results, result.errors, result.leaked_instances]
        rows.append([f"`{strategy.name}`", *cells, *map(str, totals)])
    table = pd.DataFrame(rows, columns=header)
    return "\n".join(
        [
            f"`jitbench audit` (JAX {jax.__version__}, device `cpu`, size {result.size}):",
            "",
            table.to_markdown(index=False, disable_numparse=True),
        ]
    )


def explain_block() -> str:
    """``jitbench audit --explain`` for one strategy: why each recompile happened."""
    command = ["audit", "--strategy", "pytree_dataclass", "--explain"]
    out = subprocess.run(
        [sys.executable, "-m", "jitbench", *command], capture_output=True, text=True, check=True
    ).stdout
    # Object ids change from run to run and say nothing here; paths are the checkout's.
    out = re.sub(r" id=\d+", "", out)
    out = out.replace(str(Path(jitbench.__file__).resolve().parents[1]) + "/", "")
    return "```\n$ jitbench " + " ".join(command) + "\n" + out.strip() + "\n```"


# The README's own-class example: a model from a library the project does not own.
OWN_CLASS = [
    "audit", "equinox_mlp:mlp", "--call", "equinox_mlp:forward", "--inputs", "equinox_mlp:batch",
    "--fields", "layers[0].",
]  # fmt: skip


def own_class_block() -> str:
    """``jitbench audit`` of the equinox MLP in docs/examples, as a user runs it."""
    env = {**os.environ, "PYTHONPATH": str(DOCS / "examples")}
    out = subprocess.run(
        [sys.executable, "-m", "jitbench", *OWN_CLASS],
        capture_output=True, text=True, check=True, env=env, cwd=ROOT,
    ).stdout  # fmt: skip
    shown = " ".join(f"'{a}'" if "[" in a else a for a in OWN_CLASS)
    return "```\n$ PYTHONPATH=docs/examples jitbench " + shown + "\n" + out.strip() + "\n```"


ADVICE = DOCS / "advise"


def advise_block(name: str) -> str:
    """``jitbench advise`` on one example, as it printed: the run recorded in
    ``docs/advise/NAME.json`` (``docs/advise_examples.py``), rendered by the command's own
    table (timings move from run to run; the recorded run is the page's)."""
    import contextlib
    import io

    from jitbench.advise import Advice
    from jitbench.cli import render

    recorded = json.loads((ADVICE / f"{name}.json").read_text())
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        render.advice(Advice.from_dict(recorded["advice"]), "table")
    return (
        f"JAX {recorded['jax']}, recorded with `python docs/advise_examples.py {name}`:\n\n"
        f"```\n$ {recorded['command']}\n{shown.getvalue().strip()}\n```"
    )


def advise_seed_block() -> str:
    """``jitbench advise`` on the seed's class (``partial(jax.jit, static_argnums=0)``)."""
    return advise_block("seed_class")


def advise_cnn_tpu_block() -> str:
    """``jitbench advise`` on flax's MNIST CNN on the TPU v5e (docs/examples/flax_cnn.py), and
    each way's figures over the hand-written reference's (``docs/advise_reference.py
    --check``: both committed files, read back)."""
    import contextlib
    import io

    spec = importlib.util.spec_from_file_location("advise_reference", DOCS / "advise_reference.py")
    assert spec is not None and spec.loader is not None
    reference = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(reference)
    shown = io.StringIO()
    with contextlib.redirect_stdout(shown):
        reference.check(ADVICE / "flax_cnn_tpu.json", ADVICE / "reference-tpu.json")
    recorded = json.loads((ADVICE / "flax_cnn_tpu.json").read_text())
    return (
        f"{advise_block('flax_cnn_tpu')}\n\nThe run took {recorded['seconds']} s on the chip's "
        "host. Each way's figures over the reference's (`python docs/advise_reference.py "
        "--check docs/advise/flax_cnn_tpu.json`; advise's / the reference's):\n\n"
        f"```\n{shown.getvalue().strip()}\n```"
    )


def advise_flax_block() -> str:
    """``jitbench advise`` on flax's own benchmark model (docs/examples/flax_mlp.py)."""
    return advise_block("flax_mlp")


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]  # fmt: skip
DASHBOARD_PNG = DOCS / "dashboard.png"
DASHBOARD_PARAMS = {"strategy": "'helper_function'", "size": "10", "device": "'cpu'"}


def dashboard_block(runs: Runs, shoot: bool) -> str:
    """The dashboard of the committed results; ``shoot`` retakes its screenshot.

    Without Chromium the committed screenshot stays as it is (the block's text
    does not depend on it); CI installs Chromium.
    """
    text = (
        f"![the dashboard of the committed results: {catalog.CACHED} for helper_function, "
        f"size 10, cpu, one point per JAX release]({DASHBOARD_PNG.name})"
    )
    if not shoot:
        return text
    if not CHROMIUM.is_file():
        print(
            f"{DASHBOARD_PNG.relative_to(ROOT)} kept as committed: no {CHROMIUM}", file=sys.stderr
        )
        return text
    screenshot(runs)
    return text


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the dashboard to the browser without a log line per request."""

    def log_message(self, format: str, *args: object) -> None:
        pass


def screenshot(runs: Runs) -> None:
    """A screenshot of the dashboard of the committed results, served with the network cut."""
    import functools
    import threading
    from urllib.parse import quote

    from playwright.sync_api import sync_playwright

    from jitbench.suite.asvrun import AsvConfig

    html = runs.tmp / "html"
    config = AsvConfig(ROOT, runs.tmp / "asv", html_dir=str(html))
    config.run("publish", "--no-pull")
    report = write_report(
        RESULTS, runs.tmp / "report", machine=runs.machine, commit=runs.commit, env=runs.env
    ).parent
    shutil.copytree(report, html / "report")
    subprocess.run([sys.executable, "-m", "jitbench.dashboard", str(html)], check=True)
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(html))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    query = "&".join(f"p-{k}={quote(v, safe='')}" for k, v in DASHBOARD_PARAMS.items())
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
            )
            page = browser.new_page(viewport={"width": 1280, "height": 760})
            page.route(
                "**/*",
                lambda route, request: (
                    route.continue_() if request.url.startswith(base) else route.abort()
                ),
            )
            page.goto(f"{base}#{catalog.CACHED}?{query}")
            page.wait_for_selector("#main-graph .flot-overlay")
            page.wait_for_timeout(500)
            page.screenshot(path=str(DASHBOARD_PNG))
            browser.close()
    finally:
        server.shutdown()


# Each page and the generated blocks it holds, in the order they are made.
ACCELERATOR_REFERENCES = DOCS / "accelerator"


class Accelerator:
    """The newest run of the device rows on an accelerator, as the report shows it, and the
    hand-written reference (docs/accelerator.py) of the same machine."""

    def __init__(self, runs: Runs) -> None:
        found = device.accelerator_runs(runs.frame)
        if not found:
            raise SystemExit("the committed results hold no device run on an accelerator")
        self.machine, self.commit, self.env = found[0]
        rows = results.select(runs.frame, machine=self.machine, commit=self.commit, env=self.env)
        self.run = Run(_with_params(rows).reset_index(drop=True), runs.tmp / "accelerator")
        self.head = device.per_strategy(self.run)
        self.calls = device.calls(self.run)
        self.devices = device.devices_of(self.head)
        self.chip = self.devices[0]
        self.jax = str(rows["jax"].iloc[0])
        path = ACCELERATOR_REFERENCES / f"{self.machine}-{self.chip}.json"
        if not path.is_file():
            raise SystemExit(
                f"no reference for the accelerator run: run docs/accelerator.py ({path})"
            )
        self.record = json.loads(path.read_text())
        self.reference = device.reference(self.record)

    def figure(self, strategy: str, column: str, on: str | None = None) -> float:
        head = self.head
        row = head[(head["strategy"] == strategy) & (head["device"] == (on or self.chip))]
        return float(row[column].iloc[0])


def _us(seconds: float) -> str:
    return fit_seconds(seconds)


def accelerator_block(runs: Runs) -> str:
    """The chip beside the host's CPU, per strategy, and what changes on an accelerator."""
    acc = Accelerator(runs)
    side = device.side_by_side(acc.head, acc.devices)
    blocks = acc.run.table("device-headline", side, csv=False)
    table = document.markdown_blocks(blocks).strip()
    size = device.size_text(acc.head["size"].min())
    jitted = acc.head[(acc.head["device"] == acc.chip)
                      & ~acc.head["strategy"].isin(["eager", "jit_per_call"])]  # fmt: skip
    cpu = acc.head[(acc.head["device"] == "cpu")
                   & ~acc.head["strategy"].isin(["eager", "jit_per_call"])]  # fmt: skip
    ref = acc.reference
    hidden = {s: device.hidden_from(r) for s, r in ref.groupby("strategy")}
    chip = acc.head[acc.head["device"] == acc.chip]
    # "> 1e8" in a cell, "beyond 1e8" in a sentence.
    mine = {
        s: str(h).replace("> ", "beyond ")
        for s, h in zip(chip["strategy"], chip["hidden_from"], strict=True)
    }
    big = ref["size"].max()
    at_big = ref[ref["size"] == big].set_index("strategy")

    def loop(strategy: str) -> str:
        return _us(acc.figure(strategy, "loop_s"))

    firsts = [acc.figure("helper_function", "first_call_s", on) for on in (None, "cpu")]
    cold, cold_cpu = (_us(seconds) for seconds in firsts)
    nnx_mb, helper_mb = (
        at_big.loc[s, "output_bytes"] / 1e6 for s in ("flax_nnx_jit", "helper_function")
    )
    eager_big = _us(at_big.loc["eager", "loop_s"])
    lines = [
        f"`jitbench device-run` on machine **{acc.machine}** ({acc.record['device']}, JAX "
        f"{acc.jax}), commit `{acc.commit[:8]}`; each cell {' · '.join(acc.devices)} (the same "
        f"host's CPU), size {size} (the report has every size measured; column by column: "
        "[docs/accelerator.md](docs/accelerator.md#what-is-measured)):",
        "",
        table,
        "",
        f"On the chip a synchronous call of a jitted strategy costs "
        f"{_us(jitted['call_s'].min())}-{_us(jitted['call_s'].max())} (the host's CPU: "
        f"{_us(cpu['call_s'].min())}-{_us(cpu['call_s'].max())}), and a compile "
        f"{firsts[0] / firsts[1]:.1f}x the CPU's (helper_function's cold first call {cold} "
        f"against {cold_cpu}). What a loop of "
        f"small steps gets is the host's dispatch, which the way of jitting sets: "
        f"{loop('helper_function')} per call for helper_function, {loop('flax_nnx_jit')} for "
        f"flax_nnx_jit, {loop('equinox_filter_jit')} for equinox_filter_jit, {loop('eager')} "
        f"eager. The device's own time takes over only at large arrays (hidden from): from "
        f"{mine['helper_function']} elements for helper_function, {mine['flax_nnx_jit']} for "
        f"flax_nnx_jit, {mine['eager']} eager and {mine['equinox_filter_jit']} for "
        f"equinox_filter_jit; the hand-written reference (`docs/accelerator.py`, same host) "
        f"finds {hidden['helper_function']}, {hidden['flax_nnx_jit']} and {hidden['eager']} for "
        f"the first three. At {device.size_text(big)} a loop costs "
        f"{_us(at_big.loc['helper_function', 'loop_s'])} per call with "
        f"helper_function, {_us(at_big.loc['flax_nnx_jit', 'loop_s'])} with flax_nnx_jit "
        f"(its program writes {nnx_mb:,.0f} MB a call against {helper_mb:,.0f} MB: `nnx.jit` "
        f"returns the module's state, a copy of every `nnx.Param`) and {eager_big} eager. More, "
        "and how the rows are measured: [docs/accelerator.md](docs/accelerator.md).",
    ]
    return "\n".join(lines)


def accelerator_reference_block(runs: Runs) -> str:
    """jitbench's device rows against the hand-written reference on the same chip."""
    acc = Accelerator(runs)
    mine = acc.calls[acc.calls["device"] == acc.chip]
    table = device.agreement(mine, acc.reference)
    worst = table[[c for c in table if c.endswith("_ratio")]].sub(1).abs().max().max()
    shown = pd.DataFrame(
        {
            "strategy": table["strategy"],
            "size": table["size"].map(device.size_text),
            **{
                f"{device.LABELS[n]}: jitbench / reference": [
                    f"{_us(a)} / {_us(b)} ({r:.2f})"
                    for a, b, r in zip(table[n], table[f"{n}_reference"],
                                       table[f"{n.removesuffix('_s')}_ratio"], strict=True)
                ]
                for n in device.CALLS
            },
        }
    )  # fmt: skip
    return "\n".join(
        [
            f"Machine **{acc.machine}**, {acc.chip}: jitbench's rows (commit `{acc.commit[:8]}`) "
            f"against `docs/accelerator.py` ({acc.record['date']}); every figure within "
            f"{worst:.1%} of the reference's:",
            "",
            shown.to_markdown(index=False, disable_numparse=True),
        ]
    )


def accelerator_sweep_block(runs: Runs) -> str:
    """The reference's sizes up to 1e8: where the chip's own time takes over."""
    acc = Accelerator(runs)
    ref = acc.reference.copy()
    rows = []
    for strategy, part in ref.groupby("strategy", sort=False):
        row = {"strategy": strategy}
        for r in part.itertuples():
            row[device.size_text(r.size)] = f"{_us(r.dispatch_s)} / {_us(r.loop_s)}"
        row["device hides the host from"] = device.hidden_from(part)
        rows.append(row)
    return "\n".join(
        [
            f"`docs/accelerator.py` on machine **{acc.machine}** ({acc.record['device']}, JAX "
            f"{acc.record['jax']}, {acc.record['date']}), dispatch / loop per call by size:",
            "",
            pd.DataFrame(rows).to_markdown(index=False, disable_numparse=True),
        ]
    )


PAGES: dict[str, tuple[str, ...]] = {
    "README.md": ("bench-time", "run", "accelerator", "audit", "findings", "stack"),
    "docs/accelerator.md": ("accelerator-reference", "accelerator-sweep"),
    "docs/own-objects.md": ("own-class", "explain"),
    "docs/counting.md": ("counts", "counts-cnn", "caller-depth", "counted-depth"),
    "docs/scaling.md": ("depth", "instances"),
    "docs/running.md": ("dashboard",),
    "docs/strategies.md": ("strategies-table", "strategies"),
    "docs/history.md": ("history",),
    "docs/benchmarks.md": ("timing",),
    "docs/validation.md": ("validation", "ecosystem", "async-dispatch"),
    "docs/advise.md": ("advise-seed", "advise-flax", "advise-cnn-tpu"),
    # Its example is written by hand: it is tests/test_testing.py's project.
    "docs/testing.md": ("hazards", "assert-message"),
    "docs/design.md": (),
    "docs/commits.md": (),
    "docs/contributing.md": (),
}


def generate(tmp: Path, shoot: bool = False) -> tuple[dict[str, str], dict[Path, Path]]:
    """Every page with its blocks regenerated, keyed by path, and the plots to copy.

    Reports are written under ``tmp``, and the plots ({docs/ path: its source
    under ``tmp``}) stay there; ``shoot`` retakes the dashboard's screenshot
    (into docs/, as it is taken).
    """
    runs = Runs(tmp)
    makers: dict[str, Callable[[], str]] = {
        "run": lambda: run_block(runs),
        "bench-time": lambda: bench_time_block(runs),
        "accelerator": lambda: accelerator_block(runs),
        "accelerator-reference": lambda: accelerator_reference_block(runs),
        "accelerator-sweep": lambda: accelerator_sweep_block(runs),
        "audit": audit_block,
        "findings": lambda: findings_block(runs),
        "explain": explain_block,
        "own-class": own_class_block,
        "dashboard": lambda: dashboard_block(runs, shoot),
        "strategies-table": strategies_table_block,
        "strategies": strategies_block,
        "hazards": hazards_block,
        "assert-message": assert_message_block,
        "history": lambda: history_block(runs),
        "timing": lambda: timing_block(runs),
        "validation": validation_block,
        "async-dispatch": async_dispatch_block,
        "ecosystem": ecosystem_block,
        "counts": lambda: counts_block(runs.frame),
        "counts-cnn": cnn_counts_block,
        "depth": lambda: depth_block(runs),
        "instances": lambda: instances_block(runs),
        "caller-depth": lambda: caller_depth_block(runs),
        "stack": lambda: stack_block(runs),
        "counted-depth": lambda: counted_depth_block(runs),
        "advise-seed": advise_seed_block,
        "advise-flax": advise_flax_block,
        "advise-cnn-tpu": advise_cnn_tpu_block,
    }
    pages = {}
    for page, names in PAGES.items():
        text = (ROOT / page).read_text(encoding="utf-8")
        for name in names:
            text = splice(text, name, makers[name]())
            print(f"{page}: {name} block regenerated", file=sys.stderr)
        pages[page] = text
    return pages, runs.images


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; 1 if a page differs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jitbench-readme-") as tmp:
        pages, images = generate(Path(tmp), shoot=not args.check)
        if args.check:
            differ = 0
            for page, text in pages.items():
                committed = (ROOT / page).read_text(encoding="utf-8")
                diff = difflib.unified_diff(
                    committed.splitlines(keepends=True), text.splitlines(keepends=True),
                    f"{page} (committed)", f"{page} (generated)",
                )  # fmt: skip
                shown = "".join(diff)
                differ += bool(shown)
                sys.stdout.write(shown)
            sys.exit(1 if differ else 0)
        for page, text in pages.items():
            (ROOT / page).write_text(text, encoding="utf-8")
        for dest, src in images.items():
            shutil.copyfile(src, dest)


if __name__ == "__main__":
    main()
