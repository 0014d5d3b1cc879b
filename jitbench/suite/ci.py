"""``jitbench init --ci github``: the GitHub Actions workflow of a project set up by init, its
template here only (what each step does and why: docs/commits.md#in-ci-the-gate-and-the-dashboard).

One workflow, two jobs. On a pull request, ``gate`` measures the merge base and the head in
one job (one runner: their counts and times compare), and ``jitbench compare`` writes the
comparison into the job's summary and fails it where an instruction count rose or a hazard
appeared; times are shown, never judged. On a push to the main line, ``dashboard`` measures
the new commit, appends its result to a results branch (every earlier result stays there, as
asv's ``gh-pages`` keeps its pages) and publishes the dashboard and the report with GitHub's
own Pages actions. Every ``run:`` step reads GitHub's environment variables and the
workflow's own, never a ``${{ }}`` expression, so that a test can run the steps as written
(tests/test_workflow.py).
"""

from __future__ import annotations

from pathlib import Path

# Where GitHub reads workflows, from the repository's root.
WORKFLOW = Path(".github") / "workflows" / "jitbench.yml"
# The runner image both jobs run on, and asv's machine name for it: results of one image line
# up on the dashboard, whichever runner of it ran them.
RUNNER = "ubuntu-24.04"
MACHINE = f"github-{RUNNER}"
RESULTS_BRANCH = "jitbench-results"
# GitHub's own actions, each pinned to its major release.
ACTIONS = {
    "checkout": "actions/checkout@v4",
    "setup-python": "actions/setup-python@v5",
    "cache": "actions/cache@v4",
    "upload-pages-artifact": "actions/upload-pages-artifact@v3",
    "deploy-pages": "actions/deploy-pages@v4",
}

TEMPLATE = """\
# jitbench's gate on every pull request and the dashboard of {branch}, written by
# `jitbench init --ci github` ({suite}/README.md has the commands, docs/commits.md of
# jitbench what each step does). Nothing here depends on a service other than GitHub's own
# actions.
#
# A pull request: its merge base and its head measured in one job, on one runner, by the
# suite in {suite}/; `jitbench compare` writes the comparison into the job's summary and
# fails the job where an instruction count rose by over 1%, a row that ran on the base fails
# on the head, or a hazard appeared (stale results, errors, leaked instances, recompiles).
# Times are shown, never judged: on a shared runner they move by 2x with the code unchanged.
# A push to {branch}: the new commit measured, its result appended to the {results_branch}
# branch (every earlier result stays there), the dashboard and the report published to
# GitHub Pages (Settings > Pages > Source: GitHub Actions).
name: jitbench

on:
  pull_request:
  push:
    branches: [{branch_json}]

permissions:
  contents: read

env:
  # asv's name for every runner of this image: their results line up on the dashboard.
  MACHINE: {machine}
  RESULTS_BRANCH: {results_branch}
  # The rows both jobs measure: asv's -b, a regular expression ("." every row; e.g.
  # "Instructions|Hazards" the counts and the audit's alone, in fewer minutes).
  BENCHMARKS: "."

defaults:
  run:
    shell: bash
    working-directory: {suite}

jobs:
  gate:
    if: github.event_name == 'pull_request'
    runs-on: {runner}
    timeout-minutes: 90
    steps:
      # The head of the pull request, with every branch's history: its merge base is there.
      - uses: {checkout}
        with:
          ref: ${{{{ github.event.pull_request.head.sha }}}}
          fetch-depth: 0
      - uses: {setup_python}
        with:
          python-version: "{python}"
      # asv's environment (JAX and the rest, built once) and pip's downloads, kept until
      # asv.conf.json changes.
      - uses: {cache}
        with:
          path: |
            {suite}/env
            {suite}/{home}/cache
          key: jitbench-{runner}-${{{{ hashFiles('{suite}/asv.conf.json') }}}}
{install_steps}
      - name: Measure the merge base and the head
        run: |
          base=$(git merge-base "origin/$GITHUB_BASE_REF" HEAD)
          echo "BASE=$base" >> "$GITHUB_ENV"
          git rev-parse "$base" HEAD > {home}/gate-commits
          jitbench asv machine --yes --machine "$MACHINE"
          # asv exits 2 where a row failed or a commit was skipped: compare says which.
          jitbench asv run --show-stderr --machine "$MACHINE" -b "$BENCHMARKS" \\
            HASHFILE:{home}/gate-commits || echo "asv run exited $?"
      - name: Compare them by instruction counts and hazards
        run: |
          status=0
          jitbench compare --require-counts --summary "$GITHUB_STEP_SUMMARY" \\
            "$BASE" "$(git rev-parse HEAD)" || status=$?
          pages="https://$GITHUB_REPOSITORY_OWNER.github.io/${{GITHUB_REPOSITORY#*/}}/"
          echo "The dashboard of {branch}, every commit measured: $pages" >> "$GITHUB_STEP_SUMMARY"
          exit "$status"

  dashboard:
    if: github.event_name == 'push'
    runs-on: {runner}
    timeout-minutes: 90
    # One run at a time appends to the results branch.
    concurrency:
      group: jitbench-results
      cancel-in-progress: false
    permissions:
      contents: write
      pages: write
      id-token: write
    environment:
      name: github-pages
      url: ${{{{ steps.deployment.outputs.page_url }}}}
    steps:
      - uses: {checkout}
        with:
          fetch-depth: 0
      - uses: {setup_python}
        with:
          python-version: "{python}"
      - uses: {cache}
        with:
          path: |
            {suite}/env
            {suite}/{home}/cache
          key: jitbench-{runner}-${{{{ hashFiles('{suite}/asv.conf.json') }}}}
{install_steps}
      - name: Every earlier result, from the results branch
        run: |
          mkdir -p results
          if git rev-parse -q --verify "refs/remotes/origin/$RESULTS_BRANCH" >/dev/null; then
            git -C .. archive "refs/remotes/origin/$RESULTS_BRANCH" | tar -x -C results
          fi
      - name: Measure the new commit
        run: |
          jitbench asv machine --yes --machine "$MACHINE"
          jitbench asv run --show-stderr --machine "$MACHINE" -b "$BENCHMARKS" "$GITHUB_SHA^!" \\
            || echo "::warning::asv run exited $?: a row failed or the commit was skipped"
      - name: Append its result to the results branch
        env:
          GIT_AUTHOR_NAME: github-actions[bot]
          GIT_AUTHOR_EMAIL: 41898282+github-actions[bot]@users.noreply.github.com
          GIT_COMMITTER_NAME: github-actions[bot]
          GIT_COMMITTER_EMAIL: 41898282+github-actions[bot]@users.noreply.github.com
        run: |
          export GIT_INDEX_FILE="$PWD/{home}/results.index"
          rm -f "$GIT_INDEX_FILE"
          git add --force results
          tree=$(git write-tree --prefix={suite}/results/)
          parent=$(git rev-parse -q --verify "refs/remotes/origin/$RESULTS_BRANCH" || true)
          commit=$(git commit-tree "$tree" ${{parent:+-p "$parent"}} -m "results of $GITHUB_SHA")
          git push origin "$commit:refs/heads/$RESULTS_BRANCH"
      - name: The dashboard and the report
        run: |
          jitbench asv publish
          jitbench report --out html/report
          python -m jitbench.dashboard html
      - uses: {upload_pages_artifact}
        with:
          path: {suite}/html
      - id: deployment
        uses: {deploy_pages}
"""

INSTALL_STEPS = """\
      - name: Valgrind and tcmalloc, for the instruction counts
        run: |
          if ! command -v valgrind >/dev/null \\
              || ! ldconfig -p | grep libtcmalloc_minimal >/dev/null; then
            sudo apt-get update -qq
            sudo apt-get install -y -qq valgrind libtcmalloc-minimal4
          fi
      - name: jitbench, with the JAX every commit is measured with
        run: >-
          python -m pip install -q --cache-dir {home}/cache/pip
          "./{wheel}[report,instructions]" {pins}"""


def workflow(
    *,
    branch: str,
    python: str,
    suite: str,
    home: str,
    wheel: str,
    held: dict[str, str],
) -> str:
    """The workflow's text: ``branch`` the main line, ``python`` asv's Python, the suite in
    ``suite``/ with jitbench's ``wheel`` (relative to it) in ``home``/, and ``held`` the
    releases of JAX every commit is measured with (jitbench's own environment holds them
    too)."""
    pins = " ".join(f"{name}=={held[name]}" for name in ("jax", "jaxlib") if name in held)
    values = {
        "branch": branch,
        "branch_json": f'"{branch}"',
        "python": python,
        "suite": suite,
        "home": home,
        "runner": RUNNER,
        "machine": MACHINE,
        "results_branch": RESULTS_BRANCH,
        **{name.replace("-", "_"): action for name, action in ACTIONS.items()},
    }
    values["install_steps"] = INSTALL_STEPS.format(home=home, wheel=wheel, pins=pins)
    return TEMPLATE.format_map(values)
