"""The GitHub Actions workflow ``jitbench init --ci github`` writes, run here without GitHub: its
``run:`` steps in order, as written, with the environment GitHub gives them, on a git
history made here and pushed to a bare repository that stands for GitHub (``origin``).

The project is test_target_loop's affine model (its in-tree build backend, no network):

O, R  the model as it is, then a docstring;
S     ``jitbench init --target benchmarks.targets:make --ci github`` and the target module:
      the main line's head when the pull request opens;
P     a pull request off S: the model's call jits a new function at every call (a
      recompile at every call);
T     the main line once S moved on: a comment in the model.

The pull-request job on P measures its merge base (S) and its head in one job and fails:
the summary names the new hazard and the command that says where. S's result is then filed
on the results branch as an earlier push would have, and the push job on T measures T,
appends its result to the branch (S's stays) and builds the pages, which load nothing from
the network.

The ``uses:`` steps are emulated for what they do, and only those: ``actions/checkout``
(a clone of ``origin`` with every branch, the pull request's head or the pushed branch
checked out), ``actions/setup-python`` (a venv of this Python first on ``PATH``, seeing this
Python's packages: nothing is downloaded), ``actions/cache`` (its paths kept between the
jobs under its key), ``actions/upload-pages-artifact`` (the folder, as its tar) and
``actions/deploy-pages`` (nothing to do offline: the artifact is what it publishes). Valgrind
and tcmalloc must be installed here, as CI installs them (the workflow's own step skips
apt-get where they are): the gate judges instruction counts. asv's environments are made by
tests/asv_offline.py, as in test_target_loop (asv.conf.json's environment type is the one
line the test changes), and the jobs measure fewer rows (the workflow's BENCHMARKS, narrowed
as a maintainer may): the pull request's, the counts, the recompile tracks and one timed row;
the push's, the timed row. Three commits measured: minutes.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from conftest import without_host_devices
from test_target_loop import BACKEND, MODEL, PYPROJECT, TARGETS

from jitbench.measure.counting import callgrind
from jitbench.suite import ci, scaffold

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
OWNER, NAME = "maintainer", "affine"
# A recompile at every call: a new function jitted at each (test_target_loop's MODEL calls
# the jitted _apply at CALL_PATH's place).
RECOMPILE = "        return jax.jit(lambda model, x: _apply(model, x))(self, x)\n"
# The rows the test's jobs measure (the workflow's BENCHMARKS, as a maintainer narrows it),
# every row taking minutes more: the pull request's, its counts, its two recompile tracks and
# one timed row; the push's, the timed row (what it files and publishes is any row's).
GATE_ROWS = (
    r"TargetInstructions|TargetHazards\.track_(recompiles|repeat_call_compiles)\b"
    r"|TargetCachedCall\.time_cached_call\b"
)
PUSH_ROWS = r"TargetCachedCall\.time_cached_call\b"
IDENTITY = ["-c", "user.name=maintainer", "-c", "user.email=maintainer@localhost"]
# The expression GitHub's job-level `if:` of each job holds, and the event it selects.
EVENTS = {"github.event_name == 'pull_request'": "pull_request",
          "github.event_name == 'push'": "push"}  # fmt: skip


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}:\n{done.stderr[-4000:]}")
    return done.stdout


def _git(repo: Path, env: dict[str, str], *args: str) -> str:
    return _run(["git", *IDENTITY, *args], repo, env).strip()


@dataclass
class Step:
    name: str
    status: int
    output: str
    seconds: float


@dataclass
class Job:
    """One job as the emulated runner ran it: its workspace, each step, the summary."""

    workspace: Path
    root: Path  # the job's own folder: its runner's temporary files, its pages
    steps: list[Step] = field(default_factory=list)
    summary: str = ""
    pages: Path | None = None
    deployed: bool = False

    @property
    def status(self) -> int:
        return next((s.status for s in self.steps if s.status), 0)


class Runner:
    """GitHub's runner, emulated for one workflow: each job's ``run:`` steps in order, each a
    ``bash --noprofile --norc -eo pipefail`` script (``shell: bash``) in its working
    directory, with GitHub's variables, the workflow's, the job's and the step's ``env``,
    and what earlier steps wrote to ``$GITHUB_ENV``; the first failing step ends the job."""

    def __init__(
        self, workflow: dict, origin: Path, folder: Path, base_env: dict[str, str],
        overrides: dict[str, str],
    ) -> None:  # fmt: skip
        self.workflow, self.origin, self.folder, self.base_env = workflow, origin, folder, base_env
        self.overrides = overrides
        # How setup-python's interpreter is made (here: offline, seeing this Python's packages).
        self.python = _offline_venv
        self.caches: dict[str, Path] = {}
        self.jobs = 0

    def job_for(self, event: str) -> tuple[str, dict]:
        (name, job), *others = [
            (name, job) for name, job in self.workflow["jobs"].items()
            if EVENTS[job["if"]] == event
        ]  # fmt: skip
        assert not others, f"more than one job runs on {event}"
        return name, job

    def run(self, event: str, ref: str, sha: str, base_ref: str = "") -> Job:
        self.jobs += 1
        # One workspace path for every job, as on GitHub's runners (a cached environment's
        # paths stay right); what a job leaves beside it, in a folder of the job's own.
        workspace = self.folder / "runner" / "work" / NAME
        if workspace.exists():
            shutil.rmtree(workspace)
        root = self.folder / f"job{self.jobs}"
        temp = root / "runner-temp"
        temp.mkdir(parents=True)
        _, job = self.job_for(event)
        env = {
            **self.base_env,
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event,
            "GITHUB_REPOSITORY": f"{OWNER}/{NAME}",
            "GITHUB_REPOSITORY_OWNER": OWNER,
            "GITHUB_SERVER_URL": "https://github.com",
            "GITHUB_WORKSPACE": str(workspace),
            "GITHUB_SHA": sha,
            "GITHUB_REF": ref,
            "GITHUB_REF_NAME": ref.rpartition("/")[2],
            "GITHUB_BASE_REF": base_ref,
            "GITHUB_HEAD_REF": ref.rpartition("/")[2] if base_ref else "",
            "RUNNER_OS": "Linux",
            "RUNNER_TEMP": str(temp),
        }
        env.update({k: str(v) for k, v in self.workflow.get("env", {}).items()})
        env.update(self.overrides)
        env.update({k: str(v) for k, v in job.get("env", {}).items()})
        defaults = self.workflow["defaults"]["run"]
        assert defaults["shell"] == "bash"
        done = Job(workspace, root)
        added: dict[str, str] = {}
        for number, step in enumerate(job["steps"]):
            if "uses" in step:
                self._uses(step, done, env, event, sha)
                continue
            assert "${{" not in step["run"], f"{step['name']}: the test cannot evaluate ${{{{ }}}}"
            summary, env_file = temp / f"summary{number}", temp / f"env{number}"
            summary.touch()
            env_file.touch()
            step_env = {
                **env, **added, **{k: str(v) for k, v in step.get("env", {}).items()},
                "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ENV": str(env_file),
            }  # fmt: skip
            script = temp / f"step{number}.sh"
            script.write_text(step["run"])
            cwd = workspace / step.get("working-directory", defaults["working-directory"])
            start = time.monotonic()
            ran = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=cwd, env=step_env, capture_output=True, text=True,
            )  # fmt: skip
            output, seconds = ran.stdout + ran.stderr, time.monotonic() - start
            done.steps.append(Step(step["name"], ran.returncode, output, seconds))
            done.summary += summary.read_text()
            for line in env_file.read_text().splitlines():
                key, _, value = line.partition("=")
                added[key] = value
            if ran.returncode:
                break
        else:
            self._save_caches(job, workspace)
        return done

    def _uses(self, step: dict, job: Job, env: dict[str, str], event: str, sha: str) -> None:
        action = step["uses"]
        given = step.get("with", {})
        if action == ci.ACTIONS["checkout"]:
            # fetch-depth 0: every branch's history, as refs/remotes/origin/*.
            assert given["fetch-depth"] == 0
            _run(["git", "clone", "-q", str(self.origin), str(job.workspace)], self.folder, env)
            wanted = given.get("ref")
            if wanted is not None:
                assert wanted == "${{ github.event.pull_request.head.sha }}"
                assert event == "pull_request"
                _git(job.workspace, env, "checkout", "-q", "--detach", sha)
            else:
                assert _git(job.workspace, env, "rev-parse", "HEAD") == sha
        elif action == ci.ACTIONS["setup-python"]:
            # This Python, in a venv of its own that sees this Python's packages.
            assert given["python-version"] == f"{sys.version_info.major}.{sys.version_info.minor}"
            venv = self.folder / "runner" / "python"
            if venv.exists():
                shutil.rmtree(venv)
            self.python(venv)
            env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
            env["VIRTUAL_ENV"] = str(venv)
        elif action == ci.ACTIONS["cache"]:
            key = self._cache_key(given["key"], job.workspace)
            if key in self.caches:
                for path in given["path"].split():
                    saved = self.caches[key] / path
                    if saved.exists():
                        shutil.copytree(saved, job.workspace / path, symlinks=True,
                                        dirs_exist_ok=True)  # fmt: skip
        elif action == ci.ACTIONS["upload-pages-artifact"]:
            source = job.workspace / given["path"]
            artifact = io.BytesIO()
            with tarfile.open(fileobj=artifact, mode="w") as tar:
                tar.add(source, arcname=".")
            pages = job.root / "pages"
            with tarfile.open(fileobj=io.BytesIO(artifact.getvalue())) as tar:
                tar.extractall(pages, filter="data")
            job.pages = pages
        elif action == ci.ACTIONS["deploy-pages"]:
            assert job.pages is not None, "deploy-pages without an uploaded artifact"
            job.deployed = True
        else:
            raise AssertionError(f"the test does not emulate {action}")

    def _cache_key(self, key: str, workspace: Path) -> str:
        found = re.fullmatch(r"(.*)\$\{\{ hashFiles\('([^']+)'\) \}\}", key)
        assert found, key
        digest = hashlib.sha256((workspace / found.group(2)).read_bytes()).hexdigest()
        return found.group(1) + digest

    def _save_caches(self, job: dict, workspace: Path) -> None:
        step = next(s for s in job["steps"] if s.get("uses") == ci.ACTIONS["cache"])
        key = self._cache_key(step["with"]["key"], workspace)
        if key in self.caches:
            return
        saved = self.folder / "caches" / str(len(self.caches))
        for path in step["with"]["path"].split():
            if (workspace / path).exists():
                shutil.copytree(workspace / path, saved / path, symlinks=True)
        self.caches[key] = saved


def _offline_venv(folder: Path) -> None:
    """A venv of this Python without pip of its own, seeing this Python's site-packages after
    its own (tests/asv_offline.py's way): what it installs goes into it, offline."""
    import site

    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    purelib = subprocess.run(
        [str(folder / "bin" / "python"), "-c",
         "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    outer = [p for p in site.getsitepackages() if os.path.isdir(p)]
    Path(purelib, "outer-site-packages.pth").write_text(
        f"import site; [site.addsitedir(p) for p in {outer!r}]\n"
    )


def _environment(folder: Path) -> dict[str, str]:
    """The runner's environment: this one's without pip's configuration or the network, an
    empty home folder, tests/ on the path for asv's offline environments."""
    env = {k: v for k, v in without_host_devices(os.environ).items() if not k.startswith("PIP_")}
    env.pop("JITBENCH_TARGETS", None)
    env.pop("VIRTUAL_ENV", None)
    home = folder / "home"
    home.mkdir()
    env.update(
        HOME=str(home),
        PYTHONPATH=str(ROOT / "tests"),  # asv_offline, the plugin asv.conf.json names
        PIP_NO_INDEX="1",
        PIP_CONFIG_FILE=os.devnull,
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        JITBENCH_DEVICES="cpu",
    )
    return env


def _project(repo: Path, *, call_path: str = "", comment: str = "") -> None:
    (repo / "pyproject.toml").write_text(PYPROJECT.replace("DEPENDENCIES", '"jax"'))
    model = MODEL.replace("CALL_PATH", call_path) + comment
    (repo / "affine_pkg" / "model.py").write_text(model)


@dataclass
class Gate:
    origin: Path
    commits: dict[str, str]
    workflow_text: str
    pull_request: Job
    push: Job
    earlier: set[str]  # the result files on the results branch before the push
    home: Path


@pytest.fixture(scope="module")
def gate(tmp_path_factory) -> Gate:
    reason = callgrind.machine_reason()
    if reason is not None:
        pytest.skip(f"the gate judges instruction counts, which this machine cannot take: {reason}")
    from virtualenv.seed.wheels.embed import BUNDLE_FOLDER

    folder = tmp_path_factory.mktemp("workflow")
    env = _environment(folder)
    origin = folder / "origin.git"
    _run(["git", "init", "-q", "--bare", "-b", "main", str(origin)], folder, env)
    repo = folder / "maintainer"
    (repo / "affine_pkg").mkdir(parents=True)
    _git(repo.parent, env, "init", "-q", "-b", "main", str(repo))
    (repo / "wheel_backend.py").write_text(BACKEND)
    (repo / "affine_pkg" / "__init__.py").write_text("")
    commits = {}
    _project(repo)
    _git(repo, env, "add", "-A")
    _git(repo, env, "commit", "-qm", "the model")
    (repo / "affine_pkg" / "__init__.py").write_text('"""An affine model."""\n')
    _git(repo, env, "commit", "-qam", "a docstring")
    # init, as the maintainer runs it (its wheel built with virtualenv's bundled setuptools).
    bundled = {**env, "PIP_FIND_LINKS": str(BUNDLE_FOLDER)}
    init = [sys.executable, "-m", "jitbench", "init", "--target", "benchmarks.targets:make"]
    _run([*init, "--ci", "github"], repo, bundled)
    conf = repo / "benchmarks" / "asv.conf.json"
    virtualenv = '"environment_type": "virtualenv",'
    offline = '"environment_type": "offline-virtualenv", "plugins": [".asv_offline"],'
    conf.write_text(conf.read_text().replace(virtualenv, offline))
    (repo / "benchmarks" / "benchmarks" / "targets.py").write_text(TARGETS)
    _git(repo, env, "add", "-A")
    _git(repo, env, "commit", "-qm", "asv benchmarks through jitbench, in CI")
    commits["S"] = _git(repo, env, "rev-parse", "HEAD")
    _git(repo, env, "checkout", "-qb", "recompile")
    _project(repo, call_path=RECOMPILE)
    _git(repo, env, "commit", "-qam", "the call jits a new function each time")
    commits["P"] = _git(repo, env, "rev-parse", "HEAD")
    _git(repo, env, "checkout", "-q", "main")
    _project(repo, comment="# the main line moves on\n")
    _git(repo, env, "commit", "-qam", "a comment")
    commits["T"] = _git(repo, env, "rev-parse", "HEAD")
    _git(repo, env, "push", "-q", str(origin), f"{commits['S']}:refs/heads/main", "recompile")

    text = (repo / ci.WORKFLOW).read_text()
    workflow = yaml.safe_load(text)
    assert workflow["env"]["BENCHMARKS"] == "."  # every row, unless the maintainer narrows it
    runner = Runner(workflow, origin, folder, env, {"BENCHMARKS": GATE_ROWS})
    pull_request = runner.run(
        "pull_request", "refs/pull/1/merge", commits["P"], base_ref="main"
    )  # fmt: skip
    compared = "Compare them by instruction counts and hazards"
    assert pull_request.steps[-1].name == compared, _failure(pull_request)
    # S's result filed on the results branch, as a push of S would have.
    results = pull_request.workspace / "benchmarks" / "results"
    earlier = {p.relative_to(results).as_posix() for p in results.rglob("*.json")
               if commits["P"][:8] not in p.name}  # fmt: skip
    _seed_results(origin, results, commits["P"], folder / "seed", env)
    _git(repo, env, "push", "-q", str(origin), "main")
    runner.overrides = {"BENCHMARKS": PUSH_ROWS}
    push = runner.run("push", "refs/heads/main", commits["T"])
    return Gate(origin, commits, text, pull_request, push, earlier, Path(env["HOME"]))


def _seed_results(origin: Path, results: Path, left_out: str, folder: Path, env) -> None:
    """A results branch in ``origin`` holding ``results`` but the files of ``left_out``."""
    seed = folder / "results"
    shutil.copytree(results, seed, ignore=shutil.ignore_patterns(f"{left_out[:8]}-*"))
    _git(folder.parent, env, "init", "-q", "-b", ci.RESULTS_BRANCH, str(folder))
    _git(folder, env, "add", "-A")
    _git(folder, env, "commit", "-qm", "an earlier result")
    tree = _git(folder, env, "rev-parse", "HEAD:results")
    commit = _git(folder, env, "commit-tree", tree, "-m", "an earlier result")
    _git(folder, env, "push", "-q", str(origin), f"{commit}:refs/heads/{ci.RESULTS_BRANCH}")


def _failure(job: Job) -> str:
    """The last step's name and output, for an assertion's message."""
    step = job.steps[-1]
    return f"{step.name} exited {step.status}:\n{step.output[-6000:]}"


def test_the_pull_request_fails_on_the_planted_recompile(gate: Gate):
    job = gate.pull_request
    assert job.steps[-1].status == 1, _failure(job)
    compared = job.steps[-1].output
    assert f"BASE {ci.MACHINE} {gate.commits['S'][:8]}" in compared
    assert f"HEAD {ci.MACHINE} {gate.commits['P'][:8]}" in compared


def test_the_summary_names_the_hazard_the_command_and_the_dashboard(gate: Gate):
    summary = gate.pull_request.summary
    heading = (
        f"### jitbench: HEAD `{gate.commits['P'][:8]}` against BASE `{gate.commits['S'][:8]}`: "
        "fails"
    )
    assert summary.startswith(heading + "\n"), summary
    assert "new hazard at HEAD: recompiles every call" in summary
    assert (
        "New hazard: **recompiles every call** in `benchmarks.targets:make` on cpu "
        "(track_repeat_call_compiles 0 -> 1). `python -m jitbench audit benchmarks.targets:make "
        "--explain` from benchmarks/ says where."
    ) in summary
    # The counts, judged; the times, shown in their own table without a mark.
    assert "track_cached_call_instructions('benchmarks.targets:make', 'cpu')" in summary
    assert "shown, never judged</summary>" in summary
    # The head compiles at every call: its counts are n/a, and the summary says why.
    assert (
        "Not counted at HEAD in `benchmarks.targets:make` on cpu: it compiles on every call there"
    ) in summary
    timed = summary.split("shown, never judged</summary>")[1]
    assert "time_cached_call('benchmarks.targets:make', 'cpu')" in timed
    assert not re.search(r"^\| [+!-] ", timed, re.M)
    pages = f"https://{OWNER}.github.io/{NAME}/"
    assert summary.endswith(f"The dashboard of main, every commit measured: {pages}\n")


def test_the_command_the_summary_prints_runs_from_benchmarks(gate: Gate, tmp_path):
    """``python -m jitbench audit benchmarks.targets:make --explain`` from ``benchmarks/`` of a
    clone, the project installed as a maintainer has it: it audits the target."""
    clone = tmp_path / "clone"
    env = {**without_host_devices(os.environ), "JITBENCH_DEVICES": "cpu"}
    _run(["git", "clone", "-q", "-b", "recompile", str(gate.origin), str(clone)], tmp_path, env)
    env["PYTHONPATH"] = str(clone)  # the project as installed in the maintainer's environment
    command = re.search(
        r"`(python -m jitbench audit [^`]+)` from benchmarks/", gate.pull_request.summary
    )
    assert command is not None
    args = command.group(1).split()
    done = subprocess.run(
        [sys.executable, *args[1:]], cwd=clone / "benchmarks", env=env, capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "the same call again, nothing changed, compiles again: at every call" in done.stdout


def test_the_push_appends_its_result_to_the_results_branch(gate: Gate, tmp_path):
    job = gate.push
    assert job.status == 0, _failure(job)
    assert job.deployed
    branch = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", ci.RESULTS_BRANCH], cwd=gate.origin,
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    results = {name for name in branch if name.endswith(".json")}
    new = {name for name in results if Path(name).name.startswith(gate.commits["T"][:8])}
    assert len(new) == 1 and gate.earlier <= results, (results, gate.earlier)
    assert any(gate.commits["S"][:8] in name for name in gate.earlier)
    log = subprocess.run(
        ["git", "log", "--format=%s", ci.RESULTS_BRANCH], cwd=gate.origin, capture_output=True,
        text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert log == [f"results of {gate.commits['T']}", "an earlier result"]


def test_the_pages_hold_the_dashboard_and_the_report_and_load_nothing_remote(gate: Gate):
    pages = gate.push.pages
    assert pages is not None
    assert (pages / "index.html").is_file() and (pages / "report" / "index.html").is_file()
    for page in pages.rglob("*.html"):
        # What a page loads (scripts, stylesheets, images): nothing from another host.
        loads = re.findall(
            r"""<(?:script|link|img)\b[^>]*?(?:src|href)=["']([^"']+)""", page.read_text()
        )
        assert not [url for url in loads if re.match(r"(?:https?:)?//", url)], (page, loads)
    graphs = json.loads((pages / "index.json").read_text())
    assert graphs["project"] == "affine-pkg"
    # Both results of the main line are in the dashboard's data.
    revisions = set(graphs["revision_to_hash"].values())
    assert {gate.commits["S"], gate.commits["T"]} <= revisions


def test_the_workflow_holds_no_path_of_this_machine(gate: Gate):
    assert "/" + "tmp" not in gate.workflow_text and str(Path.home()) not in gate.workflow_text
    assert "${{" not in "".join(
        step.get("run", "") for job in yaml.safe_load(gate.workflow_text)["jobs"].values()
        for step in job["steps"]
    )  # fmt: skip
    assert f"{scaffold.HOME}/jitbench-" in gate.workflow_text


def test_the_jobs_write_nothing_into_the_home_folder(gate: Gate):
    """asv's machine file and pip's, virtualenv's and matplotlib's caches stay in the suite's
    .jitbench/. (rustup's proxy, where rustc is on PATH, writes its own settings whenever pip
    asks rustc its version: not this project's, left out.)"""
    assert [p.name for p in gate.home.iterdir() if p.name != ".rustup"] == []
