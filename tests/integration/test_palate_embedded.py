"""PALATE end to end on the embedded model through vLLM: 2 candidates x 2 users x 3 panel cards.

Asserts structure (every axis, the matrix, the agreement and realism tables; verdicts parse),
never the embedded model's opinions, which are near chance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from uxlocal.config import RunConfig
from uxlocal.engine.pool import ModelPool
from uxlocal.runner import run_suite
from uxlocal.store.db import connect

pytestmark = pytest.mark.integration

SMALL = {
    "candidates": "small=embedded,other=embedded",
    "users": "u1,u3",
    "panel_cards": 3,
    "max_turns": 1,
    "candidate_max_tokens": 32,
    "user_max_tokens": 24,
    "induction_examples": 4,
    "rubric_max_tokens": 160,
    "heldout_sessions": 1,
    "realism_turns": 1,
    "judge_context_turns": 3,
    "judge_turn_chars": 240,
    "example_turns": 2,
    "agreement_without_reaction": False,
}
"""Small caps so the run takes about two minutes on 2 CPU cores; u3 is a Chinese user."""


def _pool(vllm_pool: ModelPool) -> ModelPool:
    """Both candidates, the simulator and the judge on the one embedded engine (one batch per tick)."""
    pool = ModelPool()
    pool.slots = vllm_pool.slots
    ident = vllm_pool.roles["judge"]
    pool.roles = {"candidate:small": ident, "candidate:other": ident, "user": ident, "judge": ident}
    return pool


def test_palate_two_candidates_two_users_three_cards_produce_every_table(
    vllm_pool: ModelPool, tmp_path: Path
) -> None:
    run = RunConfig(suite="palate", suite_config=SMALL, db=str(tmp_path / "p.duckdb"), progress=False)
    result = run_suite(run, pool=_pool(vllm_pool))
    assert result.stats.episodes_failed == 0
    assert result.stats.episodes_done == 2 + 12 + 2 + 2  # induce, trajectories, agreement, realism
    titles = " | ".join(t.title for t in result.tables)
    for needle in ("axis 1", "axis 2", "axis 3", "rubric agreement", "realism"):
        assert needle in titles, titles
    matrix = next(t for t in result.tables if "axis 3" in t.title)
    assert matrix.columns == ["user", "other", "small"] and [r[0] for r in matrix.rows] == ["u1", "u3"]
    con = connect(result.db, read_only=True)
    _assert_verdicts_parse(con)
    _assert_sessions_are_well_formed(con)
    agreement = con.execute("SELECT scorer, user_id, pairs FROM palate_agreement ORDER BY ALL").fetchall()
    assert {(s, u) for s, u, _ in agreement} == {
        (s, u) for s in ("general", "personal") for u in ("u1", "u3")
    }
    assert all(pairs > 0 for _, _, pairs in agreement)


def _assert_verdicts_parse(con: Any) -> None:
    rows = con.execute(
        "SELECT track, count(*), count(*) FILTER (WHERE valid) FROM palate_verdicts "
        "WHERE track IN ('general_turn', 'personal_turn', 'session', 'agree_general', 'agree_personal',"
        " 'realism') GROUP BY ALL"
    ).fetchall()
    for track, total, valid in rows:
        assert valid >= 1 and total >= 1, (track, total, valid)
    # JSON-schema constrained: a verdict fails to parse only when its token budget cut it off
    uncut = con.execute(
        "SELECT v.name, g.finish_reason, g.error FROM verdicts v JOIN generations g USING (request_hash) "
        "JOIN runs r ON r.run_id = v.run_id AND r.suite = 'palate' "
        "WHERE NOT v.valid AND g.finish_reason NOT IN ('length', 'context_window')"
    ).fetchall()
    assert uncut == [], uncut
    scores = con.execute(
        "SELECT min(score), max(score) FROM palate_verdicts WHERE score IS NOT NULL AND track <> 'realism'"
    ).fetchone()
    assert 1.0 <= scores[0] <= scores[1] <= 5.0


def _assert_sessions_are_well_formed(con: Any) -> None:
    rows = con.execute("SELECT stop_reason, candidate_turns FROM palate_trajectories").fetchall()
    assert len(rows) == 12
    assert {r[0] for r in rows} <= {
        "user_quit",
        "turn_cap",
        "empty_user_turn",
        "empty_reply",
        "context_window",
    }
    assert all(r[1] <= 1 for r in rows)  # the turn cap holds
    greetings = con.execute(
        "SELECT count(*) FROM turns t JOIN palate_trajectories p USING (run_id, episode_id) "
        "WHERE t.idx = 0 AND t.role = 'assistant' AND t.meta->>'$.source' = 'greeting'"
    ).fetchone()[0]
    assert greetings == 12  # the card's greeting opens every session
