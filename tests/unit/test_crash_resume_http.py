"""Issue 20: a single-tick openai-http run killed mid-tick keeps its finished generations.

The job (``benchmarks/_crash_job.py``, a UXBench judge run) runs as a child process against the
fake OpenAI server living in this process, so the server survives the SIGKILL. The http engine is
a rolling one: the tick is one engine call with ``max_batch`` requests in flight at a time, that
the server answers request by request.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from benchmarks import _crash_job as crash_job
from benchmarks._openai_fake import FakeOpenAI

LIMIT, MAX_BATCH = 32, 4
CHUNKS = LIMIT // MAX_BATCH


@pytest.fixture()
def server() -> Any:
    fake = FakeOpenAI(delay_s=0.15).start()
    yield fake
    fake.stop()


def _env(tmp_path: Path, server: FakeOpenAI, flush_every_s: float) -> dict[str, str]:
    (tmp_path / "srv.toml").write_text(
        f'name = "srv"\nbackend = "openai-http"\nendpoints = ["{server.url}"]\nserved_model = "fake-model"\n')
    return {**os.environ, "UXLOCAL_PRESETS": str(tmp_path), "UXLOCAL_FLUSH_EVERY_S": str(flush_every_s)}


def _args(db: Path) -> list[str]:
    return ["--db", str(db), "--model", "srv", "--limit", str(LIMIT), "--max-batch", str(MAX_BATCH)]


def test_http_rerun_after_sigkill_mid_tick_generates_only_unfinished_requests(
        server: FakeOpenAI, tmp_path: Path) -> None:
    env = _env(tmp_path, server, 0.0)
    reference = crash_job.run_job(_args(tmp_path / "ref.duckdb"), env=env, timeout_s=120)
    assert reference.returncode == 0, reference.stderr_tail
    assert [e["size"] for e in reference.of("chunk")] == [LIMIT]  # one rolling call for the tick
    # kill inside the call once half of the requests finished
    half = CHUNKS // 2

    def after_half(event: dict[str, Any], events: list[dict[str, Any]]) -> float | None:
        finished = sum(e["event"] == "done" for e in events)
        return 0.07 if event["event"] == "done" and finished == half * MAX_BATCH else None

    killed = crash_job.run_job(_args(tmp_path / "crash.duckdb"), env=env, timeout_s=120, kill_at=after_half)
    assert killed.returncode == -9, killed.stderr_tail
    finished = {e["hash"] for e in killed.of("done")}
    assert len(finished) >= half * MAX_BATCH
    # flush_every_s 0: every one was saved
    assert finished <= crash_job.stored_hashes(str(tmp_path / "crash.duckdb"))
    rerun = crash_job.run_job(_args(tmp_path / "crash.duckdb"), env=env, timeout_s=120)
    end = rerun.end
    assert end["engine_requests"] <= LIMIT - half * MAX_BATCH  # the unfinished, those in flight at most
    assert end["engine_requests"] == LIMIT - len(finished)
    # an episode ends, and is committed, the moment its answer is in: the rerun skips the finished ones
    assert end["cache_hits"] == 0 and end["requests"] == LIMIT - len(finished)
    after = crash_job.snapshot(str(tmp_path / "crash.duckdb"))
    before = crash_job.snapshot(str(tmp_path / "ref.duckdb"))
    assert after["duplicates"] == {"episodes": 0, "verdicts": 0, "generations": 0, "run_generations": 0}
    assert len(after["episodes"]) == LIMIT and after == before


def test_http_generations_finished_flush_every_s_before_a_kill_are_stored(
        tmp_path: Path) -> None:
    slow = FakeOpenAI(delay_s=0.4).start()
    try:
        env = _env(tmp_path, slow, 0.5)
        killed = crash_job.run_job(_args(tmp_path / "crash.duckdb"), env=env, timeout_s=120,
                                   kill_at=lambda e, _: 2.0 if e["event"] == "done" else None)
    finally:
        slow.stop()
    assert killed.returncode == -9 and killed.killed_at is not None, killed.stderr_tail
    stored = crash_job.stored_hashes(str(tmp_path / "crash.duckdb"))
    # 0.5 s of flush interval, plus a beat and a commit on a busy machine
    old = {e["hash"] for e in killed.of("done") if e["t"] <= killed.killed_at - 0.5 - 0.6}
    assert len(old) >= MAX_BATCH and old <= stored
    assert len(stored) < LIMIT  # the kill really came before the end
