"""The same mixed run twice gives the same stores, row for row (issue 44), also under other DuckDB settings.

One mixed run: ``uxlocal judge`` on six bundled conversations, two tau2 episodes on the bundled
``homenet`` domain, and UXBench T1 on four bundled rows, all on the embedded model through vLLM
(one fresh engine per mixed run, as a command gets). It runs twice with the same settings, then
once more under another DuckDB memory cap and thread count: the verdicts (label probabilities to
the bit), the generations and the suites' views must come out equal. Before issue 44 the engine's
step batches depended on grammar-compile timing and the held-out confidences of ``judge train``
moved by ~1e-4 between runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from uxlocal import paths
from uxlocal.config import RunConfig
from uxlocal.engine.pool import ModelPool
from uxlocal.runner import run_suite
from uxlocal.store.db import connect
from uxlocal.store.offline import MEMORY_ENV, THREADS_ENV
from uxlocal.tau2.layout import SAMPLE_DATA

pytestmark = pytest.mark.integration

JUDGE = {"input": str(paths.data_dir() / "judge" / "conversations.jsonl"), "rubric": "ux-liked",
         "human_col": "thumb", "group_col": "topic", "bootstrap": 200}
TAU2 = {"tau2_data": str(SAMPLE_DATA), "domain": "homenet", "max_steps": 4, "agent_max_tokens": 48,
        "user_max_tokens": 32, "judge_max_tokens": 48}
UXBENCH = {"tasks": "judge", "max_tokens": 32, "bootstrap": 200}
SUITES = (("judge", JUDGE, 6), ("tau2", TAU2, 2), ("uxbench", UXBENCH, 4))

TIMING = {"latency_ms", "created_at", "started_at", "ended_at", "wall_s", "engine_busy_s", "timestamp",
          "start_time", "end_time", "duration"}
"""Columns and JSON keys (tau2 messages and simulations) that hold clock readings, not results."""

COMPARED = {
    "verdicts": "run_id, episode_id, name",
    "generations": "request_hash",
    "episodes": "run_id, episode_id",
    "turns": "run_id, episode_id, idx",
    "run_generations": "run_id, episode_id, seq, request_hash",
    "judge_label_agreement": "run_id, criterion, judge_role",
    "tau2_summary": "run_id, domain",
    "uxbench_t1": "run_id",
}
"""Table or view -> its key, the order its rows are compared in."""


def _mixed_run(model: Any, db: Path) -> list[Any]:
    pool = ModelPool.from_models({role: model for role in ("judge", "agent", "user", "candidate")})
    try:
        return [run_suite(RunConfig(suite=suite, suite_config=config, limit=limit, db=str(db),
                                    progress=False), pool=pool) for suite, config, limit in SUITES]
    finally:
        pool.close()


def _untimed(value: Any) -> Any:
    """Drop the ``TIMING`` keys of the JSON ``value`` holds (floats keep every digit: repr round-trips)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return json.dumps(_untimed(json.loads(value)), sort_keys=True)
        except ValueError:
            return value
    return value


def _dump(db: Path) -> dict[str, Any]:
    """Every compared table and view as text, in key order, without the clock readings."""
    con = connect(db, read_only=True)
    try:
        out: dict[str, Any] = {}
        for table, key in COMPARED.items():
            columns = [c[0] for c in con.execute(f"DESCRIBE {table}").fetchall() if c[0] not in TIMING]
            listed = ", ".join(f'"{c}"::VARCHAR' for c in columns)  # text: floats compared to the last digit
            rows = con.execute(f"SELECT {listed} FROM {table} ORDER BY {key}, {listed}").fetchall()
            out[table] = [tuple(_untimed(v) for v in row) for row in rows]
        out["label_probs"] = con.execute("SELECT count(*) FROM generations "
                                         "WHERE label_probs IS NOT NULL").fetchone()[0]
        return out
    finally:
        con.close()


@pytest.fixture(scope="module")
def runs(embedded_model: Any, tmp_path_factory: pytest.TempPathFactory) -> list[tuple[list[Any], Any]]:
    try:
        import vllm  # noqa: F401
    except Exception as exc:  # pragma: no cover
        pytest.skip(f"vLLM not importable: {exc}")
    folder = tmp_path_factory.mktemp("determinism")
    done = []
    other = {MEMORY_ENV: "64MB", THREADS_ENV: "2"}
    for name, env in (("first", {}), ("second", {}), ("other-duckdb", other)):
        with pytest.MonkeyPatch.context() as patch:
            for key in (MEMORY_ENV, THREADS_ENV):
                patch.delenv(key, raising=False)
            for key, value in env.items():
                patch.setenv(key, value)
            results = _mixed_run(embedded_model, folder / f"{name}.duckdb")
            done.append((results, _dump(folder / f"{name}.duckdb")))
    return done


def test_mixed_run_repeats_row_for_row(runs: list[tuple[list[Any], dict[str, Any]]]) -> None:
    (first, dump), (second, again) = runs[0], runs[1]
    assert [r.stats.episodes_done for r in first] == [6, 2, 4]
    assert all(r.stats.episodes_failed == 0 for r in first)
    assert dump["verdicts"] and dump["generations"] and dump["judge_label_agreement"] and dump["uxbench_t1"]
    assert dump["label_probs"] >= 10  # the judge and T1 verdicts' label probabilities were recorded
    for table in COMPARED:
        assert again[table] == dump[table], f"{table} differs between two identical runs"
    assert again["label_probs"] == dump["label_probs"]
    # the same engine calls: batches are a function of the requests, not of timing
    assert [r.stats.engine_calls for r in second] == [r.stats.engine_calls for r in first]


def test_mixed_run_repeats_under_another_duckdb_cap_and_thread_count(
        runs: list[tuple[list[Any], dict[str, Any]]]) -> None:
    (first, dump), (other, again) = runs[0], runs[2]
    for table in COMPARED:
        assert again[table] == dump[table], f"{table} differs under {MEMORY_ENV}=64MB {THREADS_ENV}=2"
    assert [r.stats.engine_calls for r in other] == [r.stats.engine_calls for r in first]
