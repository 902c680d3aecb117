"""The scheduler's rows are a function of the episodes, not of how requests were batched (issue 45).

When the scheduler was split into driver, batcher and generation cache, a mixed run (selftest +
judge) stored the same rows before and after, table by table (only paths and the commit differed).
This pins the property that made that check meaningful: with an engine whose answer depends only on
its prompt, admitting one episode at a time with one-request batches stores exactly what wide ticks
with large batches store.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import duckdb

import uxlocal
from uxlocal.config import RunConfig
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.grammar import Choice, JsonSchema
from uxlocal.runner import run_suite

VOLATILE = {"created_at", "started_at", "ended_at", "latency_ms", "wall_s", "engine_busy_s", "applied_at",
            "finished_at", "config", "engine_calls", "db"}
"""Columns that hold times, the store's path or batching counters: not results."""


def _answer(prepared: Any) -> Any:
    digest = int(hashlib.sha256(prepared.prompt.encode()).hexdigest()[:6], 16)
    constraint = prepared.request.constraint
    if isinstance(constraint, Choice):
        label = constraint.labels[digest % len(constraint.labels)]
        return {"text": label, "label_probs": {x: 0.7 if x == label else 0.3 for x in constraint.labels}}
    if isinstance(constraint, JsonSchema):
        return '{"helpful": %s, "score": %d}' % ("true" if digest % 3 else "false", 1 + digest % 5)
    return f"reply {digest}"


def _mixed_run(db: Path, *, max_live: int, max_batch: int, follow_ups: bool = False) -> dict[str, list[str]]:
    engine = FakeEngine(_answer, identity="fake-mixed", follow_ups=follow_ups)
    pool = ModelPool.from_engines({"candidate": engine, "user": engine, "judge": engine})
    run_suite(RunConfig(suite="selftest", db=str(db), progress=False, max_live=max_live, max_batch=max_batch),
              pool=pool)
    data = str(Path(uxlocal.__file__).parent / "data" / "judge" / "conversations.jsonl")
    options = {"input": data, "rubric": "ux-liked", "human_col": "thumb", "bootstrap": 20}
    run_suite(RunConfig(suite="judge", db=str(db), progress=False, max_live=max_live, max_batch=max_batch,
                        suite_config=options), pool=ModelPool.from_engines({"judge": engine}))
    con = duckdb.connect(str(db), read_only=True)
    tables = [t for (t,) in con.execute("SELECT table_name FROM information_schema.tables "
                                         "WHERE table_type = 'BASE TABLE' ORDER BY 1").fetchall()
              if t != "_uxlocal_migrations"]
    dump = {}
    for table in tables:
        columns = [c for (c,) in con.execute("SELECT column_name FROM information_schema.columns WHERE "
                                             "table_name = ? ORDER BY ordinal_position", [table]).fetchall()
                   if c not in VOLATILE]
        rows = con.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall()
        dump[table] = sorted(json.dumps(row, default=str) for row in rows)
    con.close()
    return dump


def test_a_mixed_run_stores_the_same_rows_however_its_requests_are_batched(tmp_path: Path) -> None:
    wide = _mixed_run(tmp_path / "wide.duckdb", max_live=16, max_batch=64)
    narrow = _mixed_run(tmp_path / "narrow.duckdb", max_live=1, max_batch=1)
    assert {t: len(rows) for t, rows in wide.items() if rows} == {
        "episodes": 52, "generations": 100, "items": 52, "models": 1, "run_generations": 100, "run_models": 4,
        "runs": 2, "turns": 48, "verdicts": 64}
    assert wide == narrow
    following = _mixed_run(tmp_path / "following.duckdb", max_live=4, max_batch=64, follow_ups=True)
    assert following == wide  # episodes going on inside a running call change nothing stored
