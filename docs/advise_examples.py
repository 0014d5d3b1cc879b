"""Record ``jitbench advise`` on the docs' examples, for docs/advise.md's generated blocks.

    python docs/advise_examples.py [NAME ...] [--out FOLDER]

Each example's advice is written as JSON to ``docs/advise/NAME.json`` (``--out``: to
``FOLDER/NAME.json``, where the checkout cannot be written: a device host's copy) with the
command that made it and the JAX release; ``docs/make_readme.py`` renders the
committed files (timings move from run to run, so the page shows a recorded run).
Instructions are counted where Valgrind is present (minutes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "advise"
# Each example: its file's name, the folder on PYTHONPATH, and the command's arguments.
EXAMPLES = {
    "seed_class": ("tests", ["user_models:custom_class_target"]),
    "flax_mlp": ("docs/examples", ["flax_mlp:model"]),
    # On a TPU host (no Valgrind there): flax's MNIST CNN called as written.
    "flax_cnn_tpu": ("docs/examples", ["flax_cnn:as_written", "--device", "tpu", "--no-count"]),
}


def record(name: str, out: Path = OUT) -> Path:
    """Run the example's ``jitbench advise --format json`` and write its file in ``out``."""
    import jax

    folder, args = EXAMPLES[name]
    search = os.pathsep.join(filter(None, (str(ROOT / folder), os.environ.get("PYTHONPATH"))))
    env = {**os.environ, "PYTHONPATH": search}
    start = time.monotonic()
    # Its progress lines go to stderr, as the user sees them.
    done = subprocess.run(
        [sys.executable, "-m", "jitbench", "advise", *args, "--format", "json"],
        stdout=subprocess.PIPE, text=True, check=True, env=env, cwd=ROOT,
    )  # fmt: skip
    command = f"PYTHONPATH={folder} jitbench advise {' '.join(args)}"
    data = {"command": command, "jax": jax.__version__, "seconds": round(time.monotonic() - start),
            "advice": json.loads(done.stdout)}  # fmt: skip
    out.mkdir(exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(data, indent=1) + "\n")
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"the examples to record (default: all): {', '.join(EXAMPLES)}",
    )
    parser.add_argument("--out", type=Path, default=OUT,
                        help="the folder written (default: docs/advise)")  # fmt: skip
    args = parser.parse_args()
    for name in args.names:
        if name not in EXAMPLES:
            parser.error(f"unknown example {name!r}; valid: {', '.join(EXAMPLES)}")
    if not args.out.parent.is_dir() or (args.out.exists() and not args.out.is_dir()):
        parser.error(f"--out {str(args.out)!r}: not a folder, nor one whose parent exists")
    for example in args.names or EXAMPLES:
        print(record(example, args.out))
