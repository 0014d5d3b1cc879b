"""The package's shape: no module over 600 lines (a module is split by job, not by size),
no import circle, counting the imports made inside functions and for type checking too,
floors as docs/design.md lists them (no import from a floor above), and no module in its
wheel that only this repository's own tooling uses."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import jitbench

PACKAGE = Path(jitbench.__file__).parent
ROOT = PACKAGE.parent
MAX_LINES = 600
# A module named in a string: ``python -m jitbench.measure.diskcache``, an entry point, a
# command's module loaded by name (``f"jitbench.cli.commands.{name}"``: a prefix).
NAMED = re.compile(r"jitbench(?:\.\w+)*\.?")


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


def _rooms() -> dict[str, str]:
    """Each module's room as docs/design.md names it: its package under jitbench/
    (``ways/``), or its top-level file (``advise.py``, ``__init__.py``)."""
    rooms = {}
    for name, path in _modules().items():
        parts = path.relative_to(PACKAGE).parts
        rooms[name] = f"{parts[0]}/" if len(parts) > 1 else parts[0]
    return rooms


def _floors() -> list[list[str]]:
    """The rooms of each floor, ground first, as docs/design.md's note of the house lists
    them (a numbered item each; a room named in backticks)."""
    text = (ROOT / "docs" / "design.md").read_text()
    section = text.split("## The house: the package's floors\n", 1)[1].split("\n## ", 1)[0]
    items = re.split(r"^\d+\. ", section, flags=re.M)[1:]
    return [re.findall(r"`([\w.]+/?)`", item.split(": ", 1)[0]) for item in items]


def test_the_floors_of_design_md_name_every_room_once():
    floors = _floors()
    named = [room for floor in floors for room in floor]
    assert sorted(named) == sorted(set(_rooms().values()))


def test_no_module_imports_from_a_floor_above_or_beside_its_own():
    """A module imports from its own room or from a lower floor, never upward and never
    from another room of its floor: the package reads from the ground up."""
    modules, rooms = _modules(), _rooms()
    floor = {room: level for level, names in enumerate(_floors()) for room in names}
    upward = sorted(
        f"{name} -> {used}"
        for name, path in modules.items()
        for used in _imports(name, path, modules)
        if rooms[used] != rooms[name] and floor[rooms[used]] >= floor[rooms[name]]
    )
    assert upward == []


def _named_by(paths: list[Path], modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``paths`` import or name in a string (a name ending in a
    dot names every module under it)."""
    found: set[str] = set()
    for path in paths:
        tree = ast.parse(path.read_text())
        found |= _imports("", path, modules)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                for name in NAMED.findall(node.value):
                    # A prefix below the top package (the top one names every module).
                    prefix = name.endswith(".") and name.count(".") > 1
                    found |= {m for m in modules
                              if m == name or (prefix and m.startswith(name))}  # fmt: skip
    return found


def test_the_wheel_holds_only_what_users_run():
    """Every module the wheel holds (setuptools' packages under jitbench/) is imported or run
    by the package itself, by the asv suite a user's benchmarks import, or by an entry point:
    none is there only for this repository's docs tooling (docs/blocks, make_readme and the
    recorded examples live beside the pages, outside the package)."""
    modules = _modules()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    entry = {v.partition(":")[0] for v in project["scripts"].values()}
    entry |= {v.partition(":")[0] for group in project["entry-points"].values()
              for v in group.values()}  # fmt: skip
    used = set(entry)
    for name, path in modules.items():
        used |= _named_by([path], modules) - {name}
    used |= _named_by(sorted((ROOT / "benchmarks").glob("*.py")), modules)
    # A module its package imports by its own name (importlib, relative: the twins).
    for name in modules:
        package, _, leaf = name.rpartition(".")
        if package in modules and f'"{leaf}"' in modules[package].read_text():
            used.add(name)
    # A package is used where one of its modules is; its __init__ runs with them.
    used |= {m for m in modules if any(u.startswith(m + ".") for u in used)}
    run = {m for m in modules if m.endswith(".__main__")}  # python -m PACKAGE
    assert sorted(set(modules) - used - run - {"jitbench"} - set(USERS_ONLY)) == []


# Modules nothing in this repository imports, which users' own code does.
USERS_ONLY = {
    "jitbench.target_benchmarks": "the suites that older releases of jitbench init wrote",
}
