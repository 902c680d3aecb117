"""The episode recording (``../shared/conformance/tau2-episodes/<domain>.json.gz``) read back.

The file stores every string longer than 200 characters once in a ``strings`` table and refers to
it as ``{"$s": index}``; ``read_episodes`` resolves those references so that requests, scripts
and trajectories read as upstream sent them. Format: the recording's README.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


def read_episodes(path: Path) -> dict[str, Any]:
    """Load one domain's recording with every ``{"$s": i}`` replaced by its string."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    table: list[str] = data.pop("strings", [])
    resolved: dict[str, Any] = _resolve(data, table)
    return resolved


def _resolve(node: Any, table: list[str]) -> Any:
    if isinstance(node, dict):
        if list(node) == ["$s"]:
            return table[node["$s"]]
        return {key: _resolve(value, table) for key, value in node.items()}
    if isinstance(node, list):
        return [_resolve(item, table) for item in node]
    return node
