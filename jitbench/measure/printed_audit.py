"""advise's printed code audited in a fresh process: a way's code run as printed
(:class:`jitbench.ways.printed.PrintedSubject`) in a process that imports the target's module
as the counting process does (:func:`run_printed`; ``python -m jitbench.measure.printed_audit``
is that process): what advise runs before it recommends a way. Why: docs/advise.md, "The
recommendation, run".
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from jitbench import child
from jitbench.auditing.audit import audit_subject
from jitbench.auditing.verdict import hazards
from jitbench.child import Json
from jitbench.devices import resolve, use_device
from jitbench.errors import JitbenchError, NoFigure
from jitbench.measure.case import Row
from jitbench.targets import child_environment, load_target
from jitbench.ways.catalog import AS_WRITTEN, way_of
from jitbench.ways.printed import PrintedSubject

# The hazards the recommended code must not have (docs/advise.md).
REFUSED = ("stale", "error", "leak")
# The seconds a fresh process may take to audit a way's code (a deep model's audit: minutes).
TIMEOUT_S = 1200.0


@dataclasses.dataclass(frozen=True)
class Run:
    """A way's code run as printed in a fresh process and audited: its hazards and their
    findings in words, or why it could not be audited (``failed``)."""

    way: str
    hazards: tuple[str, ...] = ()
    findings: tuple[str, ...] = ()
    failed: str = ""

    @property
    def clean(self) -> bool:
        """Audited, never stale, never raising, nothing kept alive."""
        return not self.failed and not set(REFUSED) & set(self.hazards)

    def said(self) -> str:
        """What the run found, in words: the hazards it must not have and the first finding
        (the most severe), or why it could not be audited; "" where it is clean."""
        if self.failed:
            return self.failed
        bad = [h for h in self.hazards if h in REFUSED]
        if not bad:
            return ""
        return f"{', '.join(bad)}: {self.findings[0]}" if self.findings else ", ".join(bad)


def run_printed(
    rows: Sequence[Row], *, fields: str | Sequence[str | None] | None = None,
    arrays: int | None = None,
) -> list[Run]:  # fmt: skip
    """The audit of each row's way (``Row.way``; the call as written for :data:`AS_WRITTEN`) on
    its target, its code run as printed, on the CPU (a process cannot open an accelerator
    another one holds): the rows one after the other in one fresh process that imports their
    targets as the counting process does. A row sees what the rows before it did to their
    classes (a pytree registration): rows of one class need a process each. ``fields``: the
    audit's fields pattern, for every row or one per row."""
    env = {**os.environ, **child_environment(s for r in rows for s in r.specs)}
    patterns = [fields] * len(rows) if fields is None or isinstance(fields, str) else fields
    request: Json = {
        "rows": [{"row": dataclasses.replace(r, device="cpu").to_json(), "fields": f}
                 for r, f in zip(rows, patterns, strict=True)],
        "arrays": arrays,
    }  # fmt: skip
    ways = ", ".join(dict.fromkeys(str(r.way) for r in rows))
    with tempfile.TemporaryDirectory(prefix="jitbench-printed-") as folder:
        try:
            found = child.work(["-m", __name__], request, Path(folder), timeout=TIMEOUT_S,
                               what=f"the code of {ways}, run as printed",
                               env={**env, "JAX_PLATFORMS": "cpu"})  # fmt: skip
        except JitbenchError as exc:
            return [Run(str(r.way), failed=str(exc)) for r in rows]
    assert isinstance(found, list)
    runs = []
    for row, got in zip(rows, found, strict=True):
        reason = NoFigure.from_json(got)
        if reason is not None:
            runs.append(Run(str(row.way), failed=reason.reason))
        else:
            assert isinstance(got, dict)
            runs.append(Run(str(row.way), tuple(got["hazards"]), tuple(got["findings"])))
    return runs


def audited(request: Json) -> Json:
    """The fresh process's answer: for each row, the audit of its way as printed (of the call as
    written for :data:`AS_WRITTEN`), its hazards and findings by the names advise's rows use,
    or why it has none (a NoFigure's JSON: it cannot be built, its code raises as printed)."""
    assert isinstance(request, dict) and isinstance(request["rows"], list)
    answers: list[Json] = []
    for asked in request["rows"]:
        assert isinstance(asked, dict)
        row = Row.from_json(asked["row"])
        kwargs = {"fields": asked["fields"]}
        if request.get("arrays") is not None:
            kwargs["arrays"] = request["arrays"]
        try:
            if row.way == AS_WRITTEN:
                subject = dataclasses.replace(row, way=None).load()
            else:
                use_device(resolve(row.device))
                target = load_target(row.subject, call=row.call, inputs=row.inputs)
                subject = PrintedSubject(target, way_of(target, str(row.way)))
            audit = audit_subject(subject, **kwargs)  # type: ignore[arg-type]
        except Exception as exc:  # this row's answer: the next rows still run
            answers.append(NoFigure.of(exc).to_json())
            continue
        answers.append({"hazards": [str(h) for h in audit.hazards()], "findings": hazards(audit)})
    return answers


if __name__ == "__main__":
    child.serve(audited)
