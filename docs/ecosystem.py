"""jitbench's figures beside the ecosystem's own benchmarks, measuring the same calls.

flax's ``benchmarks/nnx_graph_overhead.py`` (an empty jitted step over an MLP and its
optimizer, three ways, a plain loop that does not wait) and JAX's
``benchmarks/api_benchmark.py`` (google_benchmark, a few jitted calls with and without
the wait) run as their authors run them, each in its own process, from a checkout of
each project; ``jitbench time`` measures the same calls (``docs/examples/flax_mlp.py``,
``docs/examples/jax_api.py``) in another process. Neither side's code is copied here.

Usage::

    python docs/ecosystem.py --flax FLAX/benchmarks/nnx_graph_overhead.py \
        --jax JAX/benchmarks/api_benchmark.py [--device cpu] [--machine NAME]

Their scripts need ``absl-py`` and ``google-benchmark`` (pip), flax's also optax (flax
brings it). ``--device cpu`` runs every process with ``JAX_PLATFORMS=cpu``; ``tpu`` or
``gpu`` leaves JAX's default device. It writes ``docs/ecosystem/<machine>-<device>.json``
and prints the table docs/validation.md shows.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "ecosystem"
# flax's loop includes the first call (its compile): enough steps make that a small share.
STEPS = 10000
# (their benchmark, its figure's name, jitbench target, jitbench measure): their loops that
# do not wait at each call (calls back to back, one wait) beside jitbench's loop per call.
PAIRS = [
    ("nnx_graph_overhead", "nnx", "flax_mlp:graph_mode", "loop"),
    ("nnx_graph_overhead", "jit_partial", "flax_mlp:jit_partial", "loop"),
    ("nnx_graph_overhead", "jax", "flax_mlp:split_state", "loop"),
    ("api_benchmark", "jit_trivial_dispatch", "jax_api:trivial", "loop"),
    ("api_benchmark", "jit_trivial", "jax_api:trivial", "cached"),
    ("api_benchmark", "jit_simple_dispatch", "jax_api:simple", "loop"),
    ("api_benchmark", "jit_simple", "jax_api:simple", "cached"),
    ("api_benchmark", "jit_small_matmul", "jax_api:small_matmul", "cached"),
]
FLAX_MODES = {"NNX": "nnx", "JIT PARTIAL": "jit_partial", "JAX": "jax"}


def _run(cmd: list[str], env: dict[str, str], label: str) -> str:
    start = time.perf_counter()
    print(f"running {label} ...", file=sys.stderr, flush=True)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    print(f"  {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    return done.stdout


def flax_figures(script: Path, env: dict[str, str], steps: int) -> dict[str, float]:
    """Seconds per step of each of the script's modes, as it prints them."""
    cmd = [sys.executable, str(script), "--mode", "all", "--total_steps", str(steps)]
    out = _run(cmd, env, script.name)
    found = re.findall(r"### (.+?) ###\s+total time: .*\s+time per step: ([\d.]+) µs", out)
    if len(found) != len(FLAX_MODES):
        sys.exit(f"{script} printed {len(found)} of the {len(FLAX_MODES)} modes:\n{out[-2000:]}")
    return {FLAX_MODES[mode]: float(us) * 1e-6 for mode, us in found}


def jax_figures(script: Path, env: dict[str, str], names: list[str]) -> dict[str, float]:
    """Seconds per call of each named benchmark: the median of google_benchmark's repetitions."""
    pattern = "^(" + "|".join(names) + ")$"
    out = _run(
        [sys.executable, str(script), f"--benchmark_filter={pattern}", "--benchmark_format=json",
         "--benchmark_repetitions=5", "--benchmark_report_aggregates_only=true"],
        env, script.name,
    )  # fmt: skip
    rows = json.loads(out)["benchmarks"]
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    figures = {
        r["run_name"]: r["real_time"] * scale[r["time_unit"]]
        for r in rows
        if r.get("aggregate_name") == "median"
    }
    missing = sorted(set(names) - set(figures))
    if missing:
        sys.exit(f"{script} ran none of {', '.join(missing)}")
    return figures


# The same call waited for two ways: the array's own method (JAX's benchmark) and the tree
# function jitbench's cached call uses, as a user's own timing code does.
WAIT_CODE = """
import operator, statistics, timeit
import jax
f, a, b = jax.jit(operator.add), jax.device_put(1), jax.device_put(2)
f(a, b).block_until_ready()
wait = jax.block_until_ready
method = timeit.Timer(lambda: f(a, b).block_until_ready())
tree = timeit.Timer(lambda: wait(f(a, b)))
number, _ = method.autorange()
pairs = [(tree.timeit(number) - method.timeit(number)) / number for _ in range(7)]
print(statistics.median(pairs))
"""


def wait_difference(env: dict[str, str]) -> float:
    """Seconds ``jax.block_until_ready(x)`` adds over ``x.block_until_ready()`` on jit_simple."""
    return float(_run([sys.executable, "-c", WAIT_CODE], env, "the two waits"))


def jitbench_figures(target: str, env: dict[str, str]) -> tuple[dict[str, float], str]:
    """``jitbench time``'s median cached call and loop per call, and the device it ran on."""
    cmd = [sys.executable, "-m", "jitbench", "time", target, "--format", "json"]
    out = _run(cmd, env, f"jitbench time {target}")
    record = json.loads(out)
    return {m: record[m]["median"] for m in ("cached", "loop")}, record["device"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flax", type=Path, required=True, help="flax's nnx_graph_overhead.py")
    parser.add_argument("--jax", type=Path, required=True, help="JAX's api_benchmark.py")
    parser.add_argument("--device", default="cpu", choices=["cpu", "gpu", "tpu"])
    parser.add_argument("--machine", default=platform.node())
    parser.add_argument("--steps", type=int, default=STEPS, help="flax's --total_steps")
    args = parser.parse_args()
    for path in (args.flax, args.jax):
        if not path.is_file():
            parser.error(f"no such file: {path}")

    env = dict(os.environ)
    if args.device == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(HERE / "examples"), str(HERE.parent), env.get("PYTHONPATH", "")) if p
    )
    theirs = {"nnx_graph_overhead": flax_figures(args.flax, env, args.steps)}
    theirs["api_benchmark"] = jax_figures(
        args.jax, env, [name for bench, name, _, _ in PAIRS if bench == "api_benchmark"]
    )
    ours: dict[str, dict[str, float]] = {}
    devices = set()
    for target in dict.fromkeys(t for _, _, t, _ in PAIRS):
        ours[target], on = jitbench_figures(target, env)
        devices.add(on)
    if devices != {args.device}:
        sys.exit(f"jitbench ran on {', '.join(sorted(devices))}, not on {args.device}")

    rows = [
        {
            "benchmark": bench,
            "theirs": name,
            "theirs_s": theirs[bench][name],
            "target": target,
            "measure": measure,
            "jitbench_s": ours[target][measure],
        }
        for bench, name, target, measure in PAIRS
    ]
    record = {
        "machine": args.machine,
        "device": args.device,
        "jax": metadata.version("jax"),
        "python": platform.python_version(),
        "date": datetime.date.today().isoformat(),
        "flax_steps": args.steps,
        "wait_difference_s": wait_difference(env),
        "rows": rows,
    }
    OUT.mkdir(exist_ok=True)
    path = OUT / f"{args.machine}-{args.device}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    for r in rows:
        ratio = r["jitbench_s"] / r["theirs_s"]
        print(f"{r['theirs']:22} {r['theirs_s'] * 1e6:10.2f} us  {r['target']:22} "
              f"{r['measure']:8} {r['jitbench_s'] * 1e6:10.2f} us  x{ratio:.2f}")  # fmt: skip
    spread = statistics.median(abs(r["jitbench_s"] / r["theirs_s"] - 1) for r in rows)
    wait = record["wait_difference_s"] * 1e6
    print(f"median difference {spread:.1%}; jax.block_until_ready adds {wait:.2f} us; {path}")


if __name__ == "__main__":
    main()
