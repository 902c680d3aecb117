"""MkDocs hook: write the store reference into ``store.md`` from the SQL itself.

``<!-- uxlocal:tables -->`` becomes every table of a freshly migrated store (columns, types and the
comment the migration gives each column); ``<!-- uxlocal:views -->`` becomes every metric view with
its header (metric, grain, source, spec, caveat). Views are read from ``db/views/*.sql`` and from
each suite's ``uxlocal/suites/**/views.sql``, so the page follows the views wherever they live.
A view without a header fails the build with ``file:line``: the header is the documentation.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

TABLES_MARK = "<!-- uxlocal:tables -->"
VIEWS_MARK = "<!-- uxlocal:views -->"
_CREATE_VIEW = re.compile(r"^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP(?:ORARY)?\s+)?VIEW\s+(\w+)", re.I)
# a header field starts a comment line or follows " | ": "metric: x | grain: y"
_FIELD = re.compile(r"(?:^|\s\|\s+)([a-z][a-z_]*):\s")
_CREATE_TABLE = re.compile(r"^\s*CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.I)
_ADD_COLUMN = re.compile(
    r"^\s*ALTER\s+TABLE\s+(\w+)\s+ADD\s+COLUMN\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)[^-]*--\s*(.+)$", re.I
)
_COLUMN_NOTE = re.compile(r"^\s+(\w+)\s+[A-Za-z][^-]*--\s*(.+)$")


class ViewDoc(NamedTuple):
    """One view's name, where it is defined and its header fields in order."""

    name: str
    path: Path
    line: int
    fields: dict[str, str]


def view_files(root: Path) -> list[Path]:
    """Every SQL file that defines metric views: the shared folder first, then each suite's."""
    shared = sorted((root / "db" / "views").glob("*.sql"))
    common = [p for p in shared if p.name == "common.sql"]
    return (
        common
        + [p for p in shared if p not in common]
        + sorted((root / "uxlocal" / "suites").glob("**/views.sql"))
    )


def parse_header(lines: list[str]) -> dict[str, str]:
    """Split ``-- key: value | key: value`` comment lines into fields; other lines continue the last."""
    fields: dict[str, str] = {}
    last = ""
    for raw in lines:
        text = raw.lstrip("-").strip()
        marks = list(_FIELD.finditer(text))
        if not marks or marks[0].start() != 0:
            head = text if not marks else text[: marks[0].start()]
            if last:
                fields[last] = f"{fields[last]} {head.strip()}".strip()
        for i, mark in enumerate(marks):
            end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
            last = mark.group(1)
            value = text[mark.end():end].strip()
            fields[last] = f"{fields[last]}; {value}" if last in fields else value
    return fields


def parse_views(path: Path) -> list[ViewDoc]:
    """Every view in one SQL file with the comment block right above it; a bare view is an error."""
    views: list[ViewDoc] = []
    block: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.lstrip().startswith("--"):
            block.append(line.strip())
            continue
        match = _CREATE_VIEW.match(line)
        if match:
            fields = parse_header(block)
            if "metric" not in fields:
                raise ValueError(
                    f"{path}:{number}: view {match.group(1)} has no '-- metric: ... | grain: ...' header"
                )
            views.append(ViewDoc(match.group(1), path, number, fields))
        block = []
    return views


def views_markdown(root: Path) -> str:
    """Return the views section: one heading per file, one entry per view with its header fields."""
    out: list[str] = []
    for path in view_files(root):
        views = parse_views(path)
        if not views:
            continue
        rel = path.relative_to(root).as_posix()
        out.append(
            f"### {_file_title(path)}\n\n`{rel}`: {len(views)} view{'s' if len(views) != 1 else ''}.\n"
        )
        for view in views:
            out.append(f"#### `{view.name}`\n")
            for key, value in view.fields.items():
                label = "what" if key == "metric" else key
                text = value.removeprefix(view.name).lstrip(" :-") if key == "metric" else value
                if text:
                    out.append(f"- **{label}**: {_escape(text)}")
            out.append("")
    return "\n".join(out)


def tables_markdown() -> str:
    """Return the tables of a store migrated from nothing, with the migrations' column comments."""
    import duckdb

    from uxlocal import paths
    from uxlocal.store.db import migrate

    con = duckdb.connect()
    migrate(con)
    rows = con.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position").fetchall()
    con.close()
    notes = column_notes(sorted((paths.db_dir() / "migrations").glob("*.sql")))
    out: list[str] = []
    current = ""
    for table, column, dtype in rows:
        if table != current:
            out.append(f"\n### `{table}`\n\n| column | type | note |\n|---|---|---|")
            current = table
        out.append(f"| `{column}` | {dtype} | {_escape(notes.get((table, column), ''))} |")
    return "\n".join(out) + "\n"


def column_notes(files: list[Path]) -> dict[tuple[str, str], str]:
    """Return the trailing ``-- comment`` of each column in CREATE TABLE blocks and ADD COLUMN lines."""
    notes: dict[tuple[str, str], str] = {}
    for path in files:
        table = ""
        for line in path.read_text(encoding="utf-8").splitlines():
            if created := _CREATE_TABLE.match(line):
                table = created.group(1)
            elif line.startswith(")"):
                table = ""
            elif added := _ADD_COLUMN.match(line):
                notes[(added.group(1), added.group(2))] = added.group(3).strip()
            elif table and (col := _COLUMN_NOTE.match(line)):
                notes[(table, col.group(1))] = col.group(2).strip()
    return notes


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs entry point: fill the markers of the page that holds them."""
    if TABLES_MARK not in markdown and VIEWS_MARK not in markdown:
        return markdown
    root = Path(config.config_file_path).resolve().parent
    if TABLES_MARK in markdown:
        markdown = markdown.replace(TABLES_MARK, tables_markdown())
    return markdown.replace(VIEWS_MARK, views_markdown(root))


def _file_title(path: Path) -> str:
    return path.parent.name if path.name == "views.sql" else path.stem


def _escape(text: str) -> str:
    """Render SQL comments as Markdown text: no table breaks, no tags, no emphasis from ``U*(q)``."""
    return text.replace("|", "\\|").replace("<", "&lt;").replace("*", "\\*")
