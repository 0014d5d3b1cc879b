"""The pip extras of jitbench and the packages they install, read from jitbench's metadata,
so that a command names what is missing (and the extra to install) before it starts.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util

from jitbench.errors import JitbenchError

DISTRIBUTION = "jitbench"


def requirements(extra: str) -> list[str]:
    """The requirement specifiers that ``extra`` adds (empty when jitbench is not installed)."""
    from packaging.requirements import Requirement

    try:
        declared = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    found = []
    for text in declared:
        requirement = Requirement(text)
        if requirement.marker is not None and requirement.marker.evaluate({"extra": extra}):
            found.append(str(requirement).split(";")[0].strip())
    return found


def pinned(package: str, extra: str = "report") -> str | None:
    """The one release of ``package`` that ``extra`` pins (``==``), or None."""
    from packaging.requirements import Requirement

    for text in requirements(extra):
        requirement = Requirement(text)
        specs = list(requirement.specifier)
        if _module(requirement.name) == package and len(specs) == 1 and specs[0].operator == "==":
            return specs[0].version
    return None


def require(extra: str, command: str) -> None:
    """Raise JitbenchError naming the first package of ``extra`` that cannot be imported."""
    from packaging.requirements import Requirement

    for text in requirements(extra):
        module = _module(Requirement(text).name)
        if not _importable(module):
            raise JitbenchError(
                f"jitbench {command} needs package {module!r}, which is not installed: "
                f"pip install 'jitbench[{extra}]'"
            )


def _module(distribution: str) -> str:
    """The top-level module of a distribution named as pip names it (asv-runner: asv_runner)."""
    return distribution.lower().replace("-", "_").replace(".", "_")


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # an import hook refused it, or a None in sys.modules
        return False
