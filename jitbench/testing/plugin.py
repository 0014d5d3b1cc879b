"""jitbench's pytest plugin (entry point ``pytest11``): the ``jitbench_counts`` fixture over
:func:`jitbench.testing.check_counts`, ``--count-tolerance``, ``--jitbench-update-counts``,
the ini option ``jitbench_counts_file`` and a summary of the counts written or skipped.

Loaded in every pytest run where jitbench is installed, so it imports nothing heavy.
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable

import pytest

from jitbench.options import COUNT_TOLERANCE
from jitbench.testing.counts import (
    BASELINE_NAME,
    UPDATE_FLAG,
    CountsCheck,
    CountsImproved,
    check_counts,
)

INI_FILE = "jitbench_counts_file"
_NOTES = pytest.StashKey[list[str]]()


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction, 0 or more (e.g. 0.01)")
    return value


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("jitbench", "jitbench: instruction counts of jitted calls")
    group.addoption(
        "--count-tolerance",
        type=_tolerance,
        default=COUNT_TOLERANCE,
        dest="jitbench_count_tolerance",
        metavar="FRACTION",
        help="a count that grew by more than this fraction of its baseline fails "
        f"(default {COUNT_TOLERANCE}, as jitbench compare)",
    )
    group.addoption(
        UPDATE_FLAG,
        action="store_true",
        dest="jitbench_update_counts",
        help="write or refresh the baseline counts of the tests that run",
    )
    parser.addini(
        INI_FILE,
        help=f"the baseline counts file, from the rootdir (default {BASELINE_NAME})",
        default=BASELINE_NAME,
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_NOTES] = []


@pytest.fixture
def jitbench_counts(request: pytest.FixtureRequest) -> Callable[..., CountsCheck]:
    """``jitbench_counts(target, call=None, inputs=None, device="cpu", name=None)``: the
    target's instructions per cached call and per dispatch, counted in a Valgrind process
    of its own, against the baseline keyed by this test's id (``name`` tells two checks
    of one test apart); see :func:`jitbench.testing.check_counts`."""
    import unittest

    config = request.config
    used: set[str] = set()

    def check(
        target: str | Callable[..., object],
        *,
        call: str | Callable[..., object] | None = None,
        inputs: str | Callable[[], object] | None = None,
        device: str = "cpu",
        name: str | None = None,
    ) -> CountsCheck:
        __tracebackhide__ = True  # pytest: the failure is the test's line
        key = request.node.nodeid if name is None else f"{request.node.nodeid}::{name}"
        if key in used:
            raise pytest.UsageError(f"{key} checks counts twice: give each check a name=")
        used.add(key)
        baseline = config.rootpath / str(config.getini(INI_FILE))  # from the rootdir
        notes = config.stash[_NOTES]
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        progress = None if reporter is None else lambda line: reporter.write_line(line)
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", CountsImproved)
                checked = check_counts(
                    target, key=key, baseline=baseline, call=call, inputs=inputs,
                    device=device, tolerance=config.getoption("jitbench_count_tolerance"),
                    update=config.getoption("jitbench_update_counts"), progress=progress,
                )  # fmt: skip
        except unittest.SkipTest as exc:
            notes.append(f"{key}: skipped: {exc}")
            pytest.skip(str(exc))
        for warning in caught:
            notes.append(f"{key}: {warning.message}")
            warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                   warning.lineno)  # fmt: skip
        if checked.baseline is None:
            counts = ", ".join(f"{kind} {n:,.0f}" for kind, n in checked.counts.items())
            notes.append(f"{key}: written to {checked.path}: {counts}")
        return checked

    return check


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    notes = config.stash.get(_NOTES, [])
    if notes:
        terminalreporter.section("jitbench counts")
        for line in notes:
            terminalreporter.write_line(line)
