"""``import jitbench`` stays light (asv imports it in every benchmark process), and the
package's ``audit`` is the function, not the module."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from test_audit import observed

HEAVY = ["jax", "jaxlib", "pandas", "matplotlib", "equinox", "flax"]


def _run(code: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr.strip().splitlines()[-1]
    return out.stdout.strip().splitlines()


def test_import_loads_no_heavy_module():
    code = (
        "import sys, jitbench\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
        "print(sorted(jitbench.STRATEGIES)[:2])\n"
    )
    assert _run(code) == ["[]", "['aot_compiled', 'bound_method_jit']"]


def test_strategies_command_imports_no_optional_package():
    code = (
        "import sys\n"
        "from jitbench.cli import main\n"
        "main(['strategies'])\n"
        f"print([m for m in {HEAVY!r} if m in sys.modules])\n"
    )
    lines = _run(code)
    assert lines[-1] == "[]"
    assert len(lines) == 2 + 18 + 1  # header, rule, a row per strategy, the check


def test_audit_twice_through_the_package():
    # jitbench.audit is a function; a module of the same name must not shadow it once
    # the audit's module has been imported by the first call.
    code = (
        "import jitbench\n"
        "placement = jitbench.resolve('cpu')\n"
        "for _ in range(2):\n"
        "    r = jitbench.audit(jitbench.get_strategy('helper_function'), placement, size=8)\n"
        "    cells = ' '.join(s.cell for s in r.steps)\n"
        "    print(callable(jitbench.audit), r.subject, r.size, cells)\n"
    )
    cells = observed().correct  # "1/1 0/0 1/1 0/0 0/0 1/1 0/0 0/0" from JAX 0.10 on
    assert _run(code) == [f"True helper_function 8 {cells}"] * 2


def test_the_public_names_are_listed_once_each_and_agree():
    # __all__ is the lazy table's names and the package's functions, built at run time; the
    # TYPE_CHECKING imports, all that type checkers see of the lazy names, must match the table.
    import jitbench

    functions = {"advise_object", "audit", "audit_object", "time_object"}
    assert len(set(jitbench.__all__)) == len(jitbench.__all__)
    assert set(jitbench.__all__) == set(jitbench._HOME) | functions
    assert all(callable(getattr(jitbench, name)) for name in functions)
    assert all(hasattr(jitbench, name) for name in jitbench.__all__)
    tree = ast.parse(Path(jitbench.__file__).read_text(encoding="utf-8"))
    (block,) = [
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    ]
    imported = {alias.name: node.module for node in block.body for alias in node.names}
    assert {name: imported.get(name) for name in jitbench._HOME} == jitbench._HOME
