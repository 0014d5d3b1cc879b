"""The first call in a fresh Python interpreter (asv's ``timeraw_`` benchmarks).

asv runs the returned setup and statement in a new interpreter and times the
statement alone: the imports and the construction are not timed, the first
call is, with everything the process has not done yet (its first compile).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jitbench.measure import block, use_persistent_cache
from jitbench.suite import Case


def setup(strategy: str, size: int, device: str) -> Callable[[], Any]:
    """Everything but the first call, in the new interpreter (on-disk cache off)."""
    obj, y = Case.of(strategy, size, device).instance()
    use_persistent_cache(None)
    return lambda: block(obj.calc(y))


def code(strategy: str, size: int, device: str) -> tuple[str, str]:
    """(stmt, setup) for asv's ``timeraw_``; checks availability here first (n/a otherwise)."""
    Case.of(strategy, size, device)
    text = (
        "from jitbench.newprocess import setup\n"
        f"first_call = setup({strategy!r}, {size!r}, {device!r})\n"
    )
    return "first_call()", text
