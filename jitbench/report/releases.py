"""The JAX-releases page: one machine and commit measured in environments with different JAX,
hazards and timings side by side."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from jitbench import hazards, results
from jitbench.document import Block, Bullets, Code, Heading, Page, Paragraph
from jitbench.figure import NOT_MEASURED
from jitbench.report.plots import DASHED, outside_legend, plot_lines
from jitbench.report.run import Run, order, slug
from jitbench.suite import catalog

STEM = "releases"
DEVICE = "cpu"
MEASURES = {
    "cached_call_s": ("cached call", catalog.CACHED),
    "dispatch_s": ("dispatch only", catalog.DISPATCH),
    "first_call_s": ("cold first call", catalog.COLD),
}
# The audit's hazardous totals, in the hazard table's words.
COUNTS = hazards.WORDS


def groups(chosen: pd.DataFrame) -> list[pd.DataFrame]:
    """Rows of each (machine, commit) whose environments hold two or more JAX releases."""
    found = []
    for _, rows in chosen.groupby(["machine", "commit"], sort=True):
        known = rows[rows["jax"].notna()]
        if known["jax"].nunique() >= 2:
            found.append(known.reset_index(drop=True))
    return found


def page(found: list[pd.DataFrame], out: Path) -> Page:
    """The page (its tables and plots written under ``out/releases/``)."""
    blocks: list[Block] = [
        Paragraph(
            "The same commit measured under several JAX releases (asv environments that "
            "differ in their jax requirement), oldest release first. Hazards are the audit's "
            "totals per strategy; the plots show the smallest and largest size on cpu."
        )
    ]
    for rows in found:
        run = Run(rows, out, STEM)
        _group(run)
        first = run.frame.iloc[0]
        blocks += [Heading(f"{first['machine']}, commit {first['commit'][:8]}"), *run.blocks]
        if run.notes:
            blocks += [Heading("Notes", 3), Bullets(tuple(run.notes))]
    return Page("jitbench report: JAX releases", blocks)


def _group(run: Run) -> None:
    envs = run.frame.drop_duplicates("env").sort_values("env")
    releases = sorted(set(envs["jax"]), key=results.release_key)
    chosen = {}
    for jax in releases:
        names = list(envs.loc[envs["jax"] == jax, "env"])
        chosen[jax] = names[0]
        if len(names) > 1:
            run.notes.append(f"jax {jax} has several envs ({', '.join(names)}): shown {names[0]}")
    run.frame = run.frame[run.frame["env"].isin(chosen.values())]
    run.blocks.append(
        Bullets(tuple((f"jax {jax}: env ", Code(env)) for jax, env in chosen.items()))
    )
    wide = _wide(run)
    name = f"releases-{slug(run.frame['machine'].iloc[0])}-{run.frame['commit'].iloc[0][:8]}"
    link = run.csv(name, wide)
    _hazards(run, wide, releases)
    for column, (label, benchmark) in MEASURES.items():
        if column in wide:
            _plot(run, wide, column, label, releases, name)
        else:
            run.omit(f"plot of {label} against the JAX release", benchmark)
    run.heading("Every number")
    run.text(
        "One row per device, size, strategy and JAX release: the measures above and the "
        "audit's hazard counts."
    )
    run.blocks.append(link)


def _wide(run: Run) -> pd.DataFrame:
    """The cross-release table: measures per (device, size, strategy, jax), hazard counts."""
    keys = ["device", "size", "strategy", "jax"]
    measured = run.columns({column: bench for column, (_, bench) in MEASURES.items()}, keys)
    benchmarks = {name: catalog.HAZARDS[name] for name in COUNTS}
    counts = run.columns(benchmarks, ["device", "strategy", "jax"], omitted="hazard count")
    if measured:
        table = pd.concat(measured, axis=1).dropna(how="all").reset_index()
    else:
        table = pd.DataFrame(columns=keys)
    if counts:
        hazard = pd.concat(counts, axis=1).dropna(how="all").reset_index()
        table = table.merge(hazard, on=["device", "strategy", "jax"], how="outer")
    return order(table, run.frame)


def _hazards(run: Run, wide: pd.DataFrame, releases: list[str]) -> None:
    present = [name for name in COUNTS if name in wide]
    if not present:
        return
    counts = wide.drop_duplicates(["device", "strategy", "jax"])
    for device, rows in counts.groupby("device", sort=False):
        cells = rows.assign(cell=[_cell(row, present) for _, row in rows.iterrows()])
        table = cells.pivot(index="strategy", columns="jax", values="cell")
        table = table.reindex(columns=[r for r in releases if r in table.columns]).fillna(
            NOT_MEASURED
        )
        measured = ({c for c in row if c != NOT_MEASURED} for row in table.to_numpy())
        table["changed"] = ["yes" if len(cells) > 1 else "" for cells in measured]
        table.columns = [f"jax {c}" if c != "changed" else c for c in table.columns]
        table = order(table.reset_index(), run.frame)
        run.heading(f"Hazards per JAX release: {device}")
        run.text(
            "Per strategy and release: stale results, errors, leaked instances, recompiles "
            "and compiles of a repeated call in the audit (none = no hazard; n/a = not "
            "measured there); changed = not the same in every release that measured it."
        )
        run.blocks += run.table(f"hazards-{slug(device)}", table, csv=False)


def _cell(row: pd.Series, present: list[str]) -> str:
    if all(pd.isna(row[name]) for name in present):
        return NOT_MEASURED
    words = [f"{COUNTS[name]} {int(row[name])}" for name in hazards.named(row)]
    return ", ".join(words) or "none"


def _plot(
    run: Run, wide: pd.DataFrame, column: str, label: str, releases: list[str], name: str
) -> None:
    data = wide[(wide["device"] == DEVICE) & (wide[column] > 0)]
    if data.empty:
        run.notes.append(f"plot of {label} against the JAX release omitted: no {DEVICE} results")
        return
    sizes = sorted({int(data["size"].min()), int(data["size"].max())})
    counts = wide[[c for c in COUNTS if c in wide]].fillna(0)
    hazardous = set(wide.loc[(counts > 0).any(axis=1), "strategy"])
    fig = Figure(figsize=(5.0 * len(sizes) + 1.5, 4.0))
    axes = fig.subplots(1, len(sizes), squeeze=False)[0]
    positions = {jax: i for i, jax in enumerate(releases)}
    for ax, size in zip(axes, sizes, strict=True):
        rows = data[data["size"] == size]
        plot_lines(ax, rows.assign(x=rows["jax"].map(positions)), "x", column, hazardous)
        ax.set_xticks(range(len(releases)), releases)
        ax.set(yscale="log", xlabel="JAX release", title=f"size {size}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("seconds")
    outside_legend(axes[-1])
    title = f"{label.capitalize()} vs JAX release on {DEVICE}"
    fig.suptitle(title)
    plot = f"{name}-{slug(column.removesuffix('_s'))}"
    run.figure(title, plot, fig, title, f"Log y axis; releases in version order. {DASHED}")
