"""``uxlocal run userproxy`` with the embedded model in every seat: two proxies (two temperatures).

SmolLM2-135M cannot play a tau2 user faithfully, nor grade one; this checks the machinery on a real
engine: both proxies play the same two mock tasks, each trajectory gets one judge verdict per
criterion, costs are attributed per proxy role, and the UFS views have a row per proxy. Budgets are
tiny (6 steps, short turns) so the run takes well under a minute on 2 CPU cores.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from uxlocal.config import RunConfig
from uxlocal.engine.pool import ModelPool
from uxlocal.runner import run_suite
from uxlocal.store.db import connect

pytestmark = pytest.mark.integration

TAU2_DATA = Path(os.environ.get("UXLOCAL_TAU2_DATA")
                 or Path(__file__).resolve().parents[2].parent / "shared" / "data" / "tau2")
PROXIES = ("embedded@temp=0", "embedded@temp=0.7")
SPAN = "Reveal information little by little."


def test_two_temperatures_of_the_embedded_model_are_two_graded_proxies(
    embedded_model: Any, vllm_pool: ModelPool, tmp_path: Path
) -> None:
    if not (TAU2_DATA / "domains").is_dir():
        pytest.skip(f"tau2 data not found at {TAU2_DATA}")
    pool = ModelPool()
    pool.slots = vllm_pool.slots  # the session's engine, bound to this suite's roles
    pool.roles = {
        role: embedded_model.identity for role in ("agent", "judge", *(f"user:{p}" for p in PROXIES))
    }
    criteria = tmp_path / "criteria.jsonl"
    criteria.write_text(
        "".join(
            json.dumps(
                {
                    "domain": "mock",
                    "task_id": task_id,
                    "criterion_id": "c1",
                    "family": "premature_disclosure",
                    "mode": "volunteers_unasked_info",
                    "text": "The user gives details only when the agent asks for them.",
                    "grounding_span": SPAN,
                    "applies_when": "always",
                    "evidence_hint": "user turns",
                }
            )
            + "\n"
            for task_id in ("create_task_1", "create_task_1_with_env_assertions")
        )
    )
    config = {"tau2_data": str(TAU2_DATA), "domains": "mock", "proxies": ",".join(PROXIES),
              "criteria_file": str(criteria), "max_steps": 6, "agent_max_tokens": 48, "user_max_tokens": 32,
              "judge_max_tokens": 48, "grader_max_tokens": 64}
    run = RunConfig(
        suite="userproxy", suite_config=config, db=str(tmp_path / "s.duckdb"), limit=2, progress=False
    )
    result = run_suite(run, pool=pool)
    assert result.stats.episodes_done == 4 and result.stats.episodes_failed == 0

    con = connect(tmp_path / "s.duckdb")
    proxies = con.execute(
        "SELECT proxy, count(*) FROM ufs_trajectories WHERE run_id = ? GROUP BY ALL ORDER BY 1",
        [result.run_id],
    ).fetchall()
    assert proxies == [(PROXIES[0], 2), (PROXIES[1], 2)]
    verdicts = con.execute("SELECT count(*) FROM ufs_verdicts WHERE run_id = ?", [result.run_id]).fetchone()
    assert verdicts == (4,)  # one criterion per task, every trajectory graded
    roles = {r[0] for r in con.execute("SELECT DISTINCT role FROM episode_cost WHERE run_id = ?",
                                       [result.run_id]).fetchall()}
    assert {f"user:{p}" for p in PROXIES} <= roles
    summary = con.execute("SELECT proxy FROM ufs_summary ORDER BY proxy").fetchall()
    assert summary == [(PROXIES[0],), (PROXIES[1],)]
    con.close()


def test_all_four_domains_each_get_a_ufs_row_with_template_criteria(
    embedded_model: Any, tmp_path: Path
) -> None:
    """``uxlocal run userproxy --domains all --limit 1 --criteria-template`` (issue 16).

    Telecom, airline, retail and banking_knowledge each end with a row in ``ufs_domain``, on the
    model's 8k window.
    """
    import hashlib

    if not (TAU2_DATA / "domains").is_dir():
        pytest.skip(f"tau2 data not found at {TAU2_DATA}")
    identity = hashlib.sha256(f"{embedded_model.identity}:max_model_len=8192".encode()).hexdigest()
    long = embedded_model.model_copy(update={"max_model_len": 8192, "identity": identity})
    pool = ModelPool.from_models({role: long for role in ("agent", "judge", "user:embedded")})
    try:
        config = {
            "tau2_data": str(TAU2_DATA),
            "domains": "all",
            "proxies": "embedded",
            "criteria_template": True,
            "max_steps": 4,
            "agent_max_tokens": 48,
            "user_max_tokens": 32,
            "judge_max_tokens": 48,
            "grader_max_tokens": 64,
        }
        run = RunConfig(suite="userproxy", suite_config=config, db=str(tmp_path / "s.duckdb"), limit=1,
                        progress=False)
        result = run_suite(run, pool=pool)
    finally:
        pool.close()
    assert result.stats.episodes_done == 4 and result.stats.episodes_failed == 0
    con = connect(tmp_path / "s.duckdb")
    rows = con.execute("SELECT domain, episodes FROM ufs_domain ORDER BY domain").fetchall()
    assert rows == [("airline", 1), ("banking_knowledge", 1), ("retail", 1), ("telecom", 1)]
    verdicts = con.execute("SELECT domain, count(*) FROM ufs_verdicts v JOIN ufs_trajectories t "
                           "USING (run_id, episode_id) GROUP BY ALL").fetchall()
    assert len(verdicts) == 4 and all(n >= 1 for _, n in verdicts)  # every trajectory was graded
