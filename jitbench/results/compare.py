"""``jitbench compare``: two commits, two envs (e.g. two JAX releases) or two machines, marked
as ``asv compare`` marks them; counts by a tolerance, noise from validate (docs/running.md)."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from asv_runner.statistics import get_err

from jitbench import document, hazards, results
from jitbench.errors import JitbenchError
from jitbench.figure import FAILED, NOT_MEASURED, Figure
from jitbench.measure.counting.instructions import COUNT_UNIT
from jitbench.options import COMPARE_BY as BY
from jitbench.options import COUNT_TOLERANCE
from jitbench.results import load, project
from jitbench.suite import asvcompat, catalog

CONTEXT = ("machine", "commit", "env")
REGRESSION_MARKS = ("+", "!")
CHANGE_MARKS = ("+", "-", "!")
# The columns compare reads from validate's noise.csv (validate writes more).
NOISE_COLUMNS = ("benchmark", "case", "spread")
# Worst first: regressions, then comparable rows, then not comparable, then n/a.
_MARK_RANK = {"!": 0, "+": 0, "~": 1, "-": 1, "*": 1, "x": 2, "": 3}


def run_compare(
    base: str,
    head: str,
    *,
    by: str = "commit",
    factor: float = 1.1,
    machine: str | None = None,
    commit: str | None = None,
    env: str | None = None,
    results: str | Path | None = None,
    skip_bad: bool = False,
    only_changed: bool = False,
    noise: str | Path | None = None,
    count_tolerance: float = COUNT_TOLERANCE,
    any_jax: bool = False,
) -> int:
    """Print the comparison; 1 when something regressed beyond the factor or a hazard appeared
    at HEAD, else 0. The marks and ``noise``: docs/running.md#comparing-commits-and-jax-releases;
    counts: :func:`count_mark`. Sides that ran different JAX releases are refused unless
    ``any_jax`` or ``by="env"`` (:func:`check_same_jax`).
    """
    if not (math.isfinite(factor) and factor > 0):
        raise JitbenchError(f"--factor must be a finite number > 0 such as 1.1, got {factor}")
    if not (math.isfinite(count_tolerance) and count_tolerance >= 0):
        raise JitbenchError(
            f"--count-tolerance must be a finite fraction >= 0 such as 0.01, got {count_tolerance}"
        )
    if by not in BY:
        raise JitbenchError(f"unknown comparison {by!r}; valid: {', '.join(BY)}")
    filters = {"machine": machine, "commit": commit, "env": env}
    if filters[by] is not None:
        raise JitbenchError(f"--{by} cannot be combined with --by {by}")
    measured = Noise.load(noise) if noise is not None else None
    frame = load(project.results_dir(results), skip_bad=skip_bad)
    base_rows, head_rows = _sides(frame, base, head, by, filters)
    if by != "env" and not any_jax:
        check_same_jax(base_rows, head_rows)
    table = compare_frames(base_rows, head_rows, factor, noise=measured, tolerance=count_tolerance)
    print(f"BASE {_describe(base_rows)}")
    print(f"HEAD {_describe(head_rows)}")
    only_one = len(set(base_rows["case"]) ^ set(head_rows["case"]))
    if only_one:
        print(f"{only_one} benchmark combinations are present on one side only and not compared")
    if measured is not None:
        print(measured.describe(table))
    shown = table[table["mark"].isin(CHANGE_MARKS)] if only_changed else table
    print(_format(shown, noise=measured is not None), end="")
    counts = table["mark"].replace("", "n/a").value_counts()
    applied = ", noise applied" if measured is not None else ""
    rule = f"factor {factor}"
    if (table["unit"] == COUNT_UNIT).any():
        rule += f"; instruction counts by --count-tolerance {count_tolerance:g}"
    print(", ".join(f"{n} {mark}" for mark, n in counts.items()) + f" ({rule}{applied})")
    changed = hazards_changed(table)
    for line in changed:
        print(line)
    new = any(line.startswith(NEW_HAZARD) for line in changed)
    return 1 if new or table["mark"].isin(REGRESSION_MARKS).any() else 0


# The packages whose release a comparison of two commits must hold still.
JAX_PACKAGES = ("jax", "jaxlib")
NEW_HAZARD = "new hazard at HEAD"


def pins(side: pd.DataFrame) -> dict[str, str]:
    """Each package the side's runs pinned (asv's recorded requirements, the ``jax`` column
    where they lack it), its release or releases (``a/b`` where runs differ)."""
    found: dict[str, set[str]] = {}
    for requirements in side.drop_duplicates(["machine", "commit", "env"])["requirements"]:
        for name, version in requirements:
            found.setdefault(name, set()).add(version)
    if "jax" not in found and side["jax"].notna().any():
        found["jax"] = set(side["jax"].dropna())
    return {name: "/".join(sorted(v, key=results.release_key)) for name, v in found.items()}


def check_same_jax(base: pd.DataFrame, head: pd.DataFrame) -> None:
    """JitbenchError naming every pinned package whose release differs between the sides,
    where jax's or jaxlib's does (a change of JAX would read as a change of the code)."""
    base_pins, head_pins = pins(base), pins(head)
    names = sorted(set(base_pins) | set(head_pins))
    differ = [n for n in names if base_pins.get(n) != head_pins.get(n)]
    if not set(differ) & set(JAX_PACKAGES):
        return
    shown = ", ".join(
        f"{n} {base_pins.get(n, 'not pinned')} vs {head_pins.get(n, 'not pinned')}"
        for n in sorted(differ, key=lambda n: (n not in JAX_PACKAGES, n))
    )
    raise JitbenchError(
        f"BASE and HEAD ran different releases ({shown}): JAX's change would read as the "
        "code's; pass --any-jax to compare them anyway, or --by env to compare JAX releases "
        "at one commit"
    )


def hazards_changed(table: pd.DataFrame) -> list[str]:
    """A line per hazard of a strategy's or target's row that HEAD has and BASE had not
    (its audit count 0 -> above 0), then one per hazard gone; a part named in place of its
    whole (``recompiles every call``, not also ``recompiles``)."""
    totals = {bench: name for name, bench in catalog.HAZARDS.items()}
    totals |= {catalog.TARGET_TWINS[bench]: name for bench, name in list(totals.items())}
    measured = (table["base_status"] == "ok") & (table["head_status"] == "ok")
    rows = table[table["benchmark"].isin(list(totals)) & measured]
    rows = rows.assign(total=rows["benchmark"].map(totals))
    subject = [c for c in ("strategy", "target") if c in rows]
    keys = [*(c for c in CONTEXT if c in rows), *subject, "device"]
    lines: dict[bool, list[str]] = {True: [], False: []}
    for _, found in rows.groupby(keys, dropna=False, sort=False):
        for new, side, other in ((True, "head", "base"), (False, "base", "head")):
            changed = found[(found[other] == 0) & (found[side] > 0)].set_index("total")
            for name in hazards.named(changed[side].to_dict()):
                lines[new].append(_hazard_line(changed.loc[name], name, subject, new))
    return [*lines[True], *lines[False]]


def _hazard_line(row: pd.Series, name: str, subject: list[str], new: bool) -> str:
    kind, who = next((c, str(row[c])) for c in subject if pd.notna(row[c]))
    where = f"{who} on {row['device']} ({row['benchmark']} {row['base']:g} -> {row['head']:g})"
    if not new:
        return f"hazard gone at HEAD: {hazards.WORDS[name]} in {where}"
    audit = f"jitbench audit {who}" if kind == "target" else f"jitbench audit --strategy {who}"
    return f"{NEW_HAZARD}: {hazards.WORDS[name]} in {where}; {audit} --explain says where"


@dataclasses.dataclass(frozen=True)
class Noise:
    """Run-to-run noise measured by ``jitbench validate``: ``rows`` maps a row's ``case`` to its
    relative spread, ``benchmarks`` a benchmark to the 95th percentile of its rows'."""

    path: Path
    rows: dict[str, float]
    benchmarks: dict[str, float]

    @classmethod
    def load(cls, path: str | Path) -> Noise:
        """Read validate's ``noise.csv``; a missing file or column is a JitbenchError."""
        path = Path(path)
        try:
            # Blank lines kept as empty rows: a row's index is its line number - 2.
            table = pd.read_csv(path, skip_blank_lines=False)
        except (OSError, ValueError) as exc:
            reason = " ".join(str(exc).split())
            raise JitbenchError(f"cannot read noise file {str(path)!r} ({reason})") from None
        missing = [c for c in NOISE_COLUMNS if c not in table]
        if missing:
            raise JitbenchError(
                f"noise file {str(path)!r} lacks column(s) {', '.join(missing)}; "
                f"expected the noise.csv of jitbench validate ({', '.join(NOISE_COLUMNS)})"
            )
        # Rows without a spread (a combination skipped in validate's runs) carry no noise.
        table = table.dropna(subset=list(NOISE_COLUMNS))
        spreads = [_spread(path, int(line) + 2, value) for line, value in table["spread"].items()]
        table = table.assign(spread=spreads, case=table["case"].astype(str))
        repeated = table[table.duplicated("case", keep=False)]
        if not repeated.empty:
            case = repeated["case"].iloc[0]
            lines = [str(int(i) + 2) for i in repeated.index[repeated["case"] == case]]
            raise JitbenchError(
                f"noise file {str(path)!r} has case {case!r} on lines {', '.join(lines)}; "
                "expected one row per case, as jitbench validate writes it"
            )
        benchmarks = {
            str(name): float(np.percentile(part["spread"], 95))
            for name, part in table.groupby("benchmark", sort=True)
        }
        rows = dict(zip(table["case"], table["spread"], strict=True))
        return cls(path, rows, benchmarks)

    def threshold(self, benchmark: str, case: str) -> tuple[float, str]:
        """The noise that applies to one row, and where it comes from (``row``/``p95``/``""``)."""
        if case in self.rows:
            return self.rows[case], "row"
        if benchmark in self.benchmarks:
            return self.benchmarks[benchmark], "p95"
        return math.nan, ""

    def describe(self, table: pd.DataFrame) -> str:
        """One line: that noise applies, from which file, and what it changed."""
        compared = (table["base_status"] == "ok") & (table["head_status"] == "ok")
        sources = table.loc[compared, "noise_from"].value_counts()
        return (
            f"noise from {self.path}: a change within its measured noise is marked ~ "
            f"(of the rows measured on both sides, {sources.get('row', 0)} by their own noise, "
            f"{sources.get('p95', 0)} by their benchmark's p95, {sources.get('', 0)} without); "
            f"{int(table['within_noise'].sum())} marks of asv's rule changed to ~"
        )


def _spread(path: Path, line: int, value: object) -> float:
    """One row's spread, a finite number >= 0; anything else names the file, line and value."""
    try:
        spread = float(value)
    except (TypeError, ValueError):
        spread = math.nan
    if not (math.isfinite(spread) and spread >= 0):
        shown = repr(value) if isinstance(value, str) else str(value)
        raise JitbenchError(
            f"noise file {str(path)!r} line {line}: spread {shown} is not a number >= 0 "
            "such as 0.05 (|ratio - 1| of two runs of unchanged code)"
        )
    return spread


def compare_frames(
    base_df: pd.DataFrame,
    head_df: pd.DataFrame,
    factor: float,
    noise: Noise | None = None,
    tolerance: float = COUNT_TOLERANCE,
) -> pd.DataFrame:
    """Pair up the rows of two :func:`jitbench.results.load` frames and judge each pair.

    Rows pair on benchmark and parameters, plus machine/commit/env where both
    sides hold the same several values. Returns one row per pair present on both
    sides, worst first. With ``noise``, ``noise``/``noise_from`` say which noise
    applied to a row and ``within_noise`` which ``+``/``-`` it turned into ``~``.
    """
    context = [
        c
        for c in CONTEXT
        if base_df[c].nunique() > 1 and set(base_df[c]) == set(head_df[c].dropna())
    ]
    keys = [*context, "benchmark", "case"]
    for side, df in (("BASE", base_df), ("HEAD", head_df)):
        repeated = df[df.duplicated(keys, keep=False)]
        if not repeated.empty:
            runs = sorted({f"{r.machine}/{r.commit[:8]}/{r.env}" for r in repeated.itertuples()})
            raise JitbenchError(
                f"{side} holds several runs of {repeated['case'].iloc[0]} "
                f"({', '.join(runs)}); choose one with --machine, --commit or --env"
            )
    params = results.param_columns(base_df)
    columns = ["value", "status", "version", "samples", *results.STAT_KEYS]
    left = base_df[[*keys, "kind", *params, "unit", *columns]]
    right = head_df[[*keys, *columns]]
    pairs = left.merge(right, on=keys, suffixes=("_base", "_head"))
    judged = [_judge(row, factor, tolerance) for row in pairs.to_dict("records")]
    out = pairs[[*keys, "kind", *params, "unit"]].copy()
    for side in ("base", "head"):
        out[side] = pairs[f"value_{side}"]
        out[f"{side}_status"] = pairs[f"status_{side}"]
    for name in ("base_err", "head_err", "ratio", "significant", "mark"):
        out[name] = [j[name] for j in judged]
    out["significant"] = out["significant"].astype("boolean")
    out["ratio"] = out["ratio"].astype("float64")
    if noise is not None:
        _apply_noise(out, noise)
    rank = out["mark"].map(_MARK_RANK)
    order = pd.DataFrame({"rank": rank, "ratio": out["ratio"]}).sort_values(
        ["rank", "ratio"], ascending=[True, False], na_position="last", kind="stable"
    )
    return out.loc[order.index].reset_index(drop=True)


def count_mark(base: float, head: float, tolerance: float) -> str:
    """``+``/``-`` where HEAD's count differs from BASE's by more than ``tolerance``, else ``~``
    (a count is deterministic: no significance test stands between ratio and mark)."""
    if head > base * (1 + tolerance):
        return "+"
    if base > head * (1 + tolerance):
        return "-"
    return "~"


def _judge(row: dict[str, Any], factor: float, tolerance: float) -> dict[str, Any]:
    """asv compare's decision for one pair of results (a count's: :func:`count_mark`)."""
    base, head = row["value_base"], row["value_head"]
    ss_base, ss_head = _stats(row, "_base"), _stats(row, "_head")
    judged = {
        "base_err": get_err(base, ss_base[0]) if ss_base[0] else math.nan,
        "head_err": get_err(head, ss_head[0]) if ss_head[0] else math.nan,
        "ratio": math.nan,
        "significant": None,
        "mark": "",
    }
    statuses = (row["status_base"], row["status_head"])
    versions = (row["version_base"], row["version_head"])
    if all(pd.notna(v) for v in versions) and versions[0] != versions[1]:
        judged["mark"] = "x"
    elif statuses == ("ok", "failed"):
        judged["mark"] = "!"
    elif statuses == ("failed", "ok"):
        judged["mark"] = "*"
    if statuses != ("ok", "ok"):
        return judged
    judged["ratio"] = (
        head / base if base else (1.0 if head == base else math.copysign(math.inf, head))
    )
    if row["unit"] == COUNT_UNIT:
        judged["mark"] = judged["mark"] or count_mark(base, head, tolerance)
        judged["significant"] = judged["mark"] in ("+", "-")
        return judged
    if ss_base[0] and ss_head[0] and 1 not in (ss_base[0]["repeat"], ss_head[0]["repeat"]):
        judged["significant"] = asvcompat.is_different(
            ss_base[1], ss_head[1], ss_base[0], ss_head[0]
        )
    if judged["mark"]:
        return judged
    if asvcompat.is_result_better(head, base, ss_head, ss_base, factor):
        judged["mark"] = "-"
    elif asvcompat.is_result_better(base, head, ss_base, ss_head, factor):
        judged["mark"] = "+"
    else:
        judged["mark"] = "~"
    return judged


def _apply_noise(table: pd.DataFrame, noise: Noise) -> None:
    """Turn ``+``/``-`` into ``~`` where ``|ratio - 1|`` is within the row's measured noise."""
    found = [noise.threshold(b, c) for b, c in zip(table["benchmark"], table["case"], strict=True)]
    table["noise"] = pd.Series([f[0] for f in found], index=table.index, dtype="float64")
    table["noise_from"] = [f[1] for f in found]
    within = table["mark"].isin(("+", "-")) & ((table["ratio"] - 1).abs() <= table["noise"])
    table["within_noise"] = within
    table.loc[within, "mark"] = "~"


def _stats(row: dict[str, Any], suffix: str) -> tuple[dict[str, Any] | None, list[float] | None]:
    """(stats, samples) in the shape asv's compare functions take."""
    stats = {key: row[key + suffix] for key in results.STAT_KEYS}
    if any(pd.isna(v) for v in stats.values()):
        return None, None
    samples = row["samples" + suffix]
    return stats, samples if isinstance(samples, list) else None


def _sides(
    frame: pd.DataFrame, base: str, head: str, by: str, filters: dict[str, str | None]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The BASE and HEAD rows that ``by`` and the filters name."""
    if by == "commit":
        frame = results.select(frame, machine=filters["machine"], env=filters["env"])
        return results.select(frame, commit=base), results.select(frame, commit=head)
    if by == "machine":
        sides = []
        for name in (base, head):
            side = results.select(frame, machine=name, commit=filters["commit"], env=filters["env"])
            sides.append(side if filters["commit"] else results.latest(side))
        return sides[0], sides[1]
    frame = results.select(frame, machine=filters["machine"], commit=filters["commit"])
    base_rows, head_rows = (results.select(frame, env=name) for name in (base, head))
    both = [c for c in results.commits_by_date(base_rows) if c in set(head_rows["commit"])]
    if not both:
        raise JitbenchError(
            f"no commit has results for both envs {base!r} and {head!r}; "
            "run both at one commit or pass --commit"
        )
    return (
        base_rows[base_rows["commit"] == both[0]],
        head_rows[head_rows["commit"] == both[0]],
    )


def _describe(side: pd.DataFrame) -> str:
    runs = side.drop_duplicates(["machine", "commit", "env"])
    return "; ".join(
        f"{r.machine} {r.commit[:8]} {r.env}" + (f" (jax {r.jax})" if pd.notna(r.jax) else "")
        for r in runs.itertuples()
    )


def _format(table: pd.DataFrame, *, noise: bool = False) -> str:
    """A table like asv compare's: change, before, after, ratio, (noise,) benchmark."""
    context = [c for c in CONTEXT if c in table]
    rows = []
    for row in table.to_dict("records"):
        name = row["case"]
        if context:
            name += f" [{'/'.join(str(row[c]) for c in context)}]"
        cells = {
            "Change": row["mark"],
            "Before": _value(row["base"], row["base_status"], row["unit"], row["base_err"]),
            "After": _value(row["head"], row["head_status"], row["unit"], row["head_err"]),
            "Ratio": NOT_MEASURED if pd.isna(row["ratio"]) else f"{row['ratio']:.2f}",
        }
        if noise:
            cells["Noise"] = "" if pd.isna(row["noise"]) else f"{row['noise']:.1%}"
        rows.append({**cells, "Benchmark (Parameter)": name})
    columns = ["Change", "Before", "After", "Ratio", *(["Noise"] if noise else [])]
    columns.append("Benchmark (Parameter)")
    # The github table format asv compare prints.
    frame = pd.DataFrame(rows, columns=columns)
    return document.markdown_blocks([document.Table(frame, as_written=True)])


def _value(value: float, status: str, unit: object, err: float) -> str:
    """A side's figure: its value in its unit (asv's), or why there is none."""
    if status != "ok":
        return FAILED if status == "failed" else NOT_MEASURED
    shown = Figure(value, unit if isinstance(unit, str) else "", None if pd.isna(err) else err)
    return str(shown)
