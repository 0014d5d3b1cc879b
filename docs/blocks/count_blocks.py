"""The blocks on validation, instruction counts, caller depth and async dispatch."""

from __future__ import annotations

import pandas as pd

import jitbench
from blocks.runs import (
    COUNTS,
    PROBES,
    ROOT,
    VALIDATIONS,
    Runs,
    newest,
    newest_run,
    with_params,
)
from jitbench import document
from jitbench.document import Bold, Code, Paragraph
from jitbench.figure import seconds
from jitbench.report import (
    fit_tables,
)
from jitbench.report.run import Run
from jitbench.report.summary import FLOOR
from jitbench.suite import catalog, grid
from jitbench.validate.writer import header, verdicts


def validation_block() -> str:
    """The summary of the committed ``nox -s validate`` run (docs/validation/MACHINE.json)."""

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
    return Run(with_params(chosen).reset_index(drop=True), runs.tmp / name)


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
    """Each invocation's min-max of the per-process medians, as a sentence part."""
    parts = []
    for run in invocations:
        found = run["medians_s"][mode]
        text = f"{seconds(min(found))}-{seconds(max(found))}"
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
        f"{count.get(len(found), f'{len(found)} invocations')}: {_ranges(found, 'default')} "
        f"with JAX's default, {_ranges(found, 'sync')} with "
        f"`jax_cpu_enable_async_dispatch` off, and {_ranges(found, 'pinned')} pinned to one "
        f"core (`docs/async_dispatch/{record['machine']}.json`)."
    )
