"""Issue 32: a long judge job forgets committed results without changing a single stored row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.unit.judge.conftest import chat, write_jsonl
from uxlocal import rollout

ROWS = ("SELECT v.item_id, v.name, v.label, v.score, v.label_probs, v.value, g.prompt, g.text "
        "FROM verdicts v JOIN generations g ON g.request_hash = v.request_hash "
        "ORDER BY v.item_id")


def _input(tmp_path: Path) -> Path:
    # c10..c19 repeat the conversations of c0..c9: the same prompts, answered from the cache
    rows = [{"id": f"c{i}", "conversation": chat(i % 10), "human": "liked" if i % 2 else "disliked"} for i in range(20)]
    return write_jsonl(tmp_path / "in.jsonl", rows)


def test_scheduler_forgetting_committed_results_keeps_every_row_and_cache_hit(
        tmp_path: Path, run_judge: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    options = {"input": str(_input(tmp_path)), "rubric": "ux-liked", "human_col": "human"}
    kept, kept_engine = run_judge(options, db=tmp_path / "kept.duckdb", max_live=3, max_batch=3)
    monkeypatch.setattr(rollout, "MEMORY_RESULTS", 4)
    forgot, forgot_engine = run_judge(options, db=tmp_path / "forgot.duckdb", max_live=3, max_batch=3)
    with duckdb.connect(str(tmp_path / "kept.duckdb"), read_only=True) as con:
        before = con.execute(ROWS).fetchall()
    with duckdb.connect(str(tmp_path / "forgot.duckdb"), read_only=True) as con:
        after = con.execute(ROWS).fetchall()
        generations = con.execute("SELECT count(*) FROM generations").fetchone()[0]
    assert len(before) == 20 and after == before
    assert len(kept_engine.requests) == len(forgot_engine.requests) == 10 and generations == 10
    assert kept.stats.cache_hits == forgot.stats.cache_hits == 10
