"""JAX's explanations of the audit's recompiles and errors, read and checked from
``jitbench audit --format json`` (asv results hold numbers only)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from jitbench.errors import JitbenchError
from jitbench.vocabulary import Outcome, StepName

# One audit result as ``jitbench audit --format json`` writes it (AuditResult.to_dict).
AuditJSON = dict[str, Any]
# Longest explanation shown; the audit's own output has every word.
MAX_CHARS = 400
# The type of each field the report reads, and how an error message names it.
_STEP_TYPES = {
    "name": ("str", "a string"),
    "traces": ("int", "an integer"),
    "compiles": ("int", "an integer"),
    "outcome": ("str", "a string"),
    "error": ("str", "a string"),
    "explanations": ("strs", "a list of strings"),
}
_RESULT_TYPES = {"device": ("str", "a string"), "size": ("int", "an integer")}


def load(path: str | Path) -> list[AuditJSON]:
    """The audit results in ``path``, checked; bad input raises a one-line JitbenchError."""
    where = f"audit JSON {str(path)!r}"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise JitbenchError(f"cannot read {where}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise JitbenchError(f"{where} is not JSON ({exc})") from None
    expected = "expected the output of 'jitbench audit --format json'"
    if not isinstance(data, list) or not data:
        raise JitbenchError(f"{where} is not a list of audit results; {expected}")
    for n, result in enumerate(data, 1):
        steps = result.get("steps") if isinstance(result, dict) else None
        if (
            not isinstance(steps, list)
            or not isinstance(_subject(result), str)
            or not all(isinstance(s, dict) and set(_STEP_TYPES) <= set(s) for s in steps)
        ):
            raise JitbenchError(f"{where} holds an entry that is not an audit result; {expected}")
        fields = [(f"field {f!r}", result[f], *t) for f, t in _RESULT_TYPES.items() if f in result]
        fields += [
            (f"step {m} field {f!r}", step[f], kind, form)
            for m, step in enumerate(steps, 1)
            for f, (kind, form) in _STEP_TYPES.items()
        ]
        for at, value, kind, form in fields:
            if not _is(value, kind):
                shown = " ".join(json.dumps(value).split())
                shown = shown if len(shown) <= 40 else shown[:39] + "…"
                raise JitbenchError(f"{where} entry {n} {at} is {shown}, not {form}; {expected}")
    return data


def _subject(result: AuditJSON) -> object:
    """What was audited: a built-in strategy, or a target (shown under strategy, as its rows)."""
    return result.get("strategy", result.get("target"))


def _is(value: object, kind: str) -> bool:
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "strs":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, str)


def explanations(audit: list[AuditJSON]) -> pd.DataFrame:
    """One row per notable step: device, strategy, step, traces/compiles, outcome, explanation."""
    rows = []
    for result in audit:
        for step in result["steps"]:
            recompiled = step["compiles"] > 0 and step["name"] != StepName.FIRST_CALL
            if not (recompiled or step["outcome"] == Outcome.ERROR):
                continue
            rows.append(
                {
                    "device": result.get("device", ""),
                    "size": result.get("size"),
                    "strategy": _subject(result),
                    "step": step["name"],
                    "traces/compiles": f"{step['traces']}/{step['compiles']}",
                    "outcome": step["outcome"],
                    "explanation": _explain(step),
                }
            )
    return pd.DataFrame(rows)


def _explain(step: dict[str, Any]) -> str:
    if step["error"]:
        return _short(step["error"])
    if step["explanations"]:
        return "; ".join(_short(_drop_location(text)) for text in step["explanations"])
    return "JAX gave no explanation (a miss of JAX's own functions, or none at the tracing cache)"


def _drop_location(text: str) -> str:
    """JAX's message without its first line, which names a file and line of this machine."""
    first, _, rest = text.partition("\n")
    return rest if first.startswith("TRACING CACHE MISS") and rest else text


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"
