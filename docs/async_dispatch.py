"""How asynchronous CPU dispatch spreads a cached call over processes.

Starts ``--processes`` interpreters per mode and prints, per mode, the range of
the per-process medians of a blocking cached call (``helper_function``, cpu):

- ``default``: JAX's default, asynchronous CPU dispatch;
- ``sync``: ``jax_cpu_enable_async_dispatch`` off;
- ``pinned``: the process pinned to one CPU (where XLA's worker thread and the
  calling thread must share a core), as ``--cpu-affinity`` pins asv's.

Usage: ``python docs/async_dispatch.py [--size 1000] [--processes 8]
[--machine NAME] [--append]``, in an environment with jitbench installed. It
writes ``docs/async_dispatch/<machine>.json`` (machine default: the hostname):
the JAX release, the date and every process's median per mode, one entry per
invocation (``--append`` adds one to those of the same JAX release, since how
many processes land in a slow state varies between invocations). The
validation page's async-dispatch sentence is generated from that file.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "async_dispatch"

MODES = ("default", "sync", "pinned")
PROBE = """
import os, statistics, sys, timeit
mode, size = sys.argv[1], int(sys.argv[2])
if mode == "sync":
    import jax
    jax.config.update("jax_cpu_enable_async_dispatch", False)
if mode == "pinned":
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
from jitbench.measure.case import Prepared, Row
prepared = Prepared(Row("helper_function", "cpu", size).load())
runs = [timeit.timeit(prepared.call, number=2000) / 2000 for _ in range(15)]
print(statistics.median(runs))
"""


def medians(mode: str, size: int, processes: int) -> list[float]:
    """One median (seconds) per fresh process."""
    return [
        float(subprocess.run(
            [sys.executable, "-c", PROBE, mode, str(size)],
            check=True, capture_output=True, text=True,
        ).stdout)
        for _ in range(processes)
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--machine", default=platform.node(), help="default: the hostname")
    parser.add_argument("--append", action="store_true", help="add to the machine's file")
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        parser.error("needs two CPUs or more: with one, every mode is pinned")
    import jax

    path = OUT / f"{args.machine}.json"
    record = {"machine": args.machine, "jax": jax.__version__, "invocations": []}
    if args.append and path.is_file():
        record = json.loads(path.read_text())
        if record["jax"] != jax.__version__:
            parser.error(f"{path} holds JAX {record['jax']}, this is {jax.__version__}: "
                         "run without --append")  # fmt: skip
    print(f"helper_function, size {args.size}, cpu, JAX {jax.__version__}, "
          f"{args.processes} processes per mode: median of one process, min-max")  # fmt: skip
    found = {}
    for mode in MODES:
        found[mode] = sorted(medians(mode, args.size, args.processes))
        print(f"{mode:8} {found[mode][0] * 1e6:6.1f} - {found[mode][-1] * 1e6:6.1f} us")
    record["invocations"].append(
        {
            "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
            "size": args.size,
            "processes": args.processes,
            "medians_s": found,
        }
    )
    OUT.mkdir(exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(path)


if __name__ == "__main__":
    main()
