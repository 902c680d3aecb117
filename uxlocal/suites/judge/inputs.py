"""Conversations to judge, from JSONL, CSV, Parquet or a DuckDB query, through a column map.

Layer contract: reads the user's file, returns ``JudgeItem``s plus quarantine records; no
prompts, no engine, no store writes (a ``duckdb:`` source is opened read-only).

Sources: ``*.jsonl``/``*.json`` (one object per line), ``*.csv`` (header row), ``*.parquet``,
and ``duckdb:PATH::SQL`` (any query over any store, so a uxlocal store's trajectories can be
re-judged). Positions in messages are the physical line for JSONL and CSV (blank lines counted,
as an editor numbers them) and the 1-based row for Parquet and DuckDB.

A conversation is an OpenAI-style ``[{role, content}]`` list or a JSON string of one; without a
conversation column, ``prompt``/``response`` columns make a one-turn conversation. Pairwise
items carry the context conversation plus two replies. A bad row raises
``InputError("file:line: column: problem")``, or with ``skip_bad_rows`` is set aside with that
reason (as the UXBench loaders do) and the rest still run.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from uxlocal.errors import InputError
from uxlocal.suites.judge.seen_ids import SeenIds, digests

ROLE_ALIASES = {
    "human": "user",
    "ai": "assistant",
    "bot": "assistant",
    "model": "assistant",
    "gpt": "assistant",
}
ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class Columns:
    """Which input column holds what (``None`` = not used or detected)."""

    id: str = "id"
    conversation: str | None = None
    """Default: ``conversation``, else ``messages``, when present."""
    prompt: str = "prompt"
    response: str = "response"
    response_a: str = "response_a"
    response_b: str = "response_b"
    human: str | None = None
    group: str | None = None


@dataclass(frozen=True)
class JudgeItem:
    """One thing to judge: a conversation (pointwise) or a context plus two replies (pairwise)."""

    item_id: str
    conversation: tuple[dict[str, str], ...]
    response_a: str | None = None
    response_b: str | None = None
    human: Any = None
    """The human label (str), score (float) or preference (A/B/tie), already normalized."""
    group: str | None = None
    source_file: str = ""
    source_line: int = 0


@dataclass(frozen=True)
class Quarantined:
    """A row ``skip_bad_rows`` set aside, with the message the error would have shown."""

    file: str
    line: int
    reason: str
    raw: str


@dataclass
class Loaded:
    """Items that loaded and the rows set aside."""

    items: list[JudgeItem] = field(default_factory=list)
    quarantine: list[Quarantined] = field(default_factory=list)


class RowProblem(Exception):
    """Why one row is bad: the column (None for the whole row) and the problem."""

    def __init__(self, column: str | None, problem: str) -> None:
        super().__init__(problem)
        self.column = column
        self.problem = problem

    def message(self) -> str:
        """``column: problem`` (or the problem alone)."""
        return f"{self.column}: {self.problem}" if self.column else self.problem


# ---------------------------------------------------------------- sources

Row = tuple[int, str, dict[str, Any] | RowProblem]
"""(line or row number, raw text for the quarantine, the row or why it could not be read)."""


def _jsonl_rows(path: Path) -> Iterator[Row]:
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                yield (
                    line_no,
                    line.rstrip("\n"),
                    RowProblem(None, f"invalid JSON: {exc.msg} at char {exc.pos}"),
                )
                continue
            if not isinstance(value, dict):
                yield line_no, line.rstrip("\n"), RowProblem(None, "is not a JSON object")
                continue
            yield line_no, line.rstrip("\n"), value


def _csv_rows(path: Path) -> Iterator[Row]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        start = 2
        for record in reader:
            raw = json.dumps(record, ensure_ascii=False)
            if None in record:  # more cells than header names
                yield start, raw, RowProblem(None, f"has {len(reader.fieldnames or []) + len(record[None])} "
                                                   f"cells, the header has {len(reader.fieldnames or [])}")
            else:
                yield start, raw, {k: (v if v != "" else None) for k, v in record.items()}
            start = reader.line_num + 1


def _table_rows(names: list[str], rows: Iterator[tuple[Any, ...]]) -> Iterator[Row]:
    for i, values in enumerate(rows, start=1):
        row = dict(zip(names, values, strict=True))
        yield i, json.dumps(row, ensure_ascii=False, default=str), row


TABLE_BATCH = 10_000
"""Rows read at a time from Parquet and DuckDB sources (the whole table is never in memory)."""


def _parquet_rows(path: Path) -> Iterator[Row]:
    import pyarrow.parquet as pq

    try:
        source = pq.ParquetFile(path)
        batches = source.iter_batches(batch_size=TABLE_BATCH)
        names = source.schema_arrow.names
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise InputError(f"cannot read Parquet: {exc}", path=path) from None
    yield from _table_rows(names, (tuple(r.values()) for batch in batches for r in batch.to_pylist()))


def _duckdb_rows(spec: str) -> tuple[str, Iterator[Row]]:
    body = spec[len("duckdb:"):]
    db, sep, sql = body.partition("::")
    if not sep or not db or not sql.strip():
        raise InputError("expected duckdb:PATH::SQL", "e.g. duckdb:runs.duckdb::select * from turns",
                         path=spec)
    if not Path(db).is_file():
        raise InputError("no such DuckDB file", path=db)
    rows = _query_rows(db, sql)
    names = next(rows)  # runs the query now: a bad query fails here, before any row is read
    return f"duckdb:{db}", _table_rows(names, rows)  # type: ignore[arg-type]


def _query_rows(db: str, sql: str) -> Iterator[Any]:
    """Yield the column names, then the query's rows, fetched ``TABLE_BATCH`` at a time (read-only)."""
    import duckdb

    from uxlocal.store.offline import open_duckdb, refuse_extension_statements

    try:
        with open_duckdb(db, read_only=True) as con:
            refuse_extension_statements(con, sql)
            cur = con.execute(sql)
            yield [d[0] for d in cur.description]
            while batch := cur.fetchmany(TABLE_BATCH):
                yield from batch
    except duckdb.Error as exc:
        raise InputError(f"query failed: {exc}", path=f"duckdb:{db}") from None


def read_rows(source: str) -> tuple[str, Iterator[Row]]:
    """(display name, rows) for any supported source."""
    if source.startswith("duckdb:"):
        return _duckdb_rows(source)
    path = Path(source)
    if not path.is_file():
        raise InputError("no such input file", path=path)
    suffix = path.suffix.lower()
    readers: dict[str, Callable[[Path], Iterator[Row]]] = {
        ".jsonl": _jsonl_rows, ".json": _jsonl_rows, ".ndjson": _jsonl_rows, ".csv": _csv_rows,
        ".parquet": _parquet_rows}
    if suffix not in readers:
        raise InputError(f"unknown input format {suffix!r}",
                         "use .jsonl, .csv, .parquet or duckdb:PATH::SQL", path=path)
    return str(path), readers[suffix](path)


# ---------------------------------------------------------------- fields


def _text(row: dict[str, Any], column: str, *, required: bool) -> str | None:
    value = row.get(column)
    if value is None:
        if required:
            raise RowProblem(column, "is missing" if column not in row else "is empty")
        return None
    if not isinstance(value, str):
        raise RowProblem(column, f"must be text, got {type(value).__name__}")
    if required and not value.strip():
        raise RowProblem(column, "is empty")
    return value


def parse_conversation(value: Any, column: str) -> tuple[dict[str, str], ...]:
    """Return a ``[{role, content}]`` list (or its JSON string) normalized to user/assistant/system turns."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise RowProblem(column, f"is a string but not JSON: {exc.msg} at char {exc.pos}") from None
    if hasattr(value, "tolist"):
        value = value.tolist()
    if not isinstance(value, list) or not value:
        raise RowProblem(column, "must be a non-empty list of {role, content} messages")
    turns = []
    for i, turn in enumerate(value):
        if not isinstance(turn, dict):
            raise RowProblem(column, f"message {i} is not an object")
        role = str(turn.get("role", "")).strip().lower()
        role = ROLE_ALIASES.get(role, role)
        content = turn.get("content")
        if role not in ROLES:
            raise RowProblem(
                column, f"message {i} has role {turn.get('role')!r}; use user, assistant or system"
            )
        if not isinstance(content, str):
            raise RowProblem(column, f"message {i} has no text content")
        turns.append({"role": role, "content": content})
    return tuple(turns)


def _conversation(row: dict[str, Any], cols: Columns, pairwise: bool) -> tuple[dict[str, str], ...]:
    column = cols.conversation or next((c for c in ("conversation", "messages") if c in row), None)
    if column is not None:
        if row.get(column) is None:
            raise RowProblem(column, "is missing" if column not in row else "is empty")
        turns = parse_conversation(row[column], column)
    else:
        prompt = _text(row, cols.prompt, required=True)
        turns = ({"role": "user", "content": prompt or ""},)
        if not pairwise:
            turns += ({"role": "assistant", "content": _text(row, cols.response, required=True) or ""},)
    if not pairwise and not any(t["role"] == "assistant" for t in turns):
        raise RowProblem(column or cols.response, "has no assistant turn to judge")
    return turns


def _item_id(row: dict[str, Any], column: str, fallback: str) -> str:
    value = row.get(column)
    if value is None:
        return fallback
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise RowProblem(column, f"must be text or an integer, got {type(value).__name__}")
    return str(value).strip() or fallback


HumanParser = Callable[[Any], Any]


def build_item(row: dict[str, Any], cols: Columns, *, pairwise: bool, human: HumanParser | None,
               fallback_id: str, file: str, line: int) -> JudgeItem:
    """One validated item from one row (raises ``RowProblem``)."""
    conversation = _conversation(row, cols, pairwise)
    response_a = _text(row, cols.response_a, required=True) if pairwise else None
    response_b = _text(row, cols.response_b, required=True) if pairwise else None
    label = None
    if cols.human is not None:
        if row.get(cols.human) is None:
            raise RowProblem(cols.human, "is missing" if cols.human not in row else "is empty")
        try:
            label = human(row[cols.human]) if human else row[cols.human]
        except ValueError as exc:
            raise RowProblem(cols.human, str(exc)) from None
    group = None
    if cols.group is not None:
        if row.get(cols.group) is None:
            raise RowProblem(cols.group, "is missing" if cols.group not in row else "is empty")
        group = str(row[cols.group])
    return JudgeItem(_item_id(row, cols.id, fallback_id), conversation, response_a, response_b, label, group,
                     file, line)


def input_sha256(source: str) -> str:
    """Content hash of a source's rows as read (line numbers and raw text): the data's identity."""
    import hashlib

    _, rows = read_rows(source)
    digest = hashlib.sha256()
    for line, raw, _ in rows:
        digest.update(f"{line}\t{raw}\n".encode())
    return digest.hexdigest()


CHUNK_ROWS = 10_000
"""Input rows per chunk of a streamed judge plan (items, episodes and their requests in memory at once)."""


@dataclass
class DistinctIds:
    """What a complete earlier read of a file found: no id of one chunk repeated an earlier chunk's.

    A run reads its input twice (items into the store, then the episodes); the second read of the
    same, unchanged file (same size and modification time) then checks ids within each chunk only,
    and holds no ``SeenIds`` (24 bytes an id, 24 MB of a million-row job) for what cannot differ.
    """

    stamp: tuple[int, int] | None = None
    """(size, mtime_ns) of the file when a complete read found no repeat across chunks."""

    @staticmethod
    def stamp_of(source: str) -> tuple[int, int] | None:
        """Return the file's (size, mtime_ns); None for a ``duckdb:`` query (its rows cannot be stamped)."""
        if source.startswith("duckdb:"):
            return None
        found = Path(source).stat()
        return found.st_size, found.st_mtime_ns


def iter_loaded(source: str, cols: Columns, *, pairwise: bool = False, human: HumanParser | None = None,
                skip_bad_rows: bool = False, chunk_rows: int | None = None,
                distinct: DistinctIds | None = None) -> Iterator[Loaded]:
    """Yield ``source``'s items and set-aside rows, ``chunk_rows`` rows at a time (the input is streamed).

    A bad row stops the read unless ``skip_bad_rows``; ids are checked for repeats across the
    whole input: within a chunk exactly, against earlier chunks by digest (``SeenIds``, 24 bytes
    an id), so neither the rows nor the ids themselves are kept. With ``distinct``, a complete read
    that finds no repeat across chunks records so, and a later read of the unchanged file skips
    that check (``DistinctIds``).
    """
    name, rows = read_rows(source)
    stem = Path(name.removeprefix("duckdb:")).stem
    chunk_rows = chunk_rows or CHUNK_ROWS
    stamp = DistinctIds.stamp_of(source) if distinct is not None else None
    known_distinct = distinct is not None and stamp is not None and distinct.stamp == stamp
    reading = _ChunkIds(name, cols, skip_bad_rows, across=not known_distinct)
    chunk, count = Loaded(), 0
    for line, raw, row in rows:
        try:
            if isinstance(row, RowProblem):
                raise row
            item = build_item(row, cols, pairwise=pairwise, human=human, fallback_id=f"{stem}:{line}",
                              file=name, line=line)
            reading.check_in_chunk(item)
        except RowProblem as problem:
            if not skip_bad_rows:
                reading.settle(chunk)  # a row above that repeats an earlier chunk's id is the first error
                raise InputError(problem.message(), "or pass --skip-bad-rows", path=name, line=line) from None
            reading.quarantine(chunk, Quarantined(name, line, problem.message(), raw), problem)
        else:
            reading.keep(item, raw)
            chunk.items.append(item)
        count += 1
        if len(chunk.items) + len(chunk.quarantine) >= chunk_rows:
            reading.settle(chunk)
            yield chunk
            chunk = Loaded()
    if not count:
        raise InputError("has no rows", path=name)
    if chunk.items or chunk.quarantine:
        reading.settle(chunk)
        yield chunk
    if distinct is not None:  # a repeat, or a file changed while read, leaves nothing to rely on
        unchanged = stamp is not None and DistinctIds.stamp_of(source) == stamp
        distinct.stamp = stamp if unchanged and not reading.repeated_across else None


class _RepeatedId(RowProblem):
    """An id already used on an earlier line."""

    def __init__(self, column: str, item_id: str, first_line: int) -> None:
        super().__init__(column, f"id {item_id!r} already used at line {first_line}")
        self.item_id = item_id


class _ChunkIds:
    """Check for repeated ids as ``iter_loaded`` does.

    Exact within the current chunk (a dict of its ids), by digest against the earlier chunks
    (``SeenIds``) when the chunk is settled.
    """

    def __init__(self, name: str, cols: Columns, skip_bad_rows: bool, *, across: bool = True) -> None:
        self.name, self.column, self.skip_bad_rows = name, cols.id, skip_bad_rows
        self.earlier: SeenIds | None = SeenIds() if across else None
        """The earlier chunks' ids; None when they are known to be distinct (``DistinctIds``)."""
        self.repeated_across = False
        """Whether a chunk repeated an earlier chunk's id."""
        self.lines: dict[str, int] = {}
        self.raws: dict[int, str] = {}
        self.echoes: list[tuple[int, str]] = []
        """(index in the chunk's quarantine, id) of rows that repeat an id first used in this chunk."""

    def check_in_chunk(self, item: JudgeItem) -> None:
        """Raise when ``item``'s id was used earlier in this chunk."""
        if item.item_id in self.lines:
            raise _RepeatedId(self.column, item.item_id, self.lines[item.item_id])

    def keep(self, item: JudgeItem, raw: str) -> None:
        """Note a loaded item's id (and, when rows may be set aside, its raw text)."""
        self.lines[item.item_id] = item.source_line
        if self.skip_bad_rows:
            self.raws[item.source_line] = raw

    def quarantine(self, chunk: Loaded, row: Quarantined, problem: RowProblem) -> None:
        """Set a bad row aside."""
        if isinstance(problem, _RepeatedId):
            self.echoes.append((len(chunk.quarantine), problem.item_id))
        chunk.quarantine.append(row)

    def settle(self, chunk: Loaded) -> None:
        """Check the chunk's ids against the earlier chunks' and remember them.

        A repeat stops the read at its line, or (``skip_bad_rows``) moves the item to the
        quarantine; a row that repeated it within the chunk then names the id's first line too.
        """
        if self.earlier is not None:
            self._against_earlier(chunk, self.earlier)
        self.lines, self.raws, self.echoes = {}, {}, []

    def _against_earlier(self, chunk: Loaded, earlier: SeenIds) -> None:
        digested = digests([item.item_id for item in chunk.items])
        first = earlier.first_lines(digested)
        repeats = np.flatnonzero(first >= 0)
        self.repeated_across = self.repeated_across or bool(len(repeats))
        message = {
            chunk.items[i].item_id: _RepeatedId(self.column, chunk.items[i].item_id, int(first[i])).message()
            for i in repeats
        }  # by id: the message of every row that repeats it
        if len(repeats) and not self.skip_bad_rows:
            item = chunk.items[repeats[0]]
            raise InputError(message[item.item_id], "or pass --skip-bad-rows", path=self.name,
                             line=item.source_line)
        if len(repeats):
            for i, item_id in self.echoes:
                if item_id in message:
                    chunk.quarantine[i] = replace(chunk.quarantine[i], reason=message[item_id])
            for i in repeats:
                item = chunk.items[i]
                chunk.quarantine.append(Quarantined(self.name, item.source_line, message[item.item_id],
                                                    self.raws[item.source_line]))
            fresh = np.ones(len(chunk.items), dtype=bool)
            fresh[repeats] = False
            chunk.items = [item for item, keep in zip(chunk.items, fresh, strict=True) if keep]
            chunk.quarantine.sort(key=lambda q: q.line)
            digested = digested[fresh]
        earlier.add(digested, [item.source_line for item in chunk.items])


def load_items(source: str, cols: Columns, *, pairwise: bool = False, human: HumanParser | None = None,
               skip_bad_rows: bool = False) -> Loaded:
    """Every row of ``source`` as an item; a bad row stops the load unless ``skip_bad_rows``."""
    loaded = Loaded()
    for chunk in iter_loaded(source, cols, pairwise=pairwise, human=human, skip_bad_rows=skip_bad_rows):
        loaded.items += chunk.items
        loaded.quarantine += chunk.quarantine
    return loaded
