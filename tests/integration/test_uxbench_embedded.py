"""UXBench end to end on the embedded model through vLLM: every verdict parses; SQL == Python."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from uxlocal.config import RunConfig
from uxlocal.engine.pool import ModelPool
from uxlocal.runner import run_suite
from uxlocal.store.db import connect
from uxlocal.suites.uxbench import metrics

pytestmark = pytest.mark.integration


def _close(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and math.isclose(a, b, abs_tol=1e-9))


def test_all_three_tasks_on_the_sample_data(vllm_pool: ModelPool, tmp_path: Path) -> None:
    db = tmp_path / "ux.duckdb"
    run = RunConfig(
        suite="uxbench",
        suite_config={"max_tokens": 32, "max_history_turns": 4, "bootstrap": 200},
        limit=6,
        db=str(db),
        progress=False,
    )
    result = run_suite(run, pool=vllm_pool)
    assert result.stats.episodes_failed == 0 and result.stats.episodes_done == 18
    # batched: the scheduler made far fewer engine calls than requests
    assert result.stats.engine_calls < result.stats.requests / 3
    con = connect(db, read_only=True)
    rid = result.run_id
    # every judge output parses: label mode is constrained, replies fit the window
    t1 = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE valid) FROM verdicts WHERE run_id = ? AND name = 't1'", [rid]
    ).fetchone()
    assert t1 == (6, 6)
    judged = con.execute(
        "SELECT count(*) FROM verdicts v JOIN run_generations g ON g.request_hash = v.request_hash "
        "AND g.run_id = v.run_id WHERE v.run_id = ? AND v.name IN ('t2', 't3')",
        [rid],
    ).fetchone()[0]
    valid = con.execute("SELECT count(*) FROM verdicts WHERE run_id = ? AND name IN ('t2', 't3') AND valid",
                        [rid]).fetchone()[0]
    assert judged == valid  # every reply that reached the judge got a parseable verdict
    probs = con.execute("SELECT label_probs FROM verdicts WHERE run_id = ? AND label_probs IS NOT NULL",
                        [rid]).fetchall()
    assert probs and all(abs(sum(json.loads(p[0]).values()) - 1) < 0.01 for p in probs)
    # SQL views == Python recomputation from the verdict rows
    items = {r[0]: json.loads(r[1]) for r in con.execute("SELECT item_id, data FROM items WHERE run_id = ?",
                                                           [rid]).fetchall()}
    rows = [
        metrics.JudgeVerdict(i, items[i]["ground_truth"], (1 if lab == "good" else -1) if ok else None, p)
        for i, lab, ok, p in con.execute(
            "SELECT item_id, label, valid, score FROM verdicts WHERE run_id = ? AND name = 't1'", [rid]
        ).fetchall()
    ]
    acc = metrics.judge_accuracy(rows)
    sql = con.execute("SELECT good_acc, bad_acc, avg_acc, auroc, ece FROM uxbench_t1 WHERE run_id = ?",
                      [rid]).fetchone()
    expected = (
        acc.good_acc,
        acc.bad_acc,
        acc.avg_acc,
        metrics.auroc(rows),
        metrics.expected_calibration_error(rows),
    )
    assert all(_close(a, b) for a, b in zip(sql, expected, strict=True))
    for task, name in (("eval", "t2"), ("recovery", "t3")):
        replies = [
            metrics.ReplyVerdict(i, (1 if lab == "good" else -1) if ok else None)
            for i, lab, ok in con.execute(
                "SELECT item_id, label, valid FROM verdicts WHERE run_id = ? AND name = ?", [rid, name]
            ).fetchall()
        ]
        rate = metrics.good_rate(replies)
        got = con.execute("SELECT n, n_valid, rate FROM uxbench_rates WHERE run_id = ? AND task = ?",
                          [rid, task]).fetchone()
        assert got[:2] == (6, rate.n_valid) and _close(got[2], rate.rate)
    assert {t.title.split(":")[0] for t in result.tables} >= {"UXBench T1 UX Judge"}
