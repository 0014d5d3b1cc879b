"""The package's shape: no module over 600 lines (a module is split by job, not by size),
and no import circle, counting the imports made inside functions and for type checking
too."""

from __future__ import annotations

import ast
from pathlib import Path

import jitbench

PACKAGE = Path(jitbench.__file__).parent
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The jitbench modules ``name`` imports anywhere: at load time, in a function, for types."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""  # jitbench imports absolutely
            # `from package import module` names the module; `from module import name`
            # the module.
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        else:
            continue
        found |= {t.strip(".") for t in targets if t.strip(".") in modules}
    found.discard(name)
    return found


def test_no_module_is_over_600_lines():
    long = {
        name: n for name, path in _modules().items()
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }  # fmt: skip
    assert long == {}


def test_no_import_circle():
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append([*stack[stack.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert circles == []
