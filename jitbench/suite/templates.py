"""The text of the files ``jitbench init`` writes (:mod:`jitbench.suite.scaffold` fills them
in): asv's config, the suite package, the folder's README and what git ignores and leaves
out of archives."""

ASV_CONF = """\
{{
    // asv benchmarks of {project}'s jitted methods, measured by jitbench ("jitbench init";
    // README.md here has the commands, run from this folder). Every commit is measured with
    // the same jitbench, installed from {home}/ ({wheel_source}),
    // and the same releases of {held_words}: a commit whose own requirements forbid them is
    // skipped, with that reason.
    "version": 1,
    "project": {project_json},
    // The dashboard's header link: the jitbench report, once copied into html/report/.
    "project_url": "report/index.html",
    "repo": "..",
    "branches": [{branch_json}],
    "environment_type": "virtualenv",
    "pythons": [{python_json}],
    // A fresh interpreter per benchmark process: nothing of the project runs in a server.
    "launch_method": "spawn",
    "install_timeout": 1800,
    "build_command": ["python -m pip wheel --no-deps -w {{build_cache_dir}} {{build_dir}}"],
    // jitbench's wheel, then the commit's, installed with the matrix's releases held, and
    // each target built and called once at that commit: a commit that cannot is skipped,
    // with why.
    "install_command": [
        {install_jitbench},
        {install_project}
    ],
    "uninstall_command": ["return-code=any python -m pip uninstall -y {{project}}"],
    // What every commit's environment installs: asv_runner pinned (jitbench's timing relies
    // on its batching), then a package the project imports without declaring it, one line
    // each in "req" ("six": [""] the newest release, "six": ["1.17.0"] that one; jitbench
    // init --with six writes it), then the releases every commit is measured with.
{counts_comment}    "matrix": {matrix},
    "benchmark_dir": "{suite}",
    "env_dir": "env",
    "results_dir": "results",
    "html_dir": "html"
}}
"""

BENCHMARKS_INIT = '''\
"""asv benchmarks of {project}, measured by jitbench: see bench_targets.py."""
'''

BENCH_TARGETS = '''\
"""{project}'s objects with a jitted method, benchmarked by jitbench at every commit.

A target is ``module:factory``: a callable returning the object, or a
``jitbench.Target(obj, inputs, call=...)`` saying which call to measure with
which arguments. Keep its module in this folder (``targets.py``, named
``{suite}.targets:make``): every commit, older ones included, then imports it,
and the project's own package stays as each commit has it. Each target gets
jitbench's rows per device: cold first call, first call in a fresh process,
cached call and dispatch, the call after each kind of change its audit plays,
the audit's hazard counts and peak memory (and, where counts are on,
instructions per call). ``JITBENCH_TARGETS`` adds more.
"""

from jitbench.suite.families import benchmark_classes

TARGETS = [
{targets}]

globals().update(benchmark_classes(TARGETS))
'''

BENCH_README = """\
# {project}'s jitted calls, benchmarked by jitbench

`jitbench init` wrote this folder, laid out as numpy's and scipy's asv suites are:
`asv.conf.json` (`"repo": ".."`) and the suite package `{suite}/`, which no package finder
of the project reaches (this folder has no `__init__.py`), and `.gitattributes`, which
keeps it out of `git archive` (and of the sdists built from it). `{home}/` holds the
jitbench wheel asv installs ({wheel_source}), asv's machine file and the downloads of pip
and virtualenv: `jitbench asv` keeps them there rather than in your home folder. Git
ignores {ignored}, `env/`, `results/` and `html/`.

`{suite}/bench_targets.py` lists the targets: the objects and calls measured at every
commit. Keep a target's module in `{suite}/` (`{suite}/targets.py`, named
`{suite}.targets:make`): every commit, older ones included, can import it.

Every commit is measured with Python {python}, {held_pins} (the matrix in
`asv.conf.json`, recorded in each result). Each is installed with those held and its
targets built and called once; a commit that cannot be (its own requirements forbid them,
or its call fails under them) is skipped, with the reason in one line. A package the
project imports without declaring it (`No module named 'six'` on every commit) is one
line of the matrix's `"req"` in `asv.conf.json`: `"six": [""],`. To measure under another
release, edit the matrix; `jitbench compare` compares runs of one release only, unless
asked.

Instruction counts: {counts}
Run from this folder, where jitbench is installed
(`pip install -e '/path/to/jitbench[report,instructions]'`). `jitbench asv` is asv itself,
its machine file kept in `{home}/` rather than your home folder:

```bash
git add .{git_add_ci} && git commit -m "asv benchmarks through jitbench"
jitbench asv machine --yes
# the newest commit of {branch}, in a virtualenv asv builds (env/)
jitbench asv run
# the last ten commits of {branch}, older ones included
jitbench asv run HEAD~10..HEAD
# a change: edit, commit
git checkout -b my-change
# asv's own verdict on times: exit 1 where a time got 2x slower
jitbench asv continuous --factor 2 {branch} HEAD
# exit 1 where a row newly fails{counted} or a hazard appeared (times shown, not judged)
jitbench compare {branch} HEAD
# where a hazard is: the command compare prints, from this folder
python -m jitbench audit {audit_target} --explain
# the dashboard, with jitbench's report linked
jitbench asv publish
jitbench report --out html/report
python -m jitbench.dashboard html
jitbench asv preview
```

{ci_words}
{fresh_clone}
"""

CI_WORDS = """\
In CI: `.github/workflows/jitbench.yml` (at the repository's root) runs on every pull
request and every push to {branch}. A pull request's merge base and head are measured in one
job and compared; the job's summary holds the comparison (the instruction counts, what
changed and by how much, each hazard that appeared and the command that says where, then
the times, shown and not judged), and the job fails where an instruction count rose by over
1%, a row newly fails or a hazard appeared. A push to {branch} measures the new commit,
appends its result to the `jitbench-results` branch (every earlier result stays there) and
publishes the dashboard and the report to GitHub Pages: set Settings > Pages > Source to
GitHub Actions once. The workflow installs Valgrind and tcmalloc, the jitbench wheel
committed in `{home}/` and {held_pins}, and caches asv's environment and pip's downloads.
"""

NO_CI_WORDS = """\
For a gate on every pull request and a dashboard published from CI: `jitbench init --ci
github` in a project without this folder (remove it first) also writes a GitHub Actions
workflow.
"""

# What a fresh clone lacks, without CI (the wheel is ignored) and with it (committed).
FRESH_CLONE = {
    False: """\
A fresh clone of the repository has no `{home}/`: `{wheel_command}` (from its root)
builds the jitbench wheel again, from the jitbench installed there.""",
    True: """\
The jitbench wheel is committed (CI installs it); to move to another jitbench, delete
`{home}/{wheel_name}`, run `{wheel_command}` from the repository's root with that
jitbench installed, and commit the new wheel.""",
}

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
tcmalloc is found where the benchmarks run: the system's, or the library that
`JITBENCH_TCMALLOC` names in the environment of `jitbench asv run`.
"""

COUNTS_OFF = """\
off: {reason}. With Valgrind, tcmalloc and pytest-codspeed where `jitbench init`
runs, asv's environments get the hooks and every `asv run` also counts each
target's instructions per call, which `jitbench compare` judges to 1%. To add
them, install those, remove this folder's `asv.conf.json`, and run `jitbench
init` again.
"""

COUNTS_COMMENT = """\
    // Instruction counts (README.md): pytest-codspeed's hooks start and stop Valgrind's
    // counting; JITBENCH_INSTRUCTIONS=1 asks every asv run for the counts.
"""

EXAMPLE_TARGET = """\
    # "{suite}.targets:make",  # fill in: module:factory ({suite}/targets.py)
"""
# What asv and jitbench write in SUITE, which git ignores; HOME_IGNORED's lines in place of
# {home_lines}.
GITIGNORE = """\
# jitbench init: {home_words}; asv's environments, results and dashboard
{home_lines}
/env/
/results/
/html/
"""
HOME_IGNORED = {
    False: (
        "the jitbench wheel, asv's machine file and the caches of pip and virtualenv (a fresh "
        "clone: jitbench init --wheel)",
        "/{home}/",
    ),
    True: (
        "asv's machine file and the caches of pip and virtualenv, but not the\n# jitbench "
        "wheel, which CI installs",
        "/{home}/*\n!/{home}/{wheel_name}",
    ),
}
# Keeps SUITE out of git archive, and so of the sdists built from it (setuptools-scm).
GITATTRIBUTES = """\
# jitbench init: the benchmarks stay out of git archive and the sdists built from it
* export-ignore
"""
