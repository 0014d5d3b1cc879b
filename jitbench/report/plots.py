"""The report's plots: measures against size, stages, pytree width, device count, program size."""

from __future__ import annotations

from collections.abc import Collection
from functools import partial

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from jitbench.report.run import HAZARD_MARK, Run, slug
from jitbench.report.summary import hazard_of
from jitbench.suite import catalog

# The colour cycle has ten colours: the marker tells the next ten apart.
MARKERS = "os^D"
DASHED = f"Dashed lines and {HAZARD_MARK} mark hazardous strategies."


def plot_lines(ax: Axes, data: pd.DataFrame, x: str, y: str, hazardous: Collection[str]) -> None:
    """A line per strategy of ``data`` in ``x`` order, dashed and marked if in ``hazardous``."""
    for i, (strategy, line) in enumerate(data.groupby("strategy", sort=False)):
        line = line.sort_values(x)
        bad = strategy in hazardous
        ax.plot(
            line[x].to_numpy(dtype=float),
            line[y].to_numpy(dtype=float),
            label=f"{strategy} {HAZARD_MARK}" if bad else strategy,
            marker=MARKERS[i // 10 % len(MARKERS)],
            linestyle="--" if bad else "-",
        )


def outside_legend(ax: Axes) -> None:
    # Outside the panel: with a dozen strategies a legend inside hides lines.
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.02, 1))


def line_plot(
    run: Run,
    benchmarks: dict[str, str],
    x: str,
    title: str,
    name: str,
    ylabel: str,
    doubling: bool = False,
) -> None:
    """One log-log figure per device: a panel per benchmark, a line per strategy; with
    ``doubling`` (x is 1, 2, 4, ...) the x axis is base 2 with a tick at every value."""
    present = {label: b for label, b in benchmarks.items() if run.has(b)}
    if not present:
        if x != "size" or run.sized:  # a target has no size: no point on a plot against it
            run.omit(f"plot {title}", *benchmarks.values())
        return
    frame = run.frame[run.frame["benchmark"].isin(present.values())]
    # Targets have no size (nor any other x of the suite's): no point on these axes.
    frame = frame[(frame["status"] == "ok") & frame[x].notna()]
    hazards = hazard_of(run)
    devices = pd.unique(frame["device"].dropna()) if frame["device"].notna().any() else [None]
    for device in devices:
        rows = frame if device is None else frame[frame["device"] == device]
        rows = rows[rows["value"] > 0]
        hazardous = {s for s in rows["strategy"] if hazards.get((device, s))}
        # A panel per benchmark measured here (new-process ones skip sharded devices).
        panels = {label: b for label, b in present.items() if (rows["benchmark"] == b).any()}
        if not panels:
            continue
        fig = Figure(figsize=(5.5 * len(panels) + 1.5, 4.2))
        axes = fig.subplots(1, len(panels), squeeze=False, sharey=True)[0]
        for ax, (label, bench) in zip(axes, panels.items(), strict=True):
            data = rows[rows["benchmark"] == bench]
            plot_lines(ax, data, x, "value", hazardous)
            ax.set(yscale="log", xlabel=x, title=label if len(present) > 1 else "")
            ax.set_xscale("log", base=2 if doubling else 10)
            if doubling:
                xs = sorted(set(data[x].astype(float)))
                ax.set_xticks(xs, [f"{v:g}" for v in xs])
                ax.set_xticks([], minor=True)
            ax.grid(True, which="both", alpha=0.3)
        axes[0].set_ylabel(ylabel)
        outside_legend(axes[-1])
        where = f" on {device}" if device is not None else ""
        fig.suptitle(f"{title}{where}")
        shown = f"{name}-{slug(device)}" if device is not None else name
        run.figure(f"{title}{where}", shown, fig, title, f"Log-log. {DASHED}")


plot_cached = partial(
    line_plot,
    benchmarks={"cached call": catalog.CACHED, "dispatch only": catalog.DISPATCH},
    x="size",
    title="Cached call vs size",
    name="cached-call-vs-size",
    ylabel="seconds per call",
)
plot_cold = partial(
    line_plot,
    benchmarks={
        "first call, in process": catalog.COLD,
        "first call, fresh process": catalog.COLD_FRESH,
        "first call, warm disk cache": catalog.DISK_WARM,
    },
    x="size",
    title="Cold first call vs size",
    name="first-call-vs-size",
    ylabel="seconds",
)
plot_width = partial(
    line_plot,
    benchmarks={"dispatch": catalog.WIDTH},
    x="n_arrays",
    title="Dispatch vs pytree width",
    name="dispatch-vs-width",
    ylabel="seconds per call",
)
plot_device_count = partial(
    line_plot,
    benchmarks={"dispatch": catalog.DEVICE_COUNT},
    x="n_devices",
    title="Dispatch vs device count",
    name="dispatch-vs-device-count",
    ylabel="seconds per call",
    doubling=True,
)
plot_depth = partial(
    line_plot,
    benchmarks={"cached call": catalog.DEPTH_CALL, "dispatch only": catalog.DEPTH_DISPATCH},
    x="depth",
    title="Cached call vs nesting depth",
    name="cached-call-vs-depth",
    ylabel="seconds per call",
    doubling=True,
)
plot_depth_compile = partial(
    line_plot,
    benchmarks={"trace": catalog.DEPTH_TRACE, "compile": catalog.DEPTH_COMPILE},
    x="depth",
    title="Trace and compile vs nesting depth",
    name="compile-vs-depth",
    ylabel="seconds",
    doubling=True,
)
plot_ops = partial(
    line_plot,
    benchmarks={"trace": catalog.OPS_TRACE, "compile": catalog.OPS_COMPILE},
    x="n_ops",
    title="Trace and compile vs program size",
    name="compile-vs-ops",
    ylabel="seconds",
)


def plot_stages(run: Run) -> None:
    stages = {"trace": catalog.TRACE, "lower": catalog.LOWER, "compile": catalog.COMPILE}
    present = {k: b for k, b in stages.items() if run.has(b)}
    if not present:
        run.omit("plot trace/lower/compile stages", *stages.values())
        return
    if not run.has(catalog.STAGE_CALL):
        run.omit("rest of the call in the stages plot", catalog.STAGE_CALL)
    wanted = [*present.values(), catalog.STAGE_CALL]
    frame = run.frame[run.frame["benchmark"].isin(wanted)]
    frame = frame[frame["status"] == "ok"]
    hazards = hazard_of(run)
    for device in pd.unique(frame["device"].dropna()):
        rows = frame[frame["device"] == device]
        size = int(rows["size"].max())
        wide = rows[rows["size"] == size].pivot(
            index="strategy", columns="benchmark", values="value"
        )
        wide = wide.reindex([s for s in pd.unique(rows["strategy"]) if s in wide.index])
        fig = Figure(figsize=(max(6.0, 0.7 * len(wide)), 4.2))
        ax = fig.subplots()
        bottom = np.zeros(len(wide))
        for stage, bench in present.items():
            heights = wide[bench].fillna(0).to_numpy() if bench in wide else np.zeros(len(wide))
            ax.bar(range(len(wide)), heights, bottom=bottom, label=stage)
            bottom += heights
        if catalog.STAGE_CALL in wide:
            rest = (wide[catalog.STAGE_CALL].to_numpy() - bottom).clip(min=0)
            ax.bar(range(len(wide)), np.nan_to_num(rest), bottom=bottom, label="rest of the call",
                   color="lightgrey")  # fmt: skip
        labels = [f"{s} {HAZARD_MARK}" if hazards.get((device, s)) else str(s) for s in wide.index]
        ax.set_xticks(range(len(wide)), labels, rotation=30, ha="right")
        title = f"Trace / lower / compile on {device}, size {size}"
        ax.set(ylabel="seconds", title=title)
        ax.legend()
        text = (
            "The stages of one cold first call at the largest measured size, stacked; "
            "the rest of that call (grey) is dispatch, argument handling and running the program."
        )
        run.figure(title, f"stages-{slug(device)}-size{size}", fig, title, text)
