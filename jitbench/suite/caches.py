"""Where the commands run in a suite folder of ``jitbench init``'s keep what pip, virtualenv and
matplotlib would write into the user's home folder: the suite's own ``.jitbench/cache``
(standard library only: the CLI applies it before a command's module is imported)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

# Inside a suite folder, ignored by git: asv's machine file, the caches, the jitbench wheel.
HOME = ".jitbench"
CONFIG = "asv.conf.json"
# The variable that moves each cache, and its folder in HOME/cache.
CACHES = {
    "PIP_CACHE_DIR": "pip",
    "VIRTUALENV_OVERRIDE_APP_DATA": "virtualenv",
    "MPLCONFIGDIR": "matplotlib",
}


def suite_environment(root: str | Path, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables to set, where ``environ`` sets none of them, for the commands run in the
    suite folder ``root`` init wrote and the processes they start (asv, pip, virtualenv, the
    benchmarks, the report): their caches in ``root``/:data:`HOME`/cache, nothing written
    into the home folder. Empty outside such a folder."""
    root = Path(root).resolve()
    if not ((root / CONFIG).is_file() and (root / HOME).is_dir()):
        return {}
    cache = root / HOME / "cache"
    return {name: str(cache / where) for name, where in CACHES.items() if not environ.get(name)}
