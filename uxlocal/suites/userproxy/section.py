"""UserProxyBench (UFS) in the report: Mean UFS with intervals, frontier, violation families.

UFS grades tau2-shaped trajectories, so the section reads ``tau2`` (and ``userproxy``) runs and
appears only when some of their episodes carry UFS verdicts. The views' grain is the
(criteria set, judge, agent, proxy) group, not the run: the section shows every group that has a
graded trajectory in the chosen runs, with all of that group's graded trajectories (a proxy's
numbers do not change with which of its runs you name).

Registered through ``UserProxySuite.report_section``. The tables are ``ufs/report.py``'s
``ufs_tables``, the same ones ``uxlocal run userproxy`` prints; the frontier is drawn by
``ufs/plot.py``, the same drawing ``uxlocal ufs frontier --plot`` writes.

Views read (``suites/userproxy/views.sql``): ``ufs_episodes``, ``ufs_verdicts``, ``ufs_summary``,
``ufs_domain``, ``ufs_family_failures``, ``ufs_frontier``, ``ufs_protocol``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from uxlocal.reportkit.model import Figure, ReportTable, TableGroup
from uxlocal.reportkit.plots import grouped_hbars_svg
from uxlocal.reportkit.registry import register_figure, register_section
from uxlocal.reportkit.rows import NoData, in_list, rows_of
from uxlocal.suites.userproxy.ufs.plot import frontier_svg
from uxlocal.suites.userproxy.ufs.report import FRONTIER_COLUMNS, GROUP, frontier_row, group_view, ufs_tables
from uxlocal.suites.userproxy.ufs.taxonomy import FAMILIES
from uxlocal.tau2.episode.options import NOT_COMPARABLE


def graded(con: Any, run_ids: Sequence[str]) -> bool:
    """Apply the section when some episode of these runs has UFS verdicts (else say why not)."""
    n = con.execute(
        f"SELECT count(*) FROM ufs_episodes WHERE run_id IN {in_list(run_ids)}", list(run_ids)
    ).fetchone()
    if not n or not n[0]:
        raise NoData("no UFS grading verdicts on these tau2 runs")
    return True


def tables(con: Any, run_ids: Sequence[str]) -> list[TableGroup]:
    """Return the suite's UFS tables (``ufs_tables``) for the groups graded in these runs, as one group.

    Then, for userproxy runs, how many episodes each left out and whether it compares with tau2-bench.
    """
    groups = [
        TableGroup(
            None,
            ufs_tables(con, run_ids),
            heading="Every graded trajectory of the (criteria set, judge, agent, proxy) groups in these runs",
        )
    ]
    rows = rows_of(con, "SELECT run_id, domain, proxy, episodes, infrastructure_errors, failed, comparable "
                        f"FROM ufs_protocol WHERE run_id IN {in_list(run_ids)} ORDER BY ALL", run_ids)
    if rows:
        columns = list(rows[0])
        note = ("infrastructure errors and failed episodes are left out of every number; comparable false = "
                f"{NOT_COMPARABLE} (our protocol and words, not a tau2-bench checkout's)")
        table = ReportTable("Episodes left out and comparability", columns,
                            [tuple(r[c] for c in columns) for r in rows], note)
        groups.append(TableGroup(None, [table], heading="userproxy runs"))
    return groups


register_section(
    "ufs",
    title="UserProxyBench: user fidelity (UFS)",
    suites=("tau2", "userproxy"),
    tables=tables,
    order=30,
    requires=graded,
)


def _axis(rows: Sequence[dict[str, Any]]) -> tuple[str, str]:
    """(axis, label): USD when every proxy has a price and some cost is positive, else engine seconds."""
    costs = [r["cost_per_sim_usd"] for r in rows]
    if all(c is not None for c in costs) and any(c > 0 for c in costs):
        return "cost", "user-side cost per simulation (USD)"
    if all(r["engine_s_per_sim"] is not None for r in rows):
        return "engine", "user-side engine time per simulation (s)"
    return "cost", "user-side cost per simulation (USD)"


@register_figure("ufs")
def frontier(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """Cost-fidelity frontier."""
    rows = [
        r
        for r in group_view(con, "ufs_frontier", run_ids, "criteria_set, judge_model, agent, proxy")
        if r["mean_ufs"] is not None
    ]
    if not rows:
        raise NoData("no proxy has a Mean UFS")
    axis, label = _axis(rows)
    value = FRONTIER_COLUMNS[axis][0]
    panels = []
    for group in dict.fromkeys((r["criteria_set"], r["judge_model"], r["agent"]) for r in rows):
        points = [
            frontier_row(r, axis)
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
    rows = group_view(con, "ufs_family_failures", run_ids, "criteria_set, judge_model, agent, proxy, family")
    if not rows:
        raise NoData("no graded episode")
    present = {r["family"] for r in rows}
    names = [f for f in FAMILIES if f in present] + sorted(present - set(FAMILIES))
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
