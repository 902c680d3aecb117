"""The one writer: buffers rows per table and appends them as Arrow batches in one transaction.

Row dicts are converted to Arrow in the table's column order and types; JSON columns take Python
objects (serialised here). Each flush commits atomically, in order, on one background thread, so
after a crash the store holds whole flushes only; the scheduler's resume logic removes rows of
unfinished episodes.

Generations are kept one per request hash by the writer, not by a key index (migration 003): a row
whose hash ``KnownHashes`` has never seen is appended as is; the rare one it may have seen is
appended only if the table (including this flush's earlier rows) does not hold its hash yet.

The writer also checkpoints, after every ``CHECKPOINT_ROWS`` rows of a table and at close, so
that DuckDB writes whole row groups once instead of rewriting the one still filling at each
automatic checkpoint (``offline.AUTO_CHECKPOINT_WAL`` keeps those for other writes).
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import duckdb

from uxlocal.store.known_hashes import KnownHashes

JSON_COLUMNS = {"config", "versions", "data", "info", "meta", "arguments", "sampling", "constraint_spec",
                "parsed", "label_probs", "value", "tools", "tool_calls", "top_logprobs"}


def _encode(column: str, value: Any) -> Any:
    if column in JSON_COLUMNS and value is not None and not isinstance(value, str):
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    if column in JSON_COLUMNS and isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return value


def _encode_row(row: dict[str, Any], json_cols: list[str]) -> dict[str, Any]:
    """A copy of ``row`` with its JSON columns serialised (the row itself is left alone)."""
    if not any(row.get(c) is not None for c in json_cols):
        return row
    return {**row, **{c: _encode(c, row[c]) for c in json_cols if row.get(c) is not None}}


def _arrow_type(pa: Any, duck_type: str) -> Any:
    """Arrow type for a DuckDB column type (JSON travels as text)."""
    kind = duck_type.upper()
    if kind in ("INTEGER", "SMALLINT", "TINYINT"):
        return pa.int32()
    if kind in ("BIGINT", "HUGEINT"):
        return pa.int64()
    if kind in ("DOUBLE", "FLOAT", "REAL") or kind.startswith("DECIMAL"):
        return pa.float64()
    if kind == "BOOLEAN":
        return pa.bool_()
    if kind.startswith("TIMESTAMP WITH TIME ZONE") or kind == "TIMESTAMPTZ":
        return pa.timestamp("us", tz="UTC")
    if kind.startswith("TIMESTAMP"):
        return pa.timestamp("us")
    return pa.string()


def _first_per_hash(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first row of each request hash, in order."""
    seen: set[Any] = set()
    first = []
    for row in rows:
        if row.get("request_hash") not in seen:
            seen.add(row.get("request_hash"))
            first.append(row)
    return first


CHECKPOINT_ROWS = 122_880
"""DuckDB's row-group size: the writer checkpoints once a table has received this many rows since
its last checkpoint. At a million judge verdicts (a row per verdict in each of four tables) that is
eight checkpoints of ~1.2 s, against a dozen of 2-5 s at DuckDB's 16 MB log threshold."""


def _release_arrow_pool() -> None:
    """Hand the pages of committed Arrow batches back to the system (~0.2 ms): Arrow's allocator
    kept them for reuse, so the process held its largest backlog of batches (one behind a long
    DuckDB checkpoint) for the rest of the run, ~40 MB at a million verdicts."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


FLUSH_ROWS = 20_000
"""Rows buffered (all tables together) before a flush. While a checkpoint holds the worker, up to
four flushes wait (two queued, one being handed over, one committing): at 50,000 rows each that was
~70 MB above a million-verdict run's steady memory; at 20,000 the spikes are gone and judging ran
no slower (the harness ceiling, docs/performance.md)."""


class StoreWriter:
    """Buffered, batched appends to a writable store connection."""

    def __init__(self, con: duckdb.DuckDBPyConnection, *, flush_rows: int = FLUSH_ROWS) -> None:
        self.con = con
        self.flush_rows = flush_rows
        self._rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._statements: list[tuple[str, list[Any]]] = []
        self._columns: dict[str, list[str]] = {}
        self._buffered = 0
        self.rows_written = 0
        self._worker: Any = None
        self._queue: Any = None
        self._cursor: Any = None
        self._error: Exception | None = None
        self._since_checkpoint = 0
        """The most rows one table got in each commit since the last checkpoint, summed (worker thread)."""
        self._known: KnownHashes | None = None
        self._maybe_stored: list[dict[str, Any]] = []
        """Generation rows whose hash the store may hold already: appended only where it does not."""

    @property
    def known(self) -> KnownHashes:
        """The request hashes the store may hold: read from the store once (after the queued
        commits), then kept up to date by every generation row this writer is given."""
        if self._known is None:
            self.sync()
            known = KnownHashes.of_store(self.con)
            known.add(row.get("request_hash") for row in [*self._rows.get("generations", ()), *self._maybe_stored])
            self._known = known
        return self._known

    def add(self, table: str, row: dict[str, Any]) -> None:
        """Buffer one row; unknown columns are an error at flush (catches typos early)."""
        if table == "generations":
            self._add_generation(row)
        else:
            self._rows[table].append(row)
        self._buffered += 1
        if self._buffered >= self.flush_rows:
            self.flush(wait=False)

    def add_many(self, table: str, rows: list[dict[str, Any]]) -> None:
        """Buffer many rows of one table."""
        if table == "generations":
            for row in rows:
                self._add_generation(row)
        else:
            self._rows[table].extend(rows)
        self._buffered += len(rows)
        if self._buffered >= self.flush_rows:
            self.flush(wait=False)

    def _add_generation(self, row: dict[str, Any]) -> None:
        request_hash = row.get("request_hash")
        if isinstance(request_hash, str) and not self.known.may_contain(request_hash):
            self._rows["generations"].append(row)
            self.known.add((request_hash,))
        else:
            self._maybe_stored.append(row)

    def execute_in_flush(self, sql: str, params: list[Any] | None = None) -> None:
        """Run a statement inside the next flush's transaction, after that flush's inserts."""
        self._statements.append((sql, params or []))

    def columns(self, table: str) -> list[str]:
        """Cached column order of a table."""
        return [name for name, _ in self._schema(table)]

    def _schema(self, table: str) -> list[tuple[str, str]]:
        if table not in self._columns:
            rows = self.con.execute("SELECT column_name, data_type FROM information_schema.columns "
                                    "WHERE table_name = ? AND table_schema = 'main' ORDER BY ordinal_position",
                                    [table]).fetchall()
            self._columns[table] = rows  # type: ignore[assignment]
        return self._columns[table]  # type: ignore[return-value]

    def _arrow(self, table: str, rows: list[dict[str, Any]]) -> Any:
        """Rows -> Arrow table in the table's column order and types (missing keys become NULL)."""
        import pyarrow as pa

        schema = self._schema(table)
        names = {name for name, _ in schema}
        unknown = set().union(*rows) - names
        if unknown:
            raise KeyError(f"table {table} has no column(s) {sorted(unknown)}")
        json_cols = [name for name, _ in schema if name in JSON_COLUMNS]
        if json_cols:
            rows = [_encode_row(r, json_cols) for r in rows]
        arrow_schema = pa.schema([(name, _arrow_type(pa, kind)) for name, kind in schema])
        return pa.Table.from_pylist(rows, schema=arrow_schema)

    def insert_rows(self, table: str, rows: list[dict[str, Any]]) -> None:
        """Insert rows now, inside whatever transaction the caller holds (no buffering); of
        generations only the first row of each hash the table does not hold yet."""
        if rows and table == "generations":
            rows = _first_per_hash(rows)
            self._insert_arrow(self.con, table, self._arrow(table, rows), new_hashes_only=True)
            if self._known is not None:
                self._known.add(row.get("request_hash") for row in rows)
        elif rows:
            self._insert_arrow(self.con, table, self._arrow(table, rows))
        self.rows_written += len(rows)

    @staticmethod
    def _insert_arrow(con: duckdb.DuckDBPyConnection, table: str, arrow: Any, *, new_hashes_only: bool = False) -> None:
        con.register("_uxlocal_buf", arrow)
        verb = "INSERT OR IGNORE" if table == "models" else "INSERT"
        unseen = (" b WHERE NOT EXISTS (SELECT 1 FROM generations g WHERE g.request_hash = b.request_hash)"
                  if new_hashes_only else "")
        try:
            con.execute(f"{verb} INTO {table} SELECT * FROM _uxlocal_buf{unseen}")
        finally:
            con.unregister("_uxlocal_buf")

    def flush(self, *, wait: bool = True) -> None:
        """Commit everything buffered as one transaction.

        Rows are converted to Arrow here and inserted by a single background thread, so the
        caller (the scheduler, or an ingest loop) prepares the next batch while DuckDB writes this
        one. Batches commit in order; ``wait=False`` returns before the commit, ``wait=True``
        (the default) returns after every queued batch is committed and re-raises a failure.
        """
        if self._rows or self._statements or self._maybe_stored:
            _release_arrow_pool()
            rows, self._rows = self._rows, defaultdict(list)
            self._buffered = 0
            statements, self._statements = self._statements, []
            batch = [(table, self._arrow(table, part), len(part), False) for table, part in rows.items() if part]
            del rows  # the row dicts go now: behind a long commit only their Arrow copy waits in the queue
            if self._maybe_stored:  # last: the check sees this flush's other generations
                first = _first_per_hash(self._maybe_stored)
                batch.append(("generations", self._arrow("generations", first), len(first), True))
                self.known.add(row.get("request_hash") for row in first)
                self._maybe_stored = []
            self._start_worker()
            self._queue.put((batch, statements))
        if wait:
            self.sync()

    @property
    def idle(self) -> bool:
        """True when no flushed batch is waiting for, or in, its commit."""
        return self._worker is None or self._queue.unfinished_tasks == 0

    @property
    def pending(self) -> bool:
        """True when rows or statements are buffered (not yet flushed)."""
        return bool(self._buffered or self._statements)

    def sync(self) -> None:
        """Wait for queued batches to commit; re-raise the first failure."""
        if self._worker is not None:
            self._queue.join()
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def close(self) -> None:
        """Commit what is buffered, checkpoint, stop the background thread and let go of what the writes
        needed (the known hashes, 8 bytes a generation, are read again if the writer is used after this)."""
        self.flush(wait=True)
        if self._worker is not None:
            self._queue.put(None)
            self._worker.join()
            self._worker = None
        if self._since_checkpoint:  # what the report reads is then in the file, not held as log rows
            self.con.execute("CHECKPOINT")
            self._since_checkpoint = 0
        self._known = None
        _release_arrow_pool()

    def _start_worker(self) -> None:
        if self._worker is None:
            import queue
            import threading

            self._queue = queue.Queue(maxsize=2)  # back-pressure: at most two batches in flight
            self._cursor = self.con.cursor()
            self._worker = threading.Thread(target=self._work, name="uxlocal-store-writer", daemon=True)
            self._worker.start()

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                self._queue.task_done()
                return
            try:
                if self._error is None:
                    self._commit(*job)
            except Exception as exc:  # surfaced to the caller at the next flush/sync
                self._error = exc
            finally:
                del job  # the committed batch goes now, not when the next one arrives
                self._queue.task_done()

    def _commit(self, batch: list[tuple[str, Any, int, bool]], statements: list[tuple[str, list[Any]]]) -> None:
        con = self._cursor
        con.execute("BEGIN")
        try:
            for table, arrow, count, new_hashes_only in batch:
                self._insert_arrow(con, table, arrow, new_hashes_only=new_hashes_only)
                self.rows_written += count
            for sql, params in statements:
                con.execute(sql, params)
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
        self._since_checkpoint += max((count for _, _, count, _ in batch), default=0)
        if self._since_checkpoint >= CHECKPOINT_ROWS:
            con.execute("CHECKPOINT")  # whole row groups, written once (see CHECKPOINT_ROWS)
            self._since_checkpoint = 0
