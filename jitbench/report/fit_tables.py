"""The report's fitted costs per strategy, per count and per time (fitting: :mod:`.fits`)."""

from __future__ import annotations

import pandas as pd

from jitbench.measure.counting.instructions import fit_line
from jitbench.report import fits
from jitbench.report.run import Run, order
from jitbench.report.summary import flag_hazards
from jitbench.suite import catalog

# The counted families fitted per strategy: (x parameter, unit of the slope, rows kept).
COUNTED_FITS = {
    "frame": (catalog.INSTRUCTIONS_VS_CALLER_DEPTH, "frames", {"tracebacks": "on"}),
    "frame_no_tracebacks": (catalog.INSTRUCTIONS_VS_CALLER_DEPTH, "frames", {"tracebacks": "off"}),
    "layer": (catalog.INSTRUCTIONS_VS_DEPTH, "depth", {}),
}


def counted_slopes(run: Run, unit: str) -> pd.DataFrame | None:
    """Per strategy, the least-squares instructions per ``unit`` (a key of
    :data:`COUNTED_FITS`) of a cached call and of a dispatch; None where nothing was counted."""

    benchmarks, x, keep = COUNTED_FITS[unit]
    rows = []
    for kind, benchmark in benchmarks.items():
        found = run.rows(benchmark)
        found = found[found["status"] == "ok"]
        if found.empty:
            continue
        for column, value in keep.items():
            found = found[found[column] == value]
        for strategy, data in found.groupby("strategy", sort=False):
            if data[x].nunique() > 1:
                slope, _ = fit_line(data[x].astype(float).tolist(), data["value"].tolist())
                rows.append({"strategy": strategy, f"{kind}_per_{unit}_instructions": slope})
    if not rows:
        return None
    table = pd.DataFrame(rows).groupby("strategy", sort=False).first().reset_index()
    return order(table, run.frame)


def counted_fits(run: Run) -> None:
    """Instructions each frame of the caller and each nested layer add to a call."""
    texts = {
        "frame": "each frame of the caller's stack (JAX walks the stack at each dispatch and "
        "each wait for the result; counts above are made from 2 frames)",
        "frame_no_tracebacks": "each frame of the caller's stack, JAX's tracebacks off",
        "layer": "each nested layer of the class (cpu, size 10)",
    }
    for unit, text in texts.items():
        table = counted_slopes(run, unit)
        if table is not None:
            run.text(f"Instructions per call that {text}: least-squares slopes.")
            name = f"instructions-per-{unit.replace('_', '-')}"
            run.blocks += run.table(name, flag_hazards(table, run))


def scaling_fits(run: Run) -> None:
    if run.has(catalog.WIDTH):
        run.heading("Dispatch cost per pytree leaf")
        run.text("Linear fit of the dispatch against n_arrays (seconds per leaf), log-log slope.")
        fit = fits.fits(run.rows(catalog.WIDTH), "n_arrays", "dispatch", "leaf")
        run.blocks += run.table("dispatch-scaling", flag_hazards(fit, run))
    else:
        run.omit("dispatch scaling fit", catalog.WIDTH)
    if run.has(catalog.DEVICE_COUNT):
        run.heading("Dispatch cost per added device")
        run.text(
            "Linear fit of the sharded dispatch against n_devices (seconds per added device, "
            "each count in its own process), log-log slope."
        )
        fit = fits.fits(run.rows(catalog.DEVICE_COUNT), "n_devices", "dispatch", "device")
        run.blocks += run.table("dispatch-device-scaling", flag_hazards(fit, run))
    else:
        run.omit("dispatch device-count fit", catalog.DEVICE_COUNT)
    present = [b for b in (catalog.OPS_TRACE, catalog.OPS_COMPILE) if run.has(b)]
    if not present:
        run.omit("trace/compile scaling fit", catalog.OPS_TRACE, catalog.OPS_COMPILE)
        return
    names = {catalog.OPS_TRACE: "trace", catalog.OPS_COMPILE: "compile"}
    parts = [fits.fits(run.rows(bench), "n_ops", names[bench], "op") for bench in present]
    table = parts[0] if len(parts) == 1 else parts[0].merge(parts[1], on="strategy", how="outer")
    run.heading("Trace and compile cost per op")
    run.text("Linear fits against the number of ops in the program, log-log slopes.")
    run.blocks += run.table("compile-scaling", order(flag_hazards(table, run), run.frame))


# The depth family's figures: what a layer adds to each, flax's "time per layer".
DEPTH_FIGURES = {
    "dispatch": catalog.DEPTH_DISPATCH,
    "call": catalog.DEPTH_CALL,
    "trace": catalog.DEPTH_TRACE,
    "compile": catalog.DEPTH_COMPILE,
}


def depth_fits(run: Run) -> None:
    present = {name: bench for name, bench in DEPTH_FIGURES.items() if run.has(bench)}
    if not present:
        run.omit("cost per layer", *DEPTH_FIGURES.values())
        return
    table = None
    for name, bench in present.items():
        fit = fits.fits(run.rows(bench), "depth", name, "layer")
        kept = [f"{name}_per_layer", f"{name}_intercept"]
        fit = fit[["strategy", *(f"{c}{end}_s" for c in kept for end in ("", "_lo", "_hi"))]]
        table = fit if table is None else table.merge(fit, on="strategy", how="outer")
    run.heading("Cost per nested layer")
    run.text(
        "Linear fits against the number of nested layers (each a sub-object with a weight, "
        "a bias and a flag; cpu, size 10): seconds each layer adds to a cached call, its "
        "dispatch, the trace and the compile, and the fit's value at depth 0, each with its "
        f"95% interval; {fits.BELOW_NOISE} [interval]: the interval includes zero or the fit "
        "is negative, so the figure does not tell a cost from the spread of the medians."
    )
    run.blocks += run.table("depth-scaling", order(flag_hazards(table, run), run.frame))
