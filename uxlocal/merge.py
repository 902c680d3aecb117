"""Merge stores (shards of one run, or any runs) into a new store, with duplicate detection.

``--shard I/N`` is not part of a run's identity, so every shard of a run writes the same run id;
merging their stores gives the store an unsharded run would have written, and the metric views
over it give the same numbers. Inputs are attached read-only (DuckDB ``ATTACH``); only ``OUT``
is written, and it must not exist yet (pass an earlier merge as one of the inputs instead).

Rules, by kind of table (new tables from later migrations fall in by their columns):

- **Episode tables** (those with ``run_id`` and ``episode_id``: episodes, turns, tool_calls,
  verdicts, run_generations and suites' own tables): every episode comes whole from one input,
  its owner. Rows of episodes that never finished (a killed shard) have no episode row and are
  left out, as a resume would delete them.
- **Keyed tables**: generations (request_hash), models (model_identity), run_models (run_id,
  role), items (run_id, task, item_id): the first copy wins. Two inputs with different text for
  one request hash (a non-deterministic server) are counted and reported.
- **runs**: one row per run id: earliest start, latest end, summed wall time and engine counters;
  ``config.shard`` lists the shards merged (null once every shard of ``N`` is there); status is
  ``done`` only when the shards are complete and all done (else ``running``: the unsharded command
  on ``OUT`` resumes the missing episodes).
- **Everything else**: distinct union.

A duplicate is an episode present in more than one input. Identical copies (same status,
termination and request hashes in order) merge silently; copies that differ stop the merge
unless ``keep="first"`` (then a finished copy wins over a failed one, then the earlier input).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import duckdb

from uxlocal.errors import InputError, UxlocalError
from uxlocal.store.db import connect, json_value

KEYED_TABLES: dict[str, tuple[str, ...]] = {
    "generations": ("request_hash",),
    "models": ("model_identity",),
    "run_models": ("run_id", "role"),
    "items": ("run_id", "task", "item_id"),
}
SKIPPED_TABLES = {"_uxlocal_migrations", "runs"}
"""``_uxlocal_migrations`` is written by ``connect``; ``runs`` is combined in Python."""
Keep = Literal["error", "first"]


@dataclass
class MergedRun:
    """One run id in the merged store."""

    run_id: str
    suite: str
    shards: list[str]
    complete: bool
    status: str
    episodes_done: int = 0


@dataclass
class MergeReport:
    """What a merge did, for the CLI to print."""

    out: Path
    inputs: list[Path]
    runs: list[MergedRun] = field(default_factory=list)
    episodes: int = 0
    identical_duplicates: int = 0
    conflicting_duplicates: int = 0
    generation_conflicts: int = 0
    notes: list[str] = field(default_factory=list)


def merge_stores(out: Path, inputs: Iterable[Path], *, keep: Keep = "error") -> MergeReport:
    """Write a new store ``out`` holding every input's runs; see the module docstring for the rules."""
    out, sources = Path(out), [Path(p) for p in inputs]
    _check_paths(out, sources)
    report = MergeReport(out, sources)
    con = connect(out)
    try:
        for i, source in enumerate(sources):
            _attach(con, i, source)
        _check_migrations(con, sources)
        _episode_owners(con, sources, keep, report)
        columns = _all_columns(con)
        con.execute("BEGIN")
        for table in _tables(con):
            _merge_table(con, table, columns, len(sources), report)
        _merge_runs(con, columns, len(sources), report)
        con.execute("COMMIT")
        con.execute("CHECKPOINT")
        _summarise(con, report)
    except BaseException:
        _rollback(con)
        con.close()
        _remove_store(out)
        raise
    con.close()
    return report


def _check_paths(out: Path, sources: list[Path]) -> None:
    if not sources:
        raise InputError("nothing to merge", "give at least one input store")
    if out.exists():
        raise InputError("output store already exists",
                         "choose a new path, or pass this store as one of the inputs", path=out)
    resolved = [p.resolve() for p in sources]
    for path, real in zip(sources, resolved, strict=True):
        if not path.is_file():
            raise InputError("no such store", path=path)
        if resolved.count(real) > 1:
            raise InputError("given twice", path=path)
    if out.resolve() in resolved:
        raise InputError("output is also an input", path=out)


def _attach(con: duckdb.DuckDBPyConnection, i: int, path: Path) -> None:
    quoted = str(path).replace("'", "''")
    try:
        con.execute(f"ATTACH '{quoted}' AS in{i} (READ_ONLY)")
    except duckdb.Error as exc:
        first = str(exc).splitlines()[0]
        raise UxlocalError(f"{path}: cannot open read-only: {first} (is a run still writing to it?)") from exc


def _applied(con: duckdb.DuckDBPyConnection, schema: str) -> set[str]:
    return {r[0] for r in con.execute(f"SELECT name FROM {schema}._uxlocal_migrations").fetchall()}


def _check_migrations(con: duckdb.DuckDBPyConnection, sources: list[Path]) -> None:
    """Refuse inputs newer than this uxlocal; older ones are fine (new columns stay NULL)."""
    ours = _applied(con, "main")
    for i, source in enumerate(sources):
        try:
            theirs = _applied(con, f"in{i}.main")
        except duckdb.Error as exc:
            raise InputError("not a uxlocal store (no _uxlocal_migrations table)", path=source) from exc
        newer = sorted(theirs - ours)
        if newer:
            raise InputError(f"written by a newer uxlocal (migrations {', '.join(newer)})",
                             "merge with that version of uxlocal", path=source)


def _tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    rows = con.execute("SELECT table_name FROM information_schema.tables "
                       "WHERE table_catalog = current_database() AND table_schema = 'main' "
                       "AND table_type = 'BASE TABLE' ORDER BY table_name").fetchall()
    return [r[0] for r in rows if r[0] not in SKIPPED_TABLES]


def _all_columns(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], list[str]]:
    """(catalog, table) -> column names in order, for the output (``main``) and every input."""
    rows = con.execute("SELECT CASE WHEN database_name = current_database() THEN 'main' "
                       "ELSE database_name END, table_name, column_name "
                       "FROM duckdb_columns() WHERE schema_name = 'main' "
                       "ORDER BY database_name, table_name, column_index").fetchall()
    found: dict[tuple[str, str], list[str]] = {}
    for catalog, table, column in rows:
        found.setdefault((catalog, table), []).append(column)
    return found


def _episode_owners(con: duckdb.DuckDBPyConnection, sources: list[Path], keep: Keep,
                    report: MergeReport) -> None:
    """``_owner(run_id, episode_id, src)``: which input each episode is taken from."""
    parts = [f"""SELECT {i} AS src, e.run_id, e.episode_id, e.status,
                        e.status || '|' || coalesce(e.termination, '') || '|' || coalesce(g.hashes, '')
                            AS signature
                 FROM in{i}.main.episodes e
                 LEFT JOIN (SELECT run_id, episode_id,
                                   string_agg(seq || ':' || request_hash, ','
                                              ORDER BY seq, request_hash) AS hashes
                            FROM in{i}.main.run_generations GROUP BY run_id, episode_id) g
                        USING (run_id, episode_id)""" for i in range(len(sources))]
    con.execute("CREATE TEMP TABLE _copies AS " + " UNION ALL ".join(parts))
    con.execute("""CREATE TEMP TABLE _owner AS
                   SELECT run_id, episode_id,
                          arg_min(src, (CASE WHEN status = 'done' THEN 0 ELSE 1 END) * 100000 + src) AS src,
                          count(*) AS copies, count(DISTINCT signature) AS variants,
                          list(src ORDER BY src) AS sources
                   FROM _copies GROUP BY run_id, episode_id""")
    report.identical_duplicates = _count(con, "SELECT count(*) FROM _owner WHERE copies > 1 AND variants = 1")
    conflicts = con.execute("SELECT run_id, episode_id, sources FROM _owner WHERE variants > 1 "
                            "ORDER BY run_id, episode_id").fetchall()
    report.conflicting_duplicates = len(conflicts)
    if conflicts and keep == "error":
        shown = "; ".join(f"{run}/{ep} in {', '.join(str(sources[s]) for s in srcs)}"
                          for run, ep, srcs in conflicts[:5])
        more = " ..." if len(conflicts) > 5 else ""
        raise UxlocalError(f"{len(conflicts)} episode(s) appear in more than one input with different "
                           f"results ({shown}{more}); rerun with --on-conflict first to take each from "
                           "the first input that finished it")
    if conflicts:
        report.notes.append(f"{len(conflicts)} conflicting duplicate episode(s): "
                            "kept the first finished copy")


def _merge_table(con: duckdb.DuckDBPyConnection, table: str, columns: dict[tuple[str, str], list[str]],
                 n_inputs: int, report: MergeReport) -> None:
    ours = columns[("main", table)]
    for i in range(n_inputs):
        theirs = set(columns.get((f"in{i}", table), []))
        cols = [c for c in ours if c in theirs]
        if not cols:
            continue  # an older input without this table
        listed = ", ".join(f'"{c}"' for c in cols)
        prefixed = ", ".join(f't."{c}"' for c in cols)
        src = f'in{i}.main."{table}"'
        if {"run_id", "episode_id"} <= set(cols):
            con.execute(f'INSERT INTO main."{table}" ({listed}) SELECT {prefixed} FROM {src} t '
                        "JOIN _owner o ON o.run_id = t.run_id AND o.episode_id = t.episode_id "
                        f"AND o.src = {i}")
        elif table in KEYED_TABLES:
            key = KEYED_TABLES[table]
            match = " AND ".join(f'm."{k}" IS NOT DISTINCT FROM t."{k}"' for k in key)
            if table == "generations":
                report.generation_conflicts += _count(
                    con, f"SELECT count(*) FROM {src} t JOIN main.generations m USING (request_hash) "
                    "WHERE m.text IS DISTINCT FROM t.text OR m.valid IS DISTINCT FROM t.valid")
            con.execute(f'INSERT INTO main."{table}" ({listed}) SELECT {prefixed} FROM {src} t '
                        f'WHERE NOT EXISTS (SELECT 1 FROM main."{table}" m WHERE {match}) '
                        f"QUALIFY row_number() OVER (PARTITION BY {', '.join(f't.{k}' for k in key)}) = 1")
        else:
            con.execute(f'INSERT INTO main."{table}" ({listed}) SELECT {listed} FROM {src} '
                        f'EXCEPT SELECT {listed} FROM main."{table}"')
    if table == "generations" and report.generation_conflicts:
        report.notes.append(f"{report.generation_conflicts} request(s) have different outputs in different "
                            "inputs (a non-deterministic engine?); kept the first")


def _merge_runs(con: duckdb.DuckDBPyConnection, columns: dict[tuple[str, str], list[str]], n_inputs: int,
                report: MergeReport) -> None:
    ours = columns[("main", "runs")]
    copies: dict[str, list[dict[str, Any]]] = {}
    for i in range(n_inputs):
        cur = con.execute(f"SELECT * FROM in{i}.main.runs ORDER BY started_at")
        names = [d[0] for d in cur.description]
        for row in cur.fetchall():
            record = dict(zip(names, row, strict=True))
            copies.setdefault(record["run_id"], []).append(record)
    for run_id, rows in copies.items():
        merged = combine_runs(rows)
        con.execute(f"INSERT INTO runs ({', '.join(ours)}) VALUES ({', '.join('?' for _ in ours)})",
                    [merged.get(c) for c in ours])
        config = json_value(merged["config"])
        shards = [s for s in str(config.get("shard") or "").split(",") if s]
        report.runs.append(MergedRun(run_id, merged["suite"], shards, not shards, merged["status"]))


def combine_runs(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One ``runs`` row from the copies of a run id in several inputs (see the module docstring)."""
    identities = {r["config_sha256"] for r in rows}
    if len(identities) > 1:
        raise UxlocalError(f"run {rows[0]['run_id']} has different configurations in different inputs")
    configs = [dict(json_value(r["config"])) for r in rows]
    shards = [c.get("shard") for c in configs]
    complete = shards_complete(shards)
    merged = dict(rows[0])
    config = dict(configs[0])
    config["shard"] = None if complete else ",".join(sorted({s for s in shards if s}, key=_shard_order))
    merged["config"] = json.dumps(config, sort_keys=True)
    merged["started_at"] = min(r["started_at"] for r in rows)
    ends = [r.get("ended_at") for r in rows]
    merged["ended_at"] = None if any(e is None for e in ends) else max(e for e in ends if e is not None)
    for counter in ("wall_s", "engine_calls", "engine_busy_s"):
        values = [r.get(counter) for r in rows if r.get(counter) is not None]
        merged[counter] = sum(values) if values else None
    statuses = {r["status"] for r in rows}
    merged["status"] = ("failed" if "failed" in statuses else
                        "done" if complete and statuses == {"done"} else "running")
    return merged


def shards_complete(shards: list[str | None]) -> bool:
    """Whether the merged shards cover the whole run (an unsharded copy always does)."""
    if any(s is None for s in shards):
        return True
    parsed = {_shard_order(s) for s in shards if s}
    counts = {n for _, n in parsed}
    return len(counts) == 1 and {i for i, _ in parsed} == set(range(next(iter(counts))))


def _shard_order(shard: str) -> tuple[int, int]:
    index, _, count = shard.partition("/")
    try:
        return int(index), int(count)
    except ValueError:
        return (-1, -1)


def _summarise(con: duckdb.DuckDBPyConnection, report: MergeReport) -> None:
    report.episodes = _count(con, "SELECT count(*) FROM episodes")
    done = dict(con.execute("SELECT run_id, count(*) FROM episodes WHERE status = 'done' "
                            "GROUP BY run_id").fetchall())
    for run in report.runs:
        run.episodes_done = int(done.get(run.run_id, 0))
        if not run.complete:
            report.notes.append(f"run {run.run_id}: only shard(s) {', '.join(run.shards)} merged; run the "
                                f"missing shard(s) with --db {report.out} (or merge their stores) to "
                                "complete it")


def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    row = con.execute(sql).fetchone()
    return int(row[0]) if row else 0


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    try:
        con.execute("ROLLBACK")
    except duckdb.Error:
        pass  # no transaction was open


def _remove_store(path: Path) -> None:
    """Remove a failed merge's output, so no half-written store is left behind."""
    for leftover in (path, path.with_name(path.name + ".wal")):
        if leftover.exists():
            leftover.unlink()
