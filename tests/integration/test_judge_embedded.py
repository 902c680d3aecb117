"""``uxlocal judge`` on the embedded model through vLLM.

The 40 bundled conversations with label and likert rubrics (2 criteria each) and the bundled pairs;
every verdict parses, views == Python, a rerun makes no engine call. The model is near chance:
numbers are checked for range, not value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from uxlocal import paths
from uxlocal.config import RunConfig
from uxlocal.engine.pool import ModelPool
from uxlocal.reportkit.tables import render_tables
from uxlocal.runner import run_suite
from uxlocal.store.db import connect
from uxlocal.suites.judge.report import LABEL_STATS, SCORE_STATS, agreement_statistics

pytestmark = pytest.mark.integration
DATA = paths.data_dir() / "judge"


def _run(pool: ModelPool, db: Path, options: dict[str, Any]) -> Any:
    run = RunConfig(suite="judge", suite_config={"bootstrap": 200, **options}, db=str(db), progress=False)
    result = run_suite(run, pool=pool)
    render_tables(result.tables)
    assert result.stats.episodes_failed == 0
    return result


def _conversations(rubric: str, human_col: str, **extra: Any) -> dict[str, Any]:
    """Options for a judge run over the bundled conversations with an example rubric, grouped by topic."""
    return {"input": str(DATA / "conversations.jsonl"), "rubric": str(DATA / "examples" / rubric),
            "human_col": human_col, "group_col": "topic", **extra}


def _check_views(con: Any, run_id: str, kind: str, view: str, names: tuple[str, ...]) -> None:
    for (criterion,) in con.execute(
        f"SELECT DISTINCT criterion FROM {view} WHERE run_id = ?", [run_id]
    ).fetchall():
        cur = con.execute(f"SELECT * FROM {view} WHERE run_id = ? AND criterion = ?", [run_id, criterion])
        point = dict(zip([d[0] for d in cur.description], cur.fetchone(), strict=True))
        cur = con.execute("SELECT * FROM judge_scored WHERE run_id = ? AND criterion = ? ORDER BY item_id",
                          [run_id, criterion])
        rows = [dict(zip([d[0] for d in cur.description], r, strict=True)) for r in cur.fetchall()]
        functions = agreement_statistics(kind, rows)
        for name in names:
            expected = functions[name](np.arange(len(rows)))
            assert (point[name] is None) == (expected is None), name
            if expected is not None:
                assert point[name] == pytest.approx(expected, abs=1e-9), name


def test_judge_bundled_conversations_label_likert_and_pairs(vllm_pool: ModelPool, tmp_path: Path) -> None:
    db = tmp_path / "judge.duckdb"
    label = _run(vllm_pool, db, _conversations("liked-two-criteria.toml", "thumb"))
    likert = _run(vllm_pool, db, _conversations("helpfulness-two-criteria.toml", "helpfulness"))
    pairs = _run(vllm_pool, db, {"input": str(DATA / "pairs.jsonl"), "rubric": "preference",
                                 "human_col": "preference"})
    con = connect(db, read_only=True)
    for result, expected in ((label, 80), (likert, 80), (pairs, 10)):
        n, n_valid = con.execute(
            "SELECT count(*), count(*) FILTER (WHERE valid) FROM judge_verdicts WHERE run_id = ?",
            [result.run_id],
        ).fetchone()
        # constrained: zero parse failures, nothing over the window
        assert (n, n_valid) == (expected, expected)
    probs = con.execute("SELECT label_probs FROM judge_verdicts WHERE run_id IN (?, ?)",
                        [label.run_id, likert.run_id]).fetchall()
    assert all(abs(sum(json.loads(p[0]).values()) - 1) < 0.02 for p in probs)
    scores = [
        r[0]
        for r in con.execute("SELECT score FROM judge_verdicts WHERE run_id = ?", [likert.run_id]).fetchall()
    ]
    assert all(1.0 <= s <= 5.0 for s in scores)
    _check_views(con, label.run_id, "label", "judge_label_agreement", LABEL_STATS)
    _check_views(con, likert.run_id, "likert", "judge_score_agreement", SCORE_STATS)
    orders = con.execute("SELECT count(*) FROM verdicts WHERE run_id = ? AND name LIKE 'judge:%:%'",
                         [pairs.run_id]).fetchone()[0]
    assert orders == 20  # both orders of every pair are stored
    flip = con.execute(
        "SELECT flip_rate FROM judge_pairwise_agreement WHERE run_id = ?", [pairs.run_id]
    ).fetchone()[0]
    assert 0.0 <= flip <= 1.0
    titles = [t.title for t in label.tables]
    assert "Judge agreement with humans (label)" in titles
    con.close()
    calls = vllm_pool.engine_calls()
    rerun = _run(vllm_pool, db, _conversations("liked-two-criteria.toml", "thumb", bootstrap=201))
    assert vllm_pool.engine_calls() == calls and rerun.stats.cache_hits == 80
