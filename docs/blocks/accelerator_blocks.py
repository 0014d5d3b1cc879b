"""The blocks on an accelerator: the chip beside the host's CPU, the hand-written
reference and its sweep."""

from __future__ import annotations

import json

import pandas as pd

from blocks.runs import (
    DOCS,
    Runs,
    with_params,
)
from jitbench import document, results
from jitbench.figure import seconds
from jitbench.report import (
    device,
)
from jitbench.report.run import Run

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
        self.run = Run(with_params(rows).reset_index(drop=True), runs.tmp / "accelerator")
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
        return seconds(acc.figure(strategy, "loop_s"))

    firsts = [acc.figure("helper_function", "first_call_s", on) for on in (None, "cpu")]
    cold, cold_cpu = (seconds(first) for first in firsts)
    nnx_mb, helper_mb = (
        at_big.loc[s, "output_bytes"] / 1e6 for s in ("flax_nnx_jit", "helper_function")
    )
    eager_big = seconds(at_big.loc["eager", "loop_s"])
    lines = [
        f"`jitbench device-run` on machine **{acc.machine}** ({acc.record['device']}, JAX "
        f"{acc.jax}), commit `{acc.commit[:8]}`; each cell {' · '.join(acc.devices)} (the same "
        f"host's CPU), size {size} (the report has every size measured; column by column: "
        "[docs/accelerator.md](docs/accelerator.md#what-is-measured)):",
        "",
        table,
        "",
        f"On the chip a synchronous call of a jitted strategy costs "
        f"{seconds(jitted['call_s'].min())}-{seconds(jitted['call_s'].max())} (the host's CPU: "
        f"{seconds(cpu['call_s'].min())}-{seconds(cpu['call_s'].max())}), and a compile "
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
        f"{seconds(at_big.loc['helper_function', 'loop_s'])} per call with "
        f"helper_function, {seconds(at_big.loc['flax_nnx_jit', 'loop_s'])} with flax_nnx_jit "
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
                    f"{seconds(a)} / {seconds(b)} ({r:.2f})"
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
            row[device.size_text(r.size)] = f"{seconds(r.dispatch_s)} / {seconds(r.loop_s)}"
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
