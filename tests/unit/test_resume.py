"""Crash safety: a run killed with SIGKILL and started again ends with the same rows and metrics."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb

SCRIPT = textwrap.dedent("""
    import hashlib, os, signal, sys
    from uxlocal.config import RunConfig
    from uxlocal.engine.fake import FakeEngine
    from uxlocal.engine.pool import ModelPool
    from uxlocal.grammar import Choice, JsonSchema
    from uxlocal.runner import run_suite

    kill_after = int(sys.argv[2])

    def answer(prepared):
        digest = int(hashlib.sha256(prepared.prompt.encode()).hexdigest()[:6], 16)
        constraint = prepared.request.constraint
        if isinstance(constraint, Choice):
            label = constraint.labels[digest % 2]
            return {"text": label, "label_probs": {label: 0.75, constraint.labels[1 - digest % 2]: 0.25}}
        if isinstance(constraint, JsonSchema):
            return '{"helpful": %s, "score": %d}' % ("true" if digest % 3 else "false", 1 + digest % 5)
        return "reply %d" % digest

    class Killer(FakeEngine):
        def generate(self, batch, **kwargs):
            if kill_after and self.calls >= kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
            return super().generate(batch, **kwargs)

    engine = Killer(answer, identity="fake-resume")
    pool = ModelPool.from_engines({"candidate": engine, "user": engine, "judge": engine})
    run = RunConfig(suite="selftest", db=sys.argv[1], progress=False, max_live=4)
    result = run_suite(run, pool=pool)
    print("engine_calls", engine.calls, "done", result.stats.episodes_done, "skipped", result.stats.episodes_skipped)
""")


def _run(tmp_path: Path, db: Path, kill_after: int) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "UXLOCAL_FLUSH_EVERY_S": "0"}
    return subprocess.run([sys.executable, str(script), str(db), str(kill_after)], capture_output=True, text=True,
                          env=env, timeout=120)


def _snapshot(db: Path) -> dict[str, object]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        q = lambda sql: con.execute(sql).fetchall()  # noqa: E731
        return {
            "episodes": q("SELECT count(*), count(DISTINCT episode_id) FROM episodes"),
            "turns": q("SELECT count(*), count(DISTINCT (episode_id, idx)) FROM turns"),
            "verdicts": q("SELECT count(*), count(DISTINCT (episode_id, name)) FROM verdicts"),
            "run_generations": q("SELECT count(*), count(DISTINCT (episode_id, seq)) FROM run_generations"),
            "generations": q("SELECT count(*), count(DISTINCT request_hash) FROM generations"),
            "items": q("SELECT count(*) FROM items"),
            "turn_text": q("SELECT episode_id, idx, content FROM turns ORDER BY 1, 2"),
            "verdict_rows": q("SELECT episode_id, name, label, score, valid FROM verdicts ORDER BY 1, 2"),
        }
    finally:
        con.close()


def test_sigkill_mid_run_then_rerun_leaves_no_missing_or_duplicate_rows(tmp_path: Path) -> None:
    reference_db, crashed_db = tmp_path / "ref.duckdb", tmp_path / "crash.duckdb"
    ok = _run(tmp_path, reference_db, 0)
    assert ok.returncode == 0, ok.stderr
    killed = _run(tmp_path, crashed_db, 5)
    assert killed.returncode == -9, killed.stderr  # really killed mid-run
    partial = _snapshot(crashed_db)
    assert 0 < partial["episodes"][0][0] < 12  # some episodes finished before the kill
    resumed = _run(tmp_path, crashed_db, 0)
    assert resumed.returncode == 0, resumed.stderr
    assert "skipped" in resumed.stdout and " skipped 0" not in resumed.stdout
    after, reference = _snapshot(crashed_db), _snapshot(reference_db)
    for key in ("episodes", "turns", "verdicts", "run_generations", "generations"):
        total, distinct = after[key][0]
        assert total == distinct, f"duplicate rows in {key}"
    assert after == reference


def test_rerun_of_finished_run_makes_no_engine_calls(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    assert _run(tmp_path, db, 0).returncode == 0
    again = _run(tmp_path, db, 0)
    assert "engine_calls 0 done 0 skipped 12" in again.stdout
