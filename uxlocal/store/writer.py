"""The one writer: buffers rows per table and appends them as Arrow batches in one transaction.

Row dicts are converted to Arrow columns in the table's column order; JSON columns take Python
objects (serialised here). ``flush`` commits everything buffered atomically, so after a crash the
store holds whole flushes only; the scheduler's resume logic removes rows of unfinished episodes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import duckdb
import pyarrow as pa

from uxlocal.store.db import table_columns

JSON_COLUMNS = {"config", "versions", "data", "info", "meta", "arguments", "sampling", "constraint_spec",
                "parsed", "label_probs", "value"}


def _encode(column: str, value: Any) -> Any:
    if column in JSON_COLUMNS and value is not None and not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    if column in JSON_COLUMNS and isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return value


class StoreWriter:
    """Buffered, batched appends to a writable store connection."""

    def __init__(self, con: duckdb.DuckDBPyConnection, *, flush_rows: int = 50_000) -> None:
        self.con = con
        self.flush_rows = flush_rows
        self._rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._statements: list[tuple[str, list[Any]]] = []
        self._columns: dict[str, list[str]] = {}
        self.rows_written = 0

    def add(self, table: str, row: dict[str, Any]) -> None:
        """Buffer one row; unknown columns are an error (catches typos early)."""
        self._rows[table].append(row)
        if sum(len(v) for v in self._rows.values()) >= self.flush_rows:
            self.flush()

    def add_many(self, table: str, rows: list[dict[str, Any]]) -> None:
        """Buffer many rows of one table."""
        for row in rows:
            self.add(table, row)

    def execute_in_flush(self, sql: str, params: list[Any] | None = None) -> None:
        """Run a statement inside the next flush's transaction, after that flush's inserts."""
        self._statements.append((sql, params or []))

    def columns(self, table: str) -> list[str]:
        """Cached column order of a table."""
        if table not in self._columns:
            self._columns[table] = table_columns(self.con, table)
        return self._columns[table]

    def _arrow(self, table: str, rows: list[dict[str, Any]]) -> pa.Table:
        cols = self.columns(table)
        unknown = set().union(*(r.keys() for r in rows)) - set(cols)
        if unknown:
            raise KeyError(f"table {table} has no column(s) {sorted(unknown)}")
        data = {c: [_encode(c, r.get(c)) for r in rows] for c in cols}
        return pa.table(data)

    def insert_rows(self, table: str, rows: list[dict[str, Any]]) -> None:
        """Insert rows now, inside whatever transaction the caller holds (no buffering)."""
        if not rows:
            return
        self.con.register("_uxlocal_buf", self._arrow(table, rows))
        verb = "INSERT OR IGNORE" if table in ("generations", "models") else "INSERT"
        try:
            self.con.execute(f"{verb} INTO {table} SELECT * FROM _uxlocal_buf")
        finally:
            self.con.unregister("_uxlocal_buf")
        self.rows_written += len(rows)

    def flush(self) -> None:
        """Write everything buffered in one transaction."""
        if not self._rows and not self._statements:
            return
        rows, self._rows = self._rows, defaultdict(list)
        statements, self._statements = self._statements, []
        self.con.execute("BEGIN")
        try:
            for table, batch in rows.items():
                self.insert_rows(table, batch)
            for sql, params in statements:
                self.con.execute(sql, params)
            self.con.execute("COMMIT")
        except Exception:
            self.con.execute("ROLLBACK")
            raise
