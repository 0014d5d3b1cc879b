"""Whose results a command reads: the asv project in the current folder (its asv.conf.json
names the results folder and the main line), and the commands a reader of those results
types: jitbench's own suite's (its nox sessions) or those of a project set up by ``jitbench
init`` (asv run). docs/running.md says how the report and compare use them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from asv.util import UserError

from jitbench.errors import JitbenchError
from jitbench.jsondata import JsonObject
from jitbench.suite import catalog
from jitbench.suite.asvrun import CONFIG, git, load_config

# Where results are read without an asv.conf.json here (jitbench's own repository's folder).
DEFAULT_RESULTS = Path("results")


def config(folder: Path = Path(".")) -> JsonObject | None:
    """The asv.conf.json in ``folder`` (None where there is none); an unreadable one is a
    JitbenchError naming it."""
    path = folder / CONFIG
    if not path.is_file():
        return None
    try:
        found = load_config(folder)
    except (UserError, OSError, ValueError) as exc:
        reason = " ".join(str(exc).split())
        raise JitbenchError(f"cannot read {str(path)!r} ({reason}); pass --results") from None
    if not isinstance(found, dict):
        raise JitbenchError(f"{str(path)!r} is not a JSON object (asv's config); pass --results")
    return found


def results_dir(given: str | Path | None, folder: Path = Path(".")) -> Path:
    """``given``, else the ``results_dir`` of the asv.conf.json in ``folder``, else results."""
    if given is not None:
        return Path(given)
    found = config(folder)
    if found is not None:
        return folder / str(found.get("results_dir", DEFAULT_RESULTS))
    if not (folder / DEFAULT_RESULTS).exists():
        raise JitbenchError(
            f"no {CONFIG} in {str(folder.resolve())!r} and no {DEFAULT_RESULTS}/ folder: run "
            f"this in your project's root (where {CONFIG} is), or pass --results"
        )
    return folder / DEFAULT_RESULTS


def commit_of(ref: str, folder: Path = Path(".")) -> str | None:
    """The full hash git gives ``ref`` (a branch, a tag, ``HEAD~2``) in the repository the
    asv.conf.json in ``folder`` names; None where there is none or git does not know it."""
    found = config(folder)
    if found is None or not ref:
        return None
    repo = folder / str(found.get("repo", "."))
    return git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")


@dataclass(frozen=True)
class MainLine:
    """The branch asv.conf.json names first and its commits, newest first (what ``git
    rev-list --first-parent`` lists, as asv reads a branch); ``why`` where they are unknown."""

    branch: str
    commits: tuple[str, ...] = ()
    why: str = ""


def main_line(folder: Path = Path(".")) -> MainLine | None:
    """The main line of the asv project in ``folder``; None where it has no asv.conf.json."""
    found = config(folder)
    if found is None:
        return None
    branches = found.get("branches") or [None]
    branch = str(branches[0] or "HEAD")
    repo = folder / str(found.get("repo", "."))
    if not repo.is_dir():
        return MainLine(branch, why=f"asv.conf.json's repo {str(repo)!r} is not a folder here")
    listed = git(repo, "rev-list", "--first-parent", branch, "--")
    if not listed:
        return MainLine(branch, why=f"git rev-list {branch} found no commits in {str(repo)!r}")
    return MainLine(branch, tuple(listed.split()))


@dataclass(frozen=True)
class Commands:
    """What a reader of a suite's results types for what they lack: jitbench's own suite
    (``own``) counts instructions with a nox session, a project set up by ``jitbench init``
    with every ``asv run`` where its asv.conf.json turns counts on (``counts_where``);
    ``audit``: the command whose JSON gives the report JAX's reasons."""

    own: bool
    counts: str
    counts_where: str
    audit: str


OWN = Commands(True, "nox -s instructions", "", "jitbench audit --format json > audit.json")


def commands(suite: Iterable[str], targets: Iterable[str] = ()) -> Commands:
    """The commands for the suite whose benchmarks (asv's names) are ``suite``: jitbench's own
    where it holds a built-in benchmark, else a project's of target rows (``targets``)."""
    twins = set(catalog.TARGET_TWINS.values())
    if any(name in catalog.ALL and name not in twins for name in suite):
        return OWN
    named = sorted(set(targets))
    spec = named[0] if len(named) == 1 else "TARGET"
    return Commands(
        False,
        "asv run",
        " where asv.conf.json turns counts on (jitbench init writes it so on a machine with "
        "Valgrind and tcmalloc)",
        # From the suite's folder, where the report runs: python -m puts it on the path, so
        # that the target's module imports as asv imports it.
        f"python -m jitbench audit {spec} --format json > audit.json",
    )
