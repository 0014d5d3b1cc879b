"""Regenerate the README's generated blocks (``nox -s readme``); never edit them by hand.

Each block sits between ``<!-- BEGIN generated: NAME -->`` and
``<!-- END generated: NAME -->``. The figures come from the committed asv
results (read through ``jitbench.results``, i.e. asv's own reader) and the
report written from them, the audit and the code listings from the installed
jitbench and JAX.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def splice(text: str, name: str, body: str) -> str:
    """``text`` with the generated block ``name`` replaced by ``body``."""
    begin, end = f"<!-- BEGIN generated: {name} -->", f"<!-- END generated: {name} -->"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), flags=re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"README.md has no generated block {name!r}")
    return pattern.sub(lambda _: f"{begin}\n{body.strip()}\n{end}", text)


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
    """``jitbench audit`` on this machine's newest JAX, as a Markdown table."""
    import jax

    from jitbench import cache_audit
    from jitbench.changes import SCENARIO
    from jitbench.devices import resolve
    from jitbench.strategies import STRATEGIES

    placement = resolve("cpu")
    header = ["strategy", *SCENARIO, "stale", "errors", "leaked"]
    rows = []
    for strategy in STRATEGIES.values():
        result = cache_audit.audit(strategy, placement)
        cells = [s.cell.replace("!", " !") for s in result.steps]
        totals = [result.stale_results, result.errors, result.leaked_instances]
        rows.append([f"`{strategy.name}`", *cells, *map(str, totals)])
    return "\n".join(
        [
            f"`jitbench audit` (JAX {jax.__version__}, device `cpu`, size {result.size}):",
            "",
            _table(header, rows),
        ]
    )


def explain_block() -> str:
    """``jitbench audit --explain`` for one strategy: why each recompile happened."""
    out = subprocess.run(
        [sys.executable, "-m", "jitbench", "audit", "--strategy", "pytree_dataclass", "--explain"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    # Object ids change from run to run; they say nothing here.
    out = re.sub(r" id=\d+", "", out)
    return "```\n$ jitbench audit --strategy pytree_dataclass --explain\n" + out.strip() + "\n```"


def _table(header: list[str], rows: list[list[str]]) -> str:
    import pandas as pd

    return pd.DataFrame(rows, columns=header).to_markdown(index=False, disable_numparse=True)


def main() -> None:
    text = README.read_text()
    for name, make in BLOCKS.items():
        text = splice(text, name, make())
        print(f"README: {name} block regenerated", file=sys.stderr)
    README.write_text(text)


BLOCKS = {
    "strategies": strategies_block,
    "audit": audit_block,
    "explain": explain_block,
}

if __name__ == "__main__":
    main()
