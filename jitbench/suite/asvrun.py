"""Running asv on this suite from code: a copy of the checkout's config with overrides, and
the command (``python -m jitbench.suite.asvrun``, used by the noxfile and ``jitbench validate``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from jitbench import child
from jitbench.child import Json
from jitbench.errors import JitbenchError
from jitbench.suite.grid import check_environment

CONFIG = "asv.conf.json"


def checkout(start: str | Path = ".") -> Path:
    """The jitbench checkout holding ``start``: the first folder up with the suite in it."""
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG).is_file() and (folder / "benchmarks").is_dir():
            return folder
    raise JitbenchError(
        f"no jitbench checkout at or above {str(here)!r} (asv.conf.json and benchmarks/); "
        "run this from a clone of the repository"
    )


def git(folder: Path, *args: str, failure: str | None = None) -> str | None:
    """``git ARGS`` run in ``folder``: its output, without the final newline; where git fails,
    None, or with ``failure`` given a JitbenchError of it and git's complaint."""
    done = child.run(["git", *args], what="git", cwd=folder)
    if done.status == 0:
        return done.stdout.rstrip("\n")
    if failure is None:
        return None
    raise JitbenchError(f"{failure}: {done.stderr.strip()}")


def load_config(root: Path) -> dict[str, Json]:
    """The checkout's asv.conf.json, read with asv's own reader (it allows // comments)."""
    from asv.util import load_json  # asv: an optional dependency, imported where used

    return load_json(str(root / CONFIG), js_comments=True)


class AsvConfig:
    """A copy of the checkout's asv config in ``folder``, with overrides; runs asv with it."""

    def __init__(
        self, root: Path, folder: Path, pins: Mapping[str, str] | None = None, **overrides: Json
    ) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        config = load_config(root)
        config.update(repo=str(root), benchmark_dir=str(root / "benchmarks"))
        for key in ("results_dir", "html_dir", "env_dir"):
            config[key] = str((root / config[key]).resolve())
        config.update(overrides)
        if pins:
            # Each pin at one version, moved last (why: docs/design.md).
            matrix = config.get("matrix", {})
            req = {k: v for k, v in matrix.get("req", {}).items() if k not in pins}
            config["matrix"] = {**matrix, "req": {**req, **{k: [v] for k, v in pins.items()}}}
        self.config = config
        self.path = folder / CONFIG
        self.path.write_text(json.dumps(config, indent=2))

    @property
    def results(self) -> Path:
        return Path(self.config["results_dir"])

    def run(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        ok: Sequence[int] = (0,),
        log: Path | None = None,
    ) -> int:
        """``python -m asv ARGS --config <copy>``; a status outside ``ok``, or a bad grid
        variable in ``env`` (default this process's, checked before asv starts), raises."""
        check_environment(os.environ if env is None else env)
        described = self.results / "benchmarks.json"
        kept = described.read_bytes() if described.is_file() else None
        command = [sys.executable, "-m", "asv", args[0], "--config", str(self.path), *args[1:]]
        with contextlib.nullcontext() if log is None else log.open("a") as stream:
            done = child.run(command, what="asv", cwd=self.folder, env=env, capture=False,
                             log=stream)  # fmt: skip
        if kept is not None and described.is_file():
            before = json.loads(kept)
            merged = merge_description(before, json.loads(described.read_text()))
            if merged is before:  # the run's grid is one the description holds: as it was
                described.write_bytes(kept)
            else:
                from asv.util import write_json

                write_json(str(described), merged)  # asv's own layout
        if done.status not in ok:
            where = f" (see {log})" if log is not None else ""
            raise JitbenchError(f"asv {args[0]} exited with {done.status}{where}")
        return done.status


def merge_description(before: dict[str, Json], after: dict[str, Json]) -> dict[str, Json]:
    """results/benchmarks.json after a run: asv rewrites it with the run's own grid (a
    narrowed one, this host's devices), which would drop the parameters of results already
    there (the dashboard shows only described ones) and change a tracked file at every run.
    So each benchmark's parameters are the union of both, in the order first seen; a
    benchmark the run describes anew (its code changed) is taken from the run. ``before``
    itself where the run added nothing."""
    merged = {}
    for name, entry in after.items():
        old = before.get(name)
        if not isinstance(old, dict) or {**old, "params": None} != {**entry, "params": None}:
            merged[name] = entry
            continue
        params = [
            [*values, *(v for v in new if v not in values)]
            for values, new in zip(old["params"], entry["params"], strict=True)
        ]
        merged[name] = {**entry, "params": params}
    merged.update({name: entry for name, entry in before.items() if name not in merged})
    return before if merged == before else merged


def _statuses(text: str) -> list[int]:
    try:
        return [int(status) for status in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a list of exit statuses such as 0,2"
        ) from None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m jitbench.suite.asvrun [overrides] -- ASV ARGS``: asv with a config copy."""
    parser = argparse.ArgumentParser(
        prog="python -m jitbench.suite.asvrun", description=main.__doc__
    )
    parser.add_argument("--folder", type=Path, required=True, help="where the config copy goes")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="a config key and its JSON value, e.g. results_dir='\"/tmp/r\"' (repeatable)",
    )
    parser.add_argument(
        "--pin",
        action="append",
        default=[],
        metavar="PACKAGE=VERSION",
        help="install this version in asv's environments, e.g. jax=0.12.0.1 (repeatable)",
    )
    parser.add_argument(
        "--ok", type=_statuses, default="0", help="accepted exit statuses, e.g. 0,2"
    )
    parser.add_argument("asv", nargs=argparse.REMAINDER, help="asv's own arguments after --")
    args = parser.parse_args(argv)
    overrides = {}
    for item in args.set:
        key, _, value = item.partition("=")
        try:
            overrides[key] = json.loads(value)
        except json.JSONDecodeError:
            parser.error(f"--set {key}: {value!r} is not JSON")
    pins = dict(item.partition("=")[::2] for item in args.pin)
    if any(not name or not version for name, version in pins.items()):
        parser.error(f"--pin takes PACKAGE=VERSION, got {args.pin}")
    asv_args = args.asv[1:] if args.asv[:1] == ["--"] else args.asv
    if not asv_args:
        parser.error("no asv command after --")
    try:
        check_environment(os.environ)  # before the config copy is written
        config = AsvConfig(checkout(), args.folder.resolve(), pins, **overrides)
        return config.run(*asv_args, env=os.environ, ok=args.ok)
    except JitbenchError as exc:
        print(f"jitbench.suite.asvrun: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
