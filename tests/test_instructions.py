"""Instruction counts: what Valgrind counts, how a row's count is read, and when none is.

The counting tests run a real Valgrind process (``valgrind`` on PATH and
pytest-codspeed's hooks installed; CI installs both): counts are compared
with counts, never with times, so they do not depend on the machine's load.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import without_host_devices

from jitbench.errors import JitbenchError, NoFigure
from jitbench.measure.case import Row
from jitbench.measure.counting import callgrind, instructions, worker
from jitbench.measure.counting.instructions import Counts
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
    counts = Counts(10.0, 5.0)
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


def test_a_report_says_counts_are_off_and_how_to_turn_them_on(monkeypatch, tmp_path):
    # asv names an environment after its variables; the matrix jitbench init writes:
    asked = "virtualenv-py3.13-asv_runner0.3.2-jax-pytest-codspeed5.0.4-JITBENCH_INSTRUCTIONS1"
    assert instructions.asked_in(asked)
    assert not instructions.asked_in(asked.replace("INSTRUCTIONS1", "INSTRUCTIONS0"))
    assert not instructions.asked_in("virtualenv-py3.13-asv_runner0.3.2-jax")
    monkeypatch.setenv("PATH", str(tmp_path))  # this machine: no Valgrind
    assert instructions.off_note(True) == (
        "Instruction counts are off in this run: every count row is n/a, though its "
        "environment asks for them (JITBENCH_INSTRUCTIONS=1). `asv run -e` prints each row's "
        "reason; on this machine: valgrind is not on PATH (Debian/Ubuntu: apt-get install "
        "valgrind)."
    )
    off = instructions.off_note(False)
    assert off.startswith("Instruction counts are off: this run's environment does not ask")
    assert "apt-get install valgrind libtcmalloc-minimal4" in off
    assert "set JITBENCH_INSTRUCTIONS=1 with pytest-codspeed>=5,<6 in asv's environment" in off


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
    from jitbench.ways.registry import STRATEGIES

    registered = dict(STRATEGIES)
    from jitbench.strategies import (
        canary,  # its first import registers it: other tests must not see it
    )

    try:
        monkeypatch.setenv(canary.SLOWDOWN_ENV, "0.05")
        row = instructions.counted(Row(canary.NAME, "cpu", 10))
        assert row == Row(canary.NAME, "cpu", 10, slowdown=0.05)
        rows = [instructions.counted(Row(n, "cpu", 10)) for n in (canary.NAME, "helper_function")]
        assert rows == [row, Row("helper_function", "cpu", 10)]
        counts = Counts(10.0, 5.0)
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


def test_a_tcmalloc_named_by_jitbench_tcmalloc_stays_out_of_asv_conf(monkeypatch, tmp_path):
    """A path of this machine's is not committed: where JITBENCH_TCMALLOC names the library,
    init writes the counts' opt-in alone into the matrix (the benchmarks find tcmalloc where
    they run, from the environment of asv run), so asv's environment is named the same on
    every machine."""
    from jitbench.suite import scaffold

    library = tmp_path / "lib" / "libtcmalloc_minimal.so.4"
    library.parent.mkdir()
    library.write_bytes(b"")
    monkeypatch.setenv(callgrind.ALLOCATOR_ENV, str(library))
    assert callgrind.allocator() == str(library)
    matrix = scaffold._matrix("5.0.4", {}, {})
    assert matrix["env_nobuild"] == {instructions.OPT_IN_ENV: ["1"]}
    assert str(tmp_path) not in json.dumps(matrix)
    assert "env_nobuild" not in scaffold._matrix(None, {}, {})  # no counts: no opt-in


def test_a_process_without_tcmalloc_loaded_refuses_to_count(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6\n")
    with pytest.raises(JitbenchError, match="runs without tcmalloc"):
        callgrind.check_allocator(maps)
    maps.write_text("7f00-7f01 r-xp 00000000 08:01 2 /usr/lib/libtcmalloc_minimal.so.4.5.10\n")
    callgrind.check_allocator(maps)


# A callgrind dump of the calling thread (trimmed from one of flax's MNIST CNN, five calls):
# the thunk executor called by jaxlib's PjRt (a name given once, then its number), a while
# loop's executor inside it (callgrind's "'2": a recursive call, inside the first's count).
DUMP = """\
# callgrind format
version: 1
creator: callgrind-3.19.0
thread: 1

desc: Trigger: Client Request: 0:call:5

positions: line
events: Ir
summary: 0


ob=(4) /env/site-packages/jaxlib/libjax_common.so
fl=(3) ???
fn=(2690) xla::CpuPjRtRawLoadedExecutable::Execute(xla::ExecuteOptions const&)
0 35
cfn=(2692) xla::cpu::ThunkExecutor::Execute(xla::cpu::Thunk::ExecuteParams const&)
calls=5 0
0 291148385
0 40

fn=(2692)
0 115
cfn=(2694) xla::cpu::WhileThunk::Execute(xla::cpu::Thunk::ExecuteParams const&)
calls=5 0
0 1390

fn=(2694)
0 20
cfn=(2696) xla::cpu::ThunkExecutor::Execute(xla::cpu::Thunk::ExecuteParams const&)'2
calls=10 0
0 1000

ob=(2) /python/lib/libpython3.13.so.1.0
fl=(9) Python/ceval.c
fn=(91) _PyEval_EvalFrameDefault
16 500
cfn=(2692)
calls=2 16
16 777

totals: 309503096
"""


def test_a_dump_is_read_with_its_program_runs(tmp_path):
    (tmp_path / f"{callgrind.OUT_NAME}.7114-01").write_text(DUMP)
    (whole,) = callgrind.read_dumps(tmp_path)
    assert whole == callgrind.Dump("0:call:5", 1, 309503096)
    (read,) = callgrind.read_dumps(tmp_path, programs=True)
    assert (read.program, read.runs) == (291148385 + 777, 7)


def test_the_hosts_share_is_the_calling_thread_outside_its_program_runs():
    def dump(label: str, instructions: int, program: int, runs: int) -> callgrind.Dump:
        return callgrind.Dump(label, callgrind.CALLING_THREAD, instructions, program, runs)

    outcome = {kind: [100, 300] for kind in instructions.KINDS}
    dumps = [
        dump("0:call:100", 10_000_000, 9_000_000, 100),
        dump("0:call:300", 30_000_000, 27_600_000, 300),  # the program's run: 9.3M more
        dump("0:dispatch:100", 8_000_000, 7_000_000, 100),
        dump("0:dispatch:300", 24_000_000, 21_000_000, 300),
        callgrind.Dump("0:call:300", 5, 999_999),  # a worker's: never the calling thread's
    ]
    counted = instructions._counts(0, outcome, dumps)
    assert counted == Counts(100_000.0, 80_000.0, host_call=7_000.0, host_dispatch=10_000.0)
    # A thread that ran no program there (another runtime): no host's share, never the whole.
    unrun = [dataclasses.replace(d, program=0, runs=0) for d in dumps]
    assert instructions._counts(0, outcome, unrun) == Counts(100_000.0, 80_000.0)


def test_fit_line_is_least_squares():
    assert instructions.fit_line([0, 10, 50], [100.0, 1940.0, 9300.0]) == pytest.approx((184, 100))
    slope, _ = instructions.fit_line([1, 2, 3], [1.0, 3.0, 2.0])
    assert slope == pytest.approx(0.5)
    with pytest.raises(ValueError, match="two distinct x values"):
        instructions.fit_line([10, 10], [1.0, 2.0])


def _tests_path() -> dict[str, str]:
    return {"PYTHONPATH": os.pathsep.join([str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")])}


def test_every_counted_call_is_made_from_the_same_two_frames():
    """A dry run of the counting process (no Valgrind): the stack at each counted call is the
    driver's module and the loop, for a built-in strategy, the floor and a target alike, and
    a caller-depth row adds exactly its frames."""
    rows = [
        Row("helper_function", "cpu", 10),
        Row("target_models:make_model", "cpu"),
        Row("jit_function", "cpu", 10),
        Row("helper_function", "cpu", 10, frames=10),
        Row("helper_function", "cpu", 10, frames=50, tracebacks=False),
    ]
    assert worker.CALL_FRAMES == 2
    assert instructions.call_frames(rows, env=_tests_path()) == [[2], [2], [2], [12], [52]]


def test_the_counting_process_runs_on_one_cpu():
    # XLA's CPU pool would otherwise take a share of a large kernel's work, a share that moves
    # from call to call, out of the calling thread's count (docs/counting.md).
    rows = [Row("target_models:make_on_one_cpu", "cpu")]
    assert instructions.call_frames(rows, env=_tests_path()) == [[2]]


def test_the_floor_is_a_free_function_called_on_the_arrays():
    from jitbench.measure.case import Prepared, call_code

    floor = Prepared(Row("jit_function", "cpu", 10).load())
    expr, names = call_code(floor.subject, floor.obj)
    assert expr == "function(s0, a0, x0)"
    assert names["function"] is sys.modules[type(floor.obj).__module__]._calc
    assert names["a0"] is floor.obj.a0 and names["s0"] == floor.obj.s0
    method = Prepared(Row("helper_function", "cpu", 10).load(), seed=0)
    assert (floor.call() == method.call()).all()


def test_the_timed_call_runs_nothing_of_jitbench():
    """Between the timed call's own frame and the user's call: no import, no wrapper."""
    from jitbench.measure.case import Prepared

    prepared = Prepared(Row("helper_function", "cpu", 10).load())
    package = str(ROOT / "jitbench")
    seen = []

    def hook(frame, event, arg):
        if event in ("call", "c_call"):
            seen.append((frame.f_code.co_filename, getattr(arg, "__name__", frame.f_code.co_name)))

    sys.setprofile(hook)
    try:
        prepared.call()
    finally:
        sys.setprofile(None)
    assert not [entry for entry in seen[1:] if entry[0].startswith(package)], seen
    assert not [entry for entry in seen if entry[1] == "__import__"], seen


# Two runs of count_rows, one after the other (each counts one subject per process, two at
# a time): the same places hold the same call, its twin, or the call with 2% planted work.
# Rows of one subject share a process, and a count depends a little on the rows before it
# there, so counts are compared at the same place of two processes, after the same rows.
PLANS = (
    [
        Row("target_models:make_model", "cpu"),
        Row("helper_function", "cpu", 10),
        Row("helper_function", "cpu", 10, calibrated=True),
    ],
    [
        Row("target_models:make_model", "cpu"),
        Row("helper_function", "cpu", 10, twin=True),
        Row("helper_function", "cpu", 10, slowdown=0.02),
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
        return [instructions.count_rows(plan, env={"PYTHONPATH": path}) for plan in PLANS]


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
    # The host's share: the call less the program's run (a small one at this size), as steady.
    for kind in instructions.KINDS:
        a, b = getattr(first, f"host_{kind}"), getattr(second, f"host_{kind}")
        assert 0.5 * getattr(first, kind) < a < getattr(first, kind)
        assert abs(a / b - 1) <= COUNT_TOLERANCE, (kind, a, b)


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
    # Host work: the host's share grows by as much, and a bit more of itself.
    assert slowed.host_call - plain.host_call == pytest.approx(slowed.call - plain.call, rel=0.01)
    assert slowed.host_call / plain.host_call - 1 > 0.01


def test_counting_processes_at_once_run_on_cpus_of_their_own():
    free = instructions._cpus()
    taken = [free.get_nowait() for _ in range(instructions.PROCESSES)]
    for cpu in taken:
        free.put(cpu)
    assert set(taken) <= os.sched_getaffinity(0)
    assert len(set(taken)) == min(instructions.PROCESSES, len(os.sched_getaffinity(0)))


def test_a_bad_row_and_a_call_that_compiles_every_time_are_no_figures():
    # The worker's own decisions, before anything is counted: a dry run makes them as a
    # counted run does.
    rows = [Row("no_such_strategy", "cpu", 10), Row("jit_per_call", "cpu", 10)]
    missing, compiling = instructions.call_frames(rows)
    assert missing.failed and missing.reason.startswith("unknown strategy 'no_such_strategy'")
    assert compiling == NoFigure(instructions.COMPILES_REASON)
    with pytest.raises(NotImplementedError, match="compiles on every call"):
        instructions.lookup({rows[1]: compiling}, rows[1])


# The stack's cost: helper_function from 0 and 50 frames more, JAX's tracebacks on and off,
# and the floor (one process per strategy).
FRAMES = (
    Row("helper_function", "cpu", 10),
    Row("helper_function", "cpu", 10, frames=50),
    Row("helper_function", "cpu", 10, tracebacks=False),
    Row("helper_function", "cpu", 10, frames=50, tracebacks=False),
    Row("jit_function", "cpu", 10),
)


@pytest.fixture(scope="module")
def framed():
    return instructions.count_rows(FRAMES)


@pytest.mark.slow
@needs_valgrind
def test_each_frame_of_the_caller_costs_a_stack_walk_per_jax_call(framed):
    shallow, deep, off, deep_off, _ = framed
    # JAX walks the stack at dispatch and at block_until_ready: tens of instructions a frame
    # each (92 on pyenv's CPython 3.13.0, 72 on Debian's 3.11.2 build, measured here),
    # so a call's frame costs two walks, a dispatch's one; with tracebacks off, nothing.
    per_call = (deep.call - shallow.call) / 50
    per_dispatch = (deep.dispatch - shallow.dispatch) / 50
    assert 50 < per_dispatch < 110
    assert 1.7 < per_call / per_dispatch < 2.3
    assert abs(deep_off.call / off.call - 1) <= COUNT_TOLERANCE
    assert off.call < shallow.call


@pytest.mark.slow
@needs_valgrind
def test_the_floor_costs_less_than_a_method_that_calls_it(framed):
    method, floor = framed[0], framed[4]
    assert floor.call < method.call and floor.dispatch < method.dispatch


# Valgrind 3.19's report when it stopped counting a 64-layer model on jaxlib 0.12.1
# (trimmed): jaxlib's xxhash holds an instruction this Valgrind cannot decode.
UNDECODED = (
    "==22409== Using Valgrind-3.19.0 and LibVEX; rerun with -h for copyright info\n"
    "vex amd64->IR: unhandled instruction bytes: 0xC5 0x79 0xD6 0xD4 0xC5 0x79 0xD6\n"
    "==22409== valgrind: Unrecognised instruction at address 0xccae9c0.\n"
    "==22409==    at 0xCCAE9C0: XXH3_hashLong_64b(unsigned char const*, unsigned long, "
    "unsigned char const*, unsigned long) (in /env/site-packages/jaxlib/libjax_common.so)\n"
    "==22409==    by 0xC861DA4: mlir::FunctionType::get(mlir::MLIRContext*, mlir::TypeRange, "
    "mlir::TypeRange) (in /env/site-packages/jaxlib/libjax_common.so)\n"
)
# vmovq xmm4, xmm10 (VEX.128.66.0F D6 in its register form, the instruction above), then ret,
# run from an executable page.
PLANTED_VMOVQ = """\
import ctypes, mmap
page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(bytes([0xC5, 0x79, 0xD6, 0xD4, 0xC3]))
ctypes.CFUNCTYPE(None)(ctypes.addressof(ctypes.c_char.from_buffer(page)))()
"""


def test_an_instruction_valgrind_cannot_decode_is_named_in_one_line():
    assert callgrind.undecoded(UNDECODED) == (
        "Valgrind-3.19.0 cannot decode an instruction of XXH3_hashLong_64b (libjax_common.so) "
        "and stopped the counting process: count with a newer Valgrind "
        "(docs/counting.md#a-newer-valgrind)"
    )
    assert callgrind.undecoded(UNDECODED.split("valgrind: Unrecognised")[0]) is None


@needs_valgrind
def test_valgrinds_own_report_of_an_undecoded_instruction_is_read(tmp_path):
    argv = callgrind.command(tmp_path, [sys.executable, "-c", PLANTED_VMOVQ])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode == 0:
        pytest.skip("this Valgrind decodes vmovq's register form (Valgrind 3.24 does)")
    version = subprocess.check_output([callgrind.valgrind(), "--version"], text=True).strip()
    assert callgrind.undecoded(done.stderr) == (
        f"{version.replace('valgrind', 'Valgrind')} cannot decode an instruction of code outside "
        "a library and stopped the counting process: count with a newer Valgrind "
        "(docs/counting.md#a-newer-valgrind)"
    )
