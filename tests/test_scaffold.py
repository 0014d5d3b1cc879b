"""``jitbench init``: asv's files for another project's repository, and nothing over existing ones.

The written ``asv.conf.json`` is read with asv's own configuration loader,
and the benchmarks package with asv's own discovery; the real run of what
init writes is tests/test_target_loop.py.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from asv.config import Config

from jitbench.cli import main
from jitbench.suite import scaffold

ROOT = Path(__file__).resolve().parent.parent
TARGET = "target_models:make_model"
WHEEL = f"{scaffold.WHEEL_DIR}/jitbench-{scaffold.jitbench_version()}-py3-none-any.whl"
WRITTEN = [
    "asv.conf.json",
    "benchmarks/__init__.py",
    "benchmarks/bench_targets.py",
    "benchmarks/README.md",
    WHEEL,
]
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
    config = Config.load(str(repo / "asv.conf.json"))
    assert config.repo == "."
    assert config.project == "my-models"  # what asv uninstalls between commits
    assert config.branches == ["trunk"]
    assert config.environment_type == "virtualenv"
    assert config.pythons == [f"{sys.version_info.major}.{sys.version_info.minor}"]
    req = {"asv_runner": [scaffold.asv_runner_pin()], "jax": [""]}
    hooks, _ = scaffold.counting_hooks()
    if hooks is None:
        assert config.matrix == {"req": req}
    else:
        assert config.matrix == {
            "req": {**req, "pytest-codspeed": [hooks]},
            "env_nobuild": {"JITBENCH_INSTRUCTIONS": ["1"]},
        }
    # The project's wheel and the pinned jitbench wheel, at every commit.
    assert config.install_command == [
        f"in-dir={{env_dir}} python -m pip install {{wheel_file}} {{conf_dir}}/{WHEEL}"
    ]
    assert config.project_url == "report/index.html"


def test_where_this_machine_counts_every_asv_run_counts(written):
    """Valgrind, tcmalloc and the hooks here: asv's environments get the hooks' release
    installed here and the opt-in, and the written README says so."""
    from jitbench.measure.counting import callgrind

    reason = callgrind.unavailable_reason()
    if reason is not None:
        pytest.skip(f"this machine cannot count: {reason}")
    repo, _ = written
    matrix = Config.load(str(repo / "asv.conf.json")).matrix
    assert matrix["req"]["pytest-codspeed"] == [importlib.metadata.version("pytest-codspeed")]
    assert matrix["env_nobuild"] == {"JITBENCH_INSTRUCTIONS": ["1"]}
    guide = (repo / "benchmarks" / "README.md").read_text()
    assert "Instruction counts: on. asv's environments install pytest-codspeed" in guide
    assert "asv continuous --factor 2 trunk HEAD" in guide
    assert "jitbench compare --factor 2 $(git rev-parse trunk) $(git rev-parse HEAD)" in guide


def test_where_this_machine_cannot_count_the_readme_says_why_and_how(tmp_path):
    repo = _repo(tmp_path / "project")
    done = _init(repo, "--target", TARGET, env=NO_COUNTS)
    assert done.returncode == 0, done.stderr
    assert Config.load(str(repo / "asv.conf.json")).matrix == {
        "req": {"asv_runner": [scaffold.asv_runner_pin()], "jax": [""]}
    }
    reason = f"JITBENCH_TCMALLOC={NO_COUNTS['JITBENCH_TCMALLOC']!r} is not a file"
    assert done.stderr.startswith(f"instruction counts: off: {reason}")
    guide = (repo / "benchmarks" / "README.md").read_text()
    assert f"Instruction counts: off: {reason}" in guide
    assert "and run `jitbench init` again" in guide


def test_the_wheel_is_this_jitbench(written):
    import zipfile

    repo, _ = written
    with zipfile.ZipFile(repo / WHEEL) as wheel:
        shipped = wheel.read("jitbench/target_benchmarks.py")
    assert shipped == (ROOT / "jitbench" / "target_benchmarks.py").read_bytes()


def test_the_benchmarks_declare_the_target_and_asv_discovers_its_rows(written, tmp_path):
    repo, _ = written
    text = (repo / "benchmarks" / "bench_targets.py").read_text()
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
        [sys.executable, "-c", script, str(repo / "benchmarks"), str(listing)],
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
    text = (repo / "benchmarks" / "bench_targets.py").read_text()
    assert 'TARGETS = [\n    # "mypackage.models:make_model",  # fill in' in text
    assert '"project": "project"' in (repo / "asv.conf.json").read_text()


def test_existing_files_are_named_and_nothing_is_written(tmp_path, capsys):
    repo = _repo(tmp_path / "project")
    (repo / "benchmarks").mkdir()
    (repo / "benchmarks" / "bench_targets.py").write_text("# mine\n")
    before = _files(repo)
    assert main(["init", str(repo), "--target", TARGET]) == 2
    assert capsys.readouterr().err == (
        f"jitbench: error: will not overwrite existing {repo / 'benchmarks' / 'bench_targets.py'}"
        "; nothing written\n"
    )
    assert _files(repo) == before


@pytest.mark.parametrize("spec", ["models.make", "a:b:c", "pkg.mod:"])
def test_a_bad_target_is_one_line_and_nothing_is_written(tmp_path, capsys, spec):
    repo = _repo(tmp_path / "project")
    before = _files(repo)
    assert main(["init", str(repo), "--target", spec]) == 2
    assert capsys.readouterr().err == (
        f"jitbench: error: --target {spec!r} must be package.module:factory, "
        "e.g. mypackage.models:make_model\n"
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
