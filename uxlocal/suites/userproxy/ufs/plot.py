"""The cost-fidelity frontier plot: one drawing for the HTML report and ``uxlocal ufs frontier --plot``.

Follows the paper's Figure 1 (spec §A.7.4): cost per simulation on x (logarithmic when every cost
is positive and they span more than a factor of 20), Mean UFS on y, one labelled point per proxy,
filled on the efficient frontier (joined by a dashed step), rings for dominated proxies. It is
drawn with the report's matplotlib primitives (``uxlocal.reportkit.plots``: house style, palette,
deterministic SVG), so the report's figure and the CLI's file are the same picture.

Layer contract: ``frontier_svg`` is pure; ``write_frontier_plot`` is the only function here that
writes a file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from uxlocal.errors import InputError
from uxlocal.reportkit.plots import PlotUnavailable, colour, empty_note, figure, to_svg, wants_log_scale

from .frontier import FrontierRow

Panel = tuple[str, Sequence[FrontierRow]]
"""(panel title, the proxies of one (criteria set, judge, agent) group)."""
DEFAULT_X_LABEL = "user-side cost per simulation (USD)"
Y_LABEL = "Mean UFS (fraction 0-1)"


def frontier_svg(panels: Sequence[Panel], *, key: str, x_label: str = DEFAULT_X_LABEL,
                 y_label: str = Y_LABEL) -> str:
    """Draw one cost-fidelity panel per group as an inline-ready SVG (``key`` salts its ids)."""
    panels = [p for p in panels if p[1]] or [("", [])]
    with figure(key, 6.4, 3.8 * len(panels)) as fig:
        _draw(fig, panels, x_label, y_label)
        return to_svg(fig, key)


def _draw(fig: Any, panels: Sequence[Panel], x_label: str, y_label: str) -> None:
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for ax, (title, rows) in zip(axes, panels, strict=True):
        _frontier_panel(ax, rows)
        ax.set(xlabel=x_label, ylabel=y_label, title=title)


def _frontier_panel(ax: Any, rows: Sequence[FrontierRow]) -> None:
    if not rows:
        empty_note(ax, "no proxy has both a cost and a score")
        return
    points = [r.point for r in rows]
    if wants_log_scale([p.cost for p in points]):
        ax.set_xscale("log")
    front = sorted((r.point for r in rows if not r.dominated), key=lambda p: (p.cost, -p.fidelity))
    if len(front) > 1:
        ax.plot(
            [p.cost for p in front],
            [p.fidelity for p in front],
            linestyle="--",
            color=colour(0),
            linewidth=1,
            drawstyle="steps-post",
            label="efficient frontier",
        )
    for row in rows:
        p = row.point
        face = "white" if row.dominated else colour(0)
        ax.scatter(
            [p.cost], [p.fidelity], s=46, facecolors=face, edgecolors=colour(0), linewidths=1.5, zorder=3
        )
        ax.annotate(
            p.name + (" (dominated)" if row.dominated else ""),
            (p.cost, p.fidelity),
            textcoords="offset points",
            xytext=(6, 4),
            fontsize=8,
        )
    low = min(p.fidelity for p in points)
    ax.set_ylim(max(0.0, low - 0.1), min(1.05, max(p.fidelity for p in points) + 0.1))
    ax.margins(x=0.25)
    if len(front) > 1:
        ax.legend(loc="lower right", fontsize=8)


def write_frontier_plot(
    path: str | Path, rows: Sequence[FrontierRow], *, title: str = "Cost-fidelity frontier",
    x_label: str = DEFAULT_X_LABEL,
) -> Path:
    """Write one group's frontier as ``.svg`` or ``.png`` (both need matplotlib, extra ``plot``)."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in (".svg", ".png"):
        raise InputError("unsupported plot format", "use a .svg or .png file name", path=target)
    try:
        with figure("ufs-frontier", 6.4, 3.8) as fig:
            _draw(fig, [(title, rows)], x_label, Y_LABEL)
            target.parent.mkdir(parents=True, exist_ok=True)
            if suffix == ".svg":
                target.write_text(to_svg(fig, "ufs-frontier") + "\n", encoding="utf-8")
            else:
                fig.savefig(target, format="png", dpi=120, facecolor="white")
    except PlotUnavailable:
        raise InputError("plots need matplotlib", "pip install 'uxlocal[plot]'", path=target) from None
    return target
