"""asv result files as one tidy pandas table: a row per (file, benchmark, parameter
combination), each parameter in its own typed column (design notes: docs/design.md)."""

from __future__ import annotations

import ast
import itertools
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
from asv import util
from asv.benchmarks import Benchmarks
from asv.machine import Machine
from asv.results import Results
from packaging.version import InvalidVersion, Version

from jitbench.errors import JitbenchError
from jitbench.jsondata import JsonObject
from jitbench.results.project import commit_of
from jitbench.suite import asvcompat

# Parameter columns come in this order; parameters unknown to the suite follow.
PARAM_ORDER = (
    "strategy", "size", "device", "change", "n_arrays", "n_ops", "depth", "n_devices", "instances",
    "frames", "tracebacks",
)  # fmt: skip
STAT_KEYS = ("ci_99_a", "ci_99_b", "q_25", "q_75", "number", "repeat")
# asv's benchmark kinds by method-name prefix; timeraw is timed, only in a fresh process.
KINDS = {"time": "time", "timeraw": "time", "track": "track", "peakmem": "peakmem", "mem": "mem"}
DEFAULT_UNITS = {"time": "seconds", "peakmem": "bytes", "mem": "bytes"}
_JAX_IN_ENV_NAME = re.compile(r"jax[=_-]?(\d+(?:\.[0-9A-Za-z]+)*)")


def load(
    results_dir: str | Path = "results",
    *,
    machine: str | None = None,
    commit: str | None = None,
    env: str | None = None,
    skip_bad: bool = False,
) -> pd.DataFrame:
    """Read an asv results directory into a tidy frame: a row per (file, benchmark, parameter
    combination), each parameter in its own typed column.

    ``commit`` may be a unique prefix of a full hash. Unknown names raise
    JitbenchError listing the available ones; so does an unreadable file unless
    ``skip_bad``, which warns on stderr and keeps the rest.
    """
    root = Path(results_dir)
    if root.exists() and not root.is_dir():
        raise JitbenchError(
            f"results directory {str(root)!r} is a file; pass asv's results_dir "
            "(a folder with one folder per machine)"
        )
    if not root.is_dir():
        raise JitbenchError(f"results directory {str(root)!r} does not exist; run asv first")
    benchmarks = _load_benchmarks_json(root, skip_bad)
    records = []
    for path, machine_name in _result_paths(root, skip_bad):
        try:
            rows = list(_records(Results.load(str(path), machine_name), benchmarks))
        except (util.UserError, OSError, KeyError, TypeError, ValueError, AttributeError) as exc:
            _bad_file(path, exc, skip_bad)
        else:
            records.extend(rows)
    if not records:
        raise JitbenchError(f"no asv results in {str(root)!r}; run asv first")
    return select(_frame(records), machine=machine, commit=commit, env=env)


def benchmark_names(results_dir: str | Path) -> list[str]:
    """The benchmarks of the suite that wrote ``results_dir``, by asv's names: those its
    benchmarks.json lists (asv writes every benchmark it found at its last run); none where
    it is absent or unreadable (:func:`load` says so)."""
    return list(_load_benchmarks_json(Path(results_dir), skip_bad=True, quiet=True))


def select(
    frame: pd.DataFrame,
    *,
    machine: str | None = None,
    commit: str | None = None,
    env: str | None = None,
) -> pd.DataFrame:
    """Rows of one machine, commit (prefix) and/or env; unknown ones raise JitbenchError."""
    if machine is not None:
        frame = frame[frame["machine"] == _choose("machine", machine, frame["machine"])]
    if commit is not None:
        frame = frame[frame["commit"] == resolve_commit(frame, commit)]
    if env is not None:
        frame = frame[frame["env"] == _choose("env", env, frame["env"])]
    return frame.reset_index(drop=True)


def resolve_commit(frame: pd.DataFrame, prefix: str) -> str:
    """The one full commit hash in ``frame`` that starts with ``prefix``, or that git names
    ``prefix`` (a branch, a tag, ``HEAD~1``) in the project of the asv.conf.json here."""
    commits = commits_by_date(frame)
    matches = [c for c in commits if c.startswith(prefix.lower())] if prefix else []
    if not matches and (named := commit_of(prefix)) is not None:
        if named in commits:
            return named
        prefix = f"{prefix} ({named[:8]})"
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise JitbenchError(
            f"commit {prefix!r} is ambiguous: matches {', '.join(c[:12] for c in matches)}"
        )
    shown = ", ".join(c[:8] for c in commits[:10])
    more = f" and {len(commits) - 10} older" if len(commits) > 10 else ""
    raise JitbenchError(
        f"no results for commit {prefix!r}; available (newest first): {shown}{more}"
    )


def commits_by_date(frame: pd.DataFrame) -> list[str]:
    """Distinct commits in ``frame``, newest commit date first."""
    order = frame.sort_values(["date", "started_at", "commit"], ascending=False, na_position="last")
    return list(dict.fromkeys(order["commit"]))


def latest(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of the newest commit (by commit date) of each machine."""
    newest = {m: commits_by_date(rows)[0] for m, rows in frame.groupby("machine", sort=True)}
    keep = frame["commit"] == frame["machine"].map(newest)
    return frame[keep].reset_index(drop=True)


def release_key(version: str) -> tuple[int, Version, str]:
    """Sort key of a release string: by version (PEP 440), unparsable ones last by text."""
    try:
        return (0, Version(version), "")
    except InvalidVersion:
        return (1, Version("0"), version)


def param_columns(frame: pd.DataFrame) -> list[str]:
    """The parameter columns of a frame from :func:`load`, in suite order."""
    first = frame.columns.get_loc("kind") + 1
    return list(frame.columns[first : frame.columns.get_loc("value")])


def _choose(what: str, name: str, values: pd.Series) -> str:
    available = sorted(set(values.dropna()))
    if name not in available:
        raise JitbenchError(
            f"no results for {what} {name!r}; available: {', '.join(available) or 'none'}"
        )
    return name


def _bad_file(path: Path, exc: Exception, skip_bad: bool) -> None:
    reason = " ".join(str(exc).split())
    if not skip_bad:
        raise JitbenchError(
            f"cannot read asv file {str(path)!r} ({reason}); pass --skip-bad to load the rest"
        )
    print(f"jitbench: warning: skipping unreadable {path}: {reason}", file=sys.stderr)


def _load_benchmarks_json(root: Path, skip_bad: bool, quiet: bool = False) -> dict[str, JsonObject]:
    """Units and parameter names, which asv keeps only in results/benchmarks.json."""
    path = root / "benchmarks.json"
    if not path.is_file():
        return {}
    try:
        data = util.load_json(str(path), api_version=Benchmarks.api_version)
    except (util.UserError, OSError) as exc:
        if not quiet:
            _bad_file(path, exc, skip_bad)
        return {}
    return {name: info for name, info in data.items() if isinstance(info, dict)}


def _result_paths(root: Path, skip_bad: bool) -> Iterator[tuple[Path, str]]:
    """(result file, machine name) pairs; a broken machine.json names the file (docs/design.md)."""
    for machine_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        files = sorted(p for p in machine_dir.glob("*.json") if p.name != "machine.json")
        if not files:
            continue
        machine_json = machine_dir / "machine.json"
        try:
            info = util.load_json(str(machine_json), api_version=Machine.api_version)
            name = info["machine"]
            if not isinstance(name, str):
                raise util.UserError(f"machine name is {name!r}, not a string")
        except (util.UserError, OSError, KeyError, TypeError) as exc:
            _bad_file(machine_json, exc, skip_bad)
            continue
        for path in files:
            yield path, name


def _records(result: Results, benchmarks: dict[str, JsonObject]) -> Iterator[JsonObject]:
    meta = {
        "machine": result.params.get("machine"),
        "commit": result.commit_hash,
        "date": result.date,
        "env": result.env_name,
        "python": result.params.get("python"),
        "jax": _jax_version(result),
        "requirements": requirements(result),
    }
    for name in sorted(result.get_all_result_keys()):
        params = result.get_result_params(name)
        info = benchmarks.get(name, {})
        names = info.get("param_names") or []
        if len(names) != len(params):
            names = [f"param{i + 1}" for i in range(len(params))]
        kind = KINDS.get(name.rsplit(".", 1)[-1].split("_", 1)[0], "track")
        unit = info.get("unit") or DEFAULT_UNITS.get(kind)
        values = result.get_result_value(name, params)
        stats = result.get_result_stats(name, params)
        samples = result.get_result_samples(name, params)
        for combo, value, stat, sample in zip(
            itertools.product(*params), values, stats, samples, strict=True
        ):
            stat = stat or {}
            yield {
                **meta,
                "benchmark": name,
                "kind": kind,
                "params": dict(zip(names, combo, strict=True)),
                "value": value,
                "unit": unit,
                **{key: stat.get(key) for key in STAT_KEYS},
                "samples": sample,
                "status": _status(value),
                "version": result.benchmark_version.get(name),
                "started_at": result.started_at.get(name),
                "case": f"{name}({', '.join(combo)})" if combo else name,
            }


def _status(value: object) -> str:
    # asv stores a failed benchmark as None and a skipped one (NotImplementedError) as NaN.
    if value is None:
        return "failed"
    if isinstance(value, float) and math.isnan(value):
        return "skipped"
    return "ok"


def requirements(result: Results) -> tuple[tuple[str, str], ...]:
    """The packages a run's environment pinned, sorted: (name, version) of each requirement
    asv recorded with a version (``""``, the newest release, pins nothing); the name without
    an installer prefix or extras (``pip+jax``, ``jax[cuda12]``: ``jax``)."""
    found = asvcompat.result_requirements(result)
    return tuple(
        sorted(
            (_package(key), value)
            for key, value in found.items()
            if isinstance(value, str) and value
        )
    )


def _package(requirement: str) -> str:
    return requirement.split("+")[-1].split("[")[0]


def _jax_version(result: Results) -> str | None:
    """The ``jax`` requirement (``jax``, ``pip+jax``, ``jax[cuda12]``...), else the env name's."""
    for source in (result.params, asvcompat.result_requirements(result)):
        for key, value in source.items():
            if _package(key) == "jax" and isinstance(value, str) and value:
                return value
    match = _JAX_IN_ENV_NAME.search(result.env_name or "")
    return match.group(1) if match else None


def _frame(records: list[JsonObject]) -> pd.DataFrame:
    seen = dict.fromkeys(name for r in records for name in r["params"])
    names = [n for n in PARAM_ORDER if n in seen] + [n for n in seen if n not in PARAM_ORDER]
    params = pd.DataFrame({n: _typed([r["params"].get(n) for r in records]) for n in names})
    # Columns in the records' order, the parameters in place of their dict.
    frame = pd.DataFrame(records)
    at = frame.columns.get_loc("params")
    frame = pd.concat([frame.iloc[:, :at], params, frame.iloc[:, at + 1 :]], axis=1)
    text = ["machine", "commit", "env", "python", "jax", "benchmark", "kind", "unit"]
    text += ["status", "version", "case"]
    frame[text] = frame[text].astype("string")
    for key in ("date", "started_at"):
        frame[key] = pd.to_datetime(frame[key], unit="ms", utc=True)
    for key in ("value", "ci_99_a", "ci_99_b", "q_25", "q_75"):
        frame[key] = pd.to_numeric(frame[key], errors="coerce").astype("float64")
    for key in ("number", "repeat"):
        frame[key] = pd.to_numeric(frame[key], errors="coerce").astype("Int64")
    return frame


def _typed(reprs: list[str | None]) -> pd.Series:
    """asv stores parameter values as repr strings: give them back their Python type."""
    values = [None if r is None else _literal(r) for r in reprs]
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return pd.Series(values, dtype="Int64")
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return pd.Series(values, dtype="float64")
    text = [
        None if r is None else (v if isinstance(v, str) else r)
        for r, v in zip(reprs, values, strict=True)
    ]
    return pd.Series(text, dtype="string")


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
