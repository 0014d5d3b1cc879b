"""The blocks of the CI page (docs/commits.md): the workflow ``jitbench init --ci github``
wrote into a real library's repository, and the job summaries its pull-request job wrote
there, each copied as it came into ``docs/ci/`` (its README says how they were made)."""

from __future__ import annotations

from blocks.runs import DOCS

CI = DOCS / "ci"


def ci_workflow_block() -> str:
    """The workflow, as init wrote it."""
    return f"```yaml\n{(CI / 'jitbench.yml').read_text(encoding='utf-8').rstrip()}\n```"


def ci_summary_block(branch: str) -> str:
    """The job summary of the pull request ``branch``, as GitHub renders it (Markdown)."""
    return (CI / f"summary-{branch}.md").read_text(encoding="utf-8").strip()
