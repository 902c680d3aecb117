"""Frozen criteria sets in the store (tables ``ufs_criteria_tasks`` and ``ufs_criteria``).

A *criteria set* is a name. Writing a task into a set freezes it: writing the same task again
with the same content is a no-op, and with different content is refused, so every grading run
that names the set grades against exactly the criteria the first one did. A task changed since
(its blueprint hash differs) is reported by ``stale_tasks`` rather than silently regraded.

Layer contract: the only module of ``ufs`` that reads or writes the store's criteria tables; it
takes an open DuckDB connection and never opens one.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from uxlocal.errors import UxlocalError
from uxlocal.store.db import json_value

from .criteria import GRADED_STATUSES, Blueprint, Criterion, Screened, Status


@dataclass(frozen=True)
class Provenance:
    """Who wrote and verified a task's criteria, with which prompts (or which file)."""

    source: Literal["writer", "file", "template"]
    source_file: str | None = None
    writer_model: str | None = None
    writer_identity: str | None = None
    writer_prompt_sha256: str | None = None
    writer_request_hash: str | None = None
    verifier_model: str | None = None
    verifier_identity: str | None = None
    verifier_prompt_sha256: str | None = None
    verifier_request_hash: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class TaskCriteria:
    """One task's criteria as stored: every screened item (dropped ones too) and its provenance."""

    domain: str
    task_id: str
    blueprint_sha256: str
    items: tuple[Screened, ...]
    provenance: Provenance
    n_written: int = -1
    """Criteria the writer or file produced before any screening; -1 means ``len(items)``."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        """(domain, task_id)."""
        return (self.domain, self.task_id)

    def graded(self) -> list[Criterion]:
        """Return the criteria a judge grades: kept and flagged ones, in their original order."""
        return [item.criterion for item in self.items if item.status in GRADED_STATUSES]

    def status_of(self, criterion_id: str) -> Status | None:
        """Return the stored status of one criterion, or None if the task has no such criterion."""
        return next((i.status for i in self.items if i.criterion.criterion_id == criterion_id), None)


def save_criteria(con: Any, criteria_set: str, tasks: Iterable[TaskCriteria]) -> tuple[int, int]:
    """Write tasks into a set in one transaction; returns (tasks written, tasks already identical).

    Raises ``UxlocalError`` when a task is already in the set with different criteria or a
    different blueprint: sets are frozen.
    """
    if not criteria_set.strip():
        raise UxlocalError("a criteria set needs a non-empty name")
    existing = load_criteria(con, criteria_set)
    written = unchanged = 0
    now = dt.datetime.now(dt.timezone.utc)
    con.execute("BEGIN")
    try:
        for task in tasks:
            old = existing.get(task.key)
            if old is not None:
                if _content(old) != _content(task):
                    raise UxlocalError(
                        f"criteria set {criteria_set!r} already holds task {task.domain}/{task.task_id} with "
                        "different criteria; sets are frozen (write to a new set name instead)"
                    )
                unchanged += 1
                continue
            _insert(con, criteria_set, task, now)
            existing[task.key] = task
            written += 1
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return written, unchanged


def _insert(con: Any, criteria_set: str, task: TaskCriteria, now: dt.datetime) -> None:
    p = task.provenance
    n_written = task.n_written if task.n_written >= 0 else len(task.items)
    con.execute(
        "INSERT INTO ufs_criteria_tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            criteria_set,
            task.domain,
            task.task_id,
            task.blueprint_sha256,
            p.source,
            p.source_file,
            p.writer_model,
            p.writer_identity,
            p.writer_prompt_sha256,
            p.writer_request_hash,
            p.verifier_model,
            p.verifier_identity,
            p.verifier_prompt_sha256,
            p.verifier_request_hash,
            n_written,
            p.note,
            now,
        ],
    )
    for position, item in enumerate(task.items):
        c = item.criterion
        con.execute(
            "INSERT INTO ufs_criteria VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                criteria_set,
                task.domain,
                task.task_id,
                c.criterion_id,
                position,
                c.family,
                c.mode,
                c.text,
                c.grounding_span,
                item.grounded_in,
                c.applies_when,
                c.evidence_hint,
                item.status,
                json.dumps(list(item.reasons)),
                json.dumps(item.checks) if item.checks else None,
            ],
        )


def _content(task: TaskCriteria) -> Any:
    """Return what must be equal for a rewrite to count as 'the same' (provenance aside)."""
    return (
        task.blueprint_sha256,
        [
            (i.criterion.model_dump(), i.status, tuple(i.reasons), i.grounded_in, dict(i.checks))
            for i in task.items
        ],
    )


def load_criteria(
    con: Any, criteria_set: str, *, domain: str | None = None
) -> dict[tuple[str, str], TaskCriteria]:
    """Every task of a set (optionally one domain), keyed (domain, task_id)."""
    where, params = "criteria_set = ?", [criteria_set]
    if domain is not None:
        where, params = where + " AND domain = ?", [criteria_set, domain]
    task_rows = con.execute(
        "SELECT domain, task_id, blueprint_sha256, source, source_file, writer_model, writer_identity, "
        "writer_prompt_sha256, writer_request_hash, verifier_model, verifier_identity, "
        "verifier_prompt_sha256, verifier_request_hash, n_written, note "
        f"FROM ufs_criteria_tasks WHERE {where} ORDER BY domain, task_id",
        params,
    ).fetchall()
    items: dict[tuple[str, str], list[Screened]] = {}
    for row in con.execute(
        "SELECT domain, task_id, criterion_id, family, mode, text, grounding_span, grounded_in, "
        f"applies_when, evidence_hint, status, reasons, checks FROM ufs_criteria WHERE {where} "
        "ORDER BY domain, task_id, position",
        params,
    ).fetchall():
        criterion = Criterion.model_construct(
            criterion_id=row[2],
            family=row[3],
            mode=row[4],
            text=row[5],
            grounding_span=row[6],
            applies_when=row[8],
            evidence_hint=row[9] or "",
        )
        items.setdefault((row[0], row[1]), []).append(
            Screened(
                criterion,
                status=row[10],
                reasons=tuple(json_value(row[11]) or ()),
                grounded_in=row[7],
                checks=dict(json_value(row[12]) or {}),
            )
        )
    out = {}
    for row in task_rows:
        names = ("source", "source_file", "writer_model", "writer_identity", "writer_prompt_sha256",
                 "writer_request_hash", "verifier_model", "verifier_identity", "verifier_prompt_sha256",
                 "verifier_request_hash")
        provenance = Provenance(**dict(zip(names, row[3:13], strict=True)), note=row[14])
        key = (row[0], row[1])
        out[key] = TaskCriteria(
            row[0], row[1], row[2], tuple(items.get(key, [])), provenance, n_written=int(row[13])
        )
    return out


def criteria_sets(con: Any) -> list[tuple[str, int, int]]:
    """(set name, tasks, graded criteria) for every set in the store."""
    return [
        tuple(r)
        for r in con.execute(  # type: ignore[misc]
            "SELECT t.criteria_set, count(DISTINCT (t.domain, t.task_id)), "
            "count(c.criterion_id) FILTER (WHERE c.status IN ('kept', 'flagged')) "
            "FROM ufs_criteria_tasks t LEFT JOIN ufs_criteria c USING (criteria_set, domain, task_id) "
            "GROUP BY t.criteria_set ORDER BY t.criteria_set"
        ).fetchall()
    ]


def stale_tasks(
    stored: Mapping[tuple[str, str], TaskCriteria], blueprints: Mapping[tuple[str, str], Blueprint]
) -> list[tuple[str, str]]:
    """Tasks whose current blueprint no longer matches the one their criteria were written from."""
    return sorted(
        key
        for key, task in stored.items()
        if key in blueprints and blueprints[key].sha256() != task.blueprint_sha256
    )

