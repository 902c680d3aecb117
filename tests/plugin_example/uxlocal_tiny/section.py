"""The tiny suite's report section: its tables (from ``TinySuite.report``) and one bar."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from uxlocal.reportkit.model import Figure
from uxlocal.reportkit.registry import register_figure, register_section
from uxlocal.reportkit.rows import NoData, in_list, rows_of

register_section("tiny", title="Tiny: is the sentence true?", order=80)


@register_figure("tiny")
def yes_rate_bar(con: Any, run_ids: Sequence[str]) -> list[Figure]:
    """Share of sentences called true, one bar per run."""
    sql = f"SELECT run_id, yes_rate FROM tiny_summary WHERE run_id IN {in_list(run_ids)}"
    rows = rows_of(con, sql, run_ids)
    if not rows:
        raise NoData("no finished tiny episodes")
    bars = "".join(f'<rect x="0" y="{12 * i}" width="{100 * r["yes_rate"]:.0f}" height="10"/>'
                   for i, r in enumerate(rows))
    svg = f'<svg xmlns="http://www.w3.org/2000/svg" width="100" height="{12 * len(rows)}">{bars}</svg>'
    return [Figure("tiny_yes_rate", "Yes rate per run", svg)]
