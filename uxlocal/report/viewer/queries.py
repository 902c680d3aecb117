"""What the viewer reads from the store: runs, a filtered episode index, one episode in full.

Layer contract: SQL over an open read-only connection, returning plain dicts; no HTML here.
Every value a user types reaches SQL as a bound parameter, never as text spliced into a query.
The violation-family filter reads the ``ufs_verdicts`` view and is simply absent when a store's
views do not define it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from uxlocal.store.db import json_value

PAGE_SIZE = 100
INDEX_TABLE = "_viewer_episode_index"

_INDEX = """
WITH seat AS (
    SELECT run_id, list(DISTINCT model_name ORDER BY model_name) AS models,
           any_value(model_name) FILTER (WHERE role = 'user') AS user_model
    FROM run_models GROUP BY run_id
), v AS (
    SELECT run_id, episode_id,
           list(DISTINCT CASE WHEN NOT valid THEN 'invalid' ELSE coalesce(label, 'scored') END) AS labels,
           count(*) FILTER (WHERE NOT valid) AS n_invalid
    FROM verdicts GROUP BY run_id, episode_id
){family_cte}
SELECT e.run_id, r.suite, e.episode_id, e.item_id, e.task, e.trial, e.status, e.termination, e.reward,
       e.n_turns,
       coalesce(e.info->>'$.user_id', e.info->>'$.proxy', s.user_model) AS user_key,
       coalesce(e.info->>'$.candidate', e.info->>'$.agent')           AS candidate,
       coalesce(s.models, [])                                         AS models,
       coalesce(v.labels, [])                                         AS labels,
       coalesce(v.n_invalid, 0)                                       AS n_invalid,
       {family_col}                                                   AS families
FROM episodes e
JOIN runs r USING (run_id)
LEFT JOIN seat s USING (run_id)
LEFT JOIN v USING (run_id, episode_id){family_join}
"""

_FAMILY_CTE = """, fam AS (
    SELECT run_id, episode_id, list(DISTINCT family ORDER BY family) AS families
    FROM ufs_verdicts WHERE failed AND family IS NOT NULL GROUP BY run_id, episode_id
)"""


@dataclass
class Filters:
    """The episode filters, as they arrive in the query string (empty = no filter)."""

    suite: str = ""
    run: str = ""
    model: str = ""
    verdict: str = ""
    family: str = ""
    user: str = ""
    reward_min: str = ""
    reward_max: str = ""
    page: int = 1

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> "Filters":
        """Read known keys; ignore the rest; a bad page number means page 1."""
        values: dict[str, Any] = {
            f.name: str(query.get(f.name, "")).strip() for f in fields(cls) if f.name != "page"
        }
        try:
            values["page"] = max(1, int(query.get("page", "1")))
        except ValueError:
            values["page"] = 1
        return cls(**values)

    def active(self) -> dict[str, str]:
        """Return the filters that are set (for links that keep them)."""
        return {
            f.name: str(getattr(self, f.name))
            for f in fields(self)
            if f.name != "page" and getattr(self, f.name)
        }


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


class StoreReader:
    """Queries over one read-only connection (the caller serializes access)."""

    def __init__(self, con: Any) -> None:
        self.con = con
        self.has_families = self._exists("ufs_verdicts")
        family = {
            "family_cte": _FAMILY_CTE,
            "family_col": "coalesce(f.families, [])",
            "family_join": "\nLEFT JOIN fam f USING (run_id, episode_id)",
        }
        plain = {"family_cte": "", "family_col": "CAST([] AS VARCHAR[])", "family_join": ""}
        # the read-only connection holds the file's lock, so nothing can change under the viewer:
        # build the index once (a temporary table) and let every filter and page read it
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {INDEX_TABLE} AS "
            + _INDEX.format(**(family if self.has_families else plain))
        )
        self._options: dict[str, list[str]] | None = None

    def _exists(self, name: str) -> bool:
        row = self.con.execute("SELECT count(*) FROM duckdb_views() WHERE view_name = ?", [name]).fetchone()
        if not row or not row[0]:
            return False
        try:  # a view whose definition no longer binds (older store) counts as absent
            self.con.execute(f"SELECT * FROM {name} LIMIT 0")
        except Exception:
            return False
        return True

    def _rows(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(sql, params or [])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]

    def runs(self) -> list[dict[str, Any]]:
        """Every run with its summary counts and models, newest first."""
        return self._rows(
            "SELECT r.run_id, r.suite, r.status, r.started_at, r.config_sha256, "
            "(SELECT count(*) FROM episodes e WHERE e.run_id = r.run_id AND e.status = 'done') AS done, "
            "(SELECT count(*) FROM episodes e WHERE e.run_id = r.run_id AND e.status <> 'done') AS failed, "
            "(SELECT string_agg(role || '=' || model_name, ', ' ORDER BY role) FROM run_models m "
            " WHERE m.run_id = r.run_id) AS models "
            "FROM runs r ORDER BY r.started_at DESC, r.run_id"
        )

    def run(self, run_id: str) -> dict[str, Any] | None:
        """One run row, or None."""
        rows = self._rows("SELECT * FROM runs WHERE run_id = ?", [run_id])
        return rows[0] if rows else None

    def options(self) -> dict[str, list[str]]:
        """Return the values each select can take, from the whole store."""
        if self._options is None:

            def distinct(expr: str) -> list[str]:
                sql = (
                    f"SELECT DISTINCT CAST(x AS VARCHAR) FROM (SELECT {expr} AS x FROM {INDEX_TABLE}) "
                    "WHERE x IS NOT NULL ORDER BY 1"
                )
                return [r[0] for r in self.con.execute(sql).fetchall()]

            self._options = {
                "suite": distinct("suite"),
                "run": distinct("run_id"),
                "model": sorted(set(distinct("unnest(models)")) | set(distinct("candidate"))),
                "verdict": distinct("unnest(labels)"),
                "family": distinct("unnest(families)"),
                "user": distinct("user_key"),
            }
        return self._options

    def _where(self, filters: Filters) -> tuple[str, list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("suite", filters.suite), ("run_id", filters.run), ("user_key", filters.user)):
            if value:
                clauses.append(f"{column} = ?")
                params.append(value)
        if filters.model:
            clauses.append("(list_contains(models, ?) OR candidate = ?)")
            params += [filters.model, filters.model]
        if filters.verdict:
            clauses.append("list_contains(labels, ?)")
            params.append(filters.verdict)
        if filters.family:
            clauses.append("list_contains(families, ?)")
            params.append(filters.family)
        for op, text in ((">=", filters.reward_min), ("<=", filters.reward_max)):
            number = _number(text) if text else None
            if number is not None:
                clauses.append(f"reward {op} ?")
                params.append(number)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def episodes(self, filters: Filters) -> tuple[int, list[dict[str, Any]]]:
        """Return (matching count, one page of matching episodes)."""
        where, params = self._where(filters)
        base = f"SELECT * FROM {INDEX_TABLE}{where}"
        total = self.con.execute(f"SELECT count(*) FROM ({base})", params).fetchone()[0]
        offset = (filters.page - 1) * PAGE_SIZE
        page = self._rows(f"{base} ORDER BY run_id, episode_id LIMIT {PAGE_SIZE} OFFSET {offset}", params)
        return int(total), page

    def episode(self, run_id: str, episode_id: str) -> dict[str, Any] | None:
        """One episode with its run, item, turns, tool calls and verdicts (grading runs' included)."""
        rows = self._rows(
            "SELECT e.*, r.suite FROM episodes e JOIN runs r USING (run_id) "
            "WHERE e.run_id = ? AND e.episode_id = ?",
            [run_id, episode_id],
        )
        if not rows:
            return None
        episode = rows[0]
        episode["info"] = json_value(episode.get("info"), lenient=True)
        key = [run_id, episode_id]
        item = self._rows(
            "SELECT data, source_file, source_line FROM items WHERE run_id = ? AND item_id = ?",
            [run_id, episode.get("item_id")],
        )
        episode["item"] = {**item[0], "data": json_value(item[0]["data"], lenient=True)} if item else None
        episode["models"] = self._rows(
            "SELECT role, model_name FROM run_models WHERE run_id = ? ORDER BY role", [run_id]
        )
        episode["turns"] = [
            {**t, "meta": json_value(t["meta"], lenient=True)}
            for t in self._rows(
                "SELECT idx, role, content, model_role, meta FROM turns WHERE run_id = ? AND episode_id = ? "
                "ORDER BY idx",
                key,
            )
        ]
        episode["tool_calls"] = [
            {**c, "arguments": json_value(c["arguments"], lenient=True)}
            for c in self._rows(
                "SELECT turn_idx, call_idx, requestor, name, arguments, ok, result, error FROM tool_calls "
                "WHERE run_id = ? AND episode_id = ? ORDER BY turn_idx, call_idx",
                key,
            )
        ]
        # each ->> in parentheses: DuckDB before 2.0 binds it looser than AND (issue 44)
        episode["verdicts"] = [
            self._verdict(v)
            for v in self._rows(
                "SELECT v.* FROM verdicts v WHERE v.run_id = ? AND v.episode_id = ? "
                "UNION ALL "
                "SELECT v.* FROM verdicts v "
                "JOIN episodes g ON g.run_id = v.run_id AND g.episode_id = v.episode_id "
                "WHERE (g.info->>'$.source_run_id') = ? AND (g.info->>'$.source_episode_id') = ? "
                "ORDER BY name",
                key + key,
            )
        ]
        return episode

    @staticmethod
    def _verdict(row: dict[str, Any]) -> dict[str, Any]:
        value = json_value(row.get("value"), lenient=True)
        evidence = value.get("evidence_turns") if isinstance(value, dict) else None
        turns = [t for t in evidence or [] if isinstance(t, int) and not isinstance(t, bool)]
        return {
            **row,
            "value": value,
            "label_probs": json_value(row.get("label_probs"), lenient=True),
            "evidence": turns,
        }
