"""DuckDB without the network (issue 18).

Every connection is offline and locked, ``uxlocal query`` refuses INSTALL/LOAD in well under a
second without opening a socket, and local files still work.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from uxlocal.cli import cli
from uxlocal.errors import InputError
from uxlocal.store.db import connect
from uxlocal.store.offline import NO_EXTENSIONS_DIR, OFFLINE_CONFIG, open_duckdb, resource_config

PACKAGE = Path(__file__).resolve().parents[2] / "uxlocal"


@pytest.fixture
def store(tmp_path: Path) -> Path:
    db = tmp_path / "s.duckdb"
    con = connect(db)
    con.execute("INSERT INTO runs (run_id, suite, config, config_sha256, status, started_at) "
                "VALUES ('r1', 'selftest', '{}', 'x', 'done', now())")
    con.close()
    return db


ANSWER_S = 20.0
"""Refusals take about 0.2 s in-process (0.5-1 s for a whole ``uxlocal query`` process) on an idle
2-core box; 5 s was exceeded at load 35. The guard's empty record is the proof that nothing was
fetched; this bound only catches a wait on the network."""


def _query(db: Path, sql: str) -> tuple[int, str, float]:
    started = time.perf_counter()
    result = CliRunner().invoke(cli, ["query", "--db", str(db), sql])
    return result.exit_code, result.output, time.perf_counter() - started


@pytest.mark.parametrize("read_only", [False, True])  # the writer's store, and a reader's
def test_open_duckdb_sets_every_offline_setting_when_opened(store: Path, read_only: bool) -> None:
    con = connect(store, read_only=read_only)
    try:
        for name, value in OFFLINE_CONFIG.items():
            assert con.execute(f"SELECT current_setting('{name}')").fetchone() == (value,), name
    finally:
        con.close()


@pytest.mark.parametrize("statement", [
    "SET autoload_known_extensions = true",  # turn auto-load back on
    "SET GLOBAL lock_configuration = false",  # unlock, then anything
    "RESET autoinstall_known_extensions",  # back to DuckDB's default (on)
    "SET extension_directory = '/tmp'",  # find extensions installed elsewhere
])
def test_open_duckdb_cannot_be_reconfigured_from_sql_when_locked(tmp_path: Path, statement: str) -> None:
    con = open_duckdb(tmp_path / "x.duckdb")
    try:
        with pytest.raises(duckdb.InvalidInputException, match="configuration has been locked"):
            con.execute(statement)
    finally:
        con.close()


@pytest.mark.parametrize("sql", [
    "install httpfs",  # the example: a download from extensions.duckdb.org
    "FORCE INSTALL httpfs",  # re-download
    "INSTALL httpfs FROM 'https://extensions.duckdb.org'",  # a repository named in the statement
    "load httpfs",  # an extension installed earlier, e.g. in ~/.duckdb
    "update extensions",  # re-downloads every installed extension
])
def test_query_refuses_extension_statements_offline_when_typed(store: Path, sql: str,
                                                              network_guard: Any) -> None:
    code, output, elapsed_s = _query(store, sql)
    assert code == 2
    assert output.count("\n") == 1 and "uxlocal works offline" in output and "statement 1" in output
    assert elapsed_s < ANSWER_S
    assert network_guard.attempts == []


def test_query_refuses_a_script_before_running_any_of_it(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "first.parquet"
    code, output, _ = _query(store, f"COPY (SELECT 1) TO '{out}'; LOAD httpfs")
    assert code == 2 and "statement 2 (LOAD httpfs)" in output
    assert not out.exists()


@pytest.mark.parametrize("sql, needs", [
    ("SELECT * FROM read_csv('https://example.com/a.csv')", "httpfs"),  # auto-load of httpfs is off
    ("SELECT * FROM 's3://bucket/a.parquet'", "httpfs"),  # a replacement scan of a remote path
    ("ATTACH 'x.sqlite' (TYPE sqlite)", "sqlite_scanner"),  # found only in NO_EXTENSIONS_DIR
])
def test_query_needing_an_extension_fails_without_fetching_it(store: Path, sql: str, needs: str,
                                                              network_guard: Any) -> None:
    code, output, elapsed_s = _query(store, sql)
    assert code == 2 and needs in output
    assert elapsed_s < ANSWER_S and network_guard.attempts == []
    assert not NO_EXTENSIONS_DIR.exists()


def test_query_copies_to_a_local_file_and_leaves_the_store_read_only(store: Path, tmp_path: Path) -> None:
    out = tmp_path / "runs.parquet"
    code, output, _ = _query(store, f"COPY (SELECT run_id, suite FROM runs) TO '{out}'")
    assert code == 0, output
    code, output, _ = _query(store, f"SELECT run_id, suite FROM '{out}'")
    assert code == 0 and "r1" in output and "selftest" in output
    code, output, _ = _query(store, "DELETE FROM runs")
    assert code == 2 and "read-only" in output


def test_query_help_says_how_to_export_and_that_it_is_offline() -> None:
    result = CliRunner().invoke(cli, ["query", "-h"])
    text = " ".join(result.output.split())
    assert result.exit_code == 0
    assert "COPY ... TO" in text and "offline" in text and "read-only" in text


def test_package_opens_duckdb_only_through_open_duckdb() -> None:
    calls = [str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
             for line in path.read_text(encoding="utf-8").splitlines()
             if re.search(r"duckdb\s*\.\s*connect\s*\(", line)]
    assert calls == ["store/offline.py"]


def _setting(con: duckdb.DuckDBPyConnection, name: str) -> str:
    return str(con.execute(f"SELECT current_setting('{name}')").fetchone()[0])


def test_open_duckdb_caps_memory_by_default_and_takes_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    monkeypatch.delenv("UXLOCAL_DUCKDB_MEMORY", raising=False)
    monkeypatch.delenv("UXLOCAL_DUCKDB_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    with open_duckdb(tmp_path / "a.duckdb") as con:
        assert _setting(con, "memory_limit") == "91.5 MiB"  # 96 MB: 64 + 32 for its one thread
        with pytest.raises(duckdb.Error):  # locked like the rest: SQL cannot lift the cap
            con.execute("SET memory_limit = '8GB'")
    monkeypatch.setenv("UXLOCAL_DUCKDB_MEMORY", "2GB")
    monkeypatch.setenv("UXLOCAL_DUCKDB_THREADS", "1")
    with open_duckdb(tmp_path / "b.duckdb") as con:
        assert (_setting(con, "memory_limit"), _setting(con, "threads")) == ("1.8 GiB", "1")


@pytest.mark.parametrize(("cores", "threads"), [(1, 1), (2, 1), (3, 1), (4, 2), (64, 2)])
def test_open_duckdb_gives_one_thread_per_two_cores_up_to_two_and_32mb_each(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cores: int, threads: int) -> None:
    import os

    monkeypatch.delenv("UXLOCAL_DUCKDB_THREADS", raising=False)
    monkeypatch.delenv("UXLOCAL_DUCKDB_MEMORY", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    assert resource_config() == {
        "threads": threads,
        "memory_limit": f"{64 + 32 * threads}MB",
    }  # 32 MB a thread
    with open_duckdb(tmp_path / "t.duckdb") as con:
        assert _setting(con, "threads") == str(threads)
    monkeypatch.setenv("UXLOCAL_DUCKDB_THREADS", "3")
    assert resource_config() == {
        "threads": 3,
        "memory_limit": "160MB",
    }  # the environment wins, the cap follows
    monkeypatch.setenv("UXLOCAL_DUCKDB_MEMORY", "100MB")
    assert resource_config() == {"threads": 3, "memory_limit": "100MB"}  # unless a cap is asked for too


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("UXLOCAL_DUCKDB_MEMORY", "lots", "UXLOCAL_DUCKDB_MEMORY='lots'"),
        ("UXLOCAL_DUCKDB_THREADS", "0", "UXLOCAL_DUCKDB_THREADS='0'"),
    ],
)
def test_open_duckdb_names_a_bad_resource_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str, problem: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(InputError, match=re.escape(problem)):
        open_duckdb(tmp_path / "c.duckdb")


def test_open_duckdb_gives_a_large_store_a_cap_in_proportion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from uxlocal.store import offline

    monkeypatch.delenv("UXLOCAL_DUCKDB_MEMORY", raising=False)
    monkeypatch.setenv("UXLOCAL_DUCKDB_THREADS", "1")
    small, big = tmp_path / "small.duckdb", tmp_path / "big.duckdb"
    for path in (small, big):
        with open_duckdb(path) as con:
            con.execute("CREATE TABLE t AS SELECT range AS i FROM range(10)")
    monkeypatch.setattr(offline, "_store_caps", {})
    assert resource_config(small)["memory_limit"] == "96MB"  # a small store: the default for one thread
    real_stat = Path.stat
    monkeypatch.setattr(
        Path, "stat", lambda self, **kw: SimpleNamespace(st_size=3_000_000_000, st_mode=0o100644)
    )
    assert resource_config(big)["memory_limit"] == "1800MB"  # 0.6 of a 3 GB store
    monkeypatch.setattr(Path, "stat", real_stat)
    assert resource_config(big)["memory_limit"] == "1800MB"  # fixed for the process: reopening must match
    monkeypatch.setattr(offline, "_store_caps", {})
    monkeypatch.setenv("UXLOCAL_DUCKDB_THREADS", "2")
    monkeypatch.setattr(
        Path, "stat", lambda self, **kw: SimpleNamespace(st_size=200_000_000, st_mode=0o100644)
    )
    assert resource_config(big)["memory_limit"] == "128MB"  # 0.6 of 200 MB is less than two threads' default
    monkeypatch.setattr(Path, "stat", real_stat)
    monkeypatch.setattr(offline, "_store_caps", {str(big.resolve()): "1800MB"})  # as first opened above
    monkeypatch.setenv("UXLOCAL_DUCKDB_MEMORY", "700MB")
    assert resource_config(big)["memory_limit"] == "700MB"  # the environment wins
    monkeypatch.setenv("UXLOCAL_DUCKDB_MEMORY", "96MB")
    assert resource_config(big)["memory_limit"] == "96MB"  # also when it names the default's size
