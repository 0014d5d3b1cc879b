"""The blocks that quote jitbench itself: the ecosystem, strategies, hazards, the audit's
and advise's printed output."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import io
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path

import jax
import jax.numpy as jnp
import pandas as pd

import jitbench
from blocks.runs import (
    DOCS,
    ROOT,
)
from blocks.suite_blocks import outcome_mark
from jitbench.advise import Advice
from jitbench.auditing.audit import audit
from jitbench.auditing.scenario import SCENARIO
from jitbench.cli import render
from jitbench.devices import resolve
from jitbench.figure import seconds
from jitbench.hazards import FOUND
from jitbench.testing import assert_jit_safe
from jitbench.ways.registry import STRATEGIES
from jitbench.ways.subject import Generated

# What ``python -m jitbench ARGS`` prints in a fresh process run from the checkout, its
# environment updated by the mapping (docs/make_readme.py starts it, as a user types it).
Cli = Callable[[list[str], Mapping[str, str]], str]

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
                "theirs": seconds(row["theirs_s"]),
                "jitbench": seconds(row["jitbench_s"]),
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
            "On the same call, `jax.block_until_ready(x)`, which jitbench's cached call waits "
            f"with, took {seconds(r['wait_difference_s'])} more than `x.block_until_ready()`, "
            "which JAX's benchmark calls.",
            "",
        ]
    return "\n".join(parts[:-1])


def _changed_by(strategy) -> str:
    """How the audit changes the strategy's objects, as it changes a user's: the walk's
    change of each field (``jitbench.targets.edit``), flags and arrays apart where they
    differ, on the object that holds them."""

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

    rows = [[f"`{s.name}`", s.summary, _changed_by(s)] for s in STRATEGIES.values()]
    table = pd.DataFrame(rows, columns=["name", "what the user writes", "changed by"])
    return table.to_markdown(index=False, disable_numparse=True)


def hazards_block() -> str:
    """What ``assert_jit_safe`` fails on and ``advise`` reports, from ``jitbench.hazards``."""

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

    placement = resolve("cpu")
    header = ["strategy", *SCENARIO, "stale", "errors", "leaked"]
    rows = []
    for strategy in STRATEGIES.values():
        result = audit(strategy, placement)
        cells = [f"{s.traces}/{s.compiles}{outcome_mark(s.outcome)}" for s in result.steps]
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


def explain_block(cli: Cli) -> str:
    """``jitbench audit --explain`` for one strategy: why each recompile happened."""
    command = ["audit", "--strategy", "pytree_dataclass", "--explain"]
    out = cli(command, {})
    # Object ids change from run to run and say nothing here; paths are the checkout's.
    out = re.sub(r" id=\d+", "", out)
    out = out.replace(str(Path(jitbench.__file__).resolve().parents[1]) + "/", "")
    return "```\n$ jitbench " + " ".join(command) + "\n" + out.strip() + "\n```"


# The README's own-class example: a model from a library the project does not own.
OWN_CLASS = [
    "audit", "equinox_mlp:mlp", "--call", "equinox_mlp:forward", "--inputs", "equinox_mlp:batch",
    "--fields", "layers[0].",
]  # fmt: skip


def own_class_block(cli: Cli) -> str:
    """``jitbench audit`` of the equinox MLP in docs/examples, as a user runs it."""
    out = cli(OWN_CLASS, {"PYTHONPATH": str(DOCS / "examples")})
    shown = " ".join(f"'{a}'" if "[" in a else a for a in OWN_CLASS)
    return "```\n$ PYTHONPATH=docs/examples jitbench " + shown + "\n" + out.strip() + "\n```"


ADVICE = DOCS / "advise"


def advise_block(name: str) -> str:
    """``jitbench advise`` on one example, as it printed: the run recorded in
    ``docs/advise/NAME.json`` (``docs/advise_examples.py``), rendered by the command's own
    table (timings move from run to run; the recorded run is the page's)."""

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
