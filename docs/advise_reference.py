"""A hand-written reference for ``jitbench advise`` on a device: no jitbench, plain loops.

flax's MNIST CNN (its nnx tutorial's model: conv 1->32 and 32->64, dense 3136->256->10, a
batch of 32 images 28x28x1) called as written and under each way of jitting its call that
flax documents, each timed as a training loop meets it:

- ``dispatch``: one call until it returns, the wait for its result outside the window;
- ``sync``: one call and the wait for its result;
- ``loop``: ``n`` calls back to back and one wait at the end, per call (the state fed back
  where the way returns it);
- ``device``: the device's own time per call: the compiled forward pass run ``k`` times in
  one program (``lax.fori_loop``, each pass fed by the last), the difference of two ``k``
  over the difference of passes, so the host's dispatch and the round trip cancel out;
- ``first``: the first call with every in-memory cache cleared, without JAX's persistent
  compilation cache and with it filled by an earlier compile (``--fresh WAYS``: also in a
  new process per way, with the cache filled by a process before it, as a restarted script
  makes it, before this process opens the device: a chip takes one process at a time).

Usage: ``python docs/advise_reference.py [--device tpu] [--fresh WAY,...] [--out FILE]``; prints a
table and writes JSON (default ``docs/advise/reference-<platform>.json``).
``python docs/advise_reference.py --check ADVICE_JSON [--out REFERENCE_JSON]`` sets the figures
of ``jitbench advise --format json`` on the same model beside the reference's, way by way, and
exits 1 where a loop per call is more than 10% from the reference's, or a first call with the
cache filled more than 15% from a fresh process's (where the reference has them).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import jax
from flax import nnx

HERE = Path(__file__).resolve().parent
SAMPLES = 7
# Calls per sample: as many as fit in SAMPLE_S seconds, within [MIN_CALLS, MAX_CALLS].
SAMPLE_S = 0.1
MIN_CALLS, MAX_CALLS = 10, 300
BATCH = 32


class CNN(nnx.Module):
    """flax's MNIST tutorial model, as its docs write it."""

    def __init__(self, *, rngs: nnx.Rngs):
        self.conv1 = nnx.Conv(1, 32, kernel_size=(3, 3), rngs=rngs)
        self.conv2 = nnx.Conv(32, 64, kernel_size=(3, 3), rngs=rngs)
        self.avg_pool = partial(nnx.avg_pool, window_shape=(2, 2), strides=(2, 2))
        self.linear1 = nnx.Linear(3136, 256, rngs=rngs)
        self.linear2 = nnx.Linear(256, 10, rngs=rngs)

    def __call__(self, x):
        x = self.avg_pool(nnx.relu(self.conv1(x)))
        x = self.avg_pool(nnx.relu(self.conv2(x)))
        x = x.reshape(x.shape[0], -1)
        x = nnx.relu(self.linear1(x))
        return self.linear2(x)


def make(device):
    with jax.default_device(device):
        model = CNN(rngs=nnx.Rngs(0))
        x = jax.random.normal(jax.random.key(1), (BATCH, 28, 28, 1))
    return model, jax.device_put(x, device)


def _has_tree_mode() -> bool:
    try:
        nnx.jit(lambda m: None, graph=False)
    except TypeError:
        return False
    return True


def _is_pytree(model) -> bool:
    return len(jax.tree_util.tree_leaves(model)) > 0


def ways(model):
    """name -> (a function of no argument making one call, returning what to wait for)."""
    call = CNN.__call__
    found = {"as written": lambda x: model(x)}
    jitted = nnx.jit(call)
    found["nnx.jit"] = lambda x: jitted(model, x)
    if _has_tree_mode():
        tree = nnx.jit(call, graph=False)
        found["nnx.jit(graph=False)"] = lambda x: tree(model, x)
        if hasattr(nnx, "jit_partial"):
            partial_ = nnx.jit_partial(call, model, graph=False)
            found["nnx.jit_partial"] = partial_
    if hasattr(nnx, "cached_partial"):
        cached = nnx.cached_partial(nnx.jit(call), model)
        found["nnx.cached_partial"] = cached
    if _is_pytree(model):
        plain = jax.jit(call)
        found["jax.jit, object as argument"] = lambda x: plain(model, x)
    graphdef, state = nnx.split(model)
    box = {"state": state}

    @jax.jit
    def split_step(graphdef, state, x):
        m = nnx.merge(graphdef, state)
        out = call(m, x)
        return out, nnx.state(m)

    def split_call(x):
        out, box["state"] = split_step(graphdef, box["state"], x)
        return out

    found["jax.jit over nnx.split"] = split_call

    @jax.jit
    def output_only(state, x):  # closes over this model's graphdef, returns the output alone
        return call(nnx.merge(graphdef, state), x)

    found["jax.jit over nnx.split, output only"] = lambda x: output_only(state, x)
    return found


def _calls(seconds: float) -> int:
    return int(min(MAX_CALLS, max(MIN_CALLS, SAMPLE_S / max(seconds, 1e-9))))


def time_way(call, x) -> dict[str, float]:
    wait = jax.block_until_ready
    wait(call(x))
    start = time.perf_counter()
    wait(call(x))
    n = _calls(time.perf_counter() - start)
    dispatch, sync, loop = [], [], []
    clock = time.perf_counter
    for _ in range(SAMPLES):
        spent = 0.0
        for _ in range(n):
            start = clock()
            out = call(x)
            spent += clock() - start
            wait(out)
        dispatch.append(spent / n)
        start = clock()
        for _ in range(n):
            wait(call(x))
        sync.append((clock() - start) / n)
        start = clock()
        for _ in range(n):
            out = call(x)
        wait(out)
        loop.append((clock() - start) / n)
    med = statistics.median
    return {"dispatch": med(dispatch), "sync": med(sync), "loop": med(loop), "calls": n}


def device_time(model, x) -> float:
    """Seconds of the chip's own time per forward pass (module docstring)."""
    graphdef, state = nnx.split(model)

    @partial(jax.jit, static_argnums=2)
    def passes(state, x, k):
        def one(i, x):
            out = nnx.merge(graphdef, state)(x)
            return x + 1e-30 * out.mean()  # each pass fed by the last: none is dropped

        return jax.lax.fori_loop(0, k, one, x)

    def seconds(k):
        jax.block_until_ready(passes(state, x, k))
        best = []
        for _ in range(SAMPLES):
            start = time.perf_counter()
            jax.block_until_ready(passes(state, x, k))
            best.append(time.perf_counter() - start)
        return statistics.median(best)

    short, long = 10, 110
    return (seconds(long) - seconds(short)) / (long - short)


def use_cache(path: str | None) -> None:
    from jax.experimental.compilation_cache import compilation_cache

    jax.config.update("jax_enable_compilation_cache", path is not None)
    if path is not None:
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)
    compilation_cache.reset_cache()


def first_call(device, name: str, cache: str | None) -> float:
    """The first call of a new model under way ``name``, every in-memory cache cleared."""
    use_cache(cache)
    jax.clear_caches()
    model, x = make(device)
    call = ways(model)[name]
    start = time.perf_counter()
    jax.block_until_ready(call(x))
    return time.perf_counter() - start


def first_calls(device, names) -> dict[str, dict[str, float]]:
    found = {}
    for name in names:
        with tempfile.TemporaryDirectory() as cache:
            cold = first_call(device, name, None)
            first_call(device, name, cache)  # fills it
            filled = first_call(device, name, cache)
        found[name] = {"no cache": cold, "cache filled": filled}
    use_cache(None)
    return found


def fresh_first_calls(platform_: str | None, names) -> dict[str, dict[str, float]]:
    """The first call with the cache filled as a restarted script makes it: one process fills
    the cache with every way's programs, then a new process per way makes its first call."""
    found = {}
    with tempfile.TemporaryDirectory() as cache:
        base = [sys.executable, __file__, "--device", platform_ or "", "--cache", cache]
        filled = subprocess.run([*base, "--fill", ",".join(names)], capture_output=True,
                                text=True, check=True)  # fmt: skip
        for name in json.loads(filled.stdout.splitlines()[-1]):
            done = subprocess.run([*base, "--first", name], capture_output=True, text=True,
                                  check=True)  # fmt: skip
            found[name] = {"cache filled": float(done.stdout.split()[-1])}
    return found


def fresh_first_call(device, name: str, cache: str) -> float:
    """In a new process: the cache on from the start, a model built, its first call timed."""
    use_cache(cache)
    model, x = make(device)
    call = ways(model)[name]
    start = time.perf_counter()
    jax.block_until_ready(call(x))
    return time.perf_counter() - start


# jitbench advise's figure (its JSON row's key) beside the reference's, per way.
CHECKED = (("loop", "loop"), ("dispatch", "dispatch"), ("cached", "sync"))
CHECK_WITHIN = 0.10
# A fresh process's first call with the cache filled moves more from process to process.
FILLED_WITHIN = 0.15


def check(advice_path: Path, reference_path: Path) -> int:
    """Print each way's figures of the advice over the reference's; 1 where a loop per call is
    more than CHECK_WITHIN from the reference's (or a way of the advice has none), else 0."""
    advice = json.loads(advice_path.read_text())
    advice = advice.get("advice", advice)  # a file of docs/advise_examples.py, or the JSON itself
    reference = json.loads(reference_path.read_text())
    worst = filled_worst = 0.0
    for row in advice["rows"]:
        ours, theirs = row["way"], reference["ways"].get(row["way"])
        if row["reason"] or theirs is None:
            print(f"{ours:28} not compared: {row['reason'] or 'not in the reference'}")
            continue
        cells = []
        for key, name in CHECKED:
            ratio = row[key]["median"] / theirs[name]
            cells.append(f"{key} {row[key]['median'] * 1e6:8.1f} / {theirs[name] * 1e6:8.1f} us "
                         f"({ratio:.2f})")  # fmt: skip
            if key == "loop":
                worst = max(worst, abs(ratio - 1))
        first = reference["first_call"].get(ours, {})
        if row.get("cold") and "no cache" in first:
            cells.append(f"cold {row['cold']['median']:.3f} / {first['no cache']:.3f} s")
        fresh = (reference.get("first_call_fresh_process") or {}).get(ours, {})
        if row.get("cold_filled") and "cache filled" in fresh:
            ratio = row["cold_filled"]["median"] / fresh["cache filled"]
            filled_worst = max(filled_worst, abs(ratio - 1))
            cells.append(f"cache filled {row['cold_filled']['median'] * 1e3:.1f} / "
                         f"{fresh['cache filled'] * 1e3:.1f} ms ({ratio:.2f})")  # fmt: skip
        elif fresh:
            filled_worst = float("inf")  # a way the reference restarted and advise did not
        own = row.get("device_time")
        if own is not None:
            cells.append(f"device {own * 1e6:.1f} / {reference['device_seconds'] * 1e6:.1f} us")
        print(f"{ours:28} " + "; ".join(cells))
    print(f"loop per call: at most {worst:.1%} from the reference (within {CHECK_WITHIN:.0%}: "
          f"{'yes' if worst <= CHECK_WITHIN else 'NO'})")  # fmt: skip
    ok = worst <= CHECK_WITHIN
    if reference.get("first_call_fresh_process"):
        print(
            f"cache filled: at most {filled_worst:.1%} from a fresh process's (within "
            f"{FILLED_WITHIN:.0%}: {'yes' if filled_worst <= FILLED_WITHIN else 'NO'})"
        )
        ok = ok and filled_worst <= FILLED_WITHIN
    return 0 if ok else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="platform (default: JAX's default)")
    parser.add_argument(
        "--fresh",
        default="",
        help="ways (comma-separated, or all) whose first calls are timed in new processes too",
    )
    parser.add_argument("--first", help=argparse.SUPPRESS)
    parser.add_argument("--fill", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    parser.add_argument("--out")
    parser.add_argument("--check", type=Path, help="jitbench advise's JSON to set beside --out's")
    args = parser.parse_args()
    if args.check:
        reference = Path(args.out) if args.out else HERE / "advise" / "reference-tpu.json"
        sys.exit(check(args.check, reference))
    # Before this process opens the device: a chip takes one process at a time.
    fresh = fresh_first_calls(args.device, args.fresh.split(",")) if args.fresh else None
    device = jax.devices(args.device)[0] if args.device else jax.devices()[0]
    if args.fill:
        model, _ = make(device)
        names = list(ways(model)) if args.fill == "all" else args.fill.split(",")
        for name in names:
            fresh_first_call(device, name, args.cache)
        print(json.dumps(names))
        return
    if args.first:
        print(fresh_first_call(device, args.first, args.cache))
        return
    model, x = make(device)
    names = list(ways(model))
    rows = {}
    for name, call in ways(model).items():
        rows[name] = time_way(call, x)
        w = rows[name]
        print(
            f"{name:28} dispatch {w['dispatch'] * 1e6:8.1f} sync {w['sync'] * 1e6:8.1f} "
            f"loop {w['loop'] * 1e6:8.1f} us ({w['calls']} calls)", flush=True,
        )  # fmt: skip
    own = device_time(model, x)
    print(f"device's own time per forward pass: {own * 1e6:.1f} us", flush=True)
    firsts = first_calls(device, names)
    for name, row in firsts.items():
        print(f"{name:28} first call: " + ", ".join(f"{k} {v:.3f} s" for k, v in row.items()))
    for name, row in (fresh or {}).items():
        print(f"{name:28} fresh process: " + ", ".join(f"{k} {v:.3f} s" for k, v in row.items()))
    record = {
        "machine": platform.node(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "jax": jax.__version__,
        "flax": __import__("flax").__version__,
        "device": f"{device.platform} ({device.device_kind})",
        "samples": SAMPLES,
        "ways": rows,
        "device_seconds": own,
        "first_call": firsts,
        "first_call_fresh_process": fresh,
    }
    out = Path(args.out) if args.out else HERE / "advise" / f"reference-{device.platform}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
