"""How asynchronous CPU dispatch spreads a cached call over processes.

Starts ``--processes`` interpreters per mode and prints, per mode, the range of
the per-process medians of a blocking cached call (``helper_function``, cpu):

- ``default``: JAX's default, asynchronous CPU dispatch;
- ``sync``: ``jax_cpu_enable_async_dispatch`` off;
- ``pinned``: the process pinned to one CPU (where XLA's worker thread and the
  calling thread must share a core), as ``--cpu-affinity`` pins asv's.

Usage: ``python docs/async_dispatch.py [--size 1000] [--processes 8]``, in an
environment with jitbench installed. The README quotes its output.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

MODES = ("default", "sync", "pinned")
PROBE = """
import os, statistics, sys, timeit
mode, size = sys.argv[1], int(sys.argv[2])
if mode == "sync":
    import jax
    jax.config.update("jax_cpu_enable_async_dispatch", False)
if mode == "pinned":
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
from jitbench.suite import Case, Prepared
prepared = Prepared(Case.of("helper_function", size, "cpu"))
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
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        parser.error("needs two CPUs or more: with one, every mode is pinned")
    import jax

    print(f"helper_function, size {args.size}, cpu, JAX {jax.__version__}, "
          f"{args.processes} processes per mode: median of one process, min-max")  # fmt: skip
    for mode in MODES:
        found = sorted(medians(mode, args.size, args.processes))
        print(f"{mode:8} {found[0] * 1e6:6.1f} - {found[-1] * 1e6:6.1f} us")


if __name__ == "__main__":
    main()
