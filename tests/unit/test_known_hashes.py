"""One generation row per request hash without a key index (migration 003): the writer's
``KnownHashes`` filter, its duplicate check, and a cache that only asks the store about hashes it
may hold."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import duckdb
import pytest

from uxlocal.rollout.batcher import decode_generation
from uxlocal.store.generation_cache import GenerationCache
from uxlocal.store import known_hashes
from uxlocal.store.db import connect
from uxlocal.store.known_hashes import KnownHashes, prefix
from uxlocal.store.writer import StoreWriter


def _hash(i: int) -> str:
    return hashlib.sha256(f"request {i}".encode()).hexdigest()


def _generation(request_hash: str, text: str = "x") -> dict[str, Any]:
    return {"request_hash": request_hash, "model_identity": "m", "text": text, "valid": True}


def _stored(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    return con.execute("SELECT request_hash, text FROM generations ORDER BY request_hash, text").fetchall()


def test_the_generations_table_has_no_key_index(tmp_path: Path) -> None:
    con = connect(tmp_path / "s.duckdb")
    kinds = con.execute("SELECT constraint_type FROM duckdb_constraints() WHERE table_name = 'generations'").fetchall()
    assert ("PRIMARY KEY",) not in kinds and ("NOT NULL",) in kinds
    assert con.execute("SELECT count(*) FROM duckdb_indexes() WHERE table_name = 'generations'").fetchone()[0] == 0


def test_prefix_is_the_same_in_python_and_in_sql() -> None:
    hashes = [_hash(i) for i in range(50)] + ["abc", "h1", "ABCDEF", "-1", " ab", "a_b"]
    con = duckdb.connect()
    con.execute("CREATE TABLE generations (request_hash VARCHAR)")
    con.execute("INSERT INTO generations SELECT unnest(?)", [hashes])
    from_sql = sorted(int(v) for (v,) in con.execute(known_hashes.STORE_PREFIXES_SQL).fetchall())
    from_python = sorted(p for p in map(prefix, hashes) if p is not None)
    assert from_sql == from_python and len(from_python) == 51  # 50 sha256 and "abc"
    assert prefix("h1") is None and prefix("ABCDEF") is None and prefix(" ab") is None


def test_known_hashes_never_says_no_to_a_stored_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(known_hashes, "MERGE_EVERY", 7)  # merges into the sorted array several times
    con = duckdb.connect()
    con.execute("CREATE TABLE generations (request_hash VARCHAR)")
    con.execute("INSERT INTO generations SELECT unnest(?)", [[_hash(i) for i in range(100)] + ["made-up"]])
    known = KnownHashes.of_store(con)
    assert len(known) == 100
    known.add(_hash(i) for i in range(100, 130))
    assert all(known.may_contain(_hash(i)) for i in range(130))
    assert known.may_contain("made-up") and known.may_contain("another made-up one")  # not hex: always asked
    assert sum(known.may_contain(_hash(i)) for i in range(130, 1130)) == 0  # 64-bit prefixes do not collide here


def test_the_writer_keeps_the_first_row_of_a_hash_in_one_flush_and_across_flushes(tmp_path: Path) -> None:
    con = connect(tmp_path / "s.duckdb")
    writer = StoreWriter(con)
    writer.add("generations", _generation(_hash(1), "first"))
    writer.add("generations", _generation(_hash(2), "first"))
    writer.add("generations", _generation(_hash(1), "second"))  # same flush
    writer.flush()
    writer.add_many("generations", [_generation(_hash(2), "third"), _generation(_hash(3), "first"),
                                    _generation("made-up", "first"), _generation("made-up", "second")])
    writer.close()
    assert _stored(con) == sorted([(_hash(1), "first"), (_hash(2), "first"), (_hash(3), "first"), ("made-up", "first")])


def test_a_new_writer_knows_what_an_earlier_process_stored(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    con = connect(path)
    first = StoreWriter(con)
    first.add_many("generations", [_generation(_hash(i), "old") for i in range(20)])
    first.close()
    con.close()
    con = connect(path)
    second = StoreWriter(con)
    assert len(second.known) == 20
    second.add_many("generations", [_generation(_hash(i), "new") for i in range(10, 30)])
    second.close()
    rows = _stored(con)
    assert len(rows) == 30 and len({h for h, _ in rows}) == 30
    assert dict(rows)[_hash(15)] == "old" and dict(rows)[_hash(25)] == "new"


def test_a_closed_writer_lets_go_of_its_known_hashes_and_reads_them_again_when_used(tmp_path: Path) -> None:
    con = connect(tmp_path / "s.duckdb")
    writer = StoreWriter(con)
    writer.add_many("generations", [_generation(_hash(i), "old") for i in range(5)])
    assert len(writer.known) == 5
    writer.close()
    assert writer._known is None  # the report that follows a run does not hold them
    writer.add_many("generations", [_generation(_hash(i), "new") for i in range(3, 8)])
    writer.close()
    assert sorted(_stored(con)) == sorted([(_hash(i), "old") for i in range(5)] + [(_hash(i), "new") for i in (5, 6, 7)])


def test_direct_inserts_of_generations_skip_hashes_the_table_holds(tmp_path: Path) -> None:
    con = connect(tmp_path / "s.duckdb")
    writer = StoreWriter(con)
    writer.add("generations", _generation(_hash(1), "buffered"))
    writer.flush()
    writer.insert_rows("generations", [_generation(_hash(1), "direct"), _generation(_hash(2), "direct"),
                                       _generation(_hash(2), "again")])
    assert _stored(con) == sorted([(_hash(1), "buffered"), (_hash(2), "direct")])
    assert writer.known.may_contain(_hash(2))
    writer.close()


class _CountingConnection:
    """A connection that counts the statements the cache sends."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.executed: list[str] = []

    def execute(self, sql: str, params: Any = None) -> Any:
        self.executed.append(sql)
        return self.con.execute(sql, params)

    def sql(self, sql: str) -> Any:
        return self.con.sql(sql)


def test_the_cache_asks_the_store_only_about_hashes_it_may_hold(tmp_path: Path) -> None:
    con = connect(tmp_path / "s.duckdb")
    writer = StoreWriter(con)
    writer.add_many("generations", [_generation(_hash(i), f"text {i}") for i in range(5)])
    writer.flush()
    counting = _CountingConnection(con)
    writer.con = counting  # type: ignore[assignment]
    cache = GenerationCache(writer, decode_generation)
    assert cache.lookup([_hash(i) for i in range(100, 140)]) == {}
    assert counting.executed == []  # forty new requests: no scan of the table
    found = cache.lookup([_hash(2), _hash(200)])
    assert list(found) == [_hash(2)] and found[_hash(2)].text == "text 2"
    assert len(counting.executed) == 1
    writer.con = con  # type: ignore[assignment]
    writer.close()
