"""Open a store read-only for reports and the viewer, keeping every view that still binds.

``store.db.connect(read_only=True)`` loads each view file (``store.db.view_files``) whole and stops
at the first view that fails. A read-only store cannot be migrated, so a store written before a
newer migration (say, before ``002_ufs_criteria.sql``) fails there even though most views would
work. Reports must still open such a store: on that failure we reopen it and create the views one
statement at a time, skipping those that do not bind and saying which. The suites' sections then
meet a missing view and turn it into a note, as they do for any other missing view.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb

from uxlocal.errors import UxlocalError

_TEMPORARY = re.compile(r"CREATE\s+OR\s+REPLACE\s+(VIEW|MACRO)", re.I)
"""As in ``store.db.load_views``: views on a read-only store are temporary."""
_NAME = re.compile(r"CREATE\s+OR\s+REPLACE\s+TEMP\s+(?:VIEW|MACRO)\s+([A-Za-z0-9_]+)", re.I)


def open_store(db: str | Path) -> tuple[Any, list[str]]:
    """Open ``db`` read-only; return the connection and the views that could not be created."""
    from uxlocal.store.db import connect
    from uxlocal.store.offline import open_duckdb

    try:
        return connect(db, read_only=True), []
    except UxlocalError as exc:
        if "view definition failed" not in str(exc):
            raise
    con = open_duckdb(db, read_only=True)
    return con, load_views_leniently(con)


def load_views_leniently(con: Any) -> list[str]:
    """Create every view and macro that binds, one statement at a time; describe the ones that fail."""
    from uxlocal.store.db import view_files

    failed = []
    for file in view_files():
        sql = _TEMPORARY.sub(r"CREATE OR REPLACE TEMP \1", file.read_text(encoding="utf-8"))
        for statement in con.extract_statements(sql):
            try:
                con.execute(statement)
            except duckdb.Error as exc:
                match = _NAME.search(statement.query)
                name = match.group(1) if match else "a statement"
                failed.append(f"{file.parent.name}/{file.name}: {name}: {str(exc).splitlines()[0]}")
    return failed
