"""The one place uxlocal opens DuckDB, set up so that DuckDB itself can never reach the network.

DuckDB installs and loads "known" extensions on demand, downloading them from
extensions.duckdb.org: ``httpfs`` for an ``https://`` or ``s3://`` path, ``sqlite_scanner`` for
``ATTACH ... (TYPE sqlite)``; ``INSTALL x`` fetches one explicitly. Stores hold real people's
conversations and uxlocal runs on air-gapped boxes, so every connection opened here (measured on
duckdb 2.0.1, see tests/unit/test_store_offline.py):

- has auto-install and auto-load off and refuses community extensions;
- looks for extensions only in ``NO_EXTENSIONS_DIR``, a folder uxlocal never creates, and names it
  as both repositories too: a user's own ``~/.duckdb/extensions`` is never loaded, and DuckDB's
  built-ins (json, parquet, icu) are all there is;
- locks its configuration, so SQL cannot ``SET`` any of this back (nor anything else).

Its memory is capped too (``memory_limit``, set before the lock): DuckDB's default, 80 % of the
machine, let a million-verdict judge run keep about 4 KB of cached blocks per conversation.
``UXLOCAL_DUCKDB_MEMORY`` (a DuckDB size such as ``2GB``; default ``default_memory_mb``, 64 MB plus
32 MB per DuckDB thread, more for a store larger than 160 MB: ``STORE_SHARE``) changes the cap
and ``UXLOCAL_DUCKDB_THREADS`` DuckDB's thread count (default: one per two cores, at most two:
``default_threads``). Large sorts, joins and aggregates spill to a temporary folder beside the
store; what cannot spill (a join on one key value, the judge report's ``ORDER BY`` of a million
wide rows, the generations table's key index, the AUROC view's window over every verdict, the
report's GROUP BY of every cluster) was taken out of the judge's views, report and store, which
run under 96 MB (64 MB with one thread) on a million verdicts (docs/performance.md, the harness
ceiling).

``enable_external_access`` stays on: it would also forbid local files (``COPY ... TO
'x.parquet'``, which is how people export, and the ``ATTACH`` that ``uxlocal merge`` uses).
Explicit ``INSTALL``/``LOAD`` (``INSTALL x FROM 'https://...'`` names its own repository) is
refused before DuckDB sees it, by ``refuse_extension_statements``, for SQL a person typed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

from uxlocal import settings
from uxlocal.errors import InputError

NO_EXTENSIONS_DIR = Path(__file__).resolve().parent / "_no_duckdb_extensions"
"""Never created. It is a fixed path, not one under ``UXLOCAL_HOME``: DuckDB refuses a second
connection to an open file with a different configuration."""

OFFLINE_CONFIG: dict[str, str | bool] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "extension_directory": str(NO_EXTENSIONS_DIR),
    "autoinstall_extension_repository": str(NO_EXTENSIONS_DIR),
    "custom_extension_repository": str(NO_EXTENSIONS_DIR),
    # freed memory goes back to the system within seconds: without this, what a large join had held
    # stayed in the process (~90 MB after one report view over a million verdicts)
    "allocator_background_threads": True,
    "lock_configuration": True,  # last, so nothing above can be changed from SQL afterwards
}

OFFLINE_MESSAGE = ("refused: uxlocal works offline and never installs or loads DuckDB extensions "
                   "(json and parquet are built in; read and write local files with SQL)")

_UPDATE_EXTENSIONS = re.compile(r"\s*update\s+extensions\b", re.IGNORECASE)
"""``UPDATE EXTENSIONS`` downloads too; this Python client cannot name its statement type."""


MEMORY_BASE_MB = 64
MEMORY_PER_THREAD_MB = 32
"""DuckDB's memory cap unless ``UXLOCAL_DUCKDB_MEMORY`` says otherwise: the base plus this much per
DuckDB thread (``default_memory_mb``: 96 MB with one thread, 128 MB with two), since each thread's
operators hold their own share of the cap. A million-verdict judge run writes at full speed and
reports under it (measured in the harness ceiling, docs/performance.md): nothing DuckDB must hold
grows with the job since the generations table lost its key index (migration 003), the AUROC view
its window over every verdict and the report its GROUP BY of every cluster; what a larger cap buys
is cached table blocks and larger checkpoints. The judge alone runs under 64 MB with one thread
(a million-verdict run then peaked ~30 MB lower), but UXBench's breakdown view and the UFS plots'
queries need more than 80 MB even on a small store (their unions of grouped views), hence the base."""


def default_memory_mb(threads: int) -> int:
    """The cap (MB) for ``threads`` DuckDB threads when nothing else is asked (``MEMORY_PER_THREAD_MB``)."""
    return MEMORY_BASE_MB + MEMORY_PER_THREAD_MB * threads


MEMORY_ENV = "UXLOCAL_DUCKDB_MEMORY"
THREADS_ENV = "UXLOCAL_DUCKDB_THREADS"

MAX_DEFAULT_THREADS = 2
"""DuckDB's threads unless ``UXLOCAL_DUCKDB_THREADS`` says otherwise: one per two cores the process
may use, from 1 to this. A judge run waits on uxlocal's own Python thread (scheduling, prompts,
label walks), not on DuckDB, whose work is appending batches: on a 2-core box one DuckDB thread
judged faster (4,100 against 3,700 verdicts/s at 100k) and a million-verdict run peaked lower (each
thread's operators hold their own share of the cap). Both counts were measured under a 96 MB cap;
large report queries on a big machine can ask for more with the variable."""


def default_threads() -> int:
    """One DuckDB thread per two usable cores, at least 1 and at most ``MAX_DEFAULT_THREADS``."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(MAX_DEFAULT_THREADS, cores // 2))


STORE_SHARE = 0.6
"""Default cap for a store larger than ``LARGE_STORE_MB``: this share of its file size.
The views' joins and aggregates and a merge's anti-joins over a store of several million rows spill
to disk under a small cap (slower, never wrong); a larger store gets more room for them. A run
that outgrows its cap stops with DuckDB's out-of-memory error (the CLI says what to do); run again
(it resumes) and the cap, taken from the now larger store, is larger."""


_store_caps: dict[str, str] = {}
"""The cap each store got at its first opening in this process: DuckDB refuses a second
connection to an open file with a different configuration, and the file grows meanwhile."""


LARGE_STORE_MB = int(default_memory_mb(1) / STORE_SHARE)
"""Stores larger than this (MB on disk, 160) get ``STORE_SHARE`` of their size as the default cap,
when that is more than the threads' default."""


def _store_cap(path: Path, threads: int) -> str:
    return f"{max(int(path.stat().st_size / 1e6 * STORE_SHARE), default_memory_mb(threads))}MB"


AUTO_CHECKPOINT_WAL = "1GiB"
"""DuckDB checkpoints by itself once the write-ahead log holds this much (its default is 16 MB).
``StoreWriter`` checkpoints at row-group boundaries instead (``CHECKPOINT_ROWS``); this is the
backstop for writes outside it and for rows so large that a row group's log passes 1 GiB. At 16 MB
each checkpoint rewrote the row group still filling: a million-verdict judge run spent 2-5 s in
each of a dozen of them, its memory spiking ~100 MB meanwhile, and its store came out ~20 % larger."""


def resource_config(path: str | Path | None = None) -> dict[str, str | int]:
    """DuckDB's memory cap and thread count from the environment, else from the store's size
    (see the module docstring and ``STORE_SHARE``)."""
    asked_threads = settings.current().duckdb_threads
    if asked_threads and (not asked_threads.isdigit() or int(asked_threads) < 1):
        raise InputError(None, None, f"{THREADS_ENV}={asked_threads!r} is not a positive whole number")
    threads = int(asked_threads) if asked_threads else default_threads()
    asked = settings.current().duckdb_memory  # a cap the person set is kept, even the default's size
    memory = asked or f"{default_memory_mb(threads)}MB"
    if not asked and path is not None and str(path) != ":memory:" and Path(path).is_file():
        memory = _store_caps.setdefault(str(Path(path).resolve()), _store_cap(Path(path), threads))
    return {"memory_limit": memory, "threads": threads}


def open_duckdb(path: str | Path, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open a DuckDB database with ``OFFLINE_CONFIG`` and ``resource_config``; every connection
    uxlocal makes comes from here."""
    config = {**resource_config(path), "checkpoint_threshold": AUTO_CHECKPOINT_WAL,
              **OFFLINE_CONFIG}  # the lock last: OFFLINE_CONFIG ends with it
    try:
        return duckdb.connect(str(path), read_only=read_only, config=config)
    except (duckdb.InvalidInputException, duckdb.ParserException) as exc:
        if "memory" not in str(exc).lower():
            raise
        raise InputError(None, None, f"{MEMORY_ENV}={config['memory_limit']!r}: {exc}",
                         "give a DuckDB size such as 512MB or 4GB") from exc


def refuse_extension_statements(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Raise ``InputError`` (exit 2) naming the first INSTALL/LOAD/UPDATE EXTENSIONS statement in ``sql``.

    Parsing runs nothing, so a refused script has no effect at all. A syntax error is left to
    the caller's ``execute`` (it raises ``duckdb.ParserException`` here as there).
    """
    for number, statement in enumerate(con.extract_statements(sql), start=1):
        if _touches_extensions(statement):
            words = " ".join(statement.query.split())[:60]
            raise InputError(None, None, f"SQL statement {number} ({words}): {OFFLINE_MESSAGE}")


def _touches_extensions(statement: duckdb.Statement) -> bool:
    try:
        kind = statement.type
    except ValueError:  # a statement kind newer than the Python enum (UPDATE EXTENSIONS is one)
        return bool(_UPDATE_EXTENSIONS.match(statement.query))
    return kind == duckdb.StatementType.LOAD  # INSTALL, FORCE INSTALL and LOAD all parse as LOAD
