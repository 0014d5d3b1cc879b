"""``jitbench init``: what asv needs to benchmark another project's commits with jitbench, laid
out as numpy's and scipy's suites are: a ``benchmarks/`` folder holding ``asv.conf.json``
(``"repo": ".."``) and the suite package ``benchmarks/benchmarks/``, which no package finder
of the project reaches (docs/own-objects.md); the templates are here only. Nothing is
overwritten: an existing file is one error, and nothing is written."""

from __future__ import annotations

import configparser
import importlib.metadata
import json
import re
import shutil
import sys
import tempfile
import tomllib
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

import jitbench
from jitbench import child, extras
from jitbench.child import Json
from jitbench.errors import JitbenchError
from jitbench.measure.counting import callgrind
from jitbench.measure.counting.instructions import OPT_IN_ENV
from jitbench.options import CI_PROVIDERS
from jitbench.suite import ci as ci_module
from jitbench.suite.asvrun import git, load_config
from jitbench.suite.caches import HOME
from jitbench.suite.install import HELD
from jitbench.suite.templates import (
    ASV_CONF,
    BENCH_README,
    BENCH_TARGETS,
    BENCHMARKS_INIT,
    CI_WORDS,
    COUNTS_COMMENT,
    COUNTS_OFF,
    COUNTS_ON,
    EXAMPLE_TARGET,
    FRESH_CLONE,
    GITATTRIBUTES,
    GITIGNORE,
    HOME_IGNORED,
    NO_CI_WORDS,
)

# The folder init writes into, from the project's root: asv's config, the suite package (of
# the same name, inside it: asv imports it by that name) and what git ignores. A project whose
# own benchmarks/ is taken names another folder (--folder asv_bench, pandas' name); the
# package inside keeps this name, and so do the targets' modules (benchmarks.targets).
SUITE = "benchmarks"
_FOLDER = re.compile(r"^[A-Za-z0-9_][\w.-]*$")
_SPEC = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def _project(pyproject: Path) -> dict[str, Json]:
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
    """The running jitbench's version (what its wheel is named after): its source tree's
    pyproject.toml's, else the installed distribution's (CI installs the committed wheel)."""
    root = Path(jitbench.__file__).resolve().parent.parent
    found = _project(root / "pyproject.toml")
    if found.get("name") == "jitbench":
        return str(found["version"])
    return importlib.metadata.version("jitbench")


def asv_runner_pin() -> str:
    """The asv_runner release jitbench pins (pyproject.toml's ``report`` extra)."""
    pin = extras.pinned("asv_runner")
    if pin is None:
        raise JitbenchError("jitbench's metadata pins no asv_runner: reinstall jitbench")
    return pin


def counting_hooks(ci: bool = False) -> tuple[str | None, str]:
    """The pytest-codspeed release asv's environments install so that every ``asv run``
    counts instructions, or None where this machine cannot count; with why not. With ``ci``
    (the workflow installs Valgrind and tcmalloc on its runner) the release installed here,
    whether or not this machine can count."""
    reason = callgrind.unavailable_reason()
    if reason is not None and not ci:
        return None, reason
    try:
        hooks = importlib.metadata.version("pytest-codspeed")
    except importlib.metadata.PackageNotFoundError:
        raise JitbenchError(
            "--ci: the workflow counts instructions with pytest-codspeed, which is not "
            "installed here: install jitbench[instructions], so that init pins its release"
        ) from None
    found = f"pytest-codspeed {hooks} in asv's environments"
    if reason is not None:
        found += f" (this machine cannot count: {reason}; CI's runner installs Valgrind)"
    return hooks, found


def _declared(project: dict[str, Json], folder: Path) -> set[str]:
    """The distributions the project requires: its ``[project]`` table's dependencies (not
    its extras': a docs or test extra is no dependency of the objects measured), and its
    ``requirements.txt``'s (where a setup.py reads them from)."""
    texts = list(project.get("dependencies", []))
    listed = folder / "requirements.txt"
    if listed.is_file():
        texts.extend(line.split("#")[0].strip() for line in listed.read_text().splitlines())
    names = set()
    for text in texts:
        try:
            names.add(Requirement(text).name.lower())
        except InvalidRequirement:
            continue
    return names


def distribution_name(project: dict[str, Json], folder: Path) -> str:
    """The project's distribution (asv.conf.json's project: the dashboard's title, what asv
    uninstalls): pyproject.toml's name, else setup.cfg's, else the one literal ``name=`` of
    setup.py, else the folder's name."""
    name = project.get("name")
    if isinstance(name, str) and name:
        return name
    config = configparser.ConfigParser()
    try:
        config.read(folder / "setup.cfg")
    except configparser.Error:
        pass
    name = config.get("metadata", "name", fallback="")
    if name:
        return name
    setup = folder / "setup.py"
    text = setup.read_text(errors="replace") if setup.is_file() else ""
    found = set(re.findall(r"""\bname\s*=\s*["']([A-Za-z0-9][\w.-]*)["']""", text))
    return found.pop() if len(found) == 1 else folder.resolve().name


def held_releases(project: dict[str, Json], folder: Path, jax: str | None = None) -> dict[str, str]:
    """The releases every commit is measured with (:data:`HELD`): JAX at ``jax`` (default: it
    and jaxlib as installed here), and equinox and flax where the project requires them, as
    installed here."""
    declared = _declared(project, folder)
    found = {}
    for name in HELD:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    if jax is not None:
        try:
            Version(jax)
        except InvalidVersion:
            raise JitbenchError(f"--jax {jax!r} is not a release such as 0.12.1") from None
        found["jax"] = jax
        del found["jaxlib"]  # the one jax requires (not every release has a jaxlib of its own)
    elif "jax" not in found or "jaxlib" not in found:
        raise JitbenchError("JAX is not installed here: name the release to hold, --jax 0.12.1")
    return {k: v for k, v in found.items() if k in ("jax", "jaxlib") or k in declared}


def python_release(project: dict[str, Json], python: str | None = None) -> str:
    """The Python asv's environments use: ``python`` (``X.Y``), default this one's, where
    the project's ``requires-python`` allows it."""
    chosen = python or f"{sys.version_info.major}.{sys.version_info.minor}"
    if not re.fullmatch(r"3\.\d+", chosen):
        raise JitbenchError(f"--python {chosen!r} is not a Python release such as 3.12")
    requires = project.get("requires-python")
    try:
        allowed = SpecifierSet(requires or "")
    except InvalidSpecifier:
        return chosen
    if chosen in allowed or f"{chosen}.0" in allowed:
        return chosen
    what = f"--python {chosen}" if python else f"this Python ({chosen})"
    raise JitbenchError(
        f"{what}: the project's requires-python is {requires!r}; give one it allows, "
        "e.g. --python 3.12, with a JAX release for it (--jax)"
    )


def _matrix(hooks: str | None, held: dict[str, str], packages: dict[str, str]) -> dict[str, Json]:
    # JAX last: asv installs the matrix in its order, and a library installed after it could
    # move it (docs/design.md). The packages a project uses without declaring them first.
    last = sorted(held, key=lambda name: name in ("jax", "jaxlib"))
    req = {
        "asv_runner": [asv_runner_pin()],
        **{k: [v] for k, v in packages.items()},
        **{k: [held[k]] for k in last},
    }
    if hooks is None:
        return {"req": req}
    # tcmalloc is found where the benchmarks run (the system's, or JITBENCH_TCMALLOC in the
    # environment of asv run): a path of this machine's would be committed, and would name
    # asv's environment.
    return {"req": {**req, "pytest-codspeed": [hooks]}, "env_nobuild": {OPT_IN_ENV: ["1"]}}


def extra_packages(given: list[str]) -> dict[str, str]:
    """``--with`` as the matrix's entries: ``NAME`` (the newest release, ``""``) or
    ``NAME==VERSION``; anything else is a JitbenchError naming it."""
    found = {}
    for text in given:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            requirement = None
        specs = list(requirement.specifier) if requirement else []
        pinned = len(specs) == 1 and specs[0].operator == "=="
        if (
            requirement is None
            or requirement.extras
            or requirement.marker
            or (specs and not pinned)
        ):
            raise JitbenchError(
                f"--with {text!r} must be a package, or a package==release, such as six or "
                "six==1.17.0"
            )
        found[requirement.name] = specs[0].version if pinned else ""
    held = [name for name in found if name.lower() in HELD or name == "asv_runner"]
    if held:
        raise JitbenchError(
            f"--with {held[0]}: jitbench holds it already (--jax chooses JAX's release)"
        )
    return found


def _build_wheel(source: Path, into: Path) -> Path:
    """jitbench's wheel built from ``source`` into ``into``; pip's cache left alone (it is in
    the home folder)."""
    argv = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-q"]
    done = child.run([*argv, "-w", str(into), str(source)], what="pip wheel")
    wheels = sorted(into.glob("jitbench-*.whl"))
    if done.status != 0 or len(wheels) != 1:
        last = (done.stderr.strip().splitlines() or ["no wheel written"])[-1]
        raise JitbenchError(f"cannot build a jitbench wheel from {str(source)!r}: {last}")
    return wheels[0]


def _origin(source: Path) -> str:
    """Where the wheel comes from: jitbench's commit, never the folder of its clone (the file
    is committed: a path of this machine means nothing on another)."""
    commit = git(source, "rev-parse", "--short=12", "HEAD")
    origin = "built from a clone of jitbench"
    if commit:
        dirty = git(source, "status", "--porcelain", "--untracked-files=no")
        origin += f" at commit {commit}" + (" with local changes" if dirty else "")
    return origin


def _wheel(root: Path) -> Path:
    """Where the jitbench wheel goes in the suite folder ``root``."""
    return root / HOME / f"jitbench-{jitbench_version()}-py3-none-any.whl"


def _write_wheel(wheel: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        built = _build_wheel(jitbench_source(), Path(scratch))
        if built.name != wheel.name:
            raise JitbenchError(f"the jitbench wheel built is {built.name}, expected {wheel.name}")
        wheel.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, wheel)


def _checked_repository(folder: Path) -> None:
    if not folder.is_dir():
        raise JitbenchError(f"{str(folder)!r} is not a directory; give the project's repository")
    if git(folder, "rev-parse", "--is-inside-work-tree") != "true":
        raise JitbenchError(
            f"{str(folder)!r} is not in a git repository: asv benchmarks a repository's commits"
        )


def suite_folder(name: str | None) -> str:
    """The folder of the suite, from the project's root: ``name`` (``--folder``), one folder
    name, or :data:`SUITE`."""
    if name is None:
        return SUITE
    if not _FOLDER.match(name) or name in (".", ".."):
        raise JitbenchError(
            f"--folder {name!r} must be one folder name at the repository's root, e.g. asv_bench"
        )
    return name


def init_wheel(folder: str | Path = ".", suite: str = SUITE) -> list[Path]:
    """Build the jitbench wheel again into the suite (in ``suite``/) of the project at
    ``folder`` (a fresh clone of a project set up by :func:`init_project` lacks it: git
    ignores it); its path."""
    folder = Path(folder)
    _checked_repository(folder)
    root = folder / suite
    if not (root / "asv.conf.json").is_file():
        raise JitbenchError(
            f"no {suite}/asv.conf.json in {str(folder)!r}: --wheel rebuilds the wheel of a "
            "project set up by jitbench init (--folder: the folder init wrote); run jitbench "
            "init there first"
        )
    wheel = _wheel(root)
    if wheel.exists():
        raise JitbenchError(f"will not overwrite existing {wheel}; nothing written")
    _write_wheel(wheel)
    return [wheel]


def read_conf(root: str | Path) -> dict[str, Json]:
    """The asv.conf.json in ``root``, read as asv reads it (// comments)."""
    return load_config(Path(root))


def machine_file(root: str | Path) -> Path:
    """Where ``jitbench asv`` keeps asv's machine file: in :data:`HOME` of the suite folder
    ``root`` init wrote (a JitbenchError elsewhere)."""
    root = Path(root).resolve()
    if not ((root / "asv.conf.json").is_file() and (root / ".gitignore").is_file()):
        raise JitbenchError(
            f"no suite of jitbench init's in {str(root)!r} (asv.conf.json and .gitignore): run "
            "jitbench asv from the folder init wrote (benchmarks/, or --folder's), or asv "
            "itself elsewhere"
        )
    if not _wheel(root).is_file():
        raise JitbenchError(
            f"{_wheel(root)} is missing (a fresh clone: git ignores it): run jitbench init "
            "--wheel from the repository's root first"
        )
    return root / HOME / "asv-machine.json"


def target_notes(folder: str | Path, targets: list[str]) -> list[str]:
    """A note for each target whose module is part of the project itself rather than of the
    suite: commits older than that module cannot import it."""
    notes = []
    for spec in targets:
        top = spec.partition(":")[0].partition(".")[0]
        inside = any((Path(folder) / where / top).exists() for where in ("", "src"))
        if top != SUITE and inside:
            notes.append(
                f"{spec}: its module is in the project, so commits older than it cannot "
                f"import it; keep target modules in the suite ({SUITE}/{SUITE}/targets.py, "
                f"--target {SUITE}.targets:make)"
            )
    return notes


def init_project(
    folder: str | Path = ".",
    targets: list[str] | None = None,
    *,
    jax: str | None = None,
    python: str | None = None,
    ci: str | None = None,
    packages: list[str] | None = None,
    suite: str = SUITE,
) -> list[Path]:
    """Write asv's configuration and benchmarks into ``folder``/``suite`` (default
    :data:`SUITE`; the suite package inside it is :data:`SUITE` whatever its name) for the
    git repository ``folder``; the paths.

    Every commit is measured with the JAX release ``jax`` (default: the one installed here;
    :func:`held_releases`) under Python ``python`` (default: this one), with ``packages``
    (``NAME`` or ``NAME==VERSION``: what the project imports without declaring it) in every
    commit's environment. ``ci="github"`` also writes the GitHub Actions workflow
    (:mod:`jitbench.suite.ci`), counts on and the jitbench wheel committed, which it installs.
    Every check comes first; an existing file among those init writes is a JitbenchError
    naming them all, and nothing is written.
    """
    folder = Path(folder)
    _checked_repository(folder)
    chosen = list(targets or [])
    for spec in chosen:
        if not _SPEC.match(spec):
            raise JitbenchError(
                f"--target {spec!r} must be module:factory, e.g. {SUITE}.targets:make"
            )
    if ci is not None and ci not in CI_PROVIDERS:
        raise JitbenchError(f"--ci {ci!r} is not known; valid: {', '.join(CI_PROVIDERS)}")
    extra = extra_packages(list(packages or []))
    project = _project(folder / "pyproject.toml")
    held = held_releases(project, folder, jax)
    release = python_release(project, python)
    root = folder / suite
    package = root / SUITE
    wheel = _wheel(root)  # its name depends on jitbench's version
    files = [
        root / "asv.conf.json",
        root / "README.md",
        root / ".gitignore",
        root / ".gitattributes",
        package / "__init__.py",
        package / "bench_targets.py",
        wheel,
    ]
    if ci is not None:
        files.append(folder / ci_module.WORKFLOW)
    other = "asv_bench" if suite != "asv_bench" else "jitbench_bench"
    if (root / "__init__.py").exists():
        # The project's own benchmarks package (optimistix's): the suite's folder must not be
        # one (asv imports the package inside it by its name; no package finder may enter it).
        raise JitbenchError(
            f"{root}/ is a package of the project already ({root / '__init__.py'}); "
            f"--folder {other} puts the suite in another folder; nothing written"
        )
    existing = [str(p) for p in files if p.exists()]
    if existing:
        raise JitbenchError(
            f"will not overwrite existing {', '.join(existing)} (--folder {other} puts the "
            "suite in another folder); nothing written"
        )
    conf, readme, ignore, attributes, init, bench = files[:6]
    hooks, why = counting_hooks(ci is not None)
    name = distribution_name(project, folder)
    branch = git(folder, "symbolic-ref", "--short", "HEAD") or "main"
    wheel_path = f"{{conf_dir}}/{HOME}/{wheel.name}"
    home_words, home_lines = HOME_IGNORED[ci is not None]
    # Every template's fields: each takes those it names.
    values = {
        "project": name,
        "project_json": json.dumps(name),
        "branch": branch,
        "branch_json": json.dumps(branch),
        "python": release,
        "python_json": json.dumps(release),
        "home": HOME,
        "suite": SUITE,
        "wheel_name": wheel.name,
        "wheel_source": _origin(jitbench_source()),
        "install_jitbench": json.dumps(
            f"in-dir={{env_dir}} python -m pip install -q --no-deps --force-reinstall {wheel_path}"
        ),
        "install_project": json.dumps(
            f"in-dir={{env_dir}} python -m jitbench.suite.install {{wheel_file}} {wheel_path} "
            f"{{conf_dir}}/{SUITE}"
        ),
        "held_words": ", ".join(held),
        "held_pins": ", ".join(f"{k} {v}" for k, v in held.items()),
        "packages": ", ".join(f"{k} {v or '(newest)'}" for k, v in extra.items()),
        "hooks": hooks,
        "reason": why,
        "counts_comment": COUNTS_COMMENT if hooks else "",
        "counted": ", an instruction count rose by over 1%" if hooks else "",
        # One line per package: a package the project forgets is one line to add.
        "matrix": json.dumps(_matrix(hooks, held, extra), indent=4).replace("\n", "\n    "),
        "home_words": home_words,
        # The workflow is at the repository's root, beside this folder.
        "git_add_ci": f" ../{ci_module.WORKFLOW.parts[0]}" if ci is not None else "",
        "ignored": f"`{HOME}/` (but the wheel)" if ci is not None else f"`{HOME}/`",
        "audit_target": chosen[0] if chosen else f"{SUITE}.targets:make",
        "wheel_command": "jitbench init --wheel" + (f" --folder {suite}" if suite != SUITE else ""),
    }
    values["home_lines"] = home_lines.format_map(values)
    values["counts"] = (COUNTS_ON if hooks else COUNTS_OFF).format_map(values)
    values["ci_words"] = CI_WORDS.format_map(values) if ci is not None else NO_CI_WORDS
    values["fresh_clone"] = FRESH_CLONE[ci is not None].format_map(values)
    _write_wheel(wheel)
    package.mkdir(parents=True, exist_ok=True)
    conf.write_text(ASV_CONF.format_map(values))
    readme.write_text(BENCH_README.format_map(values))
    ignore.write_text(GITIGNORE.format_map(values))
    attributes.write_text(GITATTRIBUTES)
    init.write_text(BENCHMARKS_INIT.format_map(values))
    listed = "".join(f"    {json.dumps(t)},\n" for t in chosen)
    example = EXAMPLE_TARGET.format(suite=SUITE)
    bench.write_text(BENCH_TARGETS.format(targets=listed or example, **values))
    if ci is not None:
        workflow = folder / ci_module.WORKFLOW
        workflow.parent.mkdir(parents=True, exist_ok=True)
        workflow.write_text(
            ci_module.workflow(
                branch=branch, python=release, suite=suite, home=HOME,
                wheel=f"{HOME}/{wheel.name}", held=held,
            )
        )  # fmt: skip
    return files
