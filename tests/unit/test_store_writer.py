from __future__ import annotations

import json

import duckdb
import pytest

from uxlocal.store.db import migrate
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
