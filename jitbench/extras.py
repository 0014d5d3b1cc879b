"""The pip extras of jitbench and the packages they install, read from jitbench's metadata,
so that a command names what is missing (and the extra to install) before it starts.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from typing import TYPE_CHECKING

from jitbench.errors import JitbenchError

if TYPE_CHECKING:
    from packaging.requirements import Requirement

DISTRIBUTION = "jitbench"


def requirements(extra: str) -> list[Requirement]:
    """The requirements that ``extra`` adds (none when jitbench is not installed)."""
    from packaging.requirements import Requirement

    try:
        declared = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    found = [Requirement(text) for text in declared]
    return [r for r in found if r.marker is not None and r.marker.evaluate({"extra": extra})]


def pinned(package: str) -> str | None:
    """The one release of ``package`` that the report extra pins (``==``), or None."""
    for requirement in requirements("report"):
        specs = list(requirement.specifier)
        if _module(requirement.name) == package and len(specs) == 1 and specs[0].operator == "==":
            return specs[0].version
    return None


def require(extra: str, command: str) -> None:
    """Raise JitbenchError naming the first package of ``extra`` that cannot be imported."""
    for requirement in requirements(extra):
        module = _module(requirement.name)
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
