"""UFS results out of the store: episode records for Python-side statistics, the frontier, tables.

The point numbers come from the SQL views (``db/views/userproxy.sql``); this module turns view
rows into ``EpisodeRecord``s (for bootstrap intervals, which SQL does badly) and into
``FrontierRow``s (for the plot), and builds the terminal tables a proxy comparison prints.

Layer contract: reads the store through a given connection; writes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from uxlocal.suites.base import ReportTable

from .frontier import FrontierRow, Point
from .scoring import CriterionVerdict, EpisodeRecord, bootstrap_ufs, group_by


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


def store_frontier(con: Any, *, axis: str = "cost") -> dict[tuple[str, str, str], list[FrontierRow]]:
    """Read the ``ufs_frontier`` view as frontier rows per (criteria_set, judge_model, agent).

    ``axis`` is ``cost`` (USD per simulation) or ``engine`` (engine seconds per simulation).
    """
    cost, by, rank = (
        ("cost_per_sim_usd", "dominated_by", "frontier_rank")
        if axis == "cost"
        else ("engine_s_per_sim", "dominated_by_engine", "frontier_rank_engine")
    )
    out: dict[tuple[str, str, str], list[FrontierRow]] = defaultdict(list)
    for row in con.execute(
        f"SELECT criteria_set, judge_model, agent, proxy, {cost}, mean_ufs, {by}, {rank} FROM ufs_frontier "
        f"WHERE {cost} IS NOT NULL AND mean_ufs IS NOT NULL ORDER BY {cost}, proxy"
    ).fetchall():
        out[(row[0], row[1], row[2])].append(
            FrontierRow(Point(row[3], float(row[4]), float(row[5])), tuple(row[6] or ()), row[7])
        )
    return dict(out)


def ufs_tables(con: Any, *, replicates: int = 2000, seed: int = 0) -> list[ReportTable]:
    """Proxy comparison tables: Table 1 with Mean UFS intervals, per-domain UFS, failures by family."""
    intervals = {}
    for (cset, judge, agent), records in episode_records(con).items():
        for proxy, group in group_by(records, lambda e: e.proxy).items():
            intervals[(cset, judge, agent, proxy)] = bootstrap_ufs(group, replicates=replicates, seed=seed)
    summary = []
    for row in con.execute(
        "SELECT criteria_set, judge_model, agent, proxy, mean_reward, mean_ufs, domains, scorable, "
        "unscorable, undetermined, cost_per_sim_usd, prompt_tokens_per_sim, completion_tokens_per_sim, "
        "engine_s_per_sim FROM ufs_summary"
    ).fetchall():
        ci = intervals.get(row[:4])
        low, high = (ci.mean.low, ci.mean.high) if ci else (None, None)
        summary.append((row[3], row[2], row[4], row[5], low, high, *row[6:]))
    domains = []
    for row in con.execute(
        "SELECT criteria_set, judge_model, agent, proxy, domain, mean_reward, ufs, scorable, "
        "unscorable, undetermined FROM ufs_domain"
    ).fetchall():
        ci = intervals.get(row[:4])
        interval = ci.domains.get(row[4]) if ci else None
        domains.append(
            (
                row[3],
                row[4],
                row[5],
                row[6],
                interval.low if interval else None,
                interval.high if interval else None,
                *row[7:],
            )
        )
    failures = con.execute("SELECT proxy, family, failures, episodes FROM ufs_family_failures").fetchall()
    return [
        ReportTable(
            "UFS by proxy (Table 1)",
            [
                "proxy",
                "agent",
                "mean_reward",
                "mean_ufs",
                "ufs_low",
                "ufs_high",
                "domains",
                "scorable",
                "unscorable",
                "undetermined",
                "cost_per_sim_usd",
                "prompt_tokens_per_sim",
                "completion_tokens_per_sim",
                "engine_s_per_sim",
            ],
            summary,
            "Mean UFS = unweighted mean over domains; 95% bootstrap interval, stratified by domain",
        ),
        ReportTable(
            "UFS by domain",
            [
                "proxy",
                "domain",
                "mean_reward",
                "ufs",
                "ufs_low",
                "ufs_high",
                "scorable",
                "unscorable",
                "undetermined",
            ],
            domains,
        ),
        ReportTable("Failures by family", ["proxy", "family", "failures", "episodes"], failures),
    ]
