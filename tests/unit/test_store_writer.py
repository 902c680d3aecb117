from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from uxlocal.store import writer as writer_module
from uxlocal.store.db import connect, migrate
from uxlocal.store.writer import StoreWriter


@pytest.fixture()
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(":memory:")
    migrate(con)
    return con


def test_json_columns_round_trip_python_values(con: duckdb.DuckDBPyConnection) -> None:
    writer = StoreWriter(con)
    writer.add("turns", {"run_id": "r", "episode_id": "e", "idx": 0, "role": "user", "content": "hi",
                         "meta": {"lang": "zh", "n": [1, 2]}})
    writer.flush()
    (meta,) = con.execute("SELECT meta FROM turns").fetchone()
    assert json.loads(meta) == {"lang": "zh", "n": [1, 2]}


def test_unknown_column_is_an_error(con: duckdb.DuckDBPyConnection) -> None:
    writer = StoreWriter(con)
    writer.add("turns", {"run_id": "r", "episode_id": "e", "idx": 0, "role": "user", "contnet": "typo"})
    with pytest.raises(KeyError, match="contnet"):
        writer.flush()
    assert con.execute("SELECT count(*) FROM turns").fetchone() == (0,)


def test_duplicate_generation_hash_is_ignored(con: duckdb.DuckDBPyConnection) -> None:
    writer = StoreWriter(con)
    for _ in range(2):
        writer.add("generations", {"request_hash": "h", "model_identity": "m", "text": "x", "valid": True})
        writer.flush()
    assert con.execute("SELECT count(*) FROM generations").fetchone() == (1,)


def test_flush_is_atomic_across_tables(con: duckdb.DuckDBPyConnection) -> None:
    writer = StoreWriter(con)
    writer.add("turns", {"run_id": "r", "episode_id": "e", "idx": 0, "role": "user", "content": "ok"})
    writer.add("episodes", {"run_id": "r", "episode_id": "e", "status": None})  # NOT NULL violation
    with pytest.raises(duckdb.Error):
        writer.flush()
    assert con.execute("SELECT count(*) FROM turns").fetchone() == (0,)


def test_the_writer_checkpoints_once_a_table_has_a_row_group_of_new_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Committed rows stay in the write-ahead log until a table has ``CHECKPOINT_ROWS`` new rows.

    DuckDB's own threshold is 1 GiB; once one table has had ``CHECKPOINT_ROWS`` new rows, the
    writer's checkpoint moves them into the file.
    """
    monkeypatch.setattr(writer_module, "CHECKPOINT_ROWS", 250)
    db = tmp_path / "store.duckdb"
    con = connect(db)
    assert con.execute("SELECT current_setting('checkpoint_threshold')").fetchone() == ("1.0 GiB",)
    wal = Path(f"{db}.wal")
    writer = StoreWriter(con)

    def turns(start: int, n: int) -> list[dict[str, object]]:
        return [{"run_id": "r", "episode_id": "e", "idx": i, "role": "user", "content": f"turn {i} " * 20}
                for i in range(start, start + n)]

    for start in (0, 100):  # 200 rows in two commits: below the threshold
        writer.add_many("turns", turns(start, 100))
        writer.flush()
    logged = wal.stat().st_size
    assert logged > 20_000  # the rows are in the log
    writer.add_many("turns", turns(200, 100))  # 300 >= 250: this commit checkpoints
    writer.flush()
    assert not wal.exists() or wal.stat().st_size < logged / 10
    writer.add_many("turns", turns(300, 100))  # the count starts again: back in the log
    writer.flush()
    assert wal.stat().st_size > 5_000
    writer.close()
    assert con.execute("SELECT count(*), count(DISTINCT idx) FROM turns").fetchone() == (400, 400)
    con.close()
