"""Plot primitives: plain numbers in, an SVG document (text) out, drawn with matplotlib.

Every function here is pure: it takes lists of values (no store, no suite names) and returns SVG
markup ready to inline in HTML. Suites' report sections (``uxlocal/suites/<suite>/section.py``)
read the views and call these; a suite-specific drawing (the UFS frontier) lives in its suite and
is built from ``figure``, ``to_svg``, ``colour`` and ``empty_note``. Matplotlib is used without
pyplot (``matplotlib.figure.Figure`` and the SVG canvas), so no global backend or window state is
touched and the module is safe to call from a server thread.

Conventions, so every plot reads the same way:

- colours come from the Okabe-Ito palette (distinguishable with the common colour-vision
  deficiencies); the heat map uses ``cividis`` (ordered, readable in grey-scale);
- every axis label names its unit ("%", "USD", "fraction 0-1", "1-5 score");
- text stays text in the SVG (``svg.fonttype = none``), so a page can be searched and a test can
  find an axis label; the output is deterministic for the same input (no date, fixed id salt).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
"""Categorical colours (blue, orange, green, purple, sky, vermillion, yellow, black)."""
INK = "#222222"
MUTED = "#777777"
MISSING = "#d9d9d9"


class PlotUnavailable(RuntimeError):
    """Matplotlib is not installed; the report still has its tables."""


def colour(index: int) -> str:
    """Return the ``index``-th categorical colour (cycling)."""
    return OKABE_ITO[index % len(OKABE_ITO)]


def _rc(salt: str) -> dict[str, Any]:
    return {
        "svg.fonttype": "none",
        "svg.hashsalt": salt,
        "font.size": 9,
        "axes.titlesize": 10,
        "axes.labelsize": 9,
        "axes.edgecolor": MUTED,
        "axes.labelcolor": INK,
        "text.color": INK,
        "xtick.color": INK,
        "ytick.color": INK,
        "axes.grid": True,
        "grid.color": "#e6e6e6",
        "grid.linewidth": 0.6,
        "axes.axisbelow": True,
        "legend.frameon": False,
    }


@contextmanager
def figure(key: str, width_in: float = 6.4, height_in: float = 3.6) -> Iterator[Any]:
    """Yield a fresh matplotlib ``Figure`` under the house style; ``key`` salts the SVG ids.

    Use as ``with figure("k") as fig: ...`` then ``to_svg(fig, key)`` inside the block, so the
    style (font type, id salt) is in force while the SVG is written.
    """
    try:
        import matplotlib
        from matplotlib.figure import Figure as MplFigure
    except ModuleNotFoundError as exc:  # pragma: no cover - depends on the install
        raise PlotUnavailable("plots need matplotlib: pip install 'uxlocal[report]'") from exc
    style: Any = _rc(key)  # matplotlib types rc keys as a Literal; ours are all valid names
    with matplotlib.rc_context(style):
        yield MplFigure(figsize=(width_in, height_in), layout="constrained")


_PROLOGUE = re.compile(r"^.*?(?=<svg)", re.S)


def to_svg(fig: Any, key: str) -> str:
    """Return the figure as an inline-ready ``<svg>`` element (no XML prologue, no fixed size)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, facecolor="white")
    svg = _PROLOGUE.sub("", buffer.getvalue(), count=1)
    # let CSS size the plot: keep the viewBox, drop the fixed width/height in points
    svg = re.sub(r'<svg([^>]*?) width="[^"]+" height="[^"]+"', r"<svg\1", svg, count=1)
    svg = _prefix_ids(svg, key)
    return svg.replace("<svg ", f'<svg class="plot-svg" data-plot="{key}" role="img" ', 1).strip()


def _prefix_ids(svg: str, key: str) -> str:
    """Make every id unique to this plot.

    Matplotlib numbers ``figure_1``, ``axes_1`` ... afresh in each file, and one HTML page holds
    many plots: duplicate ids are invalid, and a ``url(#id)`` could resolve into the wrong plot.
    """
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    if not ids:
        return svg
    pattern = re.compile(
        r'(\bid="|href="#|url\(#)('
        + "|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True))
        + r')(?=["\)])'
    )
    return pattern.sub(lambda m: f"{m.group(1)}{key}-{m.group(2)}", svg)


def _finite(value: float | None) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _nan(value: float | None) -> float:
    return math.nan if value is None or not _finite(value) else float(value)


def empty_note(ax: Any, text: str) -> None:
    """Write ``text`` in the middle of an axes that has nothing to draw."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color=MUTED)


# --- reliability diagram ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ReliabilityBin:
    """One confidence bin: mean predicted probability, observed frequency, and the count."""

    mean_predicted: float
    observed: float
    count: int


def reliability_bins(pairs: Sequence[tuple[float, int]], n_bins: int = 10) -> list[ReliabilityBin]:
    """Equal-width bins over P(positive) in [0, 1]; ``pairs`` are (probability, outcome 0/1).

    The last bin is closed (a probability of exactly 1 falls in it), as in the ECE view.
    """
    sums: dict[int, list[float]] = {}
    for p, y in pairs:
        if not _finite(p):
            continue
        index = min(int(math.floor(float(p) * n_bins)), n_bins - 1)
        total = sums.setdefault(index, [0.0, 0.0, 0.0])
        total[0] += float(p)
        total[1] += float(y)
        total[2] += 1
    return [ReliabilityBin(s[0] / s[2], s[1] / s[2], int(s[2])) for _, s in sorted(sums.items())]


def reliability_svg(
    series: Sequence[tuple[str, Sequence[ReliabilityBin]]],
    *,
    key: str,
    x_label: str = "predicted P(good) (fraction 0-1)",
    y_label: str = "observed share liked (fraction 0-1)",
) -> str:
    """Reliability diagram: one line per series over the diagonal, with counts in a strip below."""
    with figure(key, 6.4, 4.6) as fig:
        top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
        top.plot([0, 1], [0, 1], linestyle="--", color=MUTED, linewidth=1, label="perfect calibration")
        width = 0.8 / max(1, len(series)) / 10
        for i, (label, bins) in enumerate(series):
            xs = [b.mean_predicted for b in bins]
            top.plot(xs, [b.observed for b in bins], marker="o", color=colour(i), linewidth=1.5, label=label)
            bottom.bar(
                [x + (i - (len(series) - 1) / 2) * width for x in xs],
                [b.count for b in bins],
                width=width,
                color=colour(i),
            )
        if not any(bins for _, bins in series):
            empty_note(top, "no item has a recorded P(good)")
        top.set(xlim=(0, 1), ylim=(0, 1), ylabel=y_label)
        top.legend(loc="upper left", fontsize=8)
        bottom.set(xlabel=x_label, ylabel="items (count)")
        return to_svg(fig, key)


# --- bars ----------------------------------------------------------------------------------------


def grouped_hbars_svg(
    categories: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    *,
    key: str,
    x_label: str,
    title: str = "",
    x_max: float | None = None,
    reference: float | None = None,
    reference_label: str = "",
    value_format: str = "{:.2f}",
) -> str:
    """Horizontal bars: one row per category, one bar per series within it; None = no bar.

    Each bar is labelled with its value (``value_format``), so a zero still reads as a number.
    """
    legend = len(series) > 1 or bool(reference_label)
    bars = max(1, len(categories)) * max(1, len(series))
    height = max(
        2.4, 1.2 + 0.1 * bars + 0.18 * max(1, len(categories)) + (0.2 * len(series) if legend else 0)
    )
    with figure(key, 6.4, min(height, 14.0)) as fig:
        ax = fig.subplots()
        n = max(1, len(series))
        bar = 0.8 / n
        for i, (label, values) in enumerate(series):
            ys = [c + (n - 1) / 2 * bar - i * bar for c in range(len(categories))]
            bars_drawn = ax.barh(ys, [_nan(v) for v in values], height=bar, color=colour(i), label=label)
            texts = ["" if not _finite(v) else value_format.format(v) for v in values]
            ax.bar_label(bars_drawn, labels=texts, padding=2, fontsize=7, color=INK)
        ax.set_yticks(range(len(categories)), list(categories))
        ax.invert_yaxis()
        if reference is not None:
            ax.axvline(reference, color=MUTED, linestyle="--", linewidth=1, label=reference_label or None)
        if x_max is not None:
            ax.set_xlim(0, x_max * 1.08)  # room for the value labels of full-length bars
        if not categories:
            empty_note(ax, "nothing to show")
        ax.set(xlabel=x_label, title=title)
        if legend:
            _legend_below(fig, ax)
        return to_svg(fig, key)


def _legend_below(fig: Any, ax: Any) -> None:
    """Legend under the plot, where long labels cannot cover the data."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        side_by_side = sum(len(label) for label in labels) <= 70  # else one per line, so none is cut off
        fig.legend(
            handles, labels, loc="outside lower center", fontsize=8, ncols=len(labels) if side_by_side else 1
        )


def intervals_svg(
    rows: Sequence[tuple[str, float | None, float | None, float | None]],
    *,
    key: str,
    x_label: str,
    title: str = "",
    x_lim: tuple[float, float] | None = None,
    reference: float | None = None,
    ranked: bool = True,
) -> str:
    """Leaderboard: one row per entry, a dot at the estimate and a bar across its interval.

    ``ranked`` sorts the rows best first; otherwise they keep the given order.
    """
    if ranked:
        rows = sorted(rows, key=lambda r: -_nan(r[1]) if _finite(r[1]) else math.inf)
    with figure(key, 6.4, max(2.0, 0.36 * len(rows) + 1.1)) as fig:
        ax = fig.subplots()
        for y, (_, value, low, high) in enumerate(rows):
            if _finite(low) and _finite(high):
                ax.hlines(y, _nan(low), _nan(high), color=colour(0), linewidth=2.5, alpha=0.6)
            if _finite(value):
                ax.plot([_nan(value)], [y], marker="o", color=colour(0), markersize=6)
        ax.set_yticks(range(len(rows)), [r[0] for r in rows])
        ax.invert_yaxis()
        if reference is not None:
            ax.axvline(reference, color=MUTED, linestyle="--", linewidth=1)
        if x_lim is not None:
            ax.set_xlim(*x_lim)
        if not rows:
            empty_note(ax, "nothing to show")
        ax.set(xlabel=x_label, title=title)
        return to_svg(fig, key)


def lines_svg(
    series: Sequence[tuple[str, Sequence[tuple[float, float | None]]]],
    *,
    key: str,
    x_label: str,
    y_label: str,
    title: str = "",
    y_lim: tuple[float, float] | None = None,
    integer_x: bool = False,
) -> str:
    """One line with markers per series (e.g. pass^k against k)."""
    with figure(key, 6.4, 3.0 + 0.2 * len(series)) as fig:
        ax = fig.subplots()
        for i, (label, points) in enumerate(series):
            ax.plot(
                [p[0] for p in points], [_nan(p[1]) for p in points], marker="o", color=colour(i), label=label
            )
        xs = [p[0] for _, points in series for p in points]
        if integer_x and xs:
            low, high = int(min(xs)), int(max(xs))
            step = max(1, (high - low) // 10 + 1)
            ax.set_xticks(range(low, high + 1, step))
            ax.set_xlim(low - 0.5, high + 0.5)
        if y_lim is not None:
            ax.set_ylim(*y_lim)
        if not series:
            empty_note(ax, "nothing to show")
        ax.set(xlabel=x_label, ylabel=y_label, title=title)
        if series:
            _legend_below(fig, ax)
        return to_svg(fig, key)


def scatter_svg(
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]],
    *,
    key: str,
    x_label: str,
    y_label: str,
    lims: tuple[float, float] | None = None,
    jitter: float = 0.0,
) -> str:
    """One point cloud per series over the diagonal y = x (e.g. judge score against human score).

    ``jitter`` spreads x by up to that much either way, deterministically (a golden-ratio
    sequence, so the same data draws the same SVG): integer human ratings would otherwise stack
    into a few columns. ``lims`` sets both axes, so the diagonal is the line of agreement.
    """
    with figure(key, 5.2, 4.6) as fig:
        ax = fig.subplots()
        for i, (label, points) in enumerate(series):
            xs = [x + jitter * (2 * ((k * 0.618034) % 1.0) - 1) for k, (x, _) in enumerate(points)]
            ax.scatter(
                xs,
                [y for _, y in points],
                s=14,
                alpha=0.6,
                color=colour(i),
                label=f"{label} (n={len(points)})",
            )
        if lims is not None:
            ax.plot(lims, lims, linestyle="--", color=MUTED, linewidth=1, label="judge = human")
            ax.set(xlim=(lims[0] - 0.5, lims[1] + 0.5), ylim=(lims[0] - 0.5, lims[1] + 0.5))
        if not any(points for _, points in series):
            empty_note(ax, "nothing to show")
        ax.set(xlabel=x_label, ylabel=y_label)
        _legend_below(fig, ax)
        return to_svg(fig, key)


# --- heat map ------------------------------------------------------------------------------------


def heatmap_svg(
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
    *,
    key: str,
    colour_label: str,
    x_label: str,
    y_label: str,
    title: str = "",
    annotations: Sequence[Sequence[str]] | None = None,
    v_range: tuple[float, float] | None = None,
) -> str:
    """Draw a rows x columns matrix as coloured cells, each written out; None cells grey with a dash."""
    import numpy as np

    matrix = np.array([[_nan(v) for v in row] for row in values], dtype=float).reshape(
        len(rows), len(columns)
    )
    width = min(9.0, max(4.0, 1.1 * len(columns) + 2.5))
    with figure(key, width, max(2.4, 0.45 * len(rows) + 1.4)) as fig:
        ax = fig.subplots()
        ax.grid(False)
        low, high = v_range or (
            float(np.nanmin(matrix)) if np.isfinite(matrix).any() else 0.0,
            float(np.nanmax(matrix)) if np.isfinite(matrix).any() else 1.0,
        )
        masked = np.ma.masked_invalid(matrix)
        cmap = _cmap("cividis")
        image = ax.imshow(masked, cmap=cmap, vmin=low, vmax=high if high > low else low + 1, aspect="auto")
        ax.set_xticks(range(len(columns)), list(columns))
        ax.set_yticks(range(len(rows)), list(rows))
        for r in range(len(rows)):
            for c in range(len(columns)):
                value = matrix[r, c]
                text = annotations[r][c] if annotations else ("" if math.isnan(value) else f"{value:.2f}")
                if math.isnan(value):
                    text = text or "-"
                if math.isnan(value):
                    ink = INK
                else:  # light text on the dark (low) end of cividis, dark text on the bright end
                    ink = "white" if high <= low or (value - low) / (high - low) < 0.55 else INK
                ax.text(c, r, text, ha="center", va="center", fontsize=8, color=ink)
        fig.colorbar(image, ax=ax, label=colour_label, shrink=0.9)
        ax.set(xlabel=x_label, ylabel=y_label, title=title)
        return to_svg(fig, key)


def _cmap(name: str) -> Any:
    import matplotlib

    return matplotlib.colormaps[name].with_extremes(bad=MISSING)


# --- axes ----------------------------------------------------------------------------------------


def wants_log_scale(values: Sequence[float]) -> bool:
    """Use a log axis when every value is positive and they span more than a factor of 20."""
    return bool(values) and min(values) > 0 and max(values) / min(values) > 20
