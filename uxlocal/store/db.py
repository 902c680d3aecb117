"""Open a store, apply forward-only migrations, (re)create metric views.

Views hold no data, so they are recreated on every connect: the core views of ``db/views/*.sql``
(``common.sql`` first), then each registered suite's ``views.sql`` (found through the
``uxlocal.suites`` entry points without importing suite code: ``uxlocal.plugins``). Persistent views
on a writable store (so the DuckDB CLI sees them), temporary ones on a read-only store.
Connections come from ``store.offline.open_duckdb`` (DuckDB without extensions or network).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import duckdb

from uxlocal import paths
from uxlocal.errors import InputError, UxlocalError
from uxlocal.plugins import suite_migration_folders, suite_view_files
from uxlocal.store.offline import open_duckdb, refuse_extension_statements

MIGRATION_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")


def migration_files(folder: Path | None = None) -> list[Path]:
    """Migration files in order; numbers must be unique and contiguous from 001."""
    folder = folder or paths.db_dir() / "migrations"
    files = sorted(p for p in folder.glob("*.sql"))
    for expected, file in enumerate(files, start=1):
        match = MIGRATION_NAME.match(file.name)
        if not match or int(match.group(1)) != expected:
            raise UxlocalError(f"{file}: migrations must be named NNN_snake_name.sql and numbered "
                               f"contiguously (expected {expected:03d})")
    return files


def migrate(con: duckdb.DuckDBPyConnection, *, upto: int | None = None, folder: Path | None = None) -> list[str]:
    """Apply pending migrations (each in its own transaction); return the names applied.

    The core ones first (``upto`` stops them at a number: tests freeze older stores), then, when
    the core folder is the real one and complete, each registered suite's own (``plugins``), recorded
    as ``<package>/<file>``.
    """
    con.execute("CREATE TABLE IF NOT EXISTS _uxlocal_migrations (name VARCHAR PRIMARY KEY, "
                "applied_at TIMESTAMPTZ NOT NULL)")
    done = {row[0] for row in con.execute("SELECT name FROM _uxlocal_migrations").fetchall()}
    applied = [name for number, file in enumerate(migration_files(folder), start=1)
               if (upto is None or number <= upto) and (name := _apply(con, file, file.name, done))]
    if folder is None and upto is None:
        for package, suite_folder in suite_migration_folders():
            applied += [name for file in migration_files(suite_folder)
                        if (name := _apply(con, file, f"{package}/{file.name}", done))]
    return applied


def _apply(con: duckdb.DuckDBPyConnection, file: Path, name: str, done: set[str]) -> str | None:
    """Run one migration file in its own transaction unless ``name`` is recorded; return the name run."""
    if name in done:
        return None
    con.execute("BEGIN")
    try:
        con.execute(file.read_text(encoding="utf-8"))
        con.execute("INSERT INTO _uxlocal_migrations VALUES (?, ?)", [name, dt.datetime.now(dt.timezone.utc)])
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return name


def view_files() -> list[Path]:
    """Every view file in load order: core views (``common.sql`` first), then the suites' by suite name."""
    core = sorted((paths.db_dir() / "views").glob("*.sql"), key=lambda p: (p.name != "common.sql", p.name))
    return [*core, *suite_view_files()]


def load_views(con: duckdb.DuckDBPyConnection, *, temporary: bool = False,
               files: list[Path] | None = None) -> None:
    """Run every view file (``view_files()`` unless ``files``); ``temporary`` for read-only stores."""
    for file in view_files() if files is None else files:
        sql = file.read_text(encoding="utf-8")
        if temporary:
            sql = re.sub(r"CREATE\s+OR\s+REPLACE\s+(VIEW|MACRO)", r"CREATE OR REPLACE TEMP \1", sql, flags=re.I)
        try:
            con.execute(sql)
        except duckdb.Error as exc:
            raise UxlocalError(f"{file}: view definition failed: {exc}") from exc


def connect(db_path: str | Path, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (and for writers, create and migrate) a store."""
    path = Path(db_path)
    if read_only:
        if not path.is_file():
            raise InputError(path, None, "no such store", "run a suite with --db first")
        try:
            con = open_duckdb(path, read_only=True)
        except duckdb.Error as exc:
            raise UxlocalError(f"{path}: cannot open the store read-only: {exc}") from exc
        load_views(con, temporary=True)
        return con
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        con = open_duckdb(path)
    except duckdb.Error as exc:
        raise UxlocalError(f"{path}: cannot open the store: {exc}") from exc
    migrate(con)
    load_views(con)
    return con


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """Column names of a table, in order."""
    rows = con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                       "AND table_schema = 'main' ORDER BY ordinal_position", [table]).fetchall()
    return [r[0] for r in rows]


def query(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run a query; return column names and rows."""
    cur = con.execute(sql, params or [])
    cols = [d[0] for d in cur.description] if cur.description else []
    return cols, cur.fetchall()


def json_value(value: Any, *, lenient: bool = False) -> Any:
    """Decode a JSON column as DuckDB's Python client returns it (text); decoded values pass through.

    The client hands ``JSON`` columns back as ``str`` (and the writer stores Python objects as JSON
    text), so every reader decodes the same way here. ``None`` stays ``None``. ``lenient`` is for
    readers of stores of any age that must not crash (the report, the viewer): text that is not
    JSON comes back unchanged instead of raising ``ValueError``.
    """
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        if lenient:
            return value
        raise


def user_query(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run SQL a person typed (``uxlocal query``); INSTALL/LOAD are refused before anything runs."""
    refuse_extension_statements(con, sql)
    return query(con, sql)
