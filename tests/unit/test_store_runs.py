"""The runs table's SQL (uxlocal/store/runs.py): create, reopen for resume, close."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import replace
from types import SimpleNamespace

import pytest

from uxlocal.store import runs
from uxlocal.store.db import connect
from uxlocal.store.runs import NewRun, begin_run, end_run, finished_episodes

NOW = dt.datetime(2026, 12, 4, 23, 0, tzinfo=dt.timezone.utc)
MODEL = SimpleNamespace(identity="m1", name="tiny", path="/models/tiny", backend="fake", dtype="none",
                        max_model_len=100, price_input_per_mtok=1.0, price_output_per_mtok=2.0)


def _run() -> NewRun:
    return NewRun(
        run_id="r1",
        suite="selftest",
        config={"b": 1, "a": 2},
        config_sha256="abc",
        versions={"x": "1"},
        git_commit=None,
        started_at=NOW,
        models={"judge": MODEL},  # type: ignore[dict-item]
        items=[{"item_id": "i1", "task": "t"}, {"item_id": "i2", "task": "t"}],
    )


def _episode(con: object, episode_id: str, status: str) -> None:
    con.execute("INSERT INTO episodes (run_id, episode_id, status) VALUES ('r1', ?, ?)",  # type: ignore[attr-defined]
                [episode_id, status])
    con.execute("INSERT INTO turns (run_id, episode_id, idx, role, content) "  # type: ignore[attr-defined]
                "VALUES ('r1', ?, 0, 'user', 'hi')", [episode_id])


def test_begin_run_records_the_run_its_models_and_items_once() -> None:
    con = connect(":memory:")
    assert begin_run(con, _run()) is False
    assert con.execute("SELECT suite, config, status FROM runs").fetchall() == [
        ("selftest", '{"a": 2, "b": 1}', "running")]
    assert con.execute("SELECT role, model_identity FROM run_models").fetchall() == [("judge", "m1")]
    assert con.execute("SELECT count(*) FROM items WHERE run_id = 'r1'").fetchone() == (2,)
    assert begin_run(con, _run()) is True  # the second start reopens: no second copy of the items
    assert con.execute("SELECT count(*) FROM items WHERE run_id = 'r1'").fetchone() == (2,)


def test_reopening_a_run_removes_rows_of_unfinished_episodes_only() -> None:
    con = connect(":memory:")
    begin_run(con, _run())
    _episode(con, "e-done", "done")
    _episode(con, "e-failed", "failed")
    con.execute(
        "INSERT INTO turns (run_id, episode_id, idx, role, content) VALUES ('r1', 'e-never', 0, 'user', 'x')"
    )
    assert begin_run(con, _run()) is True
    assert finished_episodes(con, "r1") == {"e-done"}
    assert con.execute("SELECT DISTINCT episode_id FROM turns").fetchall() == [("e-done",)]
    assert con.execute("SELECT episode_id FROM episodes").fetchall() == [("e-done",)]


def test_end_run_marks_failed_when_an_episode_failed() -> None:
    con = connect(":memory:")
    begin_run(con, _run())
    end_run(con, "r1", failed=True, ended_at=NOW, wall_s=2.5, engine_calls=3, engine_busy_s=1.5)
    assert con.execute("SELECT status, wall_s, engine_calls FROM runs").fetchall() == [("failed", 2.5, 3)]
    end_run(con, "r1", failed=False, ended_at=NOW, wall_s=1.0, engine_calls=1, engine_busy_s=0.5)
    assert con.execute("SELECT status FROM runs").fetchone() == ("done",)


def _items(
    n: int, *, stop_after: int | None = None, error: BaseException | None = None
) -> Iterator[dict[str, str]]:
    for i in range(n):
        if stop_after is not None and i == stop_after and error is not None:
            raise error
        yield {"item_id": f"i{i}", "task": "t"}


def test_begin_run_commits_items_in_batches_and_redoes_a_start_killed_midway(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runs, "INSERT_BATCH", 2)
    con = connect(":memory:")
    killed = replace(_run(), items=_items(7, stop_after=5, error=KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):  # killed during the items pass: earlier batches are committed
        begin_run(con, killed)
    assert con.execute("SELECT status FROM runs").fetchall() == [("starting",)]
    assert con.execute("SELECT count(*) FROM items").fetchone() == (4,)
    assert begin_run(con, replace(_run(), items=_items(7))) is False  # not a resume: the items pass again
    assert con.execute("SELECT status FROM runs").fetchall() == [("running",)]
    assert con.execute("SELECT item_id, count(*) FROM items GROUP BY 1 ORDER BY 1").fetchall() == [
        (f"i{i}", 1) for i in range(7)]
    assert con.execute("SELECT count(*) FROM run_models").fetchone() == (1,)
    assert begin_run(con, replace(_run(), items=_items(7))) is True  # started: the next start resumes


def test_begin_run_leaves_no_run_when_an_item_row_is_bad(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runs, "INSERT_BATCH", 2)
    con = connect(":memory:")
    with pytest.raises(ValueError, match="bad row"):
        begin_run(con, replace(_run(), items=_items(7, stop_after=5, error=ValueError("bad row"))))
    assert [
        con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("runs", "items", "run_models")
    ] == [0, 0, 0]
