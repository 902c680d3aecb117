"""Draw the cost-fidelity frontier: SVG written directly (no dependency), PNG through matplotlib.

The SVG follows the paper's Figure 1 layout (spec §A.7.4): cost per simulation on a log x axis,
UFS on y, one labelled point per proxy, the efficient frontier as a dashed line, dominated proxies
drawn as rings. It is plain text, deterministic for the same rows, and needs nothing installed, so
reports and tests can always produce it. PNG needs matplotlib (``pip install 'uxlocal[plot]'``).

Layer contract: ``frontier_svg`` is pure; ``write_frontier_plot`` is the only function here that
writes a file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from pathlib import Path

from uxlocal.errors import InputError

from .frontier import FrontierRow

WIDTH, HEIGHT = 720, 440
LEFT, RIGHT, TOP, BOTTOM = 70, 30, 40, 60


def _log_ticks(low: float, high: float) -> list[float]:
    ticks = []
    for exponent in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10.0**exponent
            if low <= value <= high:
                ticks.append(value)
    return ticks


def _linear_ticks(low: float, high: float) -> list[float]:
    span = high - low
    step = 10 ** math.floor(math.log10(span / 5)) if span > 0 else 0.1
    for factor in (1, 2, 5, 10):
        if span / (step * factor) <= 6:
            step *= factor
            break
    start = math.ceil(low / step) * step
    return [round(start + k * step, 10) for k in range(int((high - start) / step + 1e-9) + 1)]


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def frontier_svg(
    rows: Sequence[FrontierRow],
    *,
    title: str = "Cost-fidelity frontier",
    x_label: str = "user-side cost per simulation (USD, log scale)",
    y_label: str = "Mean UFS",
    log_x: bool = True,
) -> str:
    """Render frontier rows as an SVG document (a string)."""
    if not rows:
        raise ValueError("nothing to plot: no proxies")
    costs = [r.point.cost for r in rows]
    ufs = [r.point.fidelity for r in rows]
    if log_x and min(costs) <= 0:
        log_x = False  # a free proxy cannot sit on a log axis; fall back rather than drop it
    fx = math.log10 if log_x else (lambda v: v)
    x0, x1 = fx(min(costs)), fx(max(costs))
    pad_x = (x1 - x0) * 0.08 or 0.5
    x0, x1 = x0 - pad_x, x1 + pad_x
    y0, y1 = min(ufs), max(ufs)
    pad_y = (y1 - y0) * 0.1 or 0.05
    y0, y1 = max(0.0, y0 - pad_y), min(1.0, y1 + pad_y) if y1 <= 1.0 else y1 + pad_y
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(value: float) -> float:
        return LEFT + (fx(value) - x0) / (x1 - x0) * plot_w

    def sy(value: float) -> float:
        return TOP + (1 - (value - y0) / (y1 - y0)) * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="15">{escape(title)}</text>',
        f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#333"/>',
    ]
    low_x, high_x = (10**x0, 10**x1) if log_x else (x0, x1)
    for tick in _log_ticks(low_x, high_x) if log_x else _linear_ticks(low_x, high_x):
        x = sx(tick)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + plot_h}" stroke="#eee"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{_fmt(tick)}</text>')
    for tick in _linear_ticks(y0, y1):
        y = sy(tick)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{_fmt(tick)}</text>')
    out.append(
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 18}" text-anchor="middle">{escape(x_label)}</text>'
    )
    out.append(
        f'<text x="18" y="{TOP + plot_h / 2}" text-anchor="middle" '
        f'transform="rotate(-90 18 {TOP + plot_h / 2})">{escape(y_label)}</text>'
    )
    frontier = sorted((r for r in rows if not r.dominated), key=lambda r: r.rank or 0)
    if len(frontier) > 1:
        path = " ".join(f"{sx(r.point.cost):.1f},{sy(r.point.fidelity):.1f}" for r in frontier)
        out.append(
            f'<polyline class="frontier" points="{path}" fill="none" stroke="#1f77b4" '
            'stroke-width="1.5" stroke-dasharray="6 4"/>'
        )
    for row in rows:
        x, y = sx(row.point.cost), sy(row.point.fidelity)
        name = escape(row.point.name)
        if row.dominated:
            out.append(
                f'<circle class="dominated" cx="{x:.1f}" cy="{y:.1f}" r="6" fill="white" '
                f'stroke="#d62728" stroke-width="2"><title>{name}: dominated by '
                f"{escape(', '.join(row.dominated_by))}</title></circle>"
            )
        else:
            out.append(
                f'<circle class="efficient" cx="{x:.1f}" cy="{y:.1f}" r="5" fill="#1f77b4">'
                f"<title>{name}: frontier #{row.rank}</title></circle>"
            )
        if x > LEFT + plot_w * 0.8:  # near the right edge: label to the left of the point
            out.append(f'<text x="{x - 8:.1f}" y="{y - 8:.1f}" text-anchor="end">{name}</text>')
        else:
            out.append(f'<text x="{x + 8:.1f}" y="{y - 8:.1f}">{name}</text>')
    legend_y = TOP + 14
    out.append(
        f'<circle cx="{LEFT + 14}" cy="{legend_y}" r="5" fill="#1f77b4"/>'
        f'<text x="{LEFT + 24}" y="{legend_y + 4}">efficient</text>'
        f'<circle cx="{LEFT + 94}" cy="{legend_y}" r="6" fill="white" stroke="#d62728" stroke-width="2"/>'
        f'<text x="{LEFT + 104}" y="{legend_y + 4}">dominated</text>'
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_frontier_plot(path: str | Path, rows: Sequence[FrontierRow], **labels: str) -> Path:
    """Write the plot; ``.svg`` needs nothing, ``.png`` needs matplotlib."""
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix == ".svg":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(frontier_svg(rows, **labels), encoding="utf-8")  # type: ignore[arg-type]
        return target
    if suffix == ".png":
        return _write_png(target, rows, **labels)
    raise InputError(target, None, "unsupported plot format", "use a .svg or .png file name")


def _write_png(target: Path, rows: Sequence[FrontierRow], **labels: str) -> Path:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError(
            target, None, "PNG plots need matplotlib", "pip install 'uxlocal[plot]', or write a .svg instead"
        ) from None
    fig, ax = plt.subplots(figsize=(7.2, 4.4), dpi=120)
    frontier = sorted((r for r in rows if not r.dominated), key=lambda r: r.rank or 0)
    ax.plot([r.point.cost for r in frontier], [r.point.fidelity for r in frontier], "--", color="#1f77b4")
    for row in rows:
        style = (
            dict(facecolors="white", edgecolors="#d62728", linewidths=2)
            if row.dominated
            else dict(color="#1f77b4")
        )
        ax.scatter([row.point.cost], [row.point.fidelity], s=40, zorder=3, **style)  # type: ignore[arg-type]
        ax.annotate(
            row.point.name,
            (row.point.cost, row.point.fidelity),
            textcoords="offset points",
            xytext=(6, 6),
            fontsize=8,
        )
    if min(r.point.cost for r in rows) > 0:
        ax.set_xscale("log")
    ax.set_xlabel(labels.get("x_label", "user-side cost per simulation (USD, log scale)"))
    ax.set_ylabel(labels.get("y_label", "Mean UFS"))
    ax.set_title(labels.get("title", "Cost-fidelity frontier"))
    ax.grid(alpha=0.3)
    fig.tight_layout()
    target.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(target)
    plt.close(fig)
    return target
