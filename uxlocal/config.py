"""Run configuration: what a run is (hashed into its identity) and how it is executed (not hashed).

``RunConfig.identity()`` is sha256 over canonical JSON of every field except those listed in
``NOT_IN_IDENTITY`` with their reason; a test fails when a new field is on neither side.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

NOT_IN_IDENTITY: dict[str, str] = {
    "db": "where results go, not what they are",
    "progress": "display only",
    "max_batch": "throughput knob; results are keyed per request in the cache",
    "max_live": "throughput knob; episodes are independent",
    "debug": "display only",
    "fresh": "asks for a new run id on purpose; folded into the identity as a nonce when set",
    "shard": "selects which items run, not what a result is (shards of one run merge into one)",
}


class SuiteConfig(BaseModel):
    """Base for a suite's own options; field docstrings become ``--help`` texts."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    not_in_identity: ClassVar[dict[str, str]] = {}
    """Suite fields left out of the run identity, each with its reason (like ``NOT_IN_IDENTITY``):
    where an export goes or where data sits does not change what a result is."""

    def identity_dump(self) -> dict[str, Any]:
        """Return the options as hashed into the run identity (``not_in_identity`` fields dropped)."""
        return self.model_dump(mode="json", exclude=set(self.not_in_identity))


class RunConfig(BaseModel):
    """Options every ``uxlocal run SUITE`` shares."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    suite: str
    """Registered suite name."""
    suite_config: dict[str, Any] = Field(default_factory=dict)
    """The suite's own options (validated by the suite's config class)."""
    models: dict[str, str] = Field(default_factory=dict)
    """role -> model identity (sha256 of weights fingerprint, dtype, backend, window)."""
    model_names: dict[str, str] = Field(default_factory=dict)
    """role -> what the user typed (preset, folder or spec), for display."""
    prompt_hashes: dict[str, str] = Field(default_factory=dict)
    """sha256 of every prompt file the suite uses: a changed prompt is a different run."""
    seed: int = 0
    """Base seed; every sampled request derives its own seed from it and its position."""
    limit: int | None = None
    """At most N items per task (default: all)."""
    grammar: Literal["xgrammar", "outlines"] = "xgrammar"
    """Grammar engine for constrained output."""
    db: str = "uxlocal.duckdb"
    """DuckDB store to write (resumes the same run)."""
    progress: bool = True
    """Show progress bars on stderr (only when it is a terminal)."""
    max_batch: int = 256
    """Most requests per engine call (past the KV-cache limit vLLM preempts)."""
    max_live: int = 512
    """Most episodes in flight at once (bounds memory; more live episodes = bigger batches)."""
    debug: bool = False
    """Show tracebacks."""
    fresh: bool = False
    """Start a new run even if an identical one exists (the generation cache is still used)."""
    shard: str | None = None
    """Run only shard I of N (stable hash of item ids)."""

    def identity_payload(self) -> dict[str, Any]:
        """Return the hashed part of the config, canonical."""
        data = self.model_dump(mode="json")
        for name in NOT_IN_IDENTITY:
            data.pop(name, None)
        data.pop("model_names", None)  # display form of ``models``
        return data

    def identity(self, nonce: str = "") -> str:
        """sha256 of the canonical hashed part (plus a nonce for ``--fresh`` runs)."""
        blob = json.dumps(self.identity_payload(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256((blob + nonce).encode("utf-8")).hexdigest()

    def run_id(self, nonce: str = "") -> str:
        """``<suite>-<12 hex>``: the same command and data resume the same run."""
        return f"{self.suite}-{self.identity(nonce)[:12]}"

    @property
    def db_path(self) -> Path:
        """The store path."""
        return Path(self.db)


IDENTITY_EXEMPT_DISPLAY = {"model_names"}
"""Fields that only mirror a hashed field for display (``model_names`` mirrors ``models``)."""
