"""Plot primitives on hand-built numbers: SVG out, axis labels with units, missing data tolerated."""

from __future__ import annotations

import math
import re

import pytest

from uxlocal.reportkit import plots


def _texts(svg: str) -> str:
    return " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))


def test_reliability_bins_average_probability_and_outcome_per_bin() -> None:
    bins = plots.reliability_bins([(0.05, 0), (0.08, 1), (0.95, 1), (1.0, 1), (math.nan, 1)], n_bins=10)
    assert [(round(b.mean_predicted, 3), b.observed, b.count) for b in bins] == [
        (0.065, 0.5, 2),
        (0.975, 1.0, 2),
    ]


def test_reliability_svg_is_inline_ready_with_labelled_axes() -> None:
    svg = plots.reliability_svg([("judge A", plots.reliability_bins([(0.2, 0), (0.8, 1)]))], key="rel")
    assert svg.startswith('<svg class="plot-svg" data-plot="rel"') and svg.endswith("</svg>")
    assert "<?xml" not in svg and "<!DOCTYPE" not in svg
    text = _texts(svg)
    assert "predicted P(good) (fraction 0-1)" in text and "items (count)" in text and "judge A" in text


def test_plots_are_deterministic_for_the_same_input() -> None:
    args = (["a", "b"], [("s", [1.0, None])])
    assert plots.grouped_hbars_svg(*args, key="k", x_label="x (%)") == plots.grouped_hbars_svg(
        *args, key="k", x_label="x (%)"
    )


def test_plot_ids_differ_between_figures_so_inline_svgs_do_not_clash() -> None:
    one = plots.grouped_hbars_svg(["a"], [("s", [1.0])], key="one", x_label="x")
    two = plots.grouped_hbars_svg(["a"], [("s", [1.0])], key="two", x_label="x")
    ids = lambda svg: set(re.findall(r'\bid="([^"]+)"', svg))  # noqa: E731
    assert ids(one) and not ids(one) & ids(two)
    refs = set(re.findall(r'(?:href="#|url\(#)([^")]+)', one))
    assert refs and refs <= ids(one)  # every reference still points inside its own plot


def test_heatmap_writes_every_cell_and_marks_missing_ones() -> None:
    svg = plots.heatmap_svg(
        ["u1", "u2"],
        ["A", "B"],
        [[4.5, None], [2.0, 3.25]],
        key="hm",
        annotations=[["4.50 (#1)", "-"], ["2.00 (#2)", "3.25 (#1)"]],
        colour_label="personal score (1-5)",
        x_label="candidate",
        y_label="user",
        v_range=(1, 5),
    )
    text = _texts(svg)
    for cell in ("4.50 (#1)", "2.00 (#2)", "3.25 (#1)", "personal score (1-5)", "u1", "B"):
        assert cell in text
    assert " - " in f" {text} "


@pytest.mark.parametrize(
    "call",
    [
        # every primitive draws an empty input as a labelled, empty plot instead of raising
        lambda: plots.grouped_hbars_svg([], [], key="e1", x_label="x"),
        lambda: plots.intervals_svg([], key="e2", x_label="x"),
        lambda: plots.lines_svg([], key="e3", x_label="x", y_label="y"),
        lambda: plots.reliability_svg([], key="e5"),
    ],
)
def test_plot_primitives_accept_empty_input(call: object) -> None:
    svg = call()  # type: ignore[operator]
    assert svg.startswith("<svg") and "nothing to show" in _texts(svg) or "no " in _texts(svg)


def test_intervals_keep_given_order_unless_ranked() -> None:
    rows = [("low", 0.2, 0.1, 0.3), ("high", 0.9, 0.8, 1.0)]
    ranked = _texts(plots.intervals_svg(rows, key="r1", x_label="x"))
    kept = _texts(plots.intervals_svg(rows, key="r2", x_label="x", ranked=False))
    assert ranked.index("high") < ranked.index("low") and kept.index("low") < kept.index("high")


def test_scatter_svg_counts_points_per_series_and_draws_the_agreement_line() -> None:
    svg = plots.scatter_svg([("judge A", [(1.0, 1.2), (3.0, 2.5), (5.0, 4.8)]), ("judge B", [])],
                            key="sc", x_label="human score (1-5)", y_label="judge score (1-5)", lims=(1, 5),
                            jitter=0.15)
    text = _texts(svg)
    assert "judge A (n=3)" in text and "judge B (n=0)" in text and "judge = human" in text
    assert "human score (1-5)" in text and "judge score (1-5)" in text
    assert svg == plots.scatter_svg([("judge A", [(1.0, 1.2), (3.0, 2.5), (5.0, 4.8)]), ("judge B", [])],
                                    key="sc", x_label="human score (1-5)", y_label="judge score (1-5)",
                                    lims=(1, 5), jitter=0.15)  # the jitter is deterministic
