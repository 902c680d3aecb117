"""Code shape (issue 44): no DuckDB query hands rows to a plan, a batch or a report in an order DuckDB chose.

DuckDB returns the rows of a query without ``ORDER BY`` in whatever order its threads and its memory
cap produce (a parallel hash join or aggregate, a spill), so such an order must never reach an
episode plan, an engine batch, a bootstrap draw or a report table. Every ``SELECT`` written in
``uxlocal/`` either has an ``ORDER BY`` or is in ``REVIEWED`` with the reason its order cannot
matter. Aggregates that return one row (``SELECT count(*) ...`` without ``GROUP BY``) and
``LIMIT 0`` need no entry. In the views (``*.sql``), aggregates whose result has an order
(``list``, ``array_agg``, ``string_agg``, ``group_concat``, ``first``, ``last``) must order inside.

The rule checks that an ``ORDER BY`` is there, not that it is total (a unique key last): that part
is reviewed with the query.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "uxlocal"

SELECT = re.compile(r"(?is)^\s*\(?\s*(select|with)\b.*\bfrom\b")
ORDERED = re.compile(r"(?i)\border\s+by\b")
ONE_ROW = re.compile(r"(?is)^\s*select\s+\(?\s*(select\s+)?(count|sum|min|max|avg|bool_or|bool_and)\s*\(")
ORDERED_AGGREGATES = re.compile(r"(?i)\b(list|array_agg|string_agg|group_concat|first|last)\s*\(")

KEY = "one row: the WHERE names the table's key (or the view's grain is one row per run)"
KEYED = "read into a set or a dict keyed by its own columns: no order survives"
SORTED = "put in order in Python right after, by a unique key"
PART = "part of a larger statement that orders (or counts) the rows"
FILE = "one file read in its own row order (DuckDB keeps insertion order by default), numbered as read"

REVIEWED: dict[tuple[str, str], str] = {
    ("uxlocal/merge.py", "SELECT name FROM {}._uxlocal_migrations"): KEYED,
    ("uxlocal/merge.py",
     "SELECT run_id, count(*) FROM episodes WHERE status = 'done' GROUP BY run_id"): KEYED,
    ("uxlocal/report/build.py", "SELECT * FROM runs WHERE run_id = ?"): KEY,
    ("uxlocal/report/build.py", "SELECT * FROM run_summary WHERE run_id = ?"): KEY,
    ("uxlocal/report/build.py", "SELECT suite FROM runs WHERE run_id = ?"): KEY,
    ("uxlocal/report/viewer/queries.py", "SELECT * FROM runs WHERE run_id = ?"): KEY,
    ("uxlocal/report/viewer/queries.py", "SELECT * FROM {}{}"): PART,
    ("uxlocal/report/viewer/queries.py", "SELECT e.*, r.suite FROM episodes e JOIN runs r USING (run_id) "
     "WHERE e.run_id = ? AND e.episode_id = ?"): KEY,
    ("uxlocal/report/viewer/queries.py", "SELECT data, source_file, source_line FROM items "
     "WHERE run_id = ? AND item_id = ?"): KEY,
    ("uxlocal/suites/uxbench/data.py", "SELECT * FROM read_parquet(?)"): FILE,
    ("uxlocal/store/db.py", "SELECT name FROM _uxlocal_migrations"): KEYED,
    ("uxlocal/store/known_hashes.py", "SELECT CAST(('0x' || left(request_hash, {})) AS UBIGINT) "
     "FROM generations WHERE regexp_full_match(left(request_hash, {}), '[0-9a-f]+')"): SORTED,
    ("uxlocal/store/runs.py", "SELECT status FROM runs WHERE run_id = ?"): KEY,
    ("uxlocal/store/runs.py", "SELECT episode_id FROM episodes WHERE run_id = ? AND status = 'done'"): KEYED,
    ("uxlocal/store/runs.py", "SELECT episode_id FROM episodes WHERE run_id = ? AND status = 'done' "
     "AND episode_id IN (SELECT unnest(?))"): KEYED,
    ("uxlocal/suites/judge/report.py", "SELECT {} FROM judge_verdicts WHERE run_id = ? AND criterion = ? "
     "AND judge_role = ? AND valid AND status = 'ok'{}"): SORTED,  # ORDER BY item_id, or Arrow's sort by it
    ("uxlocal/suites/judge/report.py", "SELECT {} FROM judge_scored WHERE run_id = ? AND criterion = ? "
     "AND judge_role = ?{}"): SORTED,
    ("uxlocal/suites/judge/report.py", "SELECT t.*, s.prompt_tokens, s.cache_hits, s.generations FROM "
     "judge_throughput t JOIN run_summary s USING (run_id) WHERE run_id = ?"): KEY,
    ("uxlocal/suites/judge/suite.py", "SELECT config FROM runs WHERE run_id = ?"): KEY,
    ("uxlocal/suites/palate/report.py", "SELECT path FROM duckdb_databases() "
     "WHERE database_name = current_database()"): KEY,
    ("uxlocal/suites/palate/section.py", "SELECT role, model_name FROM run_models WHERE run_id = ? "
     "AND role LIKE 'candidate:%'"): KEYED,
    ("uxlocal/suites/selftest/suite.py",
     "SELECT * EXCLUDE (run_id) FROM selftest_summary WHERE run_id = ?"): KEY,
    ("uxlocal/suites/tau2/export.py", "SELECT role, model_name FROM run_models WHERE run_id = ?"): KEYED,
    ("uxlocal/suites/tau2/export.py", "SELECT git_commit FROM runs WHERE run_id = ?"): KEY,
    ("uxlocal/suites/tau2/export.py", "SELECT task, data FROM items WHERE run_id = ?"): SORTED,
    ("uxlocal/suites/tau2/export.py",
     "SELECT episode_id, role, cost_usd FROM episode_cost WHERE run_id = ?"): KEYED,
    ("uxlocal/suites/tau2/section.py",
     "SELECT run_id, role, model_name FROM run_models WHERE run_id IN {}"): KEYED,
    ("uxlocal/suites/tau2/suite.py", "SELECT json_extract(config, '$.seed') FROM runs WHERE run_id = ?"): KEY,
    ("uxlocal/suites/userproxy/criteria_run.py", "SELECT role, model_identity, model_name FROM run_models "
     "WHERE run_id = ?"): KEYED,
    ("uxlocal/suites/userproxy/ufs/ingest.py", "SELECT config FROM runs WHERE run_id = ?"): KEY,
    ("uxlocal/suites/userproxy/ufs/ingest.py", "SELECT data FROM items WHERE run_id = ?"): SORTED,
    ("uxlocal/suites/userproxy/ufs/report.py", "(SELECT DISTINCT {} FROM ufs_episodes {})"): PART,
    ("uxlocal/suites/uxbench/section.py", "SELECT * FROM uxbench_t1 WHERE run_id = ?"): KEY,
    ("uxlocal/suites/uxbench/suite.py", "SELECT config FROM runs WHERE run_id = ?"): KEY,
    ("uxlocal/suites/uxbench/suite.py", "SELECT * FROM uxbench_t1 WHERE run_id = ?"): KEY,
}
"""(file, query with ``{}`` for each f-string hole) -> why its row order cannot reach a result."""


def _text(node: ast.AST) -> str | None:
    """Return the static text of a string literal, an f-string (holes as ``{}``) or a ``+`` of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        return None if left is None or right is None else left + right
    return None


def queries(source: str) -> list[tuple[int, str]]:
    """(line, query on one line) of every ``SELECT``/``WITH`` literal in ``source`` (docstrings left out)."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Constant, ast.JoinedStr, ast.BinOp)):
            continue
        if isinstance(parents.get(node), (ast.BinOp, ast.JoinedStr, ast.Expr)):
            continue  # a piece of a larger literal (read whole from its root), or a docstring
        text = _text(node)
        if text is not None and SELECT.match(text):
            found.append((node.lineno, " ".join(text.split())))
    return found


def unordered(source: str) -> list[tuple[int, str]]:
    """Return the queries of ``source`` that may return several rows in an order DuckDB chooses."""
    return [(line, sql) for line, sql in queries(source)
            if not ORDERED.search(sql) and not (ONE_ROW.match(sql) and not re.search(r"(?i)group\s+by", sql))
            and not re.search(r"(?i)\blimit\s+0\b", sql)]


def _package_unordered() -> list[tuple[str, int, str]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        out += [(rel, line, sql) for line, sql in unordered(path.read_text(encoding="utf-8"))]
    return out


def test_every_query_in_uxlocal_orders_its_rows_or_is_reviewed() -> None:
    unknown = [f"{rel}:{line}: {sql}" for rel, line, sql in _package_unordered()
               if (rel, sql) not in REVIEWED]
    assert not unknown, ("queries without ORDER BY (add a total ORDER BY, or add them to REVIEWED with the "
                         "reason their order cannot matter):\n" + "\n".join(unknown))


def test_reviewed_queries_all_still_exist() -> None:
    present = {(rel, sql) for rel, _, sql in _package_unordered()}
    stale = [key for key in REVIEWED if key not in present]
    assert not stale, f"REVIEWED entries no longer in the code (remove them): {stale}"


@pytest.mark.parametrize("source, flagged", [
    ('con.execute("SELECT item_id FROM items WHERE run_id = ?")', True),  # several rows, DuckDB's order
    ('con.execute("SELECT item_id FROM items WHERE run_id = ? ORDER BY item_id")', False),  # ordered
    ('con.execute(f"SELECT {cols} FROM {view} " "WHERE run_id = ?")', True),  # f-string + literal, one query
    ('con.execute("SELECT kind FROM v WHERE run_id = ? LIMIT 1")', True),  # an arbitrary row
    ('con.execute("SELECT count(*) FROM episodes WHERE run_id = ?")', False),  # one row
    ('con.execute("SELECT run_id, count(*) FROM episodes GROUP BY run_id")', True),  # one row per group
    ('con.execute("SELECT * FROM t LIMIT 0")', False),  # no rows
    ('def f():\n    """Select rows from the store (a docstring, not a query)."""', False),
])
def test_sql_order_rule_flags_unordered_queries(source: str, flagged: bool) -> None:
    assert bool(unordered(source)) is flagged


def _calls(sql: str, start: int) -> str:
    """Return the argument text of the call whose ``(`` is at ``start``."""
    depth = 0
    for i in range(start, len(sql)):
        depth += {"(": 1, ")": -1}.get(sql[i], 0)
        if depth == 0:
            return sql[start:i + 1]
    return sql[start:]


def unordered_aggregates(sql: str) -> list[str]:
    """Return the aggregates of ``sql`` whose result has an order but no ``ORDER BY`` inside the call.

    A list, a joined string or a first value is filled in the order DuckDB's threads meet the rows.
    """
    body = re.sub(r"--[^\n]*", "", sql)
    return [match.group(0) + _calls(body, match.end() - 1)[1:] for match in ORDERED_AGGREGATES.finditer(body)
            if not ORDERED.search(_calls(body, match.end() - 1))]


def test_view_aggregates_with_an_order_order_inside() -> None:
    files = sorted([*(ROOT / "db").rglob("*.sql"), *PACKAGE.rglob("*.sql")])
    assert files
    found = [f"{path.relative_to(ROOT)}: {call}" for path in files
             for call in unordered_aggregates(path.read_text(encoding="utf-8"))]
    assert not found, "ordered aggregates without ORDER BY:\n" + "\n".join(found)


@pytest.mark.parametrize("sql, flagged", [
    ("SELECT list(name ORDER BY name) FROM t", False),  # ordered inside
    ("SELECT string_agg(task, ', ') FROM t", True),  # joined in thread order
    ("SELECT first(x) FROM t GROUP BY g", True),  # an arbitrary row's value
    ("SELECT count(*) FROM t -- list(x) in a comment", False),  # comments are not SQL
])
def test_aggregate_rule_flags_unordered_lists(sql: str, flagged: bool) -> None:
    assert bool(unordered_aggregates(sql)) is flagged
