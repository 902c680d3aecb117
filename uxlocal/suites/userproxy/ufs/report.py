"""UFS results out of the store: episode records for Python-side statistics, the frontier, tables.

The point numbers come from the SQL views (``suites/userproxy/views.sql``); this module turns view
rows into ``EpisodeRecord``s (for bootstrap intervals, which SQL does badly) and into
``FrontierRow``s (for the plot), and builds the UFS tables. ``ufs_tables`` is the one table
builder: ``uxlocal run userproxy`` prints it and the report's UFS section shows it, so the
terminal and the HTML page print the same cells.

The views' grain is the (criteria set, judge, agent, proxy) group, not the run: given run ids,
the tables show every group that has a graded trajectory in those runs, with all of that group's
graded trajectories (a proxy's numbers do not change with which of its runs you name).

Layer contract: reads the store through a given connection; writes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from uxlocal.reportkit.model import ReportTable
from uxlocal.reportkit.rows import in_list, rows_of

from .frontier import FrontierRow, Point
from .scoring import CriterionVerdict, EpisodeRecord, UFSIntervals, bootstrap_ufs, group_by


def episode_records(
    con: Any, *, criteria_set: str | None = None, judge_model: str | None = None
) -> dict[tuple[str, str, str], list[EpisodeRecord]]:
    """Graded episodes keyed (criteria_set, judge_model, agent); ``proxy`` set on each record."""
    where, params = [], []
    for column, value in (("criteria_set", criteria_set), ("judge_model", judge_model)):
        if value is not None:
            where.append(f"e.{column} = ?")
            params.append(value)
    clause = ("WHERE " + " AND ".join(where)) if where else ""
    verdicts: dict[tuple[str, str, str, str], list[CriterionVerdict]] = defaultdict(list)
    for row in con.execute(
        "SELECT v.criteria_set, v.judge_model, v.run_id, v.episode_id, v.criterion_id, v.family, v.mode, "
        "v.applicable, v.passed, v.valid FROM ufs_verdicts v ORDER BY v.criterion_id"
    ).fetchall():
        verdicts[row[:4]].append(CriterionVerdict(row[4], row[5], row[6], row[7], row[8], bool(row[9])))
    out: dict[tuple[str, str, str], list[EpisodeRecord]] = defaultdict(list)
    for row in con.execute(
        "SELECT e.criteria_set, e.judge_model, e.agent, e.proxy, e.domain, e.run_id, e.episode_id, e.reward, "
        f"e.agent_tool_calls, e.agent_questions FROM ufs_episodes e {clause} "
        "ORDER BY e.run_id, e.episode_id",
        params,
    ).fetchall():
        key = (row[0], row[1], row[5], row[6])
        out[(row[0], row[1], row[2])].append(
            EpisodeRecord(
                f"{row[5]}/{row[6]}", row[4], tuple(verdicts[key]), row[3], row[7], int(row[8]), int(row[9])
            )
        )
    return dict(out)


GROUP = ("criteria_set", "judge_model", "agent", "proxy")
"""The views' grain: one proxy graded by one judge under one criteria set, against one agent."""
FRONTIER_COLUMNS = {
    "cost": ("cost_per_sim_usd", "dominated_by", "frontier_rank"),
    "engine": ("engine_s_per_sim", "dominated_by_engine", "frontier_rank_engine"),
}
"""``ufs_frontier`` columns per axis: (x value, dominators, rank along the frontier)."""


def frontier_row(row: dict[str, Any], axis: str) -> FrontierRow:
    """One ``ufs_frontier`` view row (as a dict) as a frontier row on ``axis`` (``cost`` or ``engine``)."""
    cost, by, rank = FRONTIER_COLUMNS[axis]
    point = Point(row["proxy"], float(row[cost]), float(row["mean_ufs"]))
    return FrontierRow(point, tuple(row[by] or ()), row[rank])


def store_frontier(con: Any, *, axis: str = "cost") -> dict[tuple[str, str, str], list[FrontierRow]]:
    """Read the ``ufs_frontier`` view as frontier rows per (criteria_set, judge_model, agent).

    ``axis`` is ``cost`` (USD per simulation) or ``engine`` (engine seconds per simulation).
    """
    cost = FRONTIER_COLUMNS[axis][0]
    out: dict[tuple[str, str, str], list[FrontierRow]] = defaultdict(list)
    for row in rows_of(
        con,
        f"SELECT * FROM ufs_frontier WHERE {cost} IS NOT NULL AND mean_ufs IS NOT NULL "
        f"ORDER BY {cost}, proxy",
    ):
        out[(row["criteria_set"], row["judge_model"], row["agent"])].append(frontier_row(row, axis))
    return dict(out)


# --- the UFS tables -----------------------------------------------------------------------------------


def graded_groups_sql(run_ids: Sequence[str] | None) -> str:
    """A subquery of the groups graded in these runs (every graded group when ``run_ids`` is None)."""
    where = "" if run_ids is None else f"WHERE run_id IN {in_list(run_ids)}"
    return f"(SELECT DISTINCT {', '.join(GROUP)} FROM ufs_episodes {where})"


def group_view(con: Any, view: str, run_ids: Sequence[str] | None, order: str) -> list[dict[str, Any]]:
    """Rows of a UFS view for the groups graded in these runs, ordered by ``order``."""
    return rows_of(
        con,
        f"SELECT v.* FROM {view} v SEMI JOIN {graded_groups_sql(run_ids)} g "
        f"USING ({', '.join(GROUP)}) ORDER BY {order}",
        list(run_ids or ()),
    )


def ufs_intervals(con: Any, *, replicates: int = 2000, seed: int = 0) -> dict[tuple[str, ...], UFSIntervals]:
    """Bootstrap intervals (Mean UFS and per domain) per (criteria_set, judge_model, agent, proxy)."""
    out = {}
    for (cset, judge, agent), records in episode_records(con).items():
        for proxy, group in group_by(records, lambda e: e.proxy).items():
            out[(cset, judge, agent, proxy)] = bootstrap_ufs(group, replicates=replicates, seed=seed)
    return out


def ufs_tables(
    con: Any, run_ids: Sequence[str] | None = None, *, replicates: int = 2000, seed: int = 0
) -> list[ReportTable]:
    """Mean UFS per proxy (with intervals), UFS per domain, and failures per violation family.

    ``run_ids``: show the groups graded in these runs (None: every graded group in the store).
    Tables without rows are left out.
    """
    intervals = ufs_intervals(con, replicates=replicates, seed=seed)
    order = "criteria_set, judge_model, agent, mean_ufs DESC NULLS LAST, proxy"
    summary = group_view(con, "ufs_summary", run_ids, order)
    domains = group_view(con, "ufs_domain", run_ids, "criteria_set, judge_model, agent, proxy, domain")
    families = group_view(
        con, "ufs_family_failures", run_ids, "criteria_set, judge_model, agent, proxy, failures DESC, family"
    )
    user_only = group_view(con, "ufs_user_only_tasks", run_ids, "criteria_set, judge_model, agent, proxy, domain")
    tables = (_by_proxy(summary, intervals), _by_domain(domains), _by_family(families), _user_only(user_only))
    return [t for t in tables if t.rows]


def _f(value: Any, digits: int = 3) -> str | None:
    return None if value is None else f"{value:.{digits}f}"


def _ci(intervals: UFSIntervals | None) -> str | None:
    if intervals is None or intervals.mean.low is None or intervals.mean.high is None:
        return None
    return f"[{intervals.mean.low:.2f}, {intervals.mean.high:.2f}]"


def _by_proxy(summary: list[dict[str, Any]], intervals: dict[tuple[str, ...], UFSIntervals]) -> ReportTable:
    columns = ["criteria set", "judge", "agent", "proxy", "Mean UFS", "95% CI", "mean reward", "episodes",
               "scorable", "unscorable", "undetermined", "cost/sim USD", "engine s/sim"]
    rows = [
        (*(s[c] for c in GROUP), _f(s["mean_ufs"]), _ci(intervals.get(tuple(s[c] for c in GROUP))),
         _f(s["mean_reward"]), s["episodes"], s["scorable"], s["unscorable"], s["undetermined"],
         _f(s["cost_per_sim_usd"], 6), _f(s["engine_s_per_sim"], 2))
        for s in summary
    ]
    return ReportTable(
        "UFS by proxy (Mean UFS = unweighted mean over domains)", columns, rows,
        "undetermined = some verdict unusable and none failed (never guessed, left out like unscorable); "
        "95% CI: percentile bootstrap over graded episodes, each domain resampled on its own",
    )


def _by_domain(domains: list[dict[str, Any]]) -> ReportTable:
    columns = ["criteria set", "judge", "agent", "proxy", "domain", "UFS", "passed", "failed", "unscorable",
               "undetermined", "mean reward"]
    rows = [
        (*(d[c] for c in GROUP), d["domain"], _f(d["ufs"]), d["passed"], d["failed"], d["unscorable"],
         d["undetermined"], _f(d["mean_reward"]))
        for d in domains
    ]
    return ReportTable("UFS by domain", columns, rows, "UFS = passed / (passed + failed)")


def _by_family(families: list[dict[str, Any]]) -> ReportTable:
    columns = ["criteria set", "judge", "agent", "proxy", "family", "failures", "episodes failing",
               "graded episodes"]
    rows = [
        (*(f[c] for c in GROUP), f["family"], f["failures"], f["episodes"], f["graded_episodes"])
        for f in families
    ]
    return ReportTable(
        "Violation families", columns, rows,
        "failures = usable verdicts that found their criterion applicable and violated",
    )


def _user_only(rows: list[dict[str, Any]]) -> ReportTable:
    columns = ["criteria set", "judge", "agent", "proxy", "domain", "tasks", "episodes", "UFS", "mean reward",
               "user tool calls/episode"]
    body = [
        (*(r[c] for c in GROUP), r["domain"], r["tasks"], r["episodes"], _f(r["ufs"]), _f(r["mean_reward"]),
         _f(r["user_tool_calls"], 1))
        for r in rows
    ]
    return ReportTable(
        "Tasks only the user's deeds solve", columns, body,
        "the gold's actions are all the user's (banking 001, 002, 003, 006, 007, 024, 025): the reward "
        "there measures what the proxy did, not what the agent did",
    )
