"""Sharded runs and ``uxlocal merge``: shards of a run merged give the unsharded run's store and metrics."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from uxlocal.config import RunConfig
from uxlocal.engine.base import PreparedRequest
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.errors import InputError, UxlocalError
from uxlocal.grammar import Choice, JsonSchema
from uxlocal.merge import combine_runs, merge_stores, shards_complete
from uxlocal.runner import run_suite


def _answer(salt: str = "") -> Any:
    def answer(prepared: PreparedRequest) -> Any:
        digest = int(hashlib.sha256((salt + prepared.prompt).encode()).hexdigest()[:6], 16)
        constraint = prepared.request.constraint
        if isinstance(constraint, Choice):
            label = constraint.labels[digest % 2]
            return {"text": label, "label_probs": {label: 0.75, constraint.labels[1 - digest % 2]: 0.25}}
        if isinstance(constraint, JsonSchema):
            return '{"helpful": %s, "score": %d}' % ("true" if digest % 3 else "false", 1 + digest % 5)
        return f"reply {digest}"
    return answer


def _run(db: Path, shard: str | None = None, salt: str = "") -> Any:
    engine = FakeEngine(_answer(salt), identity="fake-merge")
    pool = ModelPool.from_engines({"candidate": engine, "user": engine, "judge": engine})
    return run_suite(RunConfig(suite="selftest", db=str(db), progress=False, shard=shard), pool=pool)


def _rows(db: Path, sql: str) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return sorted(con.execute(sql).fetchall(), key=repr)
    finally:
        con.close()


def _metrics(db: Path) -> dict[str, Any]:
    from uxlocal.store.db import connect

    con = connect(db, read_only=True)
    try:
        q = lambda sql: sorted(con.execute(sql).fetchall(), key=repr)  # noqa: E731
        return {
            "selftest_summary": q("SELECT * FROM selftest_summary"),
            "episodes": q(
                "SELECT run_id, episode_id, item_id, status, termination, reward, n_turns FROM episodes"
            ),
            "verdicts": q(
                "SELECT run_id, episode_id, name, label, score, valid, label_probs::VARCHAR FROM verdicts"
            ),
            "turns": q("SELECT run_id, episode_id, idx, role, content, request_hash FROM turns"),
            "generations": q("SELECT request_hash, text, valid FROM generations"),
            "usage": q(
                "SELECT run_id, status, episodes_done, generations, prompt_tokens, completion_tokens, "
                "invalid_generations FROM run_summary"
            ),
            "items": q("SELECT run_id, item_id, task FROM items"),
        }
    finally:
        con.close()


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One unsharded run and its two shards, made once (tests only read them)."""
    folder = tmp_path_factory.mktemp("shards")
    paths = {"full": folder / "full.duckdb", "s0": folder / "s0.duckdb", "s1": folder / "s1.duckdb"}
    _run(paths["full"])
    _run(paths["s0"], "0/2")
    _run(paths["s1"], "1/2")
    return paths


def test_shards_split_items_disjointly_and_merge_equals_unsharded_run(
    shards: dict[str, Path], tmp_path: Path
) -> None:
    s0 = {r[0] for r in _rows(shards["s0"], "SELECT episode_id FROM episodes")}
    s1 = {r[0] for r in _rows(shards["s1"], "SELECT episode_id FROM episodes")}
    assert s0 and s1 and not s0 & s1 and len(s0 | s1) == 12
    merged = tmp_path / "merged.duckdb"
    report = merge_stores(merged, [shards["s0"], shards["s1"]])
    assert report.episodes == 12 and report.identical_duplicates == 0 and report.conflicting_duplicates == 0
    assert [(r.status, r.complete, r.episodes_done) for r in report.runs] == [("done", True, 12)]
    assert _metrics(merged) == _metrics(shards["full"])
    config = _rows(merged, "SELECT config->>'$.shard', engine_calls FROM runs")
    assert config[0][0] is None and config[0][1] > 0


def test_merged_store_rereports_without_engine_calls(shards: dict[str, Path], tmp_path: Path) -> None:
    merged = tmp_path / "merged.duckdb"
    merge_stores(merged, [shards["s0"], shards["s1"]])
    again = _run(merged)
    assert again.resumed and again.stats.episodes_skipped == 12 and again.stats.engine_calls == 0


def test_merge_of_some_shards_is_partial_and_the_unsharded_command_completes_it(shards: dict[str, Path],
                                                                                 tmp_path: Path) -> None:
    merged = tmp_path / "partial.duckdb"
    report = merge_stores(merged, [shards["s0"]])
    assert [(r.status, r.complete, r.shards) for r in report.runs] == [("running", False, ["0/2"])]
    assert any("only shard(s) 0/2" in note for note in report.notes)
    done_before = report.runs[0].episodes_done
    resumed = _run(merged)
    assert resumed.resumed and resumed.stats.episodes_skipped == done_before
    assert resumed.stats.episodes_done == 12 - done_before
    assert _metrics(merged)["selftest_summary"] == _metrics(shards["full"])["selftest_summary"]


def test_identical_duplicate_episodes_are_dropped(shards: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "s0-again.duckdb"
    shutil.copy(shards["s0"], copy)
    merged = tmp_path / "merged.duckdb"
    report = merge_stores(merged, [shards["s0"], copy, shards["full"]])
    in_s0 = len(_rows(shards["s0"], "SELECT episode_id FROM episodes"))
    # every episode of shard 0 is in three inputs, shard 1's only in the full run
    assert report.identical_duplicates == in_s0 and report.conflicting_duplicates == 0
    assert _metrics(merged) == _metrics(shards["full"])


def test_conflicting_duplicates_stop_the_merge_and_leave_no_output(
    shards: dict[str, Path], tmp_path: Path
) -> None:
    other = tmp_path / "s0-other.duckdb"
    _run(other, "0/2", salt="different engine")
    merged = tmp_path / "merged.duckdb"
    with pytest.raises(UxlocalError, match="different results.*--on-conflict first"):
        merge_stores(merged, [shards["s0"], other, shards["s1"]])
    assert not merged.exists()
    report = merge_stores(merged, [shards["s0"], other, shards["s1"]], keep="first")
    assert report.conflicting_duplicates > 0 and report.runs[0].status == "done"
    assert _metrics(merged)["episodes"] == _metrics(shards["full"])["episodes"]


def test_merge_refuses_an_existing_output_and_missing_inputs(shards: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(InputError, match="already exists"):
        merge_stores(shards["full"], [shards["s0"]])
    with pytest.raises(InputError, match="no such store"):
        merge_stores(tmp_path / "m.duckdb", [tmp_path / "missing.duckdb"])
    with pytest.raises(InputError, match="given twice"):
        merge_stores(tmp_path / "m.duckdb", [shards["s0"], shards["s0"]])


def test_merge_command_prints_runs_and_exits_zero(shards: dict[str, Path], tmp_path: Path) -> None:
    from uxlocal.cli import cli

    out = tmp_path / "cli.duckdb"
    result = CliRunner().invoke(cli, ["merge", str(out), str(shards["s0"]), str(shards["s1"])])
    assert result.exit_code == 0, result.output
    assert "selftest-" in result.output and "12 episodes" in result.output
    again = CliRunner().invoke(cli, ["merge", str(out), str(shards["s0"])])
    assert again.exit_code == 2 and "already exists" in again.output


@pytest.mark.parametrize("shards_seen, complete", [
    (["0/2", "1/2"], True),          # every shard of N
    (["0/3", "2/3"], False),         # 1/3 missing
    (["0/2", None], True),           # an unsharded copy covers everything
    (["0/2", "1/3"], False),         # shards of different N do not add up
])
def test_shards_complete(shards_seen: list[str | None], complete: bool) -> None:
    assert shards_complete(shards_seen) is complete


def test_combine_runs_sums_counters_and_refuses_different_configs() -> None:
    import datetime as dt

    t0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    base = {"run_id": "r", "suite": "s", "config_sha256": "x", "status": "done", "started_at": t0,
            "ended_at": t0, "wall_s": 1.0, "engine_calls": 2, "engine_busy_s": 0.5}
    rows = [{**base, "config": '{"shard": "0/2"}'},
            {**base, "config": '{"shard": "1/2"}', "started_at": t0 - dt.timedelta(hours=1), "wall_s": 2.0}]
    merged = combine_runs(rows)
    assert merged["status"] == "done" and merged["wall_s"] == 3.0 and merged["engine_calls"] == 4
    assert merged["started_at"] == t0 - dt.timedelta(hours=1) and '"shard": null' in merged["config"]
    with pytest.raises(UxlocalError, match="different configurations"):
        combine_runs([rows[0], {**rows[1], "config_sha256": "y"}])
