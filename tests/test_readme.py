"""The README's examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

from test_audit import observed

import jitbench
from jitbench.cache_audit import audit
from jitbench.devices import resolve

README = Path(__file__).resolve().parents[1] / "README.md"


def _block(marker: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    return next(block for block in blocks if marker in block)


def test_custom_strategy_example_registers_and_is_correct(monkeypatch):
    monkeypatch.setattr(jitbench.strategies, "STRATEGIES", dict(jitbench.STRATEGIES))
    exec(compile(_block("my_strategies.py"), "my_strategies.py", "exec"), {})
    strategy = jitbench.strategies.STRATEGIES["closure_per_flags"]
    result = audit(strategy, resolve("cpu"))
    assert [s.cell for s in result.steps] == observed().correct.split()
    assert result.stale_results == 0 and result.leaked_instances == 0
    assert "return _compiled(self.s0)(self.a0, y)" in strategy.source()


def test_stale_trap_example_is_stale():
    namespace: dict = {}
    code = "import jax\n" + _block("class Scaler")
    first, second = (m.start() for m in re.finditer(r"^calc\(3\.0\)", code, flags=re.M))
    code = f"{code[:first]}first = {code[first:second]}second = {code[second:]}"
    exec(compile(code, "README", "exec"), namespace)
    assert namespace["first"] == 6.0 and namespace["second"] == 6.0
