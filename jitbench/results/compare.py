"""``jitbench compare``: two commits, two envs (e.g. two JAX releases) or two machines, marked
as ``asv compare`` marks them; counts by a tolerance, noise from validate (docs/running.md).
What sets the exit status (:func:`gating`): a count that rose, a row that newly fails, a new
hazard; times and memory are shown, never judged (a busy machine moves them by 2x). The
same comparison as Markdown for a CI job's summary: :func:`summary`."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pandas as pd
from asv_runner.statistics import get_err

from jitbench import document, hazards, results
from jitbench.document import Bold, Code
from jitbench.errors import JitbenchError
from jitbench.figure import FAILED, NOT_MEASURED, Figure
from jitbench.measure.counting.instructions import COUNT_UNIT
from jitbench.options import COMPARE_BY as BY
from jitbench.options import COUNT_TOLERANCE
from jitbench.results import load, project
from jitbench.results.noise import Noise
from jitbench.suite import asvcompat, catalog

CONTEXT = ("machine", "commit", "env")
REGRESSION_MARKS = ("+", "!")
CHANGE_MARKS = ("+", "-", "!")
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
    summary: str | Path | None = None,
    require_counts: bool = False,
) -> int:
    """Print the comparison; 1 where an instruction count rose past ``count_tolerance``, a row
    that ran on BASE fails on HEAD, or a hazard appeared at HEAD (:func:`gating`), else 0.
    Times and memory are marked as ``asv compare`` marks them by ``factor`` and shown, never
    judged. The marks and ``noise``: docs/running.md#comparing-commits-and-jax-releases;
    counts: :func:`count_mark`. Sides that ran different JAX releases are refused unless
    ``any_jax`` or ``by="env"`` (:func:`check_same_jax`). ``summary``: a file the comparison
    is appended to as Markdown (a CI job's summary, :func:`summary`); ``require_counts``: a
    JitbenchError where no instruction count was measured on either side (a gate that could
    judge hazards alone).
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
    if summary is not None and Path(summary).is_dir():
        raise JitbenchError(f"--summary {str(summary)!r} is a folder; give a file to append to")
    measured = Noise.load(noise) if noise is not None else None
    frame = load(project.results_dir(results), skip_bad=skip_bad)
    base_rows, head_rows = _sides(frame, base, head, by, filters)
    if by != "env" and not any_jax:
        check_same_jax(base_rows, head_rows)
    table = compare_frames(base_rows, head_rows, factor, noise=measured, tolerance=count_tolerance)
    if require_counts and not counted(table).any():
        raise JitbenchError(
            "no instruction count was measured on either side: the count rows are n/a (asv run "
            "-e prints why; Valgrind, tcmalloc and pytest-codspeed in asv's environments, "
            "JITBENCH_INSTRUCTIONS=1 in asv.conf.json's matrix); without counts only hazards "
            "would be judged"
        )
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
    changes = hazards_changed(table)
    where = command_folder(results)
    for change in changes:
        print(change.line(where))
    failing = verdict(table, changes, count_tolerance)
    print(f"fails: {'; '.join(failing)}" if failing else f"passes: {NOTHING_FAILS}")
    if summary is not None:
        text = summary_markdown(base_rows, head_rows, table, changes, count_tolerance, results)
        with open(summary, "a") as out:
            out.write(text)
    return 1 if failing else 0


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


@dataclasses.dataclass(frozen=True)
class HazardChange:
    """A hazard of a strategy's or a target's row that HEAD has and BASE had not (``new``: its
    audit count 0 -> above 0), or the other way round: ``total`` names it (a key of
    :data:`jitbench.hazards.WORDS`), ``benchmark`` the track that counted it."""

    total: str
    subject: str
    target: bool
    device: str
    benchmark: str
    base: float
    head: float
    new: bool

    @property
    def words(self) -> str:
        return hazards.WORDS[self.total]

    @property
    def command(self) -> str:
        """The command that says where: a target's module imported from the folder it runs in
        (``python -m`` puts that folder on the path, as asv's import of the suite does)."""
        if self.target:
            return f"python -m jitbench audit {self.subject} --explain"
        return f"jitbench audit --strategy {self.subject} --explain"

    def line(self, where: str = "") -> str:
        """The line compare prints; ``where``: the folder a target's command runs in."""
        found = (
            f"{self.words} in {self.subject} on {self.device} "
            f"({self.benchmark} {self.base:g} -> {self.head:g})"
        )
        if not self.new:
            return f"hazard gone at HEAD: {found}"
        folder = f", from {where}," if self.target and where else ""
        return f"{NEW_HAZARD}: {found}; {self.command}{folder} says where"


def hazards_changed(table: pd.DataFrame) -> list[HazardChange]:
    """Each hazard of a strategy's or target's row that HEAD has and BASE had not (its audit
    count 0 -> above 0), then each gone; a part named in place of its whole (``recompiles
    every call``, not also ``recompiles``)."""
    totals = {bench: name for name, bench in catalog.HAZARDS.items()}
    totals |= {catalog.TARGET_TWINS[bench]: name for bench, name in list(totals.items())}
    measured = (table["base_status"] == "ok") & (table["head_status"] == "ok")
    rows = table[table["benchmark"].isin(list(totals)) & measured]
    rows = rows.assign(total=rows["benchmark"].map(totals))
    subject = [c for c in ("strategy", "target") if c in rows]
    keys = [*(c for c in CONTEXT if c in rows), *subject, "device"]
    found: dict[bool, list[HazardChange]] = {True: [], False: []}
    for _, group in rows.groupby(keys, dropna=False, sort=False):
        for new, side, other in ((True, "head", "base"), (False, "base", "head")):
            changed = group[(group[other] == 0) & (group[side] > 0)].set_index("total")
            for name in hazards.named(changed[side].to_dict()):
                row = changed.loc[name]
                kind, who = next((c, str(row[c])) for c in subject if pd.notna(row[c]))
                found[new].append(
                    HazardChange(
                        name, who, kind == "target", str(row["device"]), str(row["benchmark"]),
                        float(row["base"]), float(row["head"]), new,
                    )
                )  # fmt: skip
    return [*found[True], *found[False]]


def counted(table: pd.DataFrame) -> pd.Series:
    """The rows holding an instruction count on either side (a side that compiles at every
    call has none: its hazard says so)."""
    either = (table["base_status"] == "ok") | (table["head_status"] == "ok")
    return either & (table["unit"] == COUNT_UNIT)


def gating(table: pd.DataFrame) -> pd.Series:
    """The rows that set compare's exit status: a count that rose past the tolerance (``+``
    on a count row), and any row that ran on BASE and fails on HEAD (``!``). A time or a
    memory figure never does: on a shared machine, or a CI runner, a time moved 2.3x with
    the code unchanged while its instruction count moved 0.02% (docs/commits.md)."""
    rose = (table["unit"] == COUNT_UNIT) & (table["mark"] == "+")
    return rose | (table["mark"] == "!")


NOTHING_FAILS = "no instruction count rose, no row newly fails, no new hazard"


def verdict(table: pd.DataFrame, changes: list[HazardChange], tolerance: float) -> list[str]:
    """What fails the comparison, each in words (none where nothing does)."""
    rows = table[gating(table)]
    rose = int((rows["mark"] == "+").sum())
    broke = int((rows["mark"] == "!").sum())
    new = list(dict.fromkeys(c.words for c in changes if c.new))
    parts = []
    if rose:
        parts.append(f"{_many(rose, 'instruction count')} rose by over {tolerance * 100:g}%")
    if broke:
        parts.append(f"{_many(broke, 'row')} that ran on BASE failed on HEAD")
    if new:
        parts.append(f"{_many(len(new), 'new hazard')} at HEAD: {', '.join(new)}")
    return parts


def _many(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def command_folder(results: str | Path | None) -> str:
    """Where a target's printed command runs: the folder of the asv.conf.json whose results
    compare read, as the repository's root names it (``benchmarks/``); "this folder" where
    that cannot be said."""
    folder = Path(results).resolve().parent if results is not None else Path.cwd()
    found = project.config(folder)
    if found is None:
        return "this folder" if results is None else ""
    root = (folder / str(found.get("repo", "."))).resolve()
    try:
        inside = folder.resolve().relative_to(root)
    except ValueError:
        return str(folder)
    return f"{inside.as_posix()}/" if inside.parts else "the repository's root"


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


def summary_markdown(
    base_rows: pd.DataFrame,
    head_rows: pd.DataFrame,
    table: pd.DataFrame,
    changes: list[HazardChange],
    tolerance: float,
    results: str | Path | None = None,
) -> str:
    """The comparison as Markdown for a CI job's summary (GitHub's ``$GITHUB_STEP_SUMMARY``):
    the verdict, the instruction counts (what changed, by how much), each hazard that appeared
    and the command that says where, then the times, memory and audit counts, shown and not
    judged."""
    failing = verdict(table, changes, tolerance)
    sides = f"HEAD {_short(head_rows)} against BASE {_short(base_rows)}"
    blocks: list[document.Block] = [
        document.Heading(f"jitbench: {sides}: {'fails' if failing else 'passes'}", 3),
        document.Paragraph(
            (
                Bold("; ".join(failing) or NOTHING_FAILS),
                f". Instruction counts are judged to {tolerance * 100:g}% (--count-tolerance), "
                "hazards by the audit; times are shown, never judged.",
            )
        ),
    ]
    counts = table[table["unit"] == COUNT_UNIT]
    if counts.empty:
        blocks.append(document.Paragraph("No instruction counts in these results."))
    else:
        blocks.append(document.Table(_summary_rows(counts, change=True), as_written=True))
        blocks += _uncounted(table, counts)
    where = command_folder(results)
    for change in changes:
        words = (
            f"{'New hazard' if change.new else 'Hazard gone'}: ",
            Bold(change.words),
            " in ",
            Code(change.subject),
            f" on {change.device} ({change.benchmark.rsplit('.', 1)[-1]} "
            f"{change.base:g} -> {change.head:g})",
        )
        if change.new:
            folder = f" from {where}" if change.target and where else ""
            words += (". ", Code(change.command), f"{folder} says where.")
        blocks.append(document.Paragraph(words))
    rest = table[(table["unit"] != COUNT_UNIT)]
    if not rest.empty:
        blocks.append(
            document.Details(
                f"Times, memory and audit counts ({len(rest)} rows): shown, never judged",
                (document.Table(_summary_rows(rest, change=False), as_written=True),),
            )
        )
    return document.markdown_blocks(blocks)


def _uncounted(table: pd.DataFrame, counts: pd.DataFrame) -> list[document.Block]:
    """Why a side's counts are n/a: a call that compiles on every call there has none (its
    repeated call compiled: the counting refuses it, a count would be a compile's); else
    what else leaves them out."""
    repeat = catalog.HAZARDS["repeat_call_compiles"]
    repeats = table[table["benchmark"].isin([repeat, catalog.TARGET_TWINS[repeat]])]
    keys = [c for c in (*CONTEXT, "strategy", "target", "device") if c in table]

    def key(row: dict[str, Any]) -> tuple[object, ...]:  # a strategy's row has no target: NaN
        return tuple(None if pd.isna(row[k]) else row[k] for k in keys)

    said = []
    for side, name in (("base", "BASE"), ("head", "HEAD")):
        compiling = {key(row) for row in repeats[repeats[side] > 0].to_dict("records")}
        missing = counts[counts[f"{side}_status"] == "skipped"].drop_duplicates(keys)
        why: dict[bool, list[str]] = {True: [], False: []}
        for row in missing.to_dict("records"):
            compiles = key(row) in compiling
            subject = next(str(row[c]) for c in ("strategy", "target") if pd.notna(row.get(c)))
            why[compiles].append(f"`{subject}` on {row['device']}")
        if why[True]:
            said.append(document.Paragraph((
                f"Not counted at {name} in {', '.join(why[True])}: it compiles on every call "
                "there (track_repeat_call_compiles), so a count would be a compile's.",
            )))  # fmt: skip
        if why[False]:
            said.append(document.Paragraph((
                f"Not counted at {name} in {', '.join(why[False])}: no count was recorded "
                "there (Valgrind or tcmalloc missing where it ran, which ",
                Code("python -m jitbench.measure.counting.callgrind"),
                " checks, or the row failed).",
            )))  # fmt: skip
    return said


def _short(side: pd.DataFrame) -> str:
    commits = side.drop_duplicates("commit")["commit"]
    return ", ".join(f"`{c[:8]}`" for c in commits)


def _summary_rows(table: pd.DataFrame, *, change: bool) -> pd.DataFrame:
    """A row per compared combination: before, after, the change (a count's mark and its
    percentage) or the bare ratio (a time's, not judged), and the benchmark."""
    rows = []
    for row in table.to_dict("records"):
        cells = {
            "Before": _value(row["base"], row["base_status"], row["unit"], row["base_err"]),
            "After": _value(row["head"], row["head_status"], row["unit"], row["head_err"]),
        }
        ratio = row["ratio"]
        if change:
            shown = NOT_MEASURED if pd.isna(ratio) else f"{ratio - 1:+.2%}"
            cells = {"": row["mark"], **cells, "Change": shown}
        else:
            cells["Ratio"] = NOT_MEASURED if pd.isna(ratio) else f"{ratio:.2f}"
        rows.append({**cells, "Benchmark (Parameter)": f"`{row['case']}`"})
    return pd.DataFrame(rows)
