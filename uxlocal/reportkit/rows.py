"""SQL helpers a report section's figures use: rows as dicts, ``IN`` lists, and ``NoData``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class NoData(Exception):
    """Raised by a figure function with the reason it has nothing to draw for these runs."""


def rows_of(con: Any, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """Query result as dicts keyed by column name."""
    cur = con.execute(sql, list(params))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def in_list(values: Sequence[Any]) -> str:
    """``(?, ?, ...)`` for a SQL ``IN`` with one placeholder per value."""
    return "(" + ", ".join("?" for _ in values) + ")" if values else "(NULL)"
