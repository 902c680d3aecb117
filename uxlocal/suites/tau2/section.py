"""tau2 in the report: reward and success per domain, and pass^k curves; tables are the suite's own.

Registered through ``Tau2Suite.report_section``.

Views read: ``tau2_summary`` (avg_reward, success_rate, infrastructure_errors, comparable per
domain), ``tau2_pass_k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from uxlocal.reportkit.model import Figure
from uxlocal.reportkit.plots import grouped_hbars_svg, lines_svg
from uxlocal.reportkit.registry import register_figure, register_section
from uxlocal.reportkit.rows import NoData, in_list, rows_of
from uxlocal.tau2.episode.options import NOT_COMPARABLE

register_section("tau2", title="tau2: agent reward with simulated users", order=20)


def _labels(con: Any, run_ids: Sequence[str]) -> dict[str, str]:
    """Map run id -> "agent X / user Y" (plus the run id when several runs are shown)."""
    seats = rows_of(
        con, f"SELECT run_id, role, model_name FROM run_models WHERE run_id IN {in_list(run_ids)}", run_ids
    )
    out = {}
    for run_id in run_ids:
        mine = {s["role"]: s["model_name"] for s in seats if s["run_id"] == run_id}
        name = f"agent {mine.get('agent', '?')} / user {mine.get('user', '?')}"
        out[run_id] = f"{name} [{run_id}]" if len(run_ids) > 1 else name
    return out


@register_figure("tau2")
def reward(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """Reward and success by domain."""
    rows = rows_of(
        con,
        "SELECT run_id, domain, avg_reward, success_rate, infrastructure_errors, comparable "
        f"FROM tau2_summary WHERE run_id IN {in_list(run_ids)} ORDER BY run_id, domain",
        run_ids,
    )
    if not rows:
        raise NoData("no finished tau2 episode")
    labels = _labels(con, run_ids)
    domains = sorted({r["domain"] for r in rows})
    series = []
    for run_id in run_ids:
        by_domain = {r["domain"]: r for r in rows if r["run_id"] == run_id}
        if by_domain:
            series.append(
                (
                    f"mean reward, {labels[run_id]}",
                    [by_domain[d]["avg_reward"] if d in by_domain else None for d in domains],
                )
            )
            series.append(
                (
                    f"success rate, {labels[run_id]}",
                    [by_domain[d]["success_rate"] if d in by_domain else None for d in domains],
                )
            )
    svg = grouped_hbars_svg(
        domains, series, key="tau2-reward", x_label="reward and success (fraction 0-1)", x_max=1
    )
    return [
        Figure(
            "tau2-reward",
            "Reward and success by domain",
            svg,
            "Mean reward and share of episodes with reward 1, infrastructure errors left out (as tau2 does)."
            + _caveats(rows, labels),
        )
    ]


def _caveats(rows: Sequence[dict[str, Any]], labels: dict[str, str]) -> str:
    """Say how many episodes were left out as infrastructure errors, and which domains do not compare."""
    errors = sum(int(r["infrastructure_errors"] or 0) for r in rows)
    out = f" Infrastructure errors left out: {errors}."
    ours = [f"{r['domain']} ({labels[r['run_id']]})" if len(labels) > 1 else r["domain"]
            for r in rows if not r["comparable"]]
    if ours:
        out += (f" {NOT_COMPARABLE.capitalize()}: {', '.join(ours)} ran our protocol and words "
                "(run on a tau2-bench checkout to compare).")
    return out


@register_figure("tau2")
def pass_k(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """pass^k by number of trials."""
    rows = rows_of(
        con,
        f"SELECT run_id, domain, k, pass_k FROM tau2_pass_k WHERE run_id IN {in_list(run_ids)} "
        "ORDER BY run_id, domain, k",
        run_ids,
    )
    if not rows:
        raise NoData("no task with a scored trial")
    labels = _labels(con, run_ids)
    series = []
    for run_id in run_ids:
        for domain in sorted({r["domain"] for r in rows if r["run_id"] == run_id}):
            points = [(r["k"], r["pass_k"]) for r in rows if r["run_id"] == run_id and r["domain"] == domain]
            series.append((f"{domain}, {labels[run_id]}", points))
    svg = lines_svg(
        series,
        key="tau2-pass-k",
        x_label="k (trials that must all succeed)",
        y_label="pass^k (fraction 0-1)",
        y_lim=(0, 1.05),
        integer_x=True,
    )
    return [
        Figure(
            "tau2-pass-k",
            "pass^k",
            svg,
            "pass^k = mean over tasks of C(successes, k) / C(trials, k); k runs up to the fewest trials of "
            "any task.",
        )
    ]
