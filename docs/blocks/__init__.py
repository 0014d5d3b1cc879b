"""The generated blocks of the README and docs/ pages, made by ``docs/make_readme.py``
(``nox -s readme``), which writes them.

Never edit a block by hand: each sits between ``<!-- BEGIN generated: NAME -->``
and ``<!-- END generated: NAME -->`` in one of :data:`PAGES`, and every figure
in it comes from a file a clone has: the committed asv results (through
``jitbench report``'s own tables and ``jitbench.results``, asv's reader), the
per-release audits in ``docs/history/`` (``docs/release_audits.py``), the
validation summaries in ``docs/validation/`` and ``docs/counts/`` (``nox -s validate``), the
async-dispatch probes in ``docs/async_dispatch/`` (``docs/async_dispatch.py``), the recorded
``jitbench advise`` runs in ``docs/advise/`` (``docs/advise_examples.py``), the CI workflow and
job summaries of a real library's run in ``docs/ci/``;
the code listings and the audit come from the installed jitbench and JAX.
Nothing in a page depends on where the clone lives. The checkout is the one this jitbench
was imported from (:data:`blocks.runs.ROOT`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from blocks.accelerator_blocks import (
    accelerator_block,
    accelerator_reference_block,
    accelerator_sweep_block,
)
from blocks.ci_blocks import ci_summary_block, ci_workflow_block
from blocks.code_blocks import (
    Cli,
    advise_cnn_tpu_block,
    advise_flax_block,
    advise_seed_block,
    assert_message_block,
    audit_block,
    ecosystem_block,
    explain_block,
    hazards_block,
    own_class_block,
    strategies_block,
    strategies_table_block,
)
from blocks.count_blocks import (
    async_dispatch_block,
    caller_depth_block,
    cnn_counts_block,
    counted_depth_block,
    counts_block,
    stack_block,
    validation_block,
)
from blocks.runs import DOCS, ROOT, Runs, splice
from blocks.suite_blocks import (
    bench_time_block,
    depth_block,
    findings_block,
    history_block,
    instances_block,
    run_block,
    timing_block,
)
from jitbench.suite import catalog

# Retakes the dashboard's screenshot of the committed results (docs/make_readme.py's).
Shoot = Callable[[Runs], None]
DASHBOARD_PNG = DOCS / "dashboard.png"
# What the screenshot shows: the benchmark's parameters, then one machine and one Python:
# few series, whose order (asv's JavaScript adds each as it loads) then cannot change the
# screenshot from one run to the next.
DASHBOARD_PARAMS = {"strategy": "'helper_function'", "size": "10", "device": "'cpu'"}
DASHBOARD_ENV = {"machine": "vm-epyc", "python": "3.13"}


def dashboard_block(runs: Runs, shoot: Shoot | None) -> str:
    """The dashboard of the committed results; ``shoot`` retakes its screenshot (into
    :data:`DASHBOARD_PNG`)."""
    text = (
        f"![the dashboard of the committed results: {catalog.CACHED} for helper_function, "
        f"size 10, cpu, on {DASHBOARD_ENV['machine']} under Python {DASHBOARD_ENV['python']}: "
        f"a line per environment across the commits]({DASHBOARD_PNG.name})"
    )
    if shoot is not None:
        shoot(runs)
    return text


# Each page and the generated blocks it holds, in the order they are made.

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
    "docs/commits.md": ("ci-workflow", "ci-summary-overhead", "ci-summary-recompile"),
    "docs/contributing.md": (),
}


def generate(
    tmp: Path, cli: Cli, shoot: Shoot | None = None
) -> tuple[dict[str, str], dict[Path, Path]]:
    """Every page with its blocks regenerated, keyed by path, and the plots to copy.

    Reports are written under ``tmp``, and the plots ({docs/ path: its source
    under ``tmp``}) stay there; ``cli`` runs jitbench's command line for the blocks that
    quote it; ``shoot``, where given, retakes the dashboard's screenshot
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
        "explain": lambda: explain_block(cli),
        "own-class": lambda: own_class_block(cli),
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
        "ci-workflow": ci_workflow_block,
        "ci-summary-overhead": lambda: ci_summary_block("overhead"),
        "ci-summary-recompile": lambda: ci_summary_block("recompile"),
    }
    pages = {}
    for page, names in PAGES.items():
        text = (ROOT / page).read_text(encoding="utf-8")
        for name in names:
            text = splice(text, name, makers[name]())
            print(f"{page}: {name} block regenerated", file=sys.stderr)
        pages[page] = text
    return pages, runs.images
