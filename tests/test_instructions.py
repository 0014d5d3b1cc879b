"""Instruction counts: what Valgrind counts, how a row's count is read, and when none is.

The counting tests run a real Valgrind process (``valgrind`` on PATH and
pytest-codspeed's hooks installed; CI installs both): counts are compared
with counts, never with times, so they do not depend on the machine's load.
"""

from __future__ import annotations

import concurrent.futures
import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import without_host_devices

from jitbench.errors import JitbenchError, NoFigure
from jitbench.measure.case import Row as CaseRow
from jitbench.measure.counting import callgrind, instructions, worker
from jitbench.measure.counting.instructions import Counts, Row
from jitbench.options import COUNT_TOLERANCE
from jitbench.results import compare

ROOT = Path(__file__).resolve().parents[1]
needs_valgrind = pytest.mark.skipif(
    callgrind.unavailable_reason() is not None,
    reason=f"counting cannot run here: {callgrind.unavailable_reason()}",
)


def test_the_family_is_opt_in(monkeypatch):
    monkeypatch.delenv(instructions.OPT_IN_ENV, raising=False)
    counted = instructions.table([Row("helper_function", "cpu", 10)])
    assert counted == NoFigure(instructions.opt_in_reason())
    with pytest.raises(NotImplementedError, match=r"opt-in .*nox -s instructions"):
        instructions.lookup(counted, Row("helper_function", "cpu", 10))


def test_lookup_gives_counts_na_or_the_rows_error():
    ok, na, bad = Row("a", "cpu", 10), Row("b", "cpu", 10), Row("c", "cpu", 10)
    counts = Counts(10.0, 5.0, {"call": 0.0, "dispatch": 0.0})
    counted = {
        ok: counts,
        na: NoFigure("flax is not installed"),
        bad: NoFigure.of(ValueError("boom")),
    }
    assert instructions.lookup(counted, ok) is counts
    with pytest.raises(NotImplementedError, match=r"^flax is not installed$"):
        instructions.lookup(counted, na)
    with pytest.raises(JitbenchError, match=r"^ValueError: boom$"):
        instructions.lookup(counted, bad)
    with pytest.raises(NotImplementedError, match="d on cpu was not counted"):
        instructions.lookup(counted, Row("d", "cpu", 10))


def test_without_valgrind_the_reason_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    reason = callgrind.unavailable_reason()
    assert reason == "valgrind is not on PATH (Debian/Ubuntu: apt-get install valgrind)"
    with pytest.raises(NotImplementedError, match="apt-get install valgrind"):
        instructions.count_rows([Row("helper_function", "cpu", 10)])
    monkeypatch.setenv(instructions.OPT_IN_ENV, "1")
    assert instructions.table([Row("helper_function", "cpu", 10)]) == NoFigure(reason)


def test_the_check_command_is_one_line_and_exit_2_without_valgrind(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "jitbench.measure.counting.callgrind"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "jitbench: error: valgrind is not on PATH (Debian/Ubuntu: apt-get install valgrind)\n"
    )
    assert done.stdout == ""


def test_a_process_outside_valgrind_refuses_to_count():
    pytest.importorskip("pytest_codspeed")
    with pytest.raises(JitbenchError, match="not running under Valgrind"):
        callgrind.Counter()


def test_calls_are_sized_by_counts_within_the_budget():
    # Every cached call of the suite (tens to hundreds of thousands of instructions) gets
    # the full warm-up and stretches; a call that compiles every time gets fewer.
    full = (instructions.WARM_UP, (instructions.SHORT, instructions.LONG))
    assert worker.calls_for(60_000) == full
    assert worker.calls_for(instructions.BUDGET / instructions.LONG) == full
    assert worker.calls_for(instructions.BUDGET / 25) == (25, (8, 25))
    assert worker.calls_for(instructions.BUDGET * 10) == (3, (1, 2))
    assert worker.calls_for(0) == full


def test_the_canarys_row_carries_its_slowdown_and_is_found_by_it(monkeypatch):
    from jitbench.strategies import STRATEGIES

    registered = dict(STRATEGIES)
    from jitbench.strategies import (
        canary,  # its first import registers it: other tests must not see it
    )

    try:
        monkeypatch.setenv(canary.SLOWDOWN_ENV, "0.05")
        row = instructions.counted(CaseRow(canary.NAME, "cpu", 10))
        assert row == Row(canary.NAME, "cpu", 10, slowdown=0.05)
        rows = [
            instructions.counted(CaseRow(n, "cpu", 10)) for n in (canary.NAME, "helper_function")
        ]
        assert rows == [row, Row("helper_function", "cpu", 10)]
        counts = Counts(10.0, 5.0, {"call": 0.0, "dispatch": 0.0})
        assert instructions.lookup(dict.fromkeys(rows, counts), row) is counts
    finally:
        STRATEGIES.clear()
        STRATEGIES.update(registered)


@needs_valgrind
def test_the_counted_process_runs_under_tcmalloc_and_keeps_the_users_preloads(monkeypatch):
    monkeypatch.delenv(callgrind.ALLOCATOR_ENV, raising=False)
    library = callgrind.allocator()
    assert "tcmalloc_minimal" in library
    env = callgrind.environment({"PATH": "/bin", "LD_PRELOAD": "libuser.so"})
    assert env["PATH"] == "/bin"
    assert env["PYTHONHASHSEED"] == "0"
    assert env["PYTHONMALLOC"] == "malloc"
    # Ours first: the first library that defines malloc is the one the process uses.
    assert env["LD_PRELOAD"] == f"{library} libuser.so"
    assert callgrind.environment({})["LD_PRELOAD"] == library


def test_a_tcmalloc_path_that_is_not_a_file_is_one_line_and_exit_2(monkeypatch, tmp_path):
    missing = tmp_path / "libtcmalloc_minimal.so.4"
    monkeypatch.setenv(callgrind.ALLOCATOR_ENV, str(missing))
    reason = callgrind.unavailable_reason()
    if shutil.which("valgrind") is not None and importlib.util.find_spec("pytest_codspeed"):
        assert reason == (
            f"JITBENCH_TCMALLOC={str(missing)!r} is not a file: set it to a "
            "libtcmalloc_minimal.so or unset it to use the system's"
        )
        done = subprocess.run(
            [sys.executable, "-m", "jitbench.measure.counting.callgrind"],
            capture_output=True,
            text=True,
        )
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == f"jitbench: error: {reason}\n"
    with pytest.raises(JitbenchError, match="is not a file"):
        callgrind.environment({})
    assert not missing.exists()


def test_a_process_without_tcmalloc_loaded_refuses_to_count(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6\n")
    with pytest.raises(JitbenchError, match="runs without tcmalloc"):
        callgrind.check_allocator(maps)
    maps.write_text("7f00-7f01 r-xp 00000000 08:01 2 /usr/lib/libtcmalloc_minimal.so.4.5.10\n")
    callgrind.check_allocator(maps)


# Two Valgrind processes, side by side: the same places hold the same call, its twin, or
# the call with 2% planted work. A count depends a little on the rows before it (a
# target counted after a generated class or after its twin differed by 1.4%), so counts
# are compared at the same place of two processes, after the same rows: the target first.
PLANS = (
    [
        Row("target_models:make_model", "cpu"),
        Row("helper_function", "cpu", 10),
        Row("helper_function", "cpu", 10, calibrated=True),
        Row("no_such_strategy", "cpu", 10),
    ],
    [
        Row("target_models:make_model", "cpu"),
        Row("helper_function", "cpu", 10, twin=True),
        Row("helper_function", "cpu", 10, slowdown=0.02),
        Row("jit_per_call", "cpu", 10),
    ],
)


@pytest.fixture(scope="module")
def counted():
    # The cpu rows on the host's default device configuration, as asv's processes have it.
    path = os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])
    bare = without_host_devices(os.environ)
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("XLA_FLAGS", raising=False)
        if "XLA_FLAGS" in bare:
            patch.setenv("XLA_FLAGS", bare["XLA_FLAGS"])
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            count = functools.partial(instructions.count_rows, env={"PYTHONPATH": path})
            return list(pool.map(count, PLANS))


@pytest.mark.slow
@needs_valgrind
def test_the_same_call_counts_the_same_in_two_processes(counted):
    first, second = (found[0] for found in counted)
    # Both kinds of call count the same within the tolerance jitbench compare judges by
    # (under glibc's malloc a blocking call's counts spread past it, see
    # jitbench.measure.counting.callgrind).
    for kind in instructions.KINDS:
        a, b = getattr(first, kind), getattr(second, kind)
        assert a > 1000
        assert abs(a / b - 1) <= COUNT_TOLERANCE, (kind, a, b)
    # The calling thread waits for its own result: a blocking call counts more.
    assert first.call > first.dispatch
    assert set(first.other_threads) == set(instructions.KINDS)


@pytest.mark.slow
@needs_valgrind
def test_a_generated_class_counts_what_its_twin_counts(counted):
    generated, twin = counted[0][1], counted[1][1]
    for kind in instructions.KINDS:
        a, b = getattr(generated, kind), getattr(twin, kind)
        assert abs(a / b - 1) <= COUNT_TOLERANCE, (kind, a, b)


@pytest.mark.slow
@needs_valgrind
def test_planted_work_slows_the_call_by_its_fraction_of_instructions(counted):
    plain, slowed = counted[0][2], counted[1][2]
    # Sized in the slowed process from its own counts: 2% of the call, give or take what the
    # rows before it (a twin here, the generated class there) leave in the caches.
    assert 0.01 < slowed.call / plain.call - 1 < 0.03
    assert compare.count_mark(plain.call, slowed.call, COUNT_TOLERANCE) == "+"


@pytest.mark.slow
@needs_valgrind
def test_a_bad_row_is_its_own_error(counted):
    missing = counted[0][3]
    assert missing.failed and missing.reason.startswith("unknown strategy 'no_such_strategy'")


@pytest.mark.slow
@needs_valgrind
def test_a_call_that_compiles_every_time_is_not_counted(counted):
    assert counted[1][3] == NoFigure(instructions.COMPILES_REASON)
    with pytest.raises(NotImplementedError, match="compiles on every call"):
        instructions.lookup(
            {Row("jit_per_call", "cpu", 10): counted[1][3]}, Row("jit_per_call", "cpu", 10)
        )
