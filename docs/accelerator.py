"""A hand-written reference for the accelerator rows: no jitbench, plain twins, plain loops.

Times two ways of jitting the suite's default method, written by hand as their users write
them (``helper_function``: a jitted function with the flag static, called from the method;
``flax_nnx_jit``: an ``nnx.Module`` holding its array in an ``nnx.Param``, its method under
``nnx.jit``) and ``eager``, on one device, per size:

- ``dispatch``: one call until it returns, the wait for its result outside the window;
- ``sync``: one call and the wait for its result;
- ``loop``: ``n`` calls back to back and one wait at the end, per call;
- ``output_bytes``: what each way's compiled program writes per call
  (``memory_analysis().output_size_in_bytes``): a program that returns its state copies it.

Usage: ``python docs/accelerator.py [--device tpu] [--sizes 10,1000000] [--machine NAME]``.
It writes ``docs/accelerator/<machine>.json`` (machine default: the hostname) and prints
a table; jitbench's device rows are checked against it (docs/accelerator.md).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import time
from functools import partial
from pathlib import Path

import jax
import numpy as np

OUT = Path(__file__).resolve().parent / "accelerator"
SAMPLES = 5
# Calls per sample: as many as fit in this many seconds, within [MIN_CALLS, MAX_CALLS].
SAMPLE_S = 0.05
MIN_CALLS, MAX_CALLS = 10, 200


def body(x, mul, y):
    acc = x * y
    acc = acc * y + mul if mul % 2 else acc + mul
    return acc


@partial(jax.jit, static_argnums=0)
def _calc(mul, x, y):
    return body(x, mul, y)


class HelperFunction:
    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    def calc(self, y):
        return _calc(self.mul, self.x, y)


class Eager:
    def __init__(self, x, mul):
        self.x = x
        self.mul = mul

    def calc(self, y):
        return body(self.x, self.mul, y)


def _nnx_class():
    from flax import nnx

    class FlaxNnxJit(nnx.Module):
        def __init__(self, x, mul):
            self.x = nnx.Param(x)
            self.mul = mul

        @nnx.jit
        def calc(self, y):
            acc = self.x[...] * y
            acc = acc * y + self.mul if self.mul % 2 else acc + self.mul
            return acc

    return FlaxNnxJit


def _calls(seconds_per_call: float) -> int:
    return int(min(MAX_CALLS, max(MIN_CALLS, SAMPLE_S / max(seconds_per_call, 1e-9))))


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def time_way(calc, y) -> dict[str, float]:
    wait = jax.block_until_ready
    wait(calc(y))
    start = time.perf_counter()
    wait(calc(y))
    n = _calls(time.perf_counter() - start)
    dispatch, sync, loop = [], [], []
    for _ in range(SAMPLES):
        spent = 0.0
        for _ in range(n):
            start = time.perf_counter()
            out = calc(y)
            spent += time.perf_counter() - start
            wait(out)
        dispatch.append(spent / n)
        start = time.perf_counter()
        for _ in range(n):
            wait(calc(y))
        sync.append((time.perf_counter() - start) / n)
        start = time.perf_counter()
        for _ in range(n):
            out = calc(y)
        wait(out)
        loop.append((time.perf_counter() - start) / n)
    return {
        "dispatch": _median(dispatch), "sync": _median(sync), "loop": _median(loop), "calls": n,
    }  # fmt: skip


def output_bytes(compiled) -> int | None:
    try:
        return int(compiled.memory_analysis().output_size_in_bytes)
    except Exception:  # a backend without memory analysis
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="platform (default: JAX's default)")
    parser.add_argument("--sizes", default="10,1000,100000,1000000,10000000,100000000")
    parser.add_argument("--machine", default=platform.node())
    args = parser.parse_args()
    device = jax.devices(args.device)[0] if args.device else jax.devices()[0]
    sizes = [int(s) for s in args.sizes.split(",")]
    ways = {"helper_function": HelperFunction, "eager": Eager}
    try:
        ways["flax_nnx_jit"] = _nnx_class()
    except ImportError:
        pass
    rows = []
    rng = np.random.default_rng(0)
    for size in sizes:
        host = rng.standard_normal(size).astype(np.float32)
        x, y = jax.device_put(host, device), jax.device_put(host[::-1].copy(), device)
        row = {"size": size}
        for name, cls in ways.items():
            row[name] = time_way(cls(x, 1).calc, y)
        helper_out = output_bytes(_calc.lower(1, x, y).compile())
        row["output_bytes"] = {"helper_function": helper_out}
        if "flax_nnx_jit" in ways:
            model = ways["flax_nnx_jit"](x, 1)
            lower = getattr(type(model).calc, "lower", None)
            if lower is not None:
                row["output_bytes"]["flax_nnx_jit"] = output_bytes(lower(model, y).compile())
        rows.append(row)
        cells = " ".join(
            f"{name} {w['dispatch'] * 1e6:.0f}/{w['sync'] * 1e6:.0f}/{w['loop'] * 1e6:.0f}"
            for name, w in ((n, row[n]) for n in ways)
        )
        bytes_out = row["output_bytes"]
        print(f"size {size:>11,}: {cells} (dispatch/sync/loop us), output bytes {bytes_out}")
    OUT.mkdir(exist_ok=True)
    record = {
        "machine": args.machine,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "jax": jax.__version__,
        "device": f"{device.platform} ({device.device_kind})",
        "samples": SAMPLES,
        "rows": rows,
    }
    path = OUT / f"{args.machine}-{device.platform}.json"
    path.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
