"""``jitbench init``: asv's files for another project's repository, and nothing over existing ones.

The written ``asv.conf.json`` is read with asv's own configuration loader,
and the benchmarks package with asv's own discovery; the real run of what
init writes is tests/test_target_loop.py.
"""

from __future__ import annotations

import importlib.metadata
import io
import json
import logging
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from asv.config import Config

from jitbench.cli import main
from jitbench.suite import scaffold

ROOT = Path(__file__).resolve().parent.parent
TARGET = "target_models:make_model"
WHEEL = f"{scaffold.HOME}/jitbench-{scaffold.jitbench_version()}-py3-none-any.whl"
# The suite's files, from the project's root: committed, then ignored by git.
TRACKED = [
    "benchmarks/asv.conf.json",
    "benchmarks/README.md",
    "benchmarks/.gitignore",
    "benchmarks/.gitattributes",
    "benchmarks/benchmarks/__init__.py",
    "benchmarks/benchmarks/bench_targets.py",
]
WRITTEN = [*TRACKED, f"benchmarks/{WHEEL}"]
INSTALLED = {name: importlib.metadata.version(name) for name in ("jax", "jaxlib")}
# A tcmalloc that does not exist: this machine cannot count, whatever it has installed.
NO_COUNTS = {"JITBENCH_TCMALLOC": "/nonexistent/libtcmalloc_minimal.so"}


def _repo(folder: Path, *, pyproject: bool = True) -> Path:
    folder.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "trunk"], cwd=folder, check=True)
    if pyproject:
        (folder / "pyproject.toml").write_text('[project]\nname = "my-models"\nversion = "1"\n')
    return folder


def _init(repo: Path, *args: str, env: dict[str, str] | None = None):
    return subprocess.run(
        [sys.executable, "-m", "jitbench", "init", str(repo), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, list[str]]:
    """One init with a target (it builds a jitbench wheel: seconds)."""
    repo = _repo(tmp_path_factory.mktemp("init") / "project")
    done = _init(repo, "--target", TARGET)
    assert done.returncode == 0, done.stderr
    return repo, done.stdout.splitlines()


def test_init_writes_asvs_files_and_names_them(written):
    repo, printed = written
    assert printed == [str(repo / name) for name in WRITTEN]
    assert sorted(_files(repo)) == sorted([*WRITTEN, "pyproject.toml"])


def test_asv_reads_the_config_as_the_projects(written):
    repo, _ = written
    config = Config.load(str(repo / "benchmarks" / "asv.conf.json"))
    assert config.repo == ".."  # numpy's and scipy's layout
    assert config.project == "my-models"  # what asv uninstalls between commits
    assert config.branches == ["trunk"]
    assert config.environment_type == "virtualenv"
    assert config.pythons == [f"{sys.version_info.major}.{sys.version_info.minor}"]
    # Every commit measured with the JAX installed here, pinned last (nothing after moves it).
    req = {"asv_runner": [scaffold.asv_runner_pin()], **{k: [v] for k, v in INSTALLED.items()}}
    hooks, _ = scaffold.counting_hooks()
    if hooks is None:
        assert config.matrix == {"req": req}
    else:
        assert config.matrix == {
            "req": {**req, "pytest-codspeed": [hooks]},
            "env_nobuild": {"JITBENCH_INSTRUCTIONS": ["1"]},
        }
    # The pinned jitbench wheel, then the commit's with the matrix's releases held.
    assert config.install_command == [
        "in-dir={env_dir} python -m pip install -q --no-deps --force-reinstall "
        f"{{conf_dir}}/{WHEEL}",
        f"in-dir={{env_dir}} python -m jitbench.suite.install {{wheel_file}} {{conf_dir}}/{WHEEL} "
        "{conf_dir}/benchmarks",
    ]
    assert config.project_url == "report/index.html"
    assert config.benchmark_dir == "benchmarks"  # benchmarks/benchmarks: asv imports it so
    assert (config.env_dir, config.results_dir, config.html_dir) == ("env", "results", "html")


def test_git_sees_the_suite_and_ignores_what_asv_and_jitbench_write(written):
    repo, _ = written
    for made in ("env", "results", "html"):  # as asv makes them
        (repo / "benchmarks" / made).mkdir()
        (repo / "benchmarks" / made / "x").write_text("")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo, capture_output=True,
        text=True, check=True,
    ).stdout.split("\n")  # fmt: skip
    assert sorted(line[3:] for line in status if line) == sorted([*TRACKED, "pyproject.toml"])
    _commit(repo)  # what a source archive (and setuptools-scm's sdist) takes: nothing of it
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=repo, capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as archived:
        assert [m.name for m in archived.getmembers() if m.isfile()] == ["pyproject.toml"]


def _commit(repo: Path) -> None:
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "suite",
         "--allow-empty"], cwd=repo, check=True,
    )  # fmt: skip


def test_the_libraries_a_project_requires_are_held_too_and_jax_may_be_chosen(tmp_path):
    repo = _repo(tmp_path / "project", pyproject=False)
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "eqx-models"\nversion = "1"\nrequires-python = ">=3.10"\n'
        'dependencies = ["jax", "equinox>=0.11"]\n'
    )
    done = _init(repo, "--jax", "0.9.2", env=NO_COUNTS)
    assert done.returncode == 0, done.stderr
    req = Config.load(str(repo / "benchmarks" / "asv.conf.json")).matrix["req"]
    equinox = importlib.metadata.version("equinox")
    # jaxlib is the one that JAX release requires (not every release has its own).
    assert list(req.items())[1:] == [("equinox", [equinox]), ("jax", ["0.9.2"])]
    assert f"every commit measured with Python {sys.version_info.major}." in done.stderr
    assert f"equinox {equinox}, jax 0.9.2" in done.stderr


@pytest.mark.parametrize(
    ("args", "requires", "message"),
    [
        (["--jax", "latest"], ">=3.10", "--jax 'latest' is not a release such as 0.12.1"),
        (["--python", "3"], ">=3.10", "--python '3' is not a Python release such as 3.12"),
        (
            ["--python", "3.11"],
            ">=3.12",
            "--python 3.11: the project's requires-python is '>=3.12'; give one it allows, "
            "e.g. --python 3.12, with a JAX release for it (--jax)",
        ),
    ],
)
def test_a_release_the_project_cannot_take_is_one_line(tmp_path, capsys, args, requires, message):
    repo = _repo(tmp_path / "project", pyproject=False)
    (repo / "pyproject.toml").write_text(
        f'[project]\nname = "m"\nversion = "1"\nrequires-python = "{requires}"\n'
    )
    before = _files(repo)
    assert main(["init", str(repo), *args]) == 2
    assert capsys.readouterr().err == f"jitbench: error: {message}\n"
    assert _files(repo) == before


def test_a_target_inside_the_project_gets_a_note_about_older_commits(tmp_path):
    repo = _repo(tmp_path / "project")
    (repo / "models").mkdir()
    done = _init(repo, "--target", "models.targets:make", env=NO_COUNTS)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(
        "note: models.targets:make: its module is in the project, so commits older than it "
        "cannot import it; keep target modules in the suite (benchmarks/benchmarks/targets.py, "
        "--target benchmarks.targets:make)\n"
    )


def test_a_fresh_clone_gets_its_wheel_back_and_asv_writes_only_there(
    written, tmp_path, capsys, monkeypatch
):
    repo, _ = written
    _commit(repo)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    assert not (clone / "benchmarks" / scaffold.HOME).exists()  # git never saw it
    monkeypatch.chdir(clone / "benchmarks")
    assert main(["asv", "machine", "--yes"]) == 2
    assert "run jitbench init --wheel from the repository's root" in capsys.readouterr().err
    monkeypatch.chdir(clone)
    assert main(["init", "--wheel"]) == 0
    assert capsys.readouterr().out.split() == [f"benchmarks/{WHEEL}"]
    assert main(["init", "--wheel"]) == 2
    assert "will not overwrite existing" in capsys.readouterr().err
    # asv's machine file goes into the project's ignored folder, not the home folder.
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "jitbench", "asv", "machine", "--yes", "--machine", "box"],
        cwd=clone / "benchmarks", env={**os.environ, "HOME": str(home)}, capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    machines = clone / "benchmarks" / scaffold.HOME / "asv-machine.json"
    assert "box" in json.loads(machines.read_text())
    assert list(home.iterdir()) == []


def test_where_this_machine_counts_every_asv_run_counts(written):
    """Valgrind, tcmalloc and the hooks here: asv's environments get the hooks' release
    installed here and the opt-in, and the written README says so."""
    from jitbench.measure.counting import callgrind

    reason = callgrind.unavailable_reason()
    if reason is not None:
        pytest.skip(f"this machine cannot count: {reason}")
    repo, _ = written
    matrix = Config.load(str(repo / "benchmarks" / "asv.conf.json")).matrix
    assert matrix["req"]["pytest-codspeed"] == [importlib.metadata.version("pytest-codspeed")]
    assert matrix["env_nobuild"] == {"JITBENCH_INSTRUCTIONS": ["1"]}
    guide = (repo / "benchmarks" / "README.md").read_text()
    assert "Instruction counts: on. asv's environments install pytest-codspeed" in guide
    assert "jitbench asv continuous --factor 2 trunk HEAD" in guide
    assert "jitbench compare trunk HEAD" in guide
    assert f"python -m jitbench audit {TARGET} --explain" in guide


def test_where_this_machine_cannot_count_the_readme_says_why_and_how(tmp_path):
    repo = _repo(tmp_path / "project")
    done = _init(repo, "--target", TARGET, env=NO_COUNTS)
    assert done.returncode == 0, done.stderr
    assert Config.load(str(repo / "benchmarks" / "asv.conf.json")).matrix == {
        "req": {"asv_runner": [scaffold.asv_runner_pin()], **{k: [v] for k, v in INSTALLED.items()}}
    }
    reason = f"JITBENCH_TCMALLOC={NO_COUNTS['JITBENCH_TCMALLOC']!r} is not a file"
    assert done.stderr.splitlines()[-1].startswith(f"instruction counts: off: {reason}")
    guide = (repo / "benchmarks" / "README.md").read_text()
    assert f"Instruction counts: off: {reason}" in guide
    assert "and run `jitbench\ninit` again" in guide


def test_the_wheel_is_this_jitbench(written):
    import zipfile

    repo, _ = written
    with zipfile.ZipFile(repo / "benchmarks" / WHEEL) as wheel:
        shipped = wheel.read("jitbench/target_benchmarks.py")
    assert shipped == (ROOT / "jitbench" / "target_benchmarks.py").read_bytes()


def test_the_benchmarks_declare_the_target_and_asv_discovers_its_rows(written, tmp_path):
    repo, _ = written
    text = (repo / "benchmarks" / "benchmarks" / "bench_targets.py").read_text()
    assert f'TARGETS = [\n    "{TARGET}",\n]' in text
    script = (
        "import sys\n"
        "from asv_runner.discovery import list_benchmarks\n"
        "with open(sys.argv[2], 'w') as fp:\n"
        "    list_benchmarks(sys.argv[1], fp)\n"
    )
    listing = tmp_path / "listing.json"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(ROOT), str(ROOT / "tests"))))
    env.pop("JITBENCH_TARGETS", None)
    subprocess.run(
        [sys.executable, "-c", script, str(repo / "benchmarks" / "benchmarks"), str(listing)],
        check=True,
        cwd=tmp_path,
        env=env,
    )
    names = {b["name"]: b["params"][0] for b in json.loads(listing.read_text())}
    assert names["bench_targets.TargetCachedCall.time_cached_call"] == [repr(TARGET)]
    assert all(name.startswith("bench_targets.Target") for name in names)


def test_without_a_target_the_module_has_a_commented_example(tmp_path, capsys):
    repo = _repo(tmp_path / "project", pyproject=False)
    assert main(["init", str(repo)]) == 0
    text = (repo / "benchmarks" / "benchmarks" / "bench_targets.py").read_text()
    assert 'TARGETS = [\n    # "benchmarks.targets:make",  # fill in' in text
    assert '"project": "project"' in (repo / "benchmarks" / "asv.conf.json").read_text()


def test_existing_files_are_named_and_nothing_is_written(tmp_path, capsys):
    repo = _repo(tmp_path / "project")
    mine = repo / "benchmarks" / "benchmarks" / "bench_targets.py"
    mine.parent.mkdir(parents=True)
    mine.write_text("# mine\n")
    readme = repo / "benchmarks" / "README.md"
    readme.write_text("# mine\n")
    before = _files(repo)
    assert main(["init", str(repo), "--target", TARGET]) == 2
    assert capsys.readouterr().err == (
        f"jitbench: error: will not overwrite existing {readme}, {mine} (--folder asv_bench "
        "puts the suite in another folder); nothing written\n"
    )
    assert _files(repo) == before


def test_a_project_whose_benchmarks_folder_is_a_package_puts_the_suite_in_another(tmp_path, capsys):
    """optimistix keeps its own pytest benchmarks in a package benchmarks/: the suite's
    folder cannot be one (asv imports the package inside it by name, and the project's
    package finder would take it), so init refuses and names --folder, which writes the suite
    there, the workflow run in it, the targets' modules still benchmarks.targets."""
    import yaml

    from jitbench.suite import ci

    repo = _repo(tmp_path / "project")
    (repo / "benchmarks").mkdir()
    (repo / "benchmarks" / "__init__.py").write_text("")
    before = _files(repo)
    assert main(["init", str(repo), "--target", TARGET]) == 2
    package = repo / "benchmarks" / "__init__.py"
    assert capsys.readouterr().err == (
        f"jitbench: error: {repo / 'benchmarks'}/ is a package of the project already "
        f"({package}); --folder asv_bench puts the suite in another folder; nothing written\n"
    )
    assert _files(repo) == before
    done = _init(repo, "--target", TARGET, "--ci", "github", "--folder", "asv_bench",
                 env=NO_COUNTS)  # fmt: skip
    assert done.returncode == 0, done.stderr
    suite = repo / "asv_bench"
    assert sorted(str(p.relative_to(repo)) for p in suite.rglob("*") if p.is_file()) == sorted(
        name.replace("benchmarks/", "asv_bench/", 1) for name in WRITTEN
    )
    assert "in asv_bench/asv.conf.json" in done.stderr
    assert scaffold.read_conf(suite)["benchmark_dir"] == "benchmarks"
    workflow = yaml.safe_load((repo / ci.WORKFLOW).read_text())
    assert workflow["defaults"]["run"]["working-directory"] == "asv_bench"
    assert "asv_bench/html" in (repo / ci.WORKFLOW).read_text()
    assert "benchmarks/" not in (repo / ci.WORKFLOW).read_text().replace("asv_bench/", "")
    guide = (suite / "README.md").read_text()
    assert "`jitbench init --wheel --folder asv_bench` from the repository's root" in guide
    (suite / WHEEL).unlink()
    assert main(["init", str(repo), "--wheel", "--folder", "asv_bench"]) == 0
    assert (suite / WHEEL).is_file()


@pytest.mark.parametrize("name", ["a/b", "..", "my suite"])
def test_a_bad_folder_is_one_line(tmp_path, capsys, name):
    repo = _repo(tmp_path / "project")
    before = _files(repo)
    assert main(["init", str(repo), "--folder", name]) == 2
    assert capsys.readouterr().err == (
        f"jitbench: error: --folder {name!r} must be one folder name at the repository's root, "
        "e.g. asv_bench\n"
    )
    assert _files(repo) == before


@pytest.mark.parametrize("spec", ["models.make", "a:b:c", "pkg.mod:"])
def test_a_bad_target_is_one_line_and_nothing_is_written(tmp_path, capsys, spec):
    repo = _repo(tmp_path / "project")
    before = _files(repo)
    assert main(["init", str(repo), "--target", spec]) == 2
    assert capsys.readouterr().err == (
        f"jitbench: error: --target {spec!r} must be module:factory, e.g. benchmarks.targets:make\n"
    )
    assert _files(repo) == before


def test_a_folder_outside_git_is_refused(tmp_path, capsys):
    folder = tmp_path / "plain"
    folder.mkdir()
    assert main(["init", str(folder)]) == 2
    assert capsys.readouterr().err == (
        f"jitbench: error: {str(folder)!r} is not in a git repository: "
        "asv benchmarks a repository's commits\n"
    )
    assert list(folder.iterdir()) == []


def test_a_commit_that_cannot_build_a_target_is_skipped_in_one_line(tmp_path, capsys):
    """The class a target builds, missing at an older commit: asv skips that commit."""
    from jitbench.measure.case import targets_built

    suite = tmp_path / "suitecheck"
    suite.mkdir()
    (suite / "__init__.py").write_text("")
    (suite / "bench_targets.py").write_text(
        'TARGETS = [\n    "suitecheck.targets:make",\n]\nraise SystemExit("not imported")\n'
    )
    (suite / "targets.py").write_text("from json import Interpolator1D\n")
    assert targets_built(str(suite)) == 1
    assert capsys.readouterr().out == (
        "jitbench: this commit is skipped: target 'suitecheck.targets:make': cannot import "
        "module 'suitecheck.targets': ImportError: cannot import name 'Interpolator1D' from "
        "'json'" + f" ({json.__file__})\n"
    )
    (suite / "targets.py").write_text("def make():\n    return list\n")  # list(): []
    sys.modules.pop("suitecheck.targets", None)
    assert targets_built(str(suite)) == 0


def _tracked(repo: Path) -> list[str]:
    """What ``git status`` shows to commit, from the repository's root."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=repo, capture_output=True,
        text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    return sorted(line[3:] for line in status)


@pytest.fixture(scope="module")
def with_ci(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """init --ci github on a machine that cannot count, one undeclared package added."""
    repo = _repo(tmp_path_factory.mktemp("ci") / "project")
    done = _init(repo, "--target", TARGET, "--ci", "github", "--with", "six", env=NO_COUNTS)
    assert done.returncode == 0, done.stderr
    return repo, done


def test_ci_writes_the_workflow_and_commits_the_wheel_it_installs(with_ci):
    import yaml

    from jitbench.suite import ci

    repo, done = with_ci
    assert done.stdout.splitlines()[-1] == str(repo / ".github" / "workflows" / "jitbench.yml")
    # The wheel is the workflow's jitbench: git sees it; the rest of .jitbench/ stays ignored.
    (repo / "benchmarks" / scaffold.HOME / "asv-machine.json").write_text("{}")
    (repo / "benchmarks" / scaffold.HOME / "cache").mkdir()
    (repo / "benchmarks" / scaffold.HOME / "cache" / "x").write_text("")
    expected = [*TRACKED, f"benchmarks/{WHEEL}", ".github/workflows/jitbench.yml"]
    assert _tracked(repo) == sorted([*expected, "pyproject.toml"])
    workflow = yaml.safe_load((repo / ci.WORKFLOW).read_text())
    assert set(workflow["jobs"]) == {"gate", "dashboard"}
    assert workflow[True] == {"pull_request": None, "push": {"branches": ["trunk"]}}
    steps = [step.get("run", "") for step in workflow["jobs"]["gate"]["steps"]]
    pins = " ".join(f"{k}=={v}" for k, v in INSTALLED.items())
    assert any(f'"./{WHEEL}[report,instructions]" {pins}' in run for run in steps), steps
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    setup = [s for s in workflow["jobs"]["gate"]["steps"] if "setup-python" in s.get("uses", "")]
    assert setup[0]["with"]["python-version"] == python
    guide = (repo / "benchmarks" / "README.md").read_text()
    assert "In CI: `.github/workflows/jitbench.yml`" in guide
    assert "The jitbench wheel is committed (CI installs it)" in guide
    assert 'git add . ../.github && git commit -m "asv benchmarks through jitbench"' in guide


def test_ci_counts_where_this_machine_cannot(with_ci):
    """The runner installs Valgrind and tcmalloc: with --ci the matrix asks for counts
    whatever this machine has, and init says this machine cannot count."""
    repo, done = with_ci
    matrix = Config.load(str(repo / "benchmarks" / "asv.conf.json")).matrix
    assert matrix["req"]["pytest-codspeed"] == [importlib.metadata.version("pytest-codspeed")]
    assert matrix["env_nobuild"] == {"JITBENCH_INSTRUCTIONS": ["1"]}
    reason = f"JITBENCH_TCMALLOC={NO_COUNTS['JITBENCH_TCMALLOC']!r} is not a file"
    counts = next(line for line in done.stderr.splitlines() if line.startswith("instruction"))
    assert counts.startswith("instruction counts: on: pytest-codspeed ")
    assert f"(this machine cannot count: {reason}: " in counts
    assert counts.endswith("; CI's runner installs Valgrind)")


def test_the_files_init_writes_hold_no_path_of_this_machine(with_ci):
    """Nothing machine-specific is committed: no folder of this machine (the project's, the
    home folder, this Python's, the clone of jitbench the wheel was built from), no tcmalloc."""
    repo, _ = with_ci
    folders = (str(repo.parent), str(Path.home()), sys.prefix, str(ROOT))
    for name in _tracked(repo):
        if name.endswith(".whl"):
            continue
        text = (repo / name).read_text()
        for path in (*folders, "libtcmalloc_minimal.so"):
            assert path not in text, (name, path)


def test_a_package_the_project_forgets_is_one_line_of_the_matrix(with_ci):
    repo, done = with_ci
    text = (repo / "benchmarks" / "asv.conf.json").read_text()
    assert '\n            "six": [\n                ""\n            ],\n' in text  # a line to add
    req = Config.load(str(repo / "benchmarks" / "asv.conf.json")).matrix["req"]
    # Before the releases held: nothing installed after JAX moves it.
    assert list(req)[:2] == ["asv_runner", "six"] and list(req).index("jax") > 1
    assert req["six"] == [""]
    assert (
        "packages added to every commit's environment: six (newest) (a package the project "
        'imports without declaring it: one line of "req" in benchmarks/asv.conf.json, '
        '"six": [""], or --with six)'
    ) in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--with", "six>=1"], "--with 'six>=1' must be a package, or a package==release, such "
         "as six or six==1.17.0"),
        (["--with", "jax"], "--with jax: jitbench holds it already (--jax chooses JAX's release)"),
        (["--ci", "gitlab"], "argument --ci: unknown CI 'gitlab'; valid: github"),
    ],
)  # fmt: skip
def test_a_bad_ci_or_package_is_one_line_and_nothing_is_written(tmp_path, capsys, args, message):
    repo = _repo(tmp_path / "project")
    before = _files(repo)
    try:
        status = main(["init", str(repo), *args])
    except SystemExit as exc:  # argparse's own errors
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.rstrip().endswith(message), err
    assert _files(repo) == before


def test_a_pinned_package_is_held_at_its_release(tmp_path):
    repo = _repo(tmp_path / "project")
    done = _init(repo, "--with", "six==1.17.0", "--with", "PyYAML", env=NO_COUNTS)
    assert done.returncode == 0, done.stderr
    req = Config.load(str(repo / "benchmarks" / "asv.conf.json")).matrix["req"]
    assert (req["six"], req["PyYAML"]) == (["1.17.0"], [""])


def test_init_writes_nothing_into_the_home_folder(tmp_path):
    """The wheel's build keeps nothing in pip's cache. (rustup's proxy, where rustc is on
    PATH, writes its own settings whenever pip asks rustc its version for its user agent:
    not this project's, left out.)"""
    repo = _repo(tmp_path / "project")
    home = tmp_path / "home"
    home.mkdir()
    done = _init(repo, env={**NO_COUNTS, "HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert [p.name for p in home.iterdir() if p.name != ".rustup"] == []


def test_commands_in_the_suite_keep_the_caches_in_it(written, monkeypatch):
    """What a command run in the suite folder (jitbench asv, report...) sets for itself and the
    processes it starts: pip's, virtualenv's and matplotlib's caches in the suite's
    .jitbench/cache, unless the user set them."""
    from jitbench.suite import caches

    repo, _ = written
    suite = repo / "benchmarks"
    cache = suite.resolve() / scaffold.HOME / "cache"
    assert caches.suite_environment(suite, {}) == {
        "PIP_CACHE_DIR": str(cache / "pip"),
        "VIRTUALENV_OVERRIDE_APP_DATA": str(cache / "virtualenv"),
        "MPLCONFIGDIR": str(cache / "matplotlib"),
    }
    mine = {"PIP_CACHE_DIR": "/elsewhere"}
    assert "PIP_CACHE_DIR" not in caches.suite_environment(suite, mine)
    assert caches.suite_environment(repo, {}) == {}  # not a suite folder of init's


@pytest.mark.parametrize(
    ("files", "name"),
    [
        ({"setup.py": 'from setuptools import setup\nsetup(\n    name="jaxopt",\n)\n'}, "jaxopt"),
        ({"setup.cfg": "[metadata]\nname = my-lib\n", "setup.py": "setup()\n"}, "my-lib"),
        ({"setup.py": "setup(name=NAME)\n"}, "checkout"),  # not a literal: the folder's
    ],
    ids=["setup.py", "setup.cfg", "folder"],
)
def test_a_setup_py_project_is_named_as_it_names_itself(tmp_path, files, name):
    """asv.conf.json's project (the dashboard's title) is the distribution's name, where a
    project without pyproject.toml says it in setup.cfg or in a literal of setup.py."""
    repo = _repo(tmp_path / "checkout", pyproject=False)
    for file, text in files.items():
        (repo / file).write_text(text)
    done = _init(repo, env=NO_COUNTS)
    assert done.returncode == 0, done.stderr
    assert Config.load(str(repo / "benchmarks" / "asv.conf.json")).project == name


def test_a_range_that_names_no_commit_is_one_line(written, monkeypatch, capsys):
    """asv runs git itself: a range git cannot resolve (quadax's HEAD~200, past its first
    parents) was asv's traceback; it is one line with git's words, exit 2."""
    repo, _ = written
    monkeypatch.chdir(repo / "benchmarks")
    root = logging.getLogger()
    logged = (list(root.handlers), root.level)
    assert main(["asv", "machine", "--yes"]) == 0
    capsys.readouterr()
    assert main(["asv", "run", "HEAD~200^!"]) == 2
    # asv's own log handler goes with its run: JAX's INFO lines never reach stdout after it.
    assert (list(root.handlers), root.level) == logged
    (err,) = [line for line in capsys.readouterr().err.splitlines() if "jitbench" in line]
    assert err.startswith("jitbench: error: asv's command '"), err
    assert "git rev-list --first-parent HEAD~200^! --' failed: fatal: " in err, err
    assert "HEAD~200" in err.rpartition("failed: ")[2], err
