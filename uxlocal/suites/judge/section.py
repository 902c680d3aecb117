"""`uxlocal judge` in the report: reliability diagram, confusion matrix, scatter, position bias.

Registered through ``JudgeSuite.report_section``; the tables are the suite's own
(``JudgeSuite.report``: counts, throughput, agreement with intervals). Every figure reads a view
of ``suites/judge/views.sql``, so a plot and the table beside it come from the same rows:

- reliability diagram: ``judge_reliability`` (the bins behind the table's ECE), binary labels;
- confusion matrix: ``judge_confusion`` for label rubrics (likert goes to the scatter);
- human vs judge scatter: ``judge_scored`` for likert rubrics (expected score against human);
- position bias: ``judge_pairwise_agreement`` (P(first shown wins) and the flip rate).

Tables: each run's own, preceded by "learned vs prompted judge" (``compare.py``) when the report
shows both held-out runs of a ``uxlocal judge train``; the reliability diagram then draws both
arms, the prompted base and the learned adapter, side by side.

One figure per (criterion, judge) where a rubric has several; a run's id is added to the labels
when the report shows several runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from uxlocal.reportkit.model import Figure, TableGroup
from uxlocal.reportkit.plots import (
    ReliabilityBin,
    grouped_hbars_svg,
    heatmap_svg,
    reliability_svg,
    scatter_svg,
)
from uxlocal.reportkit.registry import register_figure, register_section
from uxlocal.reportkit.rows import NoData, in_list, rows_of


def tables(con: Any, run_ids: Sequence[str]) -> list[TableGroup]:
    """The "learned vs prompted judge" comparison (when ``judge train``'s two held-out runs are
    both shown), then each run's own tables, as the terminal prints them."""
    from uxlocal.suites.judge.compare import learned_vs_prompted
    from uxlocal.suites.judge.suite import JudgeSuite

    learned = learned_vs_prompted(con, list(run_ids))
    groups = [TableGroup(None, learned, heading="Learned vs prompted judge")] if learned else []
    return groups + [TableGroup(run_id, JudgeSuite().report(con, run_id)) for run_id in run_ids]


register_section("judge", title="Judge scoring of your own data", order=50, tables=tables)

MAX_MATRICES = 12
"""Confusion matrices drawn at most (one per criterion and judge); the rest are counted in a note."""


def _name(row: dict[str, Any], run_ids: Sequence[str]) -> str:
    """``criterion, judge`` plus the run when several runs share the section."""
    name = f"{row['criterion']}, {row['judge_role']}"
    return name + (f" [{row['run_id']}]" if len(run_ids) > 1 else "")


def _rows(con: Any, sql: str, run_ids: Sequence[str], missing: str) -> list[dict[str, Any]]:
    """The view rows for these runs, or ``NoData(missing)``: the section notes why a plot is absent."""
    rows = rows_of(con, sql, run_ids)
    if not rows:
        raise NoData(missing)
    return rows


def _groups(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault((row["run_id"], row["criterion"], row["judge_role"]), []).append(row)
    return out


def _arm_names(con: Any, run_ids: Sequence[str]) -> dict[str, str]:
    """Run id -> "prompted base" / "learned adapter" for ``judge train``'s held-out runs."""
    from uxlocal.suites.judge.compare import arm_pairs

    names = {}
    for prompted, learned in arm_pairs(con, list(run_ids)):
        names[prompted] = f"prompted base [{prompted}]"
        names[learned] = f"learned adapter [{learned}]"
    return names


@register_figure("judge")
def reliability(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """Reliability diagram of binary label rubrics."""
    rows = _rows(con, f"SELECT * FROM judge_reliability WHERE run_id IN {in_list(run_ids)} "
                      "ORDER BY run_id, criterion, judge_role, bin", run_ids,
                 "no two-label rubric with human labels and label probabilities")
    arms = _arm_names(con, run_ids)
    series = [(arms.get(group[0]["run_id"], _name(group[0], run_ids)),
               [ReliabilityBin(r["mean_confidence"], r["accuracy"], int(r["n"])) for r in group])
              for group in _groups(rows).values()]
    svg = reliability_svg(series, key="judge-reliability",
                          x_label="judge's probability for its own verdict (fraction 0-1)",
                          y_label="share agreeing with the human (fraction 0-1)")
    return [Figure("judge-reliability", "Reliability diagram (binary labels)", svg,
                   "Verdicts binned by the probability the judge gave its own label (10 equal bins, the "
                   "ECE's bins); y = share whose label matched the human's. On the diagonal = calibrated; "
                   "below it = overconfident. The strip counts verdicts per bin.")]


@register_figure("judge")
def confusion(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """Confusion matrix per (criterion, judge) of label rubrics."""
    rows = _rows(con, f"SELECT c.* FROM judge_confusion c WHERE c.run_id IN {in_list(run_ids)} AND EXISTS "
                      "(SELECT 1 FROM judge_verdicts v WHERE v.run_id = c.run_id AND v.criterion = c.criterion "
                      "AND v.kind = 'label') ORDER BY c.run_id, c.criterion, c.judge_role", run_ids,
                 "no label rubric with human labels")
    groups = list(_groups(rows).values())
    figures = [_matrix(group, run_ids, k) for k, group in enumerate(groups[:MAX_MATRICES])]
    if len(groups) > MAX_MATRICES:
        figures[-1].caption += f" ({len(groups) - MAX_MATRICES} more matrices not drawn; see judge_confusion.)"
    return figures


def _matrix(group: list[dict[str, Any]], run_ids: Sequence[str], index: int) -> Figure:
    """Rows = human label, columns = judge label; colour = share of the human row, text = count."""
    labels = sorted({r["human"] for r in group} | {r["judge"] for r in group}, key=str)
    counts = {(r["human"], r["judge"]): int(r["n"]) for r in group}
    humans = [h for h in labels if any(counts.get((h, j)) for j in labels)]
    totals = {h: sum(counts.get((h, j), 0) for j in labels) for h in humans}
    shares = [[counts.get((h, j), 0) / totals[h] for j in labels] for h in humans]
    notes = [[f"{counts.get((h, j), 0)}" for j in labels] for h in humans]
    key = f"judge-confusion-{index}"
    svg = heatmap_svg(humans, labels, shares, key=key, annotations=notes, v_range=(0, 1),
                      colour_label="share of the row (0-1)",
                      x_label="judge's label", y_label="human label")
    return Figure(key, f"Confusion matrix: {_name(group[0], run_ids)}", svg,
                  "Counts of items per (human label, judge label) over valid, non-abstained verdicts; the "
                  "colour is the share of the row, so the diagonal reads as per-class recall.")


@register_figure("judge")
def scatter(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """Human score against the judge's expected score, likert rubrics."""
    rows = _rows(con, f"SELECT run_id, criterion, judge_role, scale, human_score, score FROM judge_scored "
                      f"WHERE kind = 'likert' AND human_score IS NOT NULL AND score IS NOT NULL "
                      f"AND run_id IN {in_list(run_ids)} ORDER BY run_id, criterion, judge_role, item_id",
                 run_ids, "no likert rubric with human scores")
    groups = _groups(rows)
    series = [(_name(g[0], run_ids), [(float(r["human_score"]), float(r["score"])) for r in g])
              for g in groups.values()]
    scale = max(int(r["scale"] or 5) for r in rows)
    svg = scatter_svg(series, key="judge-scatter", x_label=f"human score (1-{scale}; jittered ±0.15)",
                      y_label=f"judge's expected score (1-{scale})", lims=(1, scale), jitter=0.15)
    return [Figure("judge-scatter", "Human vs judge scores", svg,
                   "One point per item: the human's score against the judge's expected score "
                   "(sum of p_k x k over the scale). Dashed line = agreement; the agreement table gives "
                   "Spearman, Kendall tau-b, Pearson, QWK and acc_eq with intervals.")]


@register_figure("judge")
def position_bias(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """P(first shown wins) and flip rate of pairwise rubrics."""
    rows = _rows(con, f"SELECT * FROM judge_pairwise_agreement WHERE run_id IN {in_list(run_ids)} "
                      "ORDER BY run_id, criterion, judge_role", run_ids, "no pairwise rubric in these runs")
    names = [_name(r, run_ids) for r in rows]
    series = [("P(first shown wins)", [r["first_position_rate"] for r in rows]),
              ("flip rate (the two orders pick different replies)", [r["flip_rate"] for r in rows])]
    svg = grouped_hbars_svg(names, series, key="judge-position-bias", x_label="share of pairs (fraction 0-1)",
                            x_max=1.0, reference=0.5, reference_label="0.5 = no position bias")
    return [Figure("judge-position-bias", "Position bias (pairwise)", svg,
                   "Each pair is judged in both orders. P(first shown wins): share of order verdicts picking "
                   "the reply shown first (0.5 = none); flip rate: share of pairs whose two orders disagree, "
                   "which the reconciled verdict averages away.")]
