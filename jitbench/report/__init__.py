"""``jitbench report``: tables, plots and an index page from asv results (design notes:
docs/design.md); a second page compares JAX releases measured at one commit."""

from __future__ import annotations

import sys
from collections.abc import Callable
from itertools import groupby
from operator import itemgetter
from pathlib import Path

import pandas as pd

from jitbench import document, results
from jitbench.document import Block, Bold, Bullets, Code, Details, Heading, Page, PageLink
from jitbench.errors import JitbenchError
from jitbench.report import (
    audit,
    choice,
    device,
    fit_tables,
    folds,
    plots,
    population,
    releases,
    sections,
)
from jitbench.report.run import Run, slug
from jitbench.results import project

# Every step in page order: its section's title (shown only if a step of it wrote something),
# its progress label, and the step.
SECTIONS: list[tuple[str, str, Callable[[Run], None]]] = [
    ("At a glance", "tables: headline per device and size", sections.headline),
    ("Each device: dispatch, call and loop", "tables: device rows", device.section),
    ("Plots", "plots: cached call vs size", plots.plot_cached),
    ("Plots", "plots: cold first call vs size", plots.plot_cold),
    ("Plots", "plots: trace/lower/compile stages", plots.plot_stages),
    ("Hazards", "tables: hazards", sections.hazards),
    ("Break-even", "tables: break-even calls", sections.break_even),
    ("Call right after a change", "tables: call after a change", sections.after_change),
    ("Sharded vs unsharded", "tables: sharded vs unsharded", sections.sharded),
    ("Scaling", "tables: scaling fits", fit_tables.scaling_fits),
    ("Scaling", "plots: dispatch vs pytree width", plots.plot_width),
    ("Scaling", "plots: dispatch vs device count", plots.plot_device_count),
    ("Scaling", "plots: trace and compile vs program size", plots.plot_ops),
    ("Nesting depth", "tables: cost per nested layer", fit_tables.depth_fits),
    ("Nesting depth", "plots: cached call vs nesting depth", plots.plot_depth),
    ("Nesting depth", "plots: trace and compile vs nesting depth", plots.plot_depth_compile),
    ("Instructions per call", "tables: instructions per call", sections.instructions),
    ("Many live instances", "tables: many live instances", population.section),
    ("Many live instances", "plots: dispatch vs live instances", population.plot),
    ("All numbers", "tables: every column per device and size", sections.full_tables),
]


def write_report(
    results_dir: str | Path | None,
    out: str | Path,
    *,
    machine: str | None = None,
    commit: str | None = None,
    env: str | None = None,
    skip_bad: bool = False,
    audit_json: str | Path | None = None,
) -> Path:
    """Write the report into ``out``; returns its index.html. Inputs are checked first.

    ``results_dir``: None for the asv.conf.json's here (else results/). Without ``commit``,
    the runs of the main line's newest commit in a project set up by ``jitbench init``, the
    complete run of each machine in jitbench's own (:func:`choice.choose`).
    ``audit_json``: the output of ``jitbench audit --format json``, whose JAX
    explanations the hazard section shows (asv results hold numbers only).
    """
    results_dir = project.results_dir(results_dir)
    frame = results.load(results_dir, machine=machine, commit=commit, env=env, skip_bad=skip_bad)
    suite = frozenset(results.benchmark_names(results_dir)) | frozenset(frame["benchmark"])
    targets = frame["target"].dropna() if "target" in frame else ()
    commands = project.commands(suite, targets)
    main = None if commands.own else project.main_line()
    picked = None if commit else choice.choose(frame, main)
    chosen = choice.apply(frame, picked) if picked else folds.fold_counts(frame)
    chosen = folds.fold_targets(chosen)
    audited = audit.load(audit_json) if audit_json is not None else None
    out = _check_out_dir(Path(out), Path(results_dir))
    for column in results.PARAM_ORDER:
        if column not in chosen:
            # The tables below index these; results without them just show nothing there.
            chosen[column] = pd.Series(pd.NA, index=chosen.index, dtype="object")
    # The complete run first (the most rows: the page opens on its headline), then by
    # machine and commit; envs of one machine and commit in JAX release order (unknown
    # releases last).
    sizes = chosen.groupby(["machine", "commit"]).size()
    groups = sorted(
        (rows for _, rows in chosen.groupby(["machine", "commit", "env"], sort=True)),
        key=lambda rows: (
            -sizes[tuple(rows[["machine", "commit"]].iloc[0])],
            *rows[["machine", "commit"]].iloc[0], _release(rows["jax"].iloc[0]),
        ),
    )  # fmt: skip
    compared = releases.groups(chosen)
    total = 2 + len(SECTIONS) * len(groups) + bool(compared)
    _progress(1, total, f"results: {len(frame)} rows from {results_dir}")
    done = 1
    runs = []
    for rows in groups:
        several = len(groups) > 1
        prefix = slug(f"{rows['machine'].iloc[0]}-{rows['env'].iloc[0]}") if several else ""
        run = Run(
            rows.reset_index(drop=True), out, prefix, 3 if several else 2, audited, suite, commands
        )
        for title, steps in groupby(SECTIONS, key=itemgetter(0)):
            start = len(run.blocks)
            for _, label, step in steps:
                done += 1
                _progress(done, total, f"{run.label + ': ' if several else ''}{label}")
                step(run)
            if len(run.blocks) > start:
                run.blocks.insert(start, Heading(title, run.level))
        runs.append(run)
    if compared:
        done += 1
        _progress(done, total, f"{releases.STEM}.md and {releases.STEM}.html: JAX releases")
        _write(releases.page(compared, out), out, releases.STEM)
    _progress(total, total, "index.md and index.html")
    blocks = _header(str(results_dir), runs, bool(compared), picked)
    labels = [run.label for run in runs]
    for run in runs:
        if len(runs) > 1:
            blocks.append(Heading(run.env_label if labels.count(run.label) > 1 else run.label))
        blocks += run.blocks
        if run.notes:
            blocks += [Heading("Notes and omissions", run.level), Bullets(tuple(run.notes))]
    return _write(Page("jitbench report", blocks), out, "index")


def _release(jax: object) -> tuple[int, object]:
    return (1, None) if pd.isna(jax) else (0, results.release_key(str(jax)))


def _write(page: Page, out: Path, stem: str) -> Path:
    (out / f"{stem}.md").write_text(document.markdown(page), encoding="utf-8")
    path = out / f"{stem}.html"
    path.write_text(document.html(page, out), encoding="utf-8")
    return path


def _header(
    results_dir: str,
    runs: list[Run],
    compared: bool,
    picked: choice.Choice | None,
) -> list[Block]:
    items = []
    for run in runs:
        first = run.frame.iloc[0]
        machine, commit, env = first["machine"], first["commit"], first["env"]
        jax = first["jax"] if pd.notna(first["jax"]) else "not recorded"
        date = first["date"].strftime("%Y-%m-%d %H:%M UTC") if pd.notna(first["date"]) else "?"
        items.append(
            (
                *("machine ", Bold(machine), ", commit ", Code(commit[:8]), f" ({date}), env "),
                *(Code(env), ", python ", Code(str(first["python"])), f", jax {jax}"),
            )
        )
    # Folded: the page opens on the first table (a 1280x800 window shows it).
    used: list[Block] = [
        document.Paragraph(("Results: ", Code(results_dir), ".")),
        Bullets(tuple(items)),
    ]
    summary = f"Runs in this report ({len(runs)})"
    if picked is not None and len(picked.lines()) > len(picked.runs):
        if picked.main and " unknown " not in picked.main:
            how = (
                "Runs chosen: of each machine, the newest commit of the project's main line "
                "with results (the first branch asv.conf.json names; git's first-parent "
                "history, as asv reads it), its most complete run"
            )
        else:
            how = (
                "Runs chosen: the complete run of each machine (the most benchmark-strategy "
                "pairs, the newest of equals; runs of its grid at its commit under other JAX "
                "versions beside it)"
            )
        chosen = document.Paragraph(
            f"{how}, instructions per call from the newest counted run of the same machine "
            "and JAX release (same commit first); every other run left out, with the reason. "
            "Pass --commit to choose."
        )
        summary = f"Runs used ({len(picked.runs)}) and left out ({len(picked.left_out)})"
        used += [chosen, Bullets(tuple(picked.lines()))]
    blocks: list[Block] = [Details(summary, tuple(used))]
    if compared:
        blocks.append(
            document.Paragraph(
                (
                    "Several JAX releases were measured at one commit: ",
                    PageLink("JAX releases compared", releases.STEM),
                    " (hazards and timings per release).",
                )
            )
        )
    if any(run.notes for run in runs):
        blocks.append(
            document.Paragraph("Some results are absent or failed: see Notes and omissions.")
        )
    return blocks


def _check_out_dir(out: Path, results_dir: Path) -> Path:
    resolved, source = out.resolve(), results_dir.resolve()
    if resolved == source or source in resolved.parents:
        raise JitbenchError(
            f"--out {str(out)!r} is inside the results dir {str(results_dir)!r}; "
            "choose a folder outside it"
        )
    if out.exists() and not out.is_dir():
        raise JitbenchError(f"--out {str(out)!r} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _progress(step: int, total: int, label: str) -> None:
    """``[3/42] label`` on stderr, where it is a terminal (a log or CI gets none)."""
    if sys.stderr.isatty():
        print(f"[{step}/{total}] {label}", file=sys.stderr, flush=True)


def headline(index: Path) -> list[str]:
    """The written page's first table (the complete run's headline, Markdown) and a line
    naming it: what ``jitbench report`` prints, table first."""
    lines = (index.parent / "index.md").read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return []
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    titles = [line.lstrip("#").strip() for line in lines[:start] if line.startswith("#")]
    return [*lines[start:end], f"^ {' / '.join(titles[1:])}: the first table of the report"]
