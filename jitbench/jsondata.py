"""What ``json.loads`` returns for a JSON object (an asv results or config file, a ``--format
json`` output read back, a child process's answer): its fields are read as its format says."""

from __future__ import annotations

from typing import Any, TypeAlias

JsonObject: TypeAlias = dict[str, Any]
