"""Child processes: one place starts them, one timeout rule, one error line, the worker protocol."""

from __future__ import annotations

import ast
import sys
import threading
import time
from pathlib import Path

import pytest

import jitbench
from jitbench import child
from jitbench.errors import JitbenchError, NoFigure

PACKAGE = Path(jitbench.__file__).parent
STARTERS = {("subprocess", name) for name in ("run", "Popen", "call", "check_output")}
# A worker that answers its request doubled, and says why not for a negative one.
DOUBLER = """\
from jitbench import child
def answer(request):
    if request < 0:
        raise NotImplementedError(f"no figure for {request}")
    return 2 * request
child.serve(answer)
"""


def test_only_child_starts_a_process():
    starters = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if (node.value.id, node.attr) in STARTERS:
                    starters.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert {s.partition(":")[0] for s in starters} == {"child.py"}, starters


def test_a_worker_answers_its_request_or_names_why_not(tmp_path):
    assert child.work(["-c", DOUBLER], 21, tmp_path, what="doubling", timeout=60) == 42
    said = child.work(["-c", DOUBLER], -1, tmp_path, what="doubling", timeout=60)
    assert NoFigure.from_json(said) == NoFigure("no figure for -1")


def test_a_failed_process_is_one_line_of_its_last_words(tmp_path):
    program = ["-c", "import sys; print('==1== a wrapper', file=sys.stderr); sys.exit('broken')"]
    with pytest.raises(JitbenchError) as failed:
        child.work(program, None, tmp_path, what="the worker", timeout=60)
    assert str(failed.value) == "the worker exited 1: broken"
    explained = lambda stderr: "why: " + stderr.strip().splitlines()[-1]  # noqa: E731
    with pytest.raises(JitbenchError, match=r"^why: broken$"):
        child.work(program, None, tmp_path, what="the worker", timeout=60, explain=explained)


def test_a_process_past_its_timeout_is_killed_and_named():
    start = time.perf_counter()
    with pytest.raises(JitbenchError, match=r"^sleeping did not finish in 0\.5 s$"):
        child.run([sys.executable, "-c", "import time; time.sleep(60)"], what="sleeping",
                  timeout=0.5)  # fmt: skip
    assert time.perf_counter() - start < 30


def test_a_stopped_process_says_so():
    timer = threading.Timer(1.0, child.stop)
    timer.start()
    with pytest.raises(JitbenchError, match=r"^sleeping was stopped$"):
        child.run([sys.executable, "-c", "import time; time.sleep(60)"], what="sleeping")
    timer.join()
