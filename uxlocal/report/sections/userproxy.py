"""UserProxyBench (UFS) in the report: Mean UFS with intervals, frontier, violation families.

UFS grades tau2-shaped trajectories, so the section reads ``tau2`` (and ``userproxy``) runs and
appears only when some of their episodes carry UFS verdicts. The views' grain is the
(criteria set, judge, agent, proxy) group, not the run: the section shows every group that has a
graded trajectory in the chosen runs, with all of that group's graded trajectories (a proxy's
numbers do not change with which of its runs you name).

Views read (``db/views/userproxy.sql``): ``ufs_episodes``, ``ufs_verdicts``, ``ufs_summary``,
``ufs_domain``, ``ufs_family_failures``, ``ufs_frontier``. Intervals: ``bootstrap_ufs`` from
``suites/userproxy/ufs/scoring.py`` (the views have point numbers only).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from uxlocal.report.build import NoData, in_list, rows_of
from uxlocal.report.model import Figure, TableGroup
from uxlocal.report.plots import FrontierPoint, frontier_svg, grouped_hbars_svg
from uxlocal.report.registry import register_figure, register_section
from uxlocal.suites.base import ReportTable

GROUP = ("criteria_set", "judge_model", "agent", "proxy")
FAMILY_ORDER = ("premature_disclosure", "groundedness", "goal_deviation", "missed_information")


def _groups_sql(run_ids: Sequence[str]) -> str:
    """Return a subquery of the (criteria_set, judge_model, agent, proxy) groups graded in these runs."""
    return (
        f"(SELECT DISTINCT criteria_set, judge_model, agent, proxy FROM ufs_episodes "
        f"WHERE run_id IN {in_list(run_ids)})"
    )


def _view(con: Any, view: str, run_ids: Sequence[str], order: str) -> list[dict[str, Any]]:
    return rows_of(
        con,
        f"SELECT v.* FROM {view} v SEMI JOIN {_groups_sql(run_ids)} g "
        f"USING ({', '.join(GROUP)}) ORDER BY {order}",
        run_ids,
    )


def graded(con: Any, run_ids: Sequence[str]) -> bool:
    """Apply the section when some episode of these runs has UFS verdicts (else say why not)."""
    n = con.execute(
        f"SELECT count(*) FROM ufs_episodes WHERE run_id IN {in_list(run_ids)}", list(run_ids)
    ).fetchone()
    if not n or not n[0]:
        raise NoData("no UFS grading verdicts on these tau2 runs")
    return True


def _f(value: Any, digits: int = 3) -> str | None:
    return None if value is None else f"{value:.{digits}f}"


def _intervals(con: Any, run_ids: Sequence[str]) -> dict[tuple[str, ...], tuple[float | None, float | None]]:
    """95% percentile bootstrap of Mean UFS per group (domains resampled separately)."""
    from uxlocal.suites.userproxy.ufs.scoring import CriterionVerdict, EpisodeRecord, bootstrap_ufs

    rows = rows_of(
        con,
        f"SELECT e.criteria_set, e.judge_model, e.agent, e.proxy, e.domain, e.run_id, e.episode_id, "
        f"v.criterion_id, v.family, v.mode, v.applicable, v.passed, v.valid "
        f"FROM ufs_episodes e JOIN ufs_verdicts v USING (run_id, episode_id, criteria_set, judge_model) "
        f"SEMI JOIN {_groups_sql(run_ids)} g USING ({', '.join(GROUP)}) ORDER BY ALL",
        run_ids,
    )
    episodes: dict[tuple[str, ...], dict[tuple[str, str], list[Any]]] = defaultdict(lambda: defaultdict(list))
    domains: dict[tuple[str, str], str] = {}
    for r in rows:
        key = tuple(r[c] for c in GROUP)
        episodes[key][(r["run_id"], r["episode_id"])].append(
            CriterionVerdict(
                r["criterion_id"],
                r["family"] or "",
                r["mode"] or "",
                r["applicable"],
                r["passed"],
                bool(r["valid"]),
            )
        )
        domains[(r["run_id"], r["episode_id"])] = r["domain"]
    out = {}
    for key, by_episode in episodes.items():
        records = [EpisodeRecord(f"{e[0]}/{e[1]}", domains[e], tuple(v)) for e, v in by_episode.items()]
        mean = bootstrap_ufs(records, seed=0).mean
        out[key] = (mean.low, mean.high)
    return out


def ufs_tables(con: Any, run_ids: Sequence[str]) -> list[TableGroup]:
    """Mean UFS per proxy (with intervals), UFS per domain, and failures per violation family."""
    summary = _view(
        con, "ufs_summary", run_ids, "criteria_set, judge_model, agent, mean_ufs DESC NULLS LAST, proxy"
    )
    try:
        ci = _intervals(con, run_ids)
        ci_note = "95% CI: percentile bootstrap over graded episodes, each domain resampled on its own"
    except (ImportError, AttributeError, TypeError) as exc:  # the scoring module is optional for the report
        ci, ci_note = {}, f"intervals unavailable ({exc})"
    table1 = ReportTable(
        "UFS by proxy (Mean UFS = unweighted mean over domains)",
        [
            "criteria set",
            "judge",
            "agent",
            "proxy",
            "Mean UFS",
            "95% CI",
            "mean reward",
            "episodes",
            "scorable",
            "unscorable",
            "undetermined",
            "cost/sim USD",
            "engine s/sim",
        ],
        [
            (
                s["criteria_set"],
                s["judge_model"],
                s["agent"],
                s["proxy"],
                _f(s["mean_ufs"]),
                _ci(ci.get(tuple(s[c] for c in GROUP))),
                _f(s["mean_reward"]),
                s["episodes"],
                s["scorable"],
                s["unscorable"],
                s["undetermined"],
                _f(s["cost_per_sim_usd"], 6),
                _f(s["engine_s_per_sim"], 2),
            )
            for s in summary
        ],
        "undetermined = some verdict unusable and none failed (never guessed, left out like unscorable); "
        + ci_note,
    )
    domain = _view(con, "ufs_domain", run_ids, "criteria_set, judge_model, agent, proxy, domain")
    table2 = ReportTable(
        "UFS by domain",
        [
            "criteria set",
            "judge",
            "agent",
            "proxy",
            "domain",
            "UFS",
            "passed",
            "failed",
            "unscorable",
            "undetermined",
            "mean reward",
        ],
        [
            (
                d["criteria_set"],
                d["judge_model"],
                d["agent"],
                d["proxy"],
                d["domain"],
                _f(d["ufs"]),
                d["passed"],
                d["failed"],
                d["unscorable"],
                d["undetermined"],
                _f(d["mean_reward"]),
            )
            for d in domain
        ],
        "UFS = passed / (passed + failed)",
    )
    families = _view(
        con, "ufs_family_failures", run_ids, "criteria_set, judge_model, agent, proxy, failures DESC, family"
    )
    table3 = ReportTable(
        "Violation families",
        [
            "criteria set",
            "judge",
            "agent",
            "proxy",
            "family",
            "failures",
            "episodes failing",
            "graded episodes",
        ],
        [
            (
                f["criteria_set"],
                f["judge_model"],
                f["agent"],
                f["proxy"],
                f["family"],
                f["failures"],
                f["episodes"],
                f["graded_episodes"],
            )
            for f in families
        ],
        "failures = usable verdicts that found their criterion applicable and violated",
    )
    return [
        TableGroup(
            None,
            [t for t in (table1, table2, table3) if t.rows],
            heading="Every graded trajectory of the (criteria set, judge, agent, proxy) groups in these runs",
        )
    ]


def _ci(bounds: tuple[float | None, float | None] | None) -> str | None:
    if not bounds or bounds[0] is None or bounds[1] is None:
        return None
    return f"[{bounds[0]:.2f}, {bounds[1]:.2f}]"


register_section(
    "ufs",
    title="UserProxyBench: user fidelity (UFS)",
    suites=("tau2", "userproxy"),
    tables=ufs_tables,
    order=30,
    requires=graded,
)


def _axis(rows: Sequence[dict[str, Any]]) -> tuple[str, str, str]:
    """(value column, dominated column, axis label): USD when prices are known, else engine seconds."""
    costs = [r["cost_per_sim_usd"] for r in rows]
    if all(c is not None for c in costs) and any(c > 0 for c in costs):
        return "cost_per_sim_usd", "dominated", "user-side cost per simulation (USD)"
    if all(r["engine_s_per_sim"] is not None for r in rows):
        return "engine_s_per_sim", "dominated_engine", "user-side engine time per simulation (s)"
    return "cost_per_sim_usd", "dominated", "user-side cost per simulation (USD)"


@register_figure("ufs")
def frontier(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """Cost-fidelity frontier."""
    rows = [
        r
        for r in _view(con, "ufs_frontier", run_ids, "criteria_set, judge_model, agent, proxy")
        if r["mean_ufs"] is not None
    ]
    if not rows:
        raise NoData("no proxy has a Mean UFS")
    value, dominated, label = _axis(rows)
    panels = []
    for group in dict.fromkeys((r["criteria_set"], r["judge_model"], r["agent"]) for r in rows):
        points = [
            FrontierPoint(r["proxy"], float(r[value]), float(r["mean_ufs"]), bool(r[dominated]))
            for r in rows
            if (r["criteria_set"], r["judge_model"], r["agent"]) == group and r[value] is not None
        ]
        panels.append((f"criteria {group[0]} / judge {group[1]} / agent {group[2]}", points))
    svg = frontier_svg(panels, key="ufs-frontier", x_label=label)
    return [
        Figure(
            "ufs-frontier",
            "Cost-fidelity frontier",
            svg,
            "Each point is a user proxy: its Mean UFS against what it costs per simulated conversation. "
            "Filled points are on the efficient frontier; rings are dominated (another proxy is cheaper "
            "and at least as faithful).",
        )
    ]


@register_figure("ufs")
def families(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """Violation families."""
    rows = _view(con, "ufs_family_failures", run_ids, "criteria_set, judge_model, agent, proxy, family")
    if not rows:
        raise NoData("no graded episode")
    present = {r["family"] for r in rows}
    names = [f for f in FAMILY_ORDER if f in present] + sorted(present - set(FAMILY_ORDER))
    groups = list(dict.fromkeys(tuple(r[c] for c in GROUP) for r in rows))
    several_agents = len({g[:3] for g in groups}) > 1
    series = []
    for group in groups:
        share = {
            r["family"]: 100.0 * r["episodes"] / r["graded_episodes"] if r["graded_episodes"] else None
            for r in rows
            if tuple(r[c] for c in GROUP) == group
        }
        label = f"{group[3]} (agent {group[2]}, judge {group[1]})" if several_agents else group[3]
        series.append((label, [share.get(f) for f in names]))
    svg = grouped_hbars_svg(
        [n.replace("_", " ") for n in names],
        series,
        key="ufs-families",
        x_label="graded episodes with at least one failure (%)",
        x_max=100,
        value_format="{:.0f}",
    )
    return [
        Figure(
            "ufs-families",
            "Violation families per proxy",
            svg,
            "Share of each proxy's graded conversations in which the judge found at least one violated "
            "criterion of the family.",
        )
    ]
