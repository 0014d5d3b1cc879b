"""flax's MNIST CNN (docs/examples/flax_cnn.py) counted as a project's counts check counts it:
``check_counts``, the ``jitbench_counts`` fixture's check, in three processes one after the
other: a baseline, a check of the unchanged model against it, and a check of the model with
2% of host work planted in its step (``flax_cnn.slowed``, swapped in under the same name).

Writes ``docs/counts/cnn/MACHINE.json``: each check's counts (the whole call and the host's
share, per cached call and per dispatch), the ratios to the baseline, what the check said.
``docs/make_readme.py`` renders it in docs/counting.md.

Usage: ``python docs/counts_cnn.py [--machine NAME]`` (Valgrind and tcmalloc needed; about
ten minutes a check on a 2-core machine).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
OUT = ROOT / "docs" / "counts" / "cnn"
TARGET = "flax_cnn:model"
KEY = "flax_cnn"
# One check, in a process of its own: its counts, the baseline's, and what the check says at
# the default tolerance (the counts first, so that a failed check still has them).
CHECK = """\
import json, sys
from jitbench.options import COUNT_TOLERANCE
from jitbench.testing import counts
mode, baseline = sys.argv[1], sys.argv[2]
done = counts.check_counts(
    {target!r}, key={key!r}, baseline=baseline, update=mode == "baseline", tolerance=float("inf")
)
said = "written"
if done.baseline is not None:
    try:
        counts._judge(done, {target!r}, "cpu", COUNT_TOLERANCE)
        said = "passed"
    except AssertionError as exc:
        said = str(exc)
print(json.dumps({{"counts": done.counts, "baseline": done.baseline, "judged": done.judged,
                  "said": said}}))
"""
PLANTED = "\n\n# The planted step: 2% of host work before the jitted call.\nmodel = slowed\n"


def check(mode: str, baseline: Path, folder: Path) -> dict:
    """One check of ``TARGET`` imported from ``folder``, with its seconds."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(folder), str(ROOT)))}
    code = CHECK.format(target=TARGET, key=KEY)
    start = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", code, mode, str(baseline)],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the {mode} check exited {done.returncode}: {done.stderr[-2000:]}")
    found = json.loads(done.stdout.strip().splitlines()[-1])
    found["seconds"] = round(time.monotonic() - start)
    print(f"{mode}: {found}", flush=True)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machine", default=platform.node(), help="the record's name")
    args = parser.parse_args()
    from jitbench.measure.counting import callgrind
    from jitbench.testing.counts import versions

    reason = callgrind.unavailable_reason()
    if reason is not None:
        raise SystemExit(f"cannot count here: {reason}")
    valgrind = subprocess.run(
        [callgrind.valgrind() or "valgrind", "--version"], capture_output=True, text=True
    ).stdout.strip()
    git = ["git", "-C", str(ROOT)]
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    changed = subprocess.run(
        [*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True
    ).stdout.strip()
    commit = commit.strip() + (" with local changes" if changed else "")
    record = {
        "machine": args.machine,
        "commit": commit,
        "valgrind": valgrind,
        "cpus": os.cpu_count(),
        "started": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"),
        "versions": versions(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        baseline = Path(tmp) / "jitbench-counts.json"
        planted = Path(tmp) / "planted"
        planted.mkdir()
        source = (EXAMPLES / "flax_cnn.py").read_text()
        (planted / "flax_cnn.py").write_text(source + PLANTED)
        record["checks"] = {
            "baseline": check("baseline", baseline, EXAMPLES),
            "unchanged": check("check", baseline, EXAMPLES),
            "planted": check("check", baseline, planted),
        }
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"{args.machine}.json"
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
