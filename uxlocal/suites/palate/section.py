"""PALATE in the report: user x candidate heat map, rubric agreement, axes 1-2.

Registered through ``Palate.report_section``; the tables are the suite's own (``Palate.report``),
and the heat map's cells are the axis-3 table's (``report.personal_cell``).

The three axes stay separate plots, as the spec asks: nothing here merges them into one score.
Views read: ``palate_user_experience``, ``palate_agreement_turns``, ``palate_turn_quality``,
``palate_session_capability``; the agreement intervals come from ``agreement_table`` with the
same settings as the suite's table, so the plot and the table agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from uxlocal.reportkit.model import Figure
from uxlocal.reportkit.plots import grouped_hbars_svg, heatmap_svg, intervals_svg
from uxlocal.reportkit.registry import register_figure, register_section
from uxlocal.reportkit.rows import NoData, in_list, rows_of
from uxlocal.suites.palate.agreement import agreement_table
from uxlocal.suites.palate.report import personal_cell

register_section("palate", title="PALATE: personalized role-play evaluation", order=40)


def _candidate_names(con: Any, run_id: str) -> dict[str, str]:
    """Candidate label -> "label (model)" from the run's ``candidate:<label>`` seats."""
    seats = con.execute(
        "SELECT role, model_name FROM run_models WHERE run_id = ? AND role LIKE 'candidate:%'", [run_id]
    ).fetchall()
    return {role.split(":", 1)[1]: f"{role.split(':', 1)[1]} ({name})" for role, name in seats}


def _suffix(run_ids: Sequence[str], run_id: str) -> str:
    return f" [{run_id}]" if len(run_ids) > 1 else ""


@register_figure("palate")
def heat_map(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """User x candidate heat map."""
    rows = rows_of(
        con,
        f"SELECT * FROM palate_user_experience WHERE run_id IN {in_list(run_ids)} "
        "ORDER BY run_id, simulator, user_id, candidate",
        run_ids,
    )
    if not rows:
        raise NoData("no personal-rubric verdicts (axis 3) in these runs")
    figures = []
    panels = list(dict.fromkeys((r["run_id"], r["simulator"]) for r in rows))
    for n, (run_id, simulator) in enumerate(panels):
        cells = {
            (r["user_id"], r["candidate"]): r
            for r in rows
            if (r["run_id"], r["simulator"]) == (run_id, simulator)
        }
        users = sorted({u for u, _ in cells})
        candidates = sorted({c for _, c in cells})
        names = _candidate_names(con, run_id)
        values = [
            [cells[(u, c)]["personal_score"] if (u, c) in cells else None for c in candidates] for u in users
        ]
        notes = [[personal_cell(cells.get((u, c))) for c in candidates] for u in users]
        key = "palate-heatmap" if n == 0 else f"palate-heatmap-{n + 1}"
        svg = heatmap_svg(
            users,
            [names.get(c, c) for c in candidates],
            values,
            key=key,
            annotations=notes,
            colour_label="personal score (1-5)",
            x_label="candidate",
            y_label="user",
            v_range=(1, 5),
        )
        figures.append(
            Figure(
                key,
                f"User x candidate heat map ({simulator} simulator){_suffix(run_ids, run_id)}",
                svg,
                "Each cell: the candidate's mean score under that user's own induced rubric (1-5) "
                "and its rank within the user (#1 = that user's favourite). No pooled score.",
            )
        )
    return figures


@register_figure("palate")
def agreement(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """Agreement with held-out ratings."""
    entries = []
    for run_id in run_ids:
        turns = con.execute(
            "SELECT scorer, user_id, session_id, human_rating, score FROM palate_agreement_turns "
            "WHERE run_id = ? ORDER BY ALL",
            [run_id],
        ).fetchall()
        table = agreement_table([tuple(t) for t in turns])  # the suite table's own settings
        for row in sorted(table, key=lambda r: (r.scorer, r.user_id != "macro", r.user_id)):
            label = (
                f"{row.scorer}, {'all users (macro)' if row.user_id == 'macro' else 'user ' + row.user_id}"
            )
            entries.append((label + _suffix(run_ids, run_id), row.agreement, row.ci_low, row.ci_high))
    if not entries:
        raise NoData("no agreement episodes (held-out sessions) in these runs")
    svg = intervals_svg(
        entries,
        key="palate-agreement",
        reference=0.5,
        x_lim=(0, 1),
        ranked=False,
        x_label="pairwise agreement with user ratings (fraction 0-1)",
    )
    return [
        Figure(
            "palate-agreement",
            "Rubric agreement with held-out user ratings",
            svg,
            "How often a scorer orders two replies of one held-out session the way the real user rated "
            "them; bars are 95% intervals resampling whole sessions; dashed line = chance.",
        )
    ]


@register_figure("palate")
def axes(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """Turn quality and session capability."""
    rows = rows_of(
        con,
        f"SELECT q.run_id, q.candidate, q.simulator, q.turn_quality, s.session_capability "
        f"FROM palate_turn_quality q LEFT JOIN palate_session_capability s "
        f"USING (run_id, candidate, simulator) WHERE q.run_id IN {in_list(run_ids)} "
        f"ORDER BY q.run_id, q.candidate, q.simulator",
        run_ids,
    )
    if not rows:
        raise NoData("no candidate sessions in these runs")
    names = {run_id: _candidate_names(con, run_id) for run_id in run_ids}
    labels = [
        f"{names[r['run_id']].get(r['candidate'], r['candidate'])}, {r['simulator']} users"
        + _suffix(run_ids, r["run_id"])
        for r in rows
    ]
    series = [
        ("axis 1: turn quality", [r["turn_quality"] for r in rows]),
        ("axis 2: session capability", [r["session_capability"] for r in rows]),
    ]
    svg = grouped_hbars_svg(labels, series, key="palate-axes", x_label="judge score (1-5)", x_max=5)
    return [
        Figure(
            "palate-axes",
            "Axes 1 and 2 per candidate",
            svg,
            "Generic turn quality (mean of the five general criteria per reply) and the judge's overall "
            "score of whole sessions; reported apart from the per-user axis 3 above.",
        )
    ]
