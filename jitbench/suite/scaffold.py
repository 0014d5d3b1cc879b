"""``jitbench init``: what asv needs to benchmark another project's commits with jitbench:
``asv.conf.json``, ``benchmarks/`` and a wheel of this jitbench (docs/own-objects.md); the
templates are here only. Nothing is overwritten: an existing file is one error, and nothing
is written."""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import jitbench
from jitbench import extras
from jitbench.errors import JitbenchError
from jitbench.suite.asvrun import git

WHEEL_DIR = ".jitbench"
_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")

ASV_CONF = """\
{{
    // asv benchmarks of {project}'s jitted methods, measured by jitbench ("jitbench init").
    // jitbench is not on the package index: the install command installs the wheel in
    // {wheel_dir}/ beside each commit of the project, so every commit is measured by the
    // same jitbench. Run "jitbench init" again (after removing this file,
    // benchmarks/bench_targets.py and the wheel) to move to another jitbench.
    // The wheel: {wheel_source}.
    "version": 1,
    "project": {project_json},
    // The dashboard's header link: the jitbench report, once copied into html/report/
    // (jitbench report --out html/report; python -m jitbench.dashboard html).
    "project_url": "report/index.html",
    "repo": ".",
    "branches": [{branch_json}],
    "environment_type": "virtualenv",
    "pythons": [{python_json}],
    // A fresh interpreter per benchmark process: nothing of the project runs in a server.
    "launch_method": "spawn",
    "install_timeout": 1800,
    "build_command": ["python -m pip wheel --no-deps -w {{build_cache_dir}} {{build_dir}}"],
    "install_command": [
        "in-dir={{env_dir}} python -m pip install {{wheel_file}} {{conf_dir}}/{wheel_path}"
    ],
    "uninstall_command": ["return-code=any python -m pip uninstall -y {{project}}"],
    // asv_runner pinned: jitbench's timing relies on its batching; "jax": [""] takes the
    // newest release, or list releases ("0.6.2", "0.7.2") to measure each.
{counts_comment}    "matrix": {matrix},
    "benchmark_dir": "benchmarks",
    "env_dir": ".asv/env",
    "results_dir": "results",
    "html_dir": "html"
}}
"""

BENCHMARKS_INIT = '''\
"""asv benchmarks of this project, measured by jitbench: see bench_targets.py."""
'''

BENCH_TARGETS = '''\
"""This project's objects with a jitted method, benchmarked by jitbench at every commit.

A target is ``package.module:factory``: a callable returning the object, or a
``jitbench.Target(obj, inputs, call=...)`` saying which call to measure with
which arguments. Each target gets jitbench's rows per device: cold first
call, first call in a fresh process, cached call and dispatch, the call
after each kind of change its audit plays, the audit's hazard counts and
peak memory (``jitbench.suite.families``). ``JITBENCH_TARGETS`` adds more.
"""

from jitbench.suite.families import benchmark_classes

TARGETS = [
{targets}]

globals().update(benchmark_classes(TARGETS))
'''

BENCH_README = """\
# {project}'s jitted calls, benchmarked by jitbench

`jitbench init` wrote this folder, `../asv.conf.json` and the jitbench wheel in
`../{wheel_dir}/` ({wheel_source}).

`bench_targets.py` lists the targets: the objects and calls measured at every
commit.

Instruction counts: {counts}
From the repository's root, where jitbench is installed
(`pip install -e '/path/to/jitbench[report,instructions]'`):

```bash
git add asv.conf.json benchmarks {wheel_dir}
git commit -m "asv benchmarks through jitbench"
asv machine --yes
# the newest commit of {branch}, in a virtualenv asv builds
asv run
# a change: edit, commit
git checkout -b my-change
# exit 1 where a time got 2x slower
asv continuous --factor 2 {branch} HEAD
# exit 1 where a time got 2x slower{counted}
jitbench compare --factor 2 $(git rev-parse {branch}) $(git rev-parse HEAD)
# the dashboard, with jitbench's report linked
asv publish && jitbench report --out html/report && python -m jitbench.dashboard html
asv preview
```
"""

COUNTS_ON = """\
on. asv's environments install pytest-codspeed {hooks} and set
`JITBENCH_INSTRUCTIONS=1` (the matrix in `asv.conf.json`), so every `asv run`
also counts each target's instructions per cached call and per dispatch under
Valgrind (a minute or two per target and commit). A count does not move with
the machine's load: `jitbench compare` marks one that moved by more than 1%
(`--count-tolerance`) and exits 1 on a rise, so a per-call slowdown of 2% is
flagged where a time is not. Every machine that runs these benchmarks needs
Valgrind and tcmalloc (Debian/Ubuntu: `apt-get install valgrind
libtcmalloc-minimal4`); without them the count rows are n/a, with the reason.
"""

COUNTS_OFF = """\
off: {reason}. With Valgrind, tcmalloc and pytest-codspeed where `jitbench init`
runs, asv's environments get the hooks and every `asv run` also counts each
target's instructions per call, which `jitbench compare` judges to 1%. To add
them, install those, remove `asv.conf.json`, `benchmarks/` and `{wheel_dir}/`,
and run `jitbench init` again.
"""

COUNTS_COMMENT = """\
    // Instruction counts (benchmarks/README.md): pytest-codspeed's hooks start and stop
    // Valgrind's counting; JITBENCH_INSTRUCTIONS=1 asks every asv run for the counts.
"""

EXAMPLE_TARGET = """\
    # "mypackage.models:make_model",  # fill in: package.module:factory
"""


def _project(pyproject: Path) -> dict[str, Any]:
    """The ``[project]`` table of a ``pyproject.toml`` (empty where there is no file)."""
    if not pyproject.is_file():
        return {}
    try:
        return tomllib.loads(pyproject.read_text()).get("project", {})
    except tomllib.TOMLDecodeError as exc:
        raise JitbenchError(f"cannot read {str(pyproject)!r}: {exc}") from None


def jitbench_source() -> Path:
    """The source tree of the running jitbench (a clone, installed editable or on the path)."""
    root = Path(jitbench.__file__).resolve().parent.parent
    if _project(root / "pyproject.toml").get("name") == "jitbench":
        return root
    raise JitbenchError(
        f"jitbench runs from {str(root)!r}, not from its source tree: install it from a clone "
        "(pip install -e /path/to/jitbench) so that init can build the wheel asv installs"
    )


def jitbench_version() -> str:
    """The version in the source tree's pyproject.toml (what its wheel is named after)."""
    return str(_project(jitbench_source() / "pyproject.toml")["version"])


def asv_runner_pin() -> str:
    """The asv_runner release jitbench pins (pyproject.toml's ``report`` extra)."""
    pin = extras.pinned("asv_runner")
    if pin is None:
        raise JitbenchError("jitbench's metadata pins no asv_runner: reinstall jitbench")
    return pin


def counting_hooks() -> tuple[str | None, str]:
    """The pytest-codspeed release asv's environments install so that every ``asv run``
    counts instructions, or None where this machine cannot count; with why not."""
    from jitbench.measure.counting import callgrind

    reason = callgrind.unavailable_reason()
    if reason is not None:
        return None, reason
    hooks = importlib.metadata.version("pytest-codspeed")
    return hooks, f"pytest-codspeed {hooks} in asv's environments"


def _matrix(hooks: str | None) -> dict[str, Any]:
    req = {"asv_runner": [asv_runner_pin()], "jax": [""]}
    if hooks is None:
        return {"req": req}
    from jitbench.measure.counting.callgrind import allocator_setting
    from jitbench.measure.counting.instructions import OPT_IN_ENV

    # The tcmalloc found here, where JITBENCH_TCMALLOC named it: asv's benchmarks find it
    # without it in the environment of asv run.
    env = {OPT_IN_ENV: ["1"], **{name: [value] for name, value in allocator_setting().items()}}
    return {"req": {**req, "pytest-codspeed": [hooks]}, "env_nobuild": env}


def _build_wheel(source: Path, into: Path) -> Path:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(into), str(source)],
        capture_output=True,
        text=True,
    )
    wheels = sorted(into.glob("jitbench-*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        last = (done.stderr.strip().splitlines() or ["no wheel written"])[-1]
        raise JitbenchError(f"cannot build a jitbench wheel from {str(source)!r}: {last}")
    return wheels[0]


def init_project(folder: str | Path = ".", targets: list[str] | None = None) -> list[Path]:
    """Write asv's configuration and benchmarks for the git repository ``folder``; the paths.

    Every check comes first; an existing file among those init writes is a
    JitbenchError naming them all, and nothing is written.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise JitbenchError(f"{str(folder)!r} is not a directory; give the project's repository")
    if git(folder, "rev-parse", "--is-inside-work-tree") != "true":
        raise JitbenchError(
            f"{str(folder)!r} is not in a git repository: asv benchmarks a repository's commits"
        )
    chosen = list(targets or [])
    for spec in chosen:
        if not _SPEC.match(spec):
            raise JitbenchError(
                f"--target {spec!r} must be package.module:factory, "
                "e.g. mypackage.models:make_model"
            )
    # The wheel's name depends on jitbench's version.
    wheel = folder / WHEEL_DIR / f"jitbench-{jitbench_version()}-py3-none-any.whl"
    files = [
        folder / "asv.conf.json",
        folder / "benchmarks" / "__init__.py",
        folder / "benchmarks" / "bench_targets.py",
        folder / "benchmarks" / "README.md",
        wheel,
    ]
    existing = [str(p) for p in files if p.exists()]
    if existing:
        raise JitbenchError(f"will not overwrite existing {', '.join(existing)}; nothing written")
    source = jitbench_source()
    commit = git(source, "rev-parse", "--short=12", "HEAD")
    origin = f"built from {source}"
    if commit:
        dirty = git(source, "status", "--porcelain", "--untracked-files=no")
        origin += f" at commit {commit}" + (" with local changes" if dirty else "")
    conf, init, bench, readme, _ = files
    hooks, why = counting_hooks()
    # The distribution name in pyproject.toml (what asv uninstalls), else the folder's.
    project = _project(folder / "pyproject.toml").get("name")
    if not (isinstance(project, str) and project):
        project = folder.resolve().name
    branch = git(folder, "symbolic-ref", "--short", "HEAD") or "main"
    # Every template's fields: each takes those it names.
    values = {
        "project": project,
        "project_json": json.dumps(project),
        "branch": branch,
        "branch_json": json.dumps(branch),
        "python_json": json.dumps(f"{sys.version_info.major}.{sys.version_info.minor}"),
        "wheel_dir": WHEEL_DIR,
        "wheel_source": origin,
        "wheel_path": f"{WHEEL_DIR}/{wheel.name}",
        "hooks": hooks,
        "reason": why,
        "counts_comment": COUNTS_COMMENT if hooks else "",
        "counted": " or a count rose by over 1%" if hooks else "",
        "matrix": json.dumps(_matrix(hooks)),
    }
    values["counts"] = (COUNTS_ON if hooks else COUNTS_OFF).format_map(values)
    with tempfile.TemporaryDirectory() as scratch:
        built = _build_wheel(source, Path(scratch))
        if built.name != wheel.name:
            raise JitbenchError(f"the jitbench wheel built is {built.name}, expected {wheel.name}")
        wheel.parent.mkdir(exist_ok=True)
        shutil.copy2(built, wheel)
    init.parent.mkdir(exist_ok=True)
    conf.write_text(ASV_CONF.format_map(values))
    init.write_text(BENCHMARKS_INIT)
    listed = "".join(f"    {json.dumps(t)},\n" for t in chosen)
    bench.write_text(BENCH_TARGETS.format(targets=listed or EXAMPLE_TARGET))
    readme.write_text(BENCH_README.format_map(values))
    return files
