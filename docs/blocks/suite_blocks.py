"""The blocks on the suite's own run: the headline tables, findings, depth, history,
the evidence of the per-release audits and the timing of the run."""

from __future__ import annotations

import json

import pandas as pd
from asv.results import Results

from blocks.runs import (
    AUDITS,
    DOCS,
    EDGE_STRATEGY,
    RESULTS,
    ROOT,
    RUN_SIZE,
    Runs,
    newest_run,
    section,
    with_params,
)
from jitbench import results
from jitbench.figure import seconds
from jitbench.report import (
    population,
)
from jitbench.report import releases as release_page
from jitbench.report.fits import text as fit_text
from jitbench.report.run import Run
from jitbench.suite import catalog, grid


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

    def pair(base: str, other: str, what: str) -> str:
        a, b = (seconds(value[catalog.DISPATCH, s]) for s in (base, other))
        return f"`{other}` dispatches in {b} against {a} for `{base}` ({what})"

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
    run = Run(with_params(chosen).reset_index(drop=True), runs.tmp / "instances")
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
        cells = [
            f"{s['traces']}/{s['compiles']}" + outcome_mark(s["outcome"]) for s in audit["steps"]
        ]
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


def outcome_mark(outcome: str) -> str:
    return {"correct": "", "stale": " !", "error": " E"}[outcome]


def timing_block(runs: Runs) -> str:

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
