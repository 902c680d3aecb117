"""Issue 32: a long judge job forgets committed results without changing a stored row, and a killed
streamed run resumes with exactly one verdict per conversation."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.unit.judge.conftest import chat, write_jsonl
from uxlocal.store import generation_cache

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
    monkeypatch.setattr(generation_cache, "MEMORY_RESULTS", 4)
    forgot, forgot_engine = run_judge(options, db=tmp_path / "forgot.duckdb", max_live=3, max_batch=3)
    with duckdb.connect(str(tmp_path / "kept.duckdb"), read_only=True) as con:
        before = con.execute(ROWS).fetchall()
    with duckdb.connect(str(tmp_path / "forgot.duckdb"), read_only=True) as con:
        after = con.execute(ROWS).fetchall()
        generations = con.execute("SELECT count(*) FROM generations").fetchone()[0]
    assert len(before) == 20 and after == before
    assert len(kept_engine.requests) == len(forgot_engine.requests) == 10 and generations == 10
    assert kept.stats.cache_hits == forgot.stats.cache_hits == 10


KILLED_JOB = textwrap.dedent("""
    import os, signal, sys
    from tests.unit.judge.conftest import label_judge
    from uxlocal.config import RunConfig
    from uxlocal.engine.fake import FakeEngine
    from uxlocal.engine.pool import ModelPool
    from uxlocal.runner import run_suite
    from uxlocal.suites.judge import inputs

    inputs.CHUNK_ROWS = 16  # a streamed input: 200 rows in 13 chunks
    kill_after = int(sys.argv[3])

    class Killer(FakeEngine):
        def generate(self, batch, **kwargs):
            if kill_after and self.calls >= kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
            return super().generate(batch, **kwargs)

    engine = Killer(label_judge)
    options = {"input": sys.argv[2], "rubric": "ux-liked", "human_col": "human", "bootstrap": 20}
    run = RunConfig(suite="judge", suite_config=options, db=sys.argv[1], progress=False, max_live=8, max_batch=8)
    result = run_suite(run, pool=ModelPool.from_engines({"judge": engine}))
    print("requests", len(engine.requests), "skipped", result.stats.episodes_skipped)
""")


def _job(tmp_path: Path, db: Path, source: Path, kill_after: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "UXLOCAL_FLUSH_EVERY_S": "0", "UXLOCAL_HOME": str(tmp_path / "home")}
    return subprocess.run([sys.executable, "-c", KILLED_JOB, str(db), str(source), str(kill_after)],
                          capture_output=True, text=True, env=env, timeout=180, cwd=Path(__file__).parents[3])


def test_killed_streamed_judge_run_resumes_without_rejudging_and_ends_with_one_verdict_each(tmp_path: Path) -> None:
    rows = [{"id": f"c{i}", "conversation": chat(i), "human": "liked" if i % 2 else "disliked"} for i in range(200)]
    source = write_jsonl(tmp_path / "in.jsonl", rows)
    db = tmp_path / "crash.duckdb"
    killed = _job(tmp_path, db, source, kill_after=9)
    assert killed.returncode == -9, killed.stderr[-2000:]
    with duckdb.connect(str(db), read_only=True) as con:
        stored = con.execute("SELECT count(*) FROM generations").fetchone()[0]
        done = con.execute("SELECT count(*) FROM episodes WHERE status = 'done'").fetchone()[0]
    assert 0 < done < 200 and stored >= done
    rerun = _job(tmp_path, db, source, kill_after=0)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    requests, skipped = (int(x) for x in rerun.stdout.split()[1::2])
    assert skipped == done and requests == 200 - stored  # what was stored is neither rerun nor re-asked
    with duckdb.connect(str(db), read_only=True) as con:
        verdicts = con.execute("SELECT count(*), count(DISTINCT item_id) FROM verdicts").fetchone()
        episodes = con.execute("SELECT count(*), count(DISTINCT episode_id) FROM episodes").fetchone()
        items = con.execute("SELECT count(*), count(DISTINCT item_id) FROM items").fetchone()
    assert verdicts == (200, 200) and episodes == (200, 200) and items == (200, 200)


def test_label_statistics_on_coded_columns_equal_those_on_the_label_strings() -> None:
    import numpy as np

    from uxlocal import stats
    from uxlocal.suites.judge import report

    rng = np.random.default_rng(3)
    names = ["liked", "disliked", "unclear"]
    rows = [{"human_label": names[int(rng.integers(0, 2))], "label": names[int(rng.integers(0, 3))],
             "score": float(rng.random()), "confidence": float(rng.random()), "positive": "liked"}
            for _ in range(300)]
    idx = rng.integers(0, 300, size=300)
    human, label = [rows[i]["human_label"] for i in idx], [rows[i]["label"] for i in idx]
    expected = {"accuracy": stats.accuracy(human, label), "kappa": stats.cohen_kappa(human, label),
                "macro_f1": stats.macro_f1(human, label),
                "auroc": stats.auroc([h == "liked" for h in human], [rows[i]["score"] for i in idx]),
                "ece": stats.ece([rows[i]["confidence"] for i in idx], [a == b for a, b in zip(label, human)])}
    got = {name: f(idx) for name, f in report.agreement_statistics("label", rows).items()}
    assert all(v is not None for v in expected.values()) and got == pytest.approx(expected)
