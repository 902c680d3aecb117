"""UXBench in the report: leaderboard with intervals, T1 reliability diagram, dimension bars.

Registered through ``UXBench.report_section``; the tables are the suite's own (``UXBench.report``).

Views read: ``uxbench_t1``, ``uxbench_t1_rows`` (``p_good``), ``uxbench_rates``,
``uxbench_reply_rows``, ``uxbench_breakdown``. Intervals are recomputed with the same function,
resample count and seed as the suite's tables, so the whiskers and the printed "95% CI" agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from uxlocal.reportkit.model import Figure
from uxlocal.reportkit.plots import grouped_hbars_svg, intervals_svg, reliability_bins, reliability_svg
from uxlocal.reportkit.registry import register_figure, register_section
from uxlocal.reportkit.rows import NoData, in_list, rows_of
from uxlocal.suites.uxbench import metrics
from uxlocal.suites.uxbench.suite import bootstrap_settings

register_section("uxbench", title="UXBench: UX Judge, UX Eval and UX Recovery", order=10)

TASK_LABELS = {"judge": "T1 Avg-Acc", "eval": "T2 Good", "recovery": "T3 Recovery"}
DIMENSION_LABELS = {"judge": "T1 accuracy", "eval": "T2 Good", "recovery": "T3 Recovery"}


def _many(run_ids: Sequence[str]) -> bool:
    return len(run_ids) > 1


@register_figure("uxbench")
def leaderboard(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """Leaderboard with 95% intervals."""
    entries: list[tuple[str, float | None, float | None, float | None]] = []
    for run_id in run_ids:
        n_boot, seed = bootstrap_settings(con, run_id)
        suffix = f" [{run_id}]" if _many(run_ids) else ""
        for t1 in rows_of(con, "SELECT * FROM uxbench_t1 WHERE run_id = ?", [run_id]):
            rows = rows_of(con, "SELECT * FROM uxbench_t1_rows WHERE run_id = ? ORDER BY item_id", [run_id])
            iv = metrics.bootstrap_judge(rows, "avg_acc", n_resamples=n_boot, seed=seed) if n_boot else None
            entries.append(
                (
                    f"T1 Avg-Acc, judge {t1['judge_model']}{suffix}",
                    t1["avg_acc"],
                    iv.low if iv else None,
                    iv.high if iv else None,
                )
            )
        for rate in rows_of(con, "SELECT * FROM uxbench_rates WHERE run_id = ? ORDER BY task", [run_id]):
            rows = rows_of(
                con, "SELECT * FROM uxbench_reply_rows WHERE run_id = ? AND task = ? ORDER BY item_id",
                [run_id, rate["task"]]
            )
            iv = metrics.bootstrap_rate(rows, n_resamples=n_boot, seed=seed) if n_boot else None
            label = (
                f"{TASK_LABELS.get(rate['task'], rate['task'])}, candidate {rate['candidate_model']}{suffix}"
            )
            entries.append((label, rate["rate"], iv.low if iv else None, iv.high if iv else None))
    if not entries:
        raise NoData("no T1 accuracy or T2/T3 rate in these runs")
    svg = intervals_svg(
        entries,
        key="uxbench-leaderboard",
        x_label="score (%; dot = estimate, bar = 95% bootstrap CI)",
        x_lim=(0, 100),
        reference=50,
    )
    return [
        Figure(
            "uxbench-leaderboard",
            "Leaderboard with 95% intervals",
            svg,
            "T1 Avg-Acc (published rounding) and T2/T3 rates over judged-valid replies; the bar is the "
            "percentile bootstrap interval printed in the tables; dashed line = 50% (chance for T1).",
        )
    ]


@register_figure("uxbench")
def reliability(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """T1 reliability diagram."""
    rows = rows_of(
        con,
        f"SELECT run_id, judge_model, p_good, ground_truth FROM uxbench_t1_rows WHERE run_id IN "
        f"{in_list(run_ids)} AND p_good IS NOT NULL ORDER BY run_id, item_id",
        run_ids,
    )
    if not rows:
        raise NoData("no T1 item has a recorded P(good) (reason mode records none)")
    series = []
    for run_id in run_ids:
        mine = [r for r in rows if r["run_id"] == run_id]
        if mine:
            label = f"judge {mine[0]['judge_model']}" + (f" [{run_id}]" if _many(run_ids) else "")
            series.append(
                (label, reliability_bins([(r["p_good"], int(r["ground_truth"] == 1)) for r in mine]))
            )
    svg = reliability_svg(series, key="uxbench-reliability")
    return [
        Figure(
            "uxbench-reliability",
            "T1 reliability diagram",
            svg,
            "Items binned by the judge's P(good) (10 equal bins); y = share of those items users liked. "
            "Points on the diagonal are calibrated; the strip below counts items per bin.",
        )
    ]


@register_figure("uxbench")
def dimensions(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """Per-dimension bars."""
    # a T1 dimension holds one class only (failure dimensions for disliked items, success ones for
    # liked), so Avg-Acc is empty there and the class accuracy is the number to show
    rows = rows_of(
        con,
        f"SELECT run_id, task, key, coalesce(value, good_acc, bad_acc) AS value FROM uxbench_breakdown "
        f"WHERE facet = 'dimension' "
        f"AND run_id IN {in_list(run_ids)} ORDER BY key, task",
        run_ids,
    )
    if not rows:
        raise NoData("no dimension breakdown in these runs")
    keys = sorted({r["key"] for r in rows})
    series = []
    for run_id in run_ids:
        for task in ("judge", "eval", "recovery"):
            values = {r["key"]: r["value"] for r in rows if r["run_id"] == run_id and r["task"] == task}
            if values:
                label = DIMENSION_LABELS[task] + (f" [{run_id}]" if _many(run_ids) else "")
                series.append((label, [values.get(k) for k in keys]))
    svg = grouped_hbars_svg(
        keys,
        series,
        key="uxbench-dimensions",
        x_label="score per dimension (%)",
        x_max=100,
        value_format="{:.1f}",
    )
    return [
        Figure(
            "uxbench-dimensions",
            "Per-dimension scores",
            svg,
            "T1: the judge's accuracy on the dimension's items (one class per dimension); T2/T3: rate of "
            "good replies. Missing bar = no valid item of that dimension.",
        )
    ]
