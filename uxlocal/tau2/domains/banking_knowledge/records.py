"""How banking's tools print rows and statuses, and how they add and change rows (upstream's formats).

tau2's banking tools answer in text, not JSON: a look-up lists the rows it found as
``Found N record(s) in 'table':`` then ``i. Record ID: key`` and one ``   field: value`` line per
field (values as Python prints them: ``True``, ``1200.0``, dicts in repr form). A look-up builds
its filter as the JSON text ``{"field": "value"}`` with the value pasted in, so a value holding a
quote breaks the filter and the answer is upstream's "Invalid JSON" text; we build the same text and
parse it, so those answers match too.

Writes follow upstream's two helpers: ``add_row`` refuses a key that exists (returns ``False``,
the caller words the refusal) and ignores a table the DB lacks; ``change_row`` sets fields on a row.
"""

from __future__ import annotations

import json
from typing import Any

from .db import BankingDB

NOTHING_FOUND = "No records found"
"""The phrase every "nothing matched" answer starts with; some tools test the text for it."""


def query_text(db: BankingDB, table: str, filter_json: str = "{}") -> str:
    """Upstream's look-up answer for the rows of ``table`` matching ``filter_json`` (field = value)."""
    try:
        wanted = json.loads(filter_json) if filter_json else {}
    except json.JSONDecodeError as err:
        return f"Error: Invalid JSON: {err}"
    found = [
        (key, row)
        for key, row in db.table(table).items()
        if all(row.get(field) == value for field, value in wanted.items())
    ]
    if not found:
        return f"{NOTHING_FOUND} in '{table}'."
    lines = [f"Found {len(found)} record(s) in '{table}':\n"]
    for index, (key, row) in enumerate(found, 1):
        lines.append(f"{index}. Record ID: {key}")
        lines.extend(f"   {field}: {value}" for field, value in row.items())
        lines.append("")
    return "\n".join(lines)


def rows_where(db: BankingDB, table: str, field: str, value: object) -> str:
    """``query_text`` for one field, the filter text built as upstream pastes the value in."""
    return query_text(db, table, f'{{"{field}": "{value}"}}')


def found_any(answer: str) -> bool:
    """Whether a look-up answer lists rows (upstream tests the text, so an error counts as found)."""
    return NOTHING_FOUND not in answer and "No results found" not in answer


def add_row(db: BankingDB, table: str, key: str, row: dict[str, Any]) -> bool:
    """Add ``row`` under ``key``; ``False`` (and no change) when the key exists or the table does not."""
    if not db.has_table(table):
        return False
    rows = db.table(table)
    if key in rows:
        return False
    rows.add(key, row)
    return True


def titled(code: str) -> str:
    """``annual_fee_reversal`` as upstream shows a code to people: ``Annual Fee Reversal``."""
    return code.replace("_", " ").title()


def arguments_block(arguments: dict[str, Any]) -> str:
    """Write the ``Arguments:`` JSON block upstream's tools echo (two-space indent)."""
    return json.dumps(arguments, indent=2)
