"""``python -m jitbench.suite.install``: why a commit cannot be installed with the held
releases, or its target built or called under them, in one line, from pip's real output (pip
resolves here without installing: ``--dry-run``, no index) and a real call. The install
itself, in asv's environments: test_target_loop.py.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from jitbench.measure.case import targets_built
from jitbench.suite import install

JAX = importlib.metadata.version("jax")


def _wheel(folder: Path, requires: str) -> Path:
    """A wheel of an empty distribution ``tiny`` 1.0 that requires ``requires``."""
    info = "tiny-1.0.dist-info"
    wheel = folder / "tiny-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(
            f"{info}/METADATA", f"Metadata-Version: 2.1\nName: tiny\nVersion: 1.0\n"
            f"Requires-Dist: {requires}\n",
        )  # fmt: skip
        archive.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{info}/RECORD", "")
    return wheel


def _pip_env() -> dict[str, str]:
    """pip resolving without installing (--dry-run), no index, no configuration file."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, "PIP_DRY_RUN": "1", "PIP_NO_INDEX": "1", "PIP_CONFIG_FILE": os.devnull}


def _suite(folder: Path, pinned: dict[str, str]) -> Path:
    """A suite folder whose asv.conf.json (// comments and all) pins ``pinned``."""
    req = {"asv_runner": ["0.3.2"], **{k: [v] for k, v in pinned.items()}}
    (folder / "asv.conf.json").write_text(
        '{\n    // as jitbench init writes it\n    "matrix": ' + json.dumps({"req": req}) + "\n}\n"
    )
    (folder / "benchmarks").mkdir()
    return folder / "benchmarks"


def test_a_commit_whose_requirements_forbid_the_held_jax_is_skipped_in_one_line(tmp_path):
    wheel = _wheel(tmp_path, "jax<0.1")
    # equinox is installed here too, but the matrix does not pin it: not held.
    suite = _suite(tmp_path, {"jax": JAX, "jaxlib": importlib.metadata.version("jaxlib")})
    done = subprocess.run(
        [sys.executable, "-m", "jitbench.suite.install", str(wheel), str(wheel), str(suite)],
        capture_output=True,
        text=True,
        env=_pip_env(),
    )
    assert done.returncode == 1, done.stdout + done.stderr  # asv: this commit failed
    (line,) = done.stdout.splitlines()
    # The releases held are those installed here (asv installed them from the matrix).
    held = f"jax {JAX}, jaxlib {importlib.metadata.version('jaxlib')}"
    assert line.startswith(
        f"jitbench: this commit is skipped: it cannot be installed with {held} (the releases"
    )
    assert line.endswith(": tiny 1.0 depends on jax<0.1"), line  # pip's reason


def test_any_other_failure_is_pips_last_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", str(tmp_path / "absent-1.0-py3-none-any.whl")],
        capture_output=True,
        text=True,
        env=_pip_env(),
    )
    reason = install.why_not(done.stdout + done.stderr)
    assert reason.startswith("ERROR:") and "absent-1.0-py3-none-any.whl" in reason, reason


def test_it_takes_the_two_wheels_and_the_suite(capsys):
    assert install.main(["one.whl", "two.whl"]) == 2
    usage = "usage: python -m jitbench.suite.install WHEEL JITBENCH_WHEEL SUITE"
    assert usage in capsys.readouterr().err


# A target whose call uses a function JAX removed (jax.tree_map, gone in 0.6.0): its module
# imports and its factory builds, the call raises.
REMOVED_CALL = """\
import jax
import jax.numpy as jnp

from jitbench import Target


class Env:
    def step(self, x):
        return jax.tree_map(lambda v: v + 1, x)


def make():
    return Target(Env(), inputs=(jnp.ones(3),), call="step")
"""


def _targets(suite: Path, source: str) -> None:
    """The suite package ``suite`` with one target, ``SUITE.targets:make`` (a name of its own
    for each test: this process imports each once)."""
    suite.mkdir(exist_ok=True)
    (suite / "__init__.py").write_text("")
    (suite / "bench_targets.py").write_text(f'TARGETS = [\n    "{suite.name}.targets:make",\n]\n')
    (suite / "targets.py").write_text(source)


def test_a_commit_whose_call_fails_under_the_held_releases_is_skipped_in_one_line(tmp_path):
    """The install check makes the target's call once: a call that raises under the releases
    every commit is measured with skips the commit with the exception's first line, before
    any benchmark runs (it was a traceback in every row)."""
    wheel = _wheel(tmp_path, "numpy")
    jaxlib = importlib.metadata.version("jaxlib")
    suite = _suite(tmp_path, {"jax": JAX, "jaxlib": jaxlib})
    _targets(suite, REMOVED_CALL)
    done = subprocess.run(
        [sys.executable, "-m", "jitbench.suite.install", str(wheel), str(wheel), str(suite)],
        capture_output=True, text=True, env=_pip_env(),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == (
        "jitbench: this commit is skipped: target 'benchmarks.targets:make': its call raised "
        f"AttributeError: module 'jax' has no attribute 'tree_map' under jax {JAX}, "
        f"jaxlib {jaxlib}"
    )


def test_a_target_that_builds_and_calls_passes_the_check(tmp_path, capsys):
    suite = tmp_path / "suite_calls"
    _targets(suite, REMOVED_CALL.replace("jax.tree_map", "jax.tree.map"))
    assert targets_built(str(suite), "jax x") == 0
    assert capsys.readouterr().out == ""


def test_a_module_nobody_declared_is_named_with_the_line_that_adds_it(tmp_path, capsys):
    suite = tmp_path / "suite_undeclared"
    _targets(suite, "import undeclared_helper_pkg\n\n\ndef make():\n    return abs\n")
    assert targets_built(str(suite)) == 1
    assert capsys.readouterr().out == (
        "jitbench: this commit is skipped: target 'suite_undeclared.targets:make': cannot import "
        "module 'suite_undeclared.targets': ModuleNotFoundError: No module named "
        "'undeclared_helper_pkg'; if the project imports undeclared_helper_pkg without declaring "
        "it, install its package in "
        """every commit's environment: one line in the "req" of asv.conf.json's matrix, """
        '"undeclared_helper_pkg": [""]\n'
    )


def test_a_module_the_project_itself_lacks_gets_no_such_advice(tmp_path, capsys):
    """``json`` is there: a module missing inside it is the commit's own, no package to add."""
    suite = tmp_path / "suite_own"
    _targets(suite, "import json.no_such_part\n\n\ndef make():\n    return abs\n")
    assert targets_built(str(suite)) == 1
    out = capsys.readouterr().out
    assert out.endswith("No module named 'json.no_such_part'\n"), out


def test_each_commit_installs_its_own_code_even_at_the_same_version(tmp_path):
    """Two commits of one release build wheels of one name: the second is installed all the
    same (pip took it as satisfied, and asv measured the first commit's code again under the
    second's hash, where asv.conf.json's project named another distribution)."""
    import site

    venv = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    outer = [p for p in site.getsitepackages() if os.path.isdir(p)]  # pip and jitbench
    Path(purelib, "outer.pth").write_text(f"import site; [site.addsitedir(p) for p in {outer!r}]\n")
    suite = _suite(tmp_path, {})
    (suite / "bench_targets.py").write_text("TARGETS = []\n")
    env = {**_pip_env(), "PIP_DRY_RUN": ""}
    for value in (1, 2):
        folder = tmp_path / f"commit{value}"
        folder.mkdir()
        wheel = _wheel(folder, "packaging")
        with zipfile.ZipFile(wheel, "a") as archive:
            archive.writestr("tiny.py", f"VALUE = {value}\n")
        done = subprocess.run(
            [str(python), "-m", "jitbench.suite.install", str(wheel), str(wheel), str(suite)],
            capture_output=True, text=True, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        found = subprocess.run(
            [str(python), "-c", "import tiny; print(tiny.VALUE)"], capture_output=True, text=True
        )  # fmt: skip
        assert found.stdout.strip() == str(value), found.stdout + found.stderr
