"""The runs table and its companions (models, run_models, items, quarantine): open, reopen, close a run.

The runner decides what a run is; this module is the SQL that records it. Reopening a run is the
resume step: rows of episodes that never reached ``done`` are removed, in one transaction, so the
scheduler reruns those episodes from the start (their generations come back from the cache).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from uxlocal.store.writer import StoreWriter

INSERT_BATCH = 10_000
"""Item rows per Arrow insert when a run starts (a million-row plan is never one Arrow table)."""

STARTING = "starting"
"""Status of a run whose items are still being stored (see ``begin_run``)."""

EPISODE_TABLES = ("turns", "tool_calls", "verdicts", "run_generations")
"""Tables whose rows belong to an episode; rows of unfinished episodes are removed on resume."""


class ModelRecord(Protocol):
    """What the ``models`` table keeps of a resolved model (``models.ResolvedModel`` fits)."""

    identity: str
    name: str
    path: str
    backend: str
    dtype: str
    max_model_len: int
    price_input_per_mtok: float
    price_output_per_mtok: float


@dataclass
class NewRun:
    """Everything the store records when a run starts."""

    run_id: str
    suite: str
    config: dict[str, Any]
    """The run config as JSON-ready data (stored canonically, keys sorted)."""
    config_sha256: str
    versions: dict[str, str]
    git_commit: str | None
    started_at: Any
    """A timezone-aware UTC datetime."""
    models: dict[str, ModelRecord] = field(default_factory=dict)
    """role -> model."""
    items: Iterable[dict[str, Any]] = field(default_factory=list)
    """Item rows; any iterable (a streamed plan's), inserted ``INSERT_BATCH`` at a time."""
    quarantine: Iterable[dict[str, Any]] = field(default_factory=list)
    """Set-aside rows, read after ``items``."""


def begin_run(con: Any, run: NewRun) -> bool:
    """Create the run (with its models and items) or reopen it for resume; True when it existed.

    Items commit ``INSERT_BATCH`` rows per transaction (one transaction over a million rows held
    them all in DuckDB's memory), under status ``starting``: the run counts as started only once
    its last item and its quarantine rows are stored. A run found ``starting`` (killed during the
    items pass) has its partial items removed and the pass redone, so no item is lost or doubled.
    """
    found = con.execute("SELECT status FROM runs WHERE run_id = ?", [run.run_id]).fetchone()
    if found is not None and found[0] != STARTING:
        _in_transaction(con, lambda: _reopen(con, run.run_id))
        return True
    _in_transaction(con, lambda: _insert_run(con, run, redo=found is not None))
    try:
        _insert_items(con, run)
    except Exception:  # a bad row deep in a streamed input: leave no half-started run behind
        _in_transaction(con, lambda: _forget(con, run.run_id))
        raise
    return False


def _insert_items(con: Any, run: NewRun) -> None:
    writer = StoreWriter(con)
    rows = iter(run.items)
    while batch := list(itertools.islice(rows, INSERT_BATCH)):
        _in_transaction(con, lambda: writer.insert_rows("items",
                                                        [{"run_id": run.run_id, **r} for r in batch]))
    _in_transaction(con, lambda: _finish_items(con, writer, run))


def _in_transaction(con: Any, work: Callable[[], None]) -> None:
    con.execute("BEGIN")
    try:
        work()
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise


def finished_episodes(con: Any, run_id: str) -> set[str]:
    """Ids of the run's episodes that reached ``done`` (skipped on resume)."""
    rows = con.execute("SELECT episode_id FROM episodes WHERE run_id = ? AND status = 'done'",
                       [run_id]).fetchall()
    return {row[0] for row in rows}


def finished_among(con: Any, run_id: str, episode_ids: list[str]) -> set[str]:
    """Which of ``episode_ids`` reached ``done`` in this run (one query for a chunk of a plan)."""
    if not episode_ids:
        return set()
    rows = con.execute("SELECT episode_id FROM episodes WHERE run_id = ? AND status = 'done' "
                       "AND episode_id IN (SELECT unnest(?))", [run_id, episode_ids]).fetchall()
    return {row[0] for row in rows}


def finished_count(con: Any, run_id: str) -> int:
    """How many of the run's episodes reached ``done``."""
    return int(con.execute("SELECT count(*) FROM episodes WHERE run_id = ? AND status = 'done'",
                           [run_id]).fetchone()[0])


def end_run(con: Any, run_id: str, *, failed: bool, ended_at: Any, wall_s: float, engine_calls: int,
            engine_busy_s: float) -> None:
    """Mark the run ``done`` (or ``failed`` when an episode failed) with this attempt's counters."""
    con.execute("UPDATE runs SET status = ?, ended_at = ?, wall_s = ?, engine_calls = ?, engine_busy_s = ? "
                "WHERE run_id = ?", ["failed" if failed else "done", ended_at, wall_s, engine_calls,
                                     engine_busy_s, run_id])


def _reopen(con: Any, run_id: str) -> None:
    con.execute("UPDATE runs SET status = 'running' WHERE run_id = ?", [run_id])
    finished = "SELECT episode_id FROM episodes WHERE run_id = ? AND status = 'done'"
    for table in EPISODE_TABLES:
        con.execute(f"DELETE FROM {table} WHERE run_id = ? AND episode_id NOT IN ({finished})",
                    [run_id, run_id])
    con.execute("DELETE FROM episodes WHERE run_id = ? AND status <> 'done'", [run_id])


def _insert_run(con: Any, run: NewRun, *, redo: bool) -> None:
    """Insert the run's row (status ``starting``) and models; ``redo`` first drops a killed start's rows."""
    if redo:
        _forget(con, run.run_id)
    con.execute("INSERT INTO runs (run_id, suite, config, config_sha256, versions, git_commit, status, "
                "started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [run.run_id, run.suite, json.dumps(run.config, sort_keys=True), run.config_sha256,
                 json.dumps(run.versions), run.git_commit, STARTING, run.started_at])
    for role, model in run.models.items():
        con.execute("INSERT OR IGNORE INTO models VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [model.identity, model.name, model.path, model.backend, model.dtype, model.max_model_len,
                     model.price_input_per_mtok, model.price_output_per_mtok])
        con.execute("INSERT INTO run_models VALUES (?, ?, ?, ?)",
                    [run.run_id, role, model.identity, model.name])


def _forget(con: Any, run_id: str) -> None:
    """Remove a run that never finished starting (it has no episodes yet)."""
    for table in ("items", "quarantine", "run_models", "runs"):
        con.execute(f"DELETE FROM {table} WHERE run_id = ?", [run_id])


def _finish_items(con: Any, writer: StoreWriter, run: NewRun) -> None:
    """Insert the quarantine rows (known once every item is read), then mark the run as started."""
    rows = iter(run.quarantine)
    while batch := list(itertools.islice(rows, INSERT_BATCH)):
        writer.insert_rows("quarantine", [{"run_id": run.run_id, **r} for r in batch])
    con.execute("UPDATE runs SET status = 'running' WHERE run_id = ?", [run.run_id])
