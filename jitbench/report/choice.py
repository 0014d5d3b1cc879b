"""Which runs of a results folder a reader sees first, where their instruction counts come
from, and why the others are left out (docs/design.md)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from jitbench.results.project import MainLine
from jitbench.suite import catalog

Key = tuple[str, str, str]
# The count benchmarks of the strategies and of any target (nox -s instructions).
COUNTED = frozenset(catalog.COUNTED)
META = ("machine", "commit", "date", "env", "python", "jax")


@dataclass(frozen=True)
class Choice:
    """The runs shown, where each one's counts come from, and what was left out and why."""

    runs: tuple[Key, ...]
    counts: dict[Key, Key]
    left_out: tuple[tuple[Key, str], ...]
    pairs: dict[Key, int]
    history: tuple[str, str, int] | None = None
    main: str = ""

    def lines(self) -> list[str]:
        """The choice in words: how (the main line), one line per run used, per left-out
        group, per history."""
        lines = [self.main] if self.main else []
        for key in self.runs:
            machine, commit, env = key
            text = (
                f"used: {machine} {commit[:8]} {env} ({self.pairs[key]} benchmark-strategy pairs)"
            )
            source = self.counts.get(key)
            if source is None:
                text += "; no instruction counts on this machine"
            elif source[1] != commit:
                text += f"; instructions per call from {source[1][:8]} {source[2]}"
            elif source[2] != env:
                text += f"; instructions per call from its twin env {source[2]}"
            lines.append(text)
        grouped: dict[tuple[str, str, str], list[str]] = {}
        for (machine, commit, env), reason in self.left_out:
            grouped.setdefault((machine, commit, reason), []).append(env)
        for (machine, commit, reason), envs in grouped.items():
            where = envs[0] if len(envs) == 1 else f"{len(envs)} envs"
            lines.append(f"left out: {machine} {commit[:8]} {where}: {reason}")
        if self.history is not None:
            machine, commit, count = self.history
            lines.append(
                f"JAX history: {machine} {commit[:8]} ran {count} JAX releases; "
                f"jitbench report --commit {commit[:8]} compares them"
            )
        return lines


def summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per run: pairs ran, commit date, JAX release, and whether it counted or only counted."""
    strategy = frame["strategy"] if "strategy" in frame else pd.Series("", index=frame.index)
    counted = frame["benchmark"].isin(COUNTED)
    ran = frame.assign(
        # A run is as complete as its timed grid: counts stand beside it from their own env.
        pair=(frame["benchmark"] + " " + strategy.astype(str)).where(~counted),
        counted=counted,
        counted_ok=counted & (frame["status"] == "ok"),
    )
    runs = ran.groupby(["machine", "commit", "env"], dropna=False).agg(
        pairs=("pair", "nunique"),
        date=("date", "max"),
        started=("started_at", "max"),
        jax=("jax", "first"),
        counts_only=("counted", "all"),
        counted=("counted_ok", "any"),
    )
    return runs.sort_values(["pairs", "date", "started"], na_position="first")


def choose(frame: pd.DataFrame, main: MainLine | None = None) -> Choice:
    """The complete run of each machine, its counts' source and the runs left out (see module);
    with ``main``, the project's main line, the newest of its commits with results."""
    runs = every = summary(frame)
    known = runs["jax"].notna()
    left: list[tuple[Key, str]] = []
    if known.any():
        for key, row in runs[~known].iterrows():
            left.append((key, f"JAX release not recorded ({row['pairs']} pairs)"))
        runs = runs[known]
    chosen: list[Key] = []
    counts: dict[Key, Key] = {}
    unmeasured: list[str] = []
    for machine, mine in runs.groupby(level="machine", sort=True):
        # Counts-only runs stand beside a timed run; they lead only where nothing else ran.
        timed = mine[~mine["counts_only"]]
        candidates = timed if not timed.empty else mine
        newest = _on_main(candidates, main)
        if not newest.empty:
            candidates = newest
        elif main is not None and main.commits:
            unmeasured.append(str(machine))
        best = candidates.index[-1]
        most = int(mine.loc[best, "pairs"])
        # The same grid at the same commit under other JAX releases (nox -s jax_history)
        # stands beside it: the report compares releases there.
        commits = candidates.index.get_level_values("commit")
        twins = candidates[(commits == best[1]) & (candidates["pairs"] == most)]
        twins = twins[twins["jax"].notna()].drop_duplicates("jax", keep="last")
        shown = sorted({best, *twins.index})
        for key in shown:
            chosen.append(key)
            source = _counts_source(mine, key)
            if source is not None:
                counts[key] = source
        on_main = set(main.commits) if main is not None and not newest.empty else None
        for key, row in mine.drop(index=shown).iterrows():
            if row["counts_only"] and key in counts.values():
                reason = "instructions only: its counts stand beside the run used"
            elif on_main is not None and key[1] not in on_main:
                reason = f"not on the main line ({main.branch})"  # type: ignore[union-attr]
            elif on_main is not None and key[1] != best[1]:
                reason = f"an older commit of {main.branch}"  # type: ignore[union-attr]
            elif row["counts_only"]:
                reason = "instructions only: the run used has counts of its own commit or newer"
            elif row["pairs"] < most:
                reason = f"partial ({row['pairs']} of {most} pairs)"
            else:
                reason = f"as complete ({row['pairs']} pairs) but older"
            left.append((key, reason))
    pairs = {key: int(every.loc[key, "pairs"]) for key in chosen}
    how = _main_line(main, unmeasured)
    return Choice(tuple(chosen), counts, tuple(left), pairs, history(frame), how)


def _on_main(runs: pd.DataFrame, main: MainLine | None) -> pd.DataFrame:
    """The runs of ``main``'s newest commit with results, the most complete last; empty
    without a main line or where none of its commits has results."""
    if main is None or not main.commits:
        return runs.iloc[:0]
    position = {commit: n for n, commit in enumerate(main.commits)}
    at = runs.index.get_level_values("commit").map(lambda c: position.get(c, -1))
    found = runs[at >= 0]
    if found.empty:
        return found
    newest = min(p for p in at if p >= 0)
    return found[found.index.get_level_values("commit") == main.commits[newest]]


def _main_line(main: MainLine | None, unmeasured: list[str]) -> str:
    """How the runs were chosen where there is a main line (none: "")."""
    if main is None:
        return ""
    if main.why:
        return f"main line {main.branch} unknown ({main.why}): the complete run of each machine"
    text = (
        f"main line: {main.branch} (asv.conf.json's first branch), its newest commit with results"
    )
    if unmeasured:
        text += (
            f"; no commit of {main.branch} has results of {', '.join(unmeasured)}: its complete run"
        )
    return text


def apply(frame: pd.DataFrame, choice: Choice) -> pd.DataFrame:
    """The rows of the chosen runs, each with its counts' rows moved in from their source."""
    parts = []
    for key in choice.runs:
        rows = _rows(frame, key)
        source = choice.counts.get(key)
        if source is not None and source != key:
            moved = _rows(frame, source)
            moved = moved[moved["benchmark"].isin(COUNTED)].copy()
            for column in META:
                moved[column] = rows[column].iloc[0]
            rows = pd.concat([rows[~rows["benchmark"].isin(COUNTED)], moved])
        parts.append(rows)
    return pd.concat(parts).reset_index(drop=True)


def newest_measuring(frame: pd.DataFrame, benchmarks: tuple[str, ...]) -> Key | None:
    """The newest run with a value of one of ``benchmarks`` (known JAX preferred), or None."""
    measured = frame[frame["benchmark"].isin(benchmarks) & frame["value"].notna()]
    if measured["jax"].notna().any():
        measured = measured[measured["jax"].notna()]
    if measured.empty:
        return None
    order = measured.sort_values(["date", "started_at"], na_position="first")
    return tuple(order.iloc[-1][["machine", "commit", "env"]])


def history(frame: pd.DataFrame) -> tuple[str, str, int] | None:
    """The newest (machine, commit) measured under two JAX releases or more, and how many."""
    releases = frame.groupby(["machine", "commit"]).agg(
        jax=("jax", "nunique"), date=("date", "max")
    )
    found = releases[releases["jax"] > 1].sort_values("date")
    if found.empty:
        return None
    machine, commit = found.index[-1]
    return machine, commit, int(found["jax"].iloc[-1])


def _rows(frame: pd.DataFrame, key: Key) -> pd.DataFrame:
    machine, commit, env = key
    mask = (frame["machine"] == machine) & (frame["commit"] == commit) & (frame["env"] == env)
    return frame[mask.fillna(False)]


def _counts_source(runs: pd.DataFrame, key: Key) -> Key | None:
    """The run whose counts go beside ``key``'s times: same JAX release, same commit first."""
    jax = runs.loc[key, "jax"]
    same = runs["jax"] == jax if pd.notna(jax) else runs["jax"].isna()
    counted = runs[runs["counted"] & same.fillna(False)]
    if counted.empty:
        return None
    if key in counted.index:
        return key
    commits = counted.index.get_level_values("commit")
    ours = counted[commits == key[1]]
    found = ours if not ours.empty else counted
    return found.sort_values(["date", "started"], na_position="first").index[-1]
