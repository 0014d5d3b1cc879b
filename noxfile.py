"""Sessions that create what they need: ``nox -s tests``, ``nox -s bench`` and the rest.

Every session installs jitbench with the ``all`` extra into a virtualenv of its
own, so the only prerequisites are Python 3.11+ and nox (the README installs it into
``.venv/``).
Arguments after ``--`` go to asv (bench, compare, jax_history) or pytest (tests).
asv runs with a copy of asv.conf.json made by ``python -m jitbench.suite.asvrun``
where a session needs other folders or another environment matrix.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
PYTHONS = ("3.11", "3.12", "3.13")
# The oldest Python that JAX's newest releases support: JAX 0.11 and later need
# 3.12+, so under 3.11 pip installs JAX 0.10.2 at most.
NEWEST_JAX_NEEDS = "3.12"
nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True
# The test session runs under every supported Python found here; one that is
# missing is skipped with a warning, not an error.
nox.options.error_on_missing_interpreters = False


def _runs(exe: Path) -> bool:
    """Whether ``exe`` starts: a pyenv shim for a version pyenv is not told to use exits 127."""
    done = subprocess.run([exe, "-c", ""], capture_output=True, check=False)
    return done.returncode == 0


def _pyenv_root(env: Mapping[str, str]) -> Path | None:
    """pyenv's root (``pyenv root``; PYENV_ROOT where set, which is what it prints), else its
    default, ``~/.pyenv``, where it exists (a shell that never ran pyenv's init)."""
    if env.get("PYENV_ROOT"):
        return Path(env["PYENV_ROOT"])
    pyenv = shutil.which("pyenv", path=env.get("PATH", ""))
    if not pyenv:
        default = Path(env.get("HOME", "/nonexistent")) / ".pyenv"
        return default if (default / "versions").is_dir() else None
    done = subprocess.run([pyenv, "root"], capture_output=True, text=True, check=False)
    return Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None


def _from_pyenv(root: Path, versions: Sequence[str]) -> dict[str, Path]:
    """The newest patch release of each version installed under pyenv's ``versions/``.

    The interpreters themselves, not the shims: those answer only for the
    versions that PYENV_VERSION or a .python-version names.
    """
    newest: dict[str, tuple[int, Path]] = {}
    entries = (root / "versions").iterdir() if (root / "versions").is_dir() else ()
    for entry in entries:
        release = re.fullmatch(r"(\d+\.\d+)\.(\d+)", entry.name)  # 3.12.4, not 3.13.0rc1 or 3.13t
        exe = entry / "bin" / f"python{release[1]}" if release else None
        if exe and release[1] in versions and os.access(exe, os.X_OK):
            patch = int(release[2])
            if release[1] not in newest or patch > newest[release[1]][0]:
                newest[release[1]] = (patch, exe)
    return {version: exe for version, (_, exe) in newest.items()}


def _from_uv(version: str, env: Mapping[str, str]) -> Path | None:
    """The interpreter ``uv python find --system`` reports (installed by uv or not; no venvs)."""
    uv = shutil.which("uv", path=env.get("PATH", ""))
    if not uv:
        return None
    done = subprocess.run(
        [uv, "python", "find", "--system", version], capture_output=True, text=True, env=env,
        check=False,
    )  # fmt: skip
    found = Path(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip() else None
    # nox and asv look the version up by the name pythonX.Y: its folder must have it.
    exe = found.parent / f"python{version}" if found else None
    return exe if exe and os.access(exe, os.X_OK) else None


def _from_path(version: str, env: Mapping[str, str]) -> Path | None:
    """The first ``pythonX.Y`` on PATH that runs (a refusing shim is passed over)."""
    for folder in env.get("PATH", "").split(os.pathsep):
        exe = Path(folder) / f"python{version}"
        if folder and exe.is_file() and os.access(exe, os.X_OK) and _runs(exe):
            return exe
    return None


def find_pythons(
    versions: Sequence[str] = PYTHONS, env: Mapping[str, str] = os.environ
) -> dict[str, Path]:
    """{version: executable} of the supported Pythons on this machine, oldest first.

    pyenv's installed versions first, then uv's, then PATH. Cheap, as the
    noxfile is imported on every nox call: one directory listing where pyenv
    has them all, a process per version only for those it lacks.
    """
    root = _pyenv_root(env)
    found = _from_pyenv(root, versions) if root else {}
    for version in versions:
        if version not in found and (exe := _from_uv(version, env) or _from_path(version, env)):
            found[version] = exe
    return {version: found[version] for version in versions if version in found}


def path_with(found: Mapping[str, Path], path: str) -> str:
    """PATH with the folders of ``found`` first (newest first) where PATH would find another
    ``pythonX.Y`` (a pyenv shim) or none: nox looks a session's Python up by that name on
    PATH, and so does asv in the sessions' environments."""
    ahead = []
    for version, exe in reversed(found.items()):
        if shutil.which(f"python{version}", path=path) != str(exe):
            ahead.append(str(exe.parent))
    return os.pathsep.join([*dict.fromkeys(ahead), path]) if ahead else path


def bench_python(found: Mapping[str, Path]) -> str:
    """The newest supported Python found here, for the sessions that measure (BENCH_PYTHON)."""
    return next(reversed(found), PYTHONS[0])


def old_jax_warning(python: str) -> str | None:
    """One line for ``nox -s bench`` under a Python that JAX's newest releases do not support."""
    if _version(python) >= _version(NEWEST_JAX_NEEDS):
        return None
    return (
        f"no Python {NEWEST_JAX_NEEDS}+ found (pyenv, uv, PATH): measuring the newest JAX that "
        f"Python {python} installs, not JAX's newest release, which needs {NEWEST_JAX_NEEDS}+"
    )


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


FOUND = find_pythons()
os.environ["PATH"] = path_with(FOUND, os.environ.get("PATH", ""))
BENCH_PYTHON = bench_python(FOUND)
# The JAX release history (`nox -s jax_history`): the last patch of every minor
# release from the oldest the suite supports, and the patches on each side of
# every change the audit found. flax and equinox are pinned to releases that
# work with each; "" leaves a package out (its strategies are n/a there).
_EQX = "0.13.8"
JAX_HISTORY: dict[str, dict[str, str]] = {
    # 0.4.x: flax 0.9.0 (0.10.0-0.10.4 break nnx with these releases), equinox 0.11.
    "0.4.30": {"flax": "0.9.0", "equinox": "0.11.10", "jaxlib": "0.4.30"},
    # No flax release works with 0.4.36-0.5.0 and nnx: flax left out (its strategies n/a).
    "0.4.38": {"flax": "", "equinox": _EQX, "jaxlib": "0.4.38"},
    "0.5.3": {"flax": "0.10.6", "equinox": _EQX, "jaxlib": "0.5.3"},
    "0.6.2": {"flax": "0.11.2", "equinox": _EQX, "jaxlib": "0.6.2"},
    "0.7.2": {"flax": "0.12.0", "equinox": _EQX, "jaxlib": "0.7.2"},
    # The edge where static_self_value_hash turns stale: 0.8.3 correct, 0.9.0 stale.
    "0.8.3": {"flax": "0.12.6", "equinox": _EQX, "jaxlib": "0.8.3"},
    "0.9.0": {"flax": "0.12.6", "equinox": _EQX, "jaxlib": "0.9.0"},
    "0.9.2": {"flax": "0.12.6", "equinox": _EQX, "jaxlib": "0.9.2"},
    # ... and correct again: 0.10.2 stale, 0.11.0 correct.
    "0.10.2": {"flax": "0.12.8", "equinox": _EQX, "jaxlib": "0.10.2"},
    "0.11.0": {"flax": "0.12.8", "equinox": _EQX, "jaxlib": "0.11.0"},
    "0.11.2": {"flax": "0.12.12", "equinox": _EQX, "jaxlib": "0.11.2"},
    "0.12.0.1": {"flax": "0.12.12", "equinox": _EQX, "jaxlib": "0.12.0.1"},
}


# The asv_runner release jitbench's timing relies on: pyproject.toml's pin, read once.
ASV_RUNNER = re.search(r'"asv_runner==([^"]+)"', (ROOT / "pyproject.toml").read_text())[1]


def _pinned() -> list[str]:
    """asv's --cpu-affinity for comparisons: the last CPU, where the machine has several.

    Pinned, the run-to-run spread of cached calls at small sizes narrows, since
    a pinned process no longer depends on where XLA's worker thread runs
    (docs/validation.md); the figures are slower than unpinned (one core for
    both threads), so pinned runs are compared with each other, never with
    `nox -s bench`.
    """
    cpus = os.cpu_count() or 1
    return ["--cpu-affinity", str(cpus - 1)] if cpus > 1 else []


def _install(session: nox.Session) -> bool:
    """Install jitbench into the session; False under ``--install-only`` (stop there).

    nox has no public flag for ``--install-only``; ``session.run`` returning None
    is its documented way of skipping commands then, and the session's later steps
    read what those commands would have written.
    """
    session.install("-e", f"{ROOT}[all]")
    return session.run("python", "-c", "", silent=True) is not None


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _asv(
    session: nox.Session, folder: Path, overrides: dict, *args: str, pins: dict | None = None,
    **kwargs,
) -> None:  # fmt: skip
    """asv with a copy of asv.conf.json in ``folder`` carrying ``overrides`` and ``pins``."""
    sets = [f"--set={key}={json.dumps(value)}" for key, value in overrides.items()]
    sets += [f"--pin={name}={version}" for name, version in (pins or {}).items()]
    # asvrun turns any other asv status into an error: accept what the session accepts.
    sets += [f"--ok={','.join(map(str, kwargs.get('success_codes', [0])))}"]
    session.run("python", "-m", "jitbench.suite.asvrun", f"--folder={folder}", *sets, "--", *args,
                **kwargs)  # fmt: skip


def _machine(session: nox.Session, args: list[str]) -> None:
    """Describe this machine to asv under the name given with --machine, or the hostname."""
    name = args[args.index("--machine") + 1] if "--machine" in args else platform.node()
    # Not `asv machine --yes --machine NAME`: for a name asv does not know yet, that
    # records the name alone, and results filed under it would describe no hardware.
    session.run("python", "-m", "jitbench.suite.asvcompat", "describe-machine", name)
    _check_machine(session, name)


# The fields of asv's machine description that name the hardware.
HARDWARE = ("arch", "cpu", "num_cpu")


def _check_machine(
    session: nox.Session, name: str, results: Path = ROOT / "results",
    machines: Path | None = None,
) -> None:  # fmt: skip
    """Stop before asv files this host's results under a name whose results describe other
    hardware: asv would rewrite that machine.json, relabelling the results already there."""
    committed = results / name / "machine.json"
    if not committed.exists() or not any(committed.parent.glob("*-*.json")):
        return
    before = json.loads(committed.read_text())
    machines = machines or Path.home() / ".asv-machine.json"  # where asv machine writes
    here = json.loads(machines.read_text()).get(name, {})
    differ = [f"{k} {before.get(k)!r} here {here.get(k)!r}" for k in HARDWARE
              if before.get(k) != here.get(k)]  # fmt: skip
    if differ:
        session.error(
            f"results/{name} holds results of other hardware ({'; '.join(differ)}): "
            "name this host with -- --machine NAME"
        )


def _selects(args: list[str]) -> bool:
    """Whether asv arguments choose benchmarks (``-b``/``--bench``): asv runs the union of all."""
    return any(a in ("-b", "--bench") or a.startswith(("-b", "--bench=")) for a in args)


def _regex(session: nox.Session, group: str) -> str:
    """The ``asv run -b`` regex of a group of benchmarks named in jitbench.suite.catalog."""
    code = f"from jitbench.suite import catalog; print(catalog.regex(*catalog.{group}))"
    return session.run("python", "-c", code, silent=True).strip().splitlines()[-1]


# JAX and its accelerator plugins, as installed in the session: asv's environment
# gets the same releases (a CUDA plugin with its CUDA wheels, as jax[cudaNN] has it).
_JAX_PINS = r"""
import importlib.metadata as m, json, re
pins = {}
for dist in m.distributions():
    name = (dist.metadata["Name"] or "").lower().replace("_", "-")
    if name in ("jax", "jaxlib") or re.fullmatch(r"jax-(cuda|rocm)\d+-(plugin|pjrt)|libtpu", name):
        extra = "[with-cuda]" if re.fullmatch(r"jax-cuda\d+-plugin", name) else ""
        pins[name + extra] = dist.version
print(json.dumps(pins))
"""


def _jax_pins(session: nox.Session) -> dict[str, str]:
    """{package: version} of JAX and any accelerator plugin installed in the session."""
    out = session.run("python", "-c", _JAX_PINS, silent=True).strip().splitlines()[-1]
    pins = json.loads(out)
    # jaxlib last but one and jax last: what installs first cannot move them.
    order = sorted(pins, key=lambda k: (k == "jax", k == "jaxlib"))
    return {k: pins[k] for k in order}


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: lint and formatting."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    """pytest, ``asv check``, and a quick asv run of a subset feeding a report.

    The tests marked slow (they run asv, a browser or Valgrind) and the asv
    steps run under the newest Python found only (see :func:`pytest_args`),
    unless arguments are given.
    """
    if not _install(session):
        return
    args = pytest_args(session.python, list(session.posargs))
    narrowed = args[len(PARALLEL) :] != list(session.posargs)
    if narrowed:
        session.log(
            f"the slow tests and asv's smoke run: under Python {BENCH_PYTHON} only "
            "(-- -m slow runs the slow tests here)"
        )
    code = session.run("pytest", *args, success_codes=[0, 5])
    if code == 5:
        session.error("pytest collected no tests: the test suite is missing or misconfigured")
    if narrowed:
        return
    session.run("asv", "check", "--python=same")
    with tempfile.TemporaryDirectory(prefix="jitbench-smoke-") as tmp:
        # Smoke results go to a temporary folder: results/ only gets real runs.
        folder = Path(tmp)
        where = {"results_dir": str(folder / "results"), "html_dir": str(folder / "html")}
        # One size on the cpu device: the smoke run checks that the real suite runs and
        # reports under asv; the tests cover the grid (a second size and the sharded device
        # would triple its minutes in CI).
        env = {"JITBENCH_SIZES": "10", "JITBENCH_DEVICES": "cpu"}
        _asv(session, folder, where, "machine", "--yes", "--machine", "smoke")
        _asv(
            session, folder, where, "run", "--python=same", "--quick", "--machine", "smoke",
            "--set-commit-hash", _git("rev-parse", "HEAD"), "-b", _regex(session, "SMOKE"),
            "--show-stderr", env=env,
        )  # fmt: skip
        session.run(
            "jitbench", "report", "--results", str(folder / "results"), "--out",
            str(folder / "report"),
        )  # fmt: skip


# pytest-xdist: a test file per worker, one worker per core (at most 4). Most tests spend
# their time on one core (JAX compiles, fresh processes), so the workers keep every core
# busy; a file's module fixtures (an asv run, a Valgrind process) are still made once. The
# files are handed out in the order they are collected: xdist's default order, most tests
# first, left the gallery's printed-code file (one test of minutes) to run alone at the end.
PARALLEL = ["-n", "auto", "--maxprocesses=4", "--dist", "loadfile", "--no-loadscope-reorder"]


def pytest_args(python: str, posargs: list[str], newest: str | None = None) -> list[str]:
    """pytest's arguments for the test session under ``python``.

    The slow tests check asv, the dashboard and Valgrind, which work alike under
    every Python; under all three they would take CI past 20 minutes on two
    cores. So a Python older than the newest found (``newest``, default
    BENCH_PYTHON) runs the rest, unless the arguments choose for themselves.
    Test files run in parallel (:data:`PARALLEL`); ``-- -n 0`` runs them in one process.
    """
    if posargs or python == (newest or BENCH_PYTHON):
        return [*PARALLEL, *posargs]
    return [*PARALLEL, "-m", "not slow"]


def _run_at_head(
    session: nox.Session, folder: str, *extra: str, group: str | None = None,
    pins: dict | None = None, env: dict | None = None,
) -> None:  # fmt: skip
    """``asv run HEAD^!`` under the session's Python and JAX (``pins``, default the
    session's JAX) in ``.asv/FOLDER``, the session's arguments passed on, then the report.

    ``group``: the jitbench.suite.catalog group of benchmarks to run, unless the arguments
    choose (``-b``); ``env`` adds to asv's environment (an opt-in family's switch).
    """
    args = list(session.posargs)
    _machine(session, args)
    chosen = [] if group is None or _selects(args) else ["-b", _regex(session, group)]
    _asv(
        session, ROOT / ".asv" / folder, {"pythons": [session.python]}, "run", "HEAD^!",
        "--show-stderr", *extra, *chosen, *args, pins=pins or _jax_pins(session),
        env=env or {}, success_codes=[0, 2],
    )  # fmt: skip
    session.run("jitbench", "report", "--results", "results", "--out", "reports")


@nox.session(python=BENCH_PYTHON)
def bench(session: nox.Session) -> None:
    """Benchmark this machine at the current commit (HEAD), then report and publish.

    asv builds its own virtualenv with the JAX release installed here pinned
    (the newest on the package index for this Python), so the results name
    their JAX release. ``nox -s bench -- --quick`` or ``-- -b CachedCall``
    pass through to asv run, ``-- --machine NAME`` names the machine.
    """
    if warning := old_jax_warning(session.python):
        session.warn(warning)
    if not _install(session):
        return
    _run_at_head(session, "bench", "--record-samples")
    _publish(session)
    session.log("results: results/  report: reports/index.html  dashboard: html/ (asv preview)")
    session.log("instructions per call (Valgrind, minutes): add them with nox -s instructions")
    session.log("many live instances (up to 10,000 per strategy, an hour): nox -s instances")


@nox.session(python=BENCH_PYTHON)
def instructions(session: nox.Session) -> None:
    """Count each strategy's (and target's) instructions per call with Valgrind, at HEAD.

    The opt-in family of ``benchmarks/bench_instructions.py``: results go to
    results/ beside the times, under their own asv environment (it adds
    pytest-codspeed, whose compiled hooks start and stop the counting);
    ``jitbench compare`` judges them by ``--count-tolerance``, not by samples.
    """
    if not _install(session):
        return
    # One line and exit 2 without Valgrind or tcmalloc.
    session.run("python", "-m", "jitbench.measure.counting.callgrind")
    # The hooks' release installed here joins asv's environment, before JAX's pins.
    code = "import importlib.metadata as m; print(m.version('pytest-codspeed'))"
    hooks = session.run("python", "-c", code, silent=True).strip().splitlines()[-1]
    pins = {"pytest-codspeed": hooks, **_jax_pins(session)}
    env = {"JITBENCH_INSTRUCTIONS": "1"}
    _run_at_head(session, "instructions", group="COUNTED", pins=pins, env=env)
    session.log("results: results/  report: reports/index.html (instructions per call)")


@nox.session(python=BENCH_PYTHON)
def instances(session: nox.Session) -> None:
    """Measure populations of live instances per strategy (1, 100, 10,000), at HEAD.

    The opt-in family of ``benchmarks/bench_population.py``
    (``JITBENCH_INSTANCES=1``): one fresh process per population, in the
    environment of ``nox -s bench`` so its rows sit beside the times; ``-- -b
    'Population.*bound_method_jit'`` narrows it. Results go to results/.
    """
    if warning := old_jax_warning(session.python):
        session.warn(warning)
    if not _install(session):
        return
    _run_at_head(session, "bench", group="POPULATED", env={"JITBENCH_INSTANCES": "1"})
    session.log("results: results/  report: reports/index.html (Many live instances)")


def _publish(session: nox.Session) -> None:
    session.run("asv", "publish")
    # The dashboard's project link (project_url in asv.conf.json) opens this copy.
    shutil.copytree(ROOT / "reports", ROOT / "html" / "report", dirs_exist_ok=True)
    # asv's page loads its scripts from CDNs: serve the copies inside jitbench from
    # html/vendor/ instead (works offline), and link the report back to the dashboard.
    session.run("python", "-m", "jitbench.dashboard", str(ROOT / "html"))


@nox.session(python=BENCH_PYTHON)
def publish(session: nox.Session) -> None:
    """``asv publish`` into html/ (offline-ready, report linked); view with ``asv preview``."""
    if not _install(session):
        return
    session.run("jitbench", "report", "--results", "results", "--out", "reports")
    _publish(session)
    session.log("dashboard in html/: run `asv preview` and open the address it prints")


@nox.session(python=BENCH_PYTHON)
def compare(session: nox.Session) -> None:
    """BASE against HEAD, interleaved in time, then ``jitbench compare`` on the samples.

    ``asv continuous`` runs every benchmark in several rounds (processes),
    alternating BASE and HEAD between rounds so that drift of the machine hits
    both, each process pinned to one CPU (see _pinned). ``nox -s compare --
    BASE -b CachedCall`` picks another base (default main) and a subset.
    """
    if not _install(session):
        return
    args = list(session.posargs)
    base = args.pop(0) if args and not args[0].startswith("-") else "main"
    _machine(session, args)
    _asv(
        session, ROOT / ".asv" / "bench", {"pythons": [session.python]}, "continuous",
        "--interleave-rounds", *_pinned(), base, "HEAD", *args, pins=_jax_pins(session),
        success_codes=[0, 1],
    )  # fmt: skip
    session.run("jitbench", "compare", _git("rev-parse", base), _git("rev-parse", "HEAD"))


@nox.session(python="3.12")
def jax_history(session: nox.Session) -> None:
    """Hazards and the core timings under every JAX release in JAX_HISTORY, at HEAD.

    asv builds one virtualenv per release (Python 3.12, which every listed
    release supports) with its flax and equinox pins; results go to results/
    like any run. ``-- -b Hazards`` runs those benchmarks instead of the default set.
    Then docs/release_audits.py keeps ``jitbench audit`` of every release in docs/history/.
    """
    if not _install(session):
        return
    args = list(session.posargs)
    _machine(session, args)
    # Build tools first, JAX last: asv installs in this order, so nothing moves JAX.
    include = [
        {
            "python": "3.12",
            "req": {
                "setuptools": "", "wheel": "", "asv_runner": ASV_RUNNER,
                **{k: v for k, v in pins.items() if v and k != "jaxlib"},
                "jaxlib": pins["jaxlib"], "jax": release,
            },
        }
        for release, pins in JAX_HISTORY.items()
    ]  # fmt: skip
    # The matrix's own combinations are all excluded: only the releases above run.
    overrides = {"pythons": ["3.12"], "include": include, "exclude": [{"python": ".*"}]}
    chosen = [] if _selects(args) else ["-b", _regex(session, "HISTORY")]
    env = {"JITBENCH_SIZES": "10,1000000", "JITBENCH_DEVICES": "cpu"}
    # The narrowed grid leaves results/benchmarks.json as it was (asvrun merges descriptions).
    _asv(
        session, ROOT / ".asv" / "history", overrides, "run", "HEAD^!", "--record-samples",
        "--show-stderr", *chosen, *args, env=env, success_codes=[0, 2],
    )  # fmt: skip
    session.run("jitbench", "report", "--results", "results", "--out", "reports")
    # The audit under each release, committed for the history page (asv's envs are not).
    session.run("python", str(ROOT / "docs" / "release_audits.py"))


@nox.session(python=BENCH_PYTHON)
def readme(session: nox.Session) -> None:
    """Regenerate the README's figures and generated code from committed results.

    Every number in the README's generated blocks comes from here, never by hand.
    """
    if not _install(session):
        return
    session.run("python", str(ROOT / "docs" / "make_readme.py"))


VALIDATION_DOCS = ROOT / "docs" / "validation"
COUNTS_DOCS = ROOT / "docs" / "counts"


@nox.session(python=BENCH_PYTHON)
def validate(session: nox.Session) -> None:
    """How far the suite's figures drift here, and the smallest slowdown it catches.

    Writes reports/validation/ (see ``jitbench validate --help``) and files its
    summary.json as docs/validation/<machine>.json, the run the README's
    validation page shows (``-- --machine NAME`` names the machine; default the
    hostname). ``-- --phases counts`` checks Valgrind's instruction counts
    instead, filed as docs/counts/<machine>.json (the README's counts table).
    """
    if not _install(session):
        return
    args = list(session.posargs)
    machine = platform.node()
    if "--machine" in args:
        at = args.index("--machine")
        machine = args[at + 1]
        del args[at : at + 2]
    phases = args[args.index("--phases") + 1].split(",") if "--phases" in args else []
    if "--cpu-affinity" not in args and phases != ["counts"]:
        args += _pinned()  # as nox -s compare runs asv (the counts phase runs no asv)
    # Exit 1 means a target was missed; the report says which and why.
    session.run("jitbench", "validate", *args, success_codes=[0, 1])
    out = Path(args[args.index("--out") + 1]) if "--out" in args else Path("reports/validation")
    record = {"machine": machine, **json.loads((ROOT / out / "summary.json").read_text())}
    # The counts phase runs on its own (Valgrind, minutes): its record is filed apart.
    target = (COUNTS_DOCS if phases == ["counts"] else VALIDATION_DOCS) / f"{machine}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(record, indent=1) + "\n")
    session.log(f"summary of this run: {target} (commit it: nox -s readme quotes it)")
