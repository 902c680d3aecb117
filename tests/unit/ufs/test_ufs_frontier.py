"""The cost-fidelity frontier on the paper's Table 1 (issue 5, item 6; spec §A.7.1, §A.7.3)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import duckdb
import pytest

from uxlocal.errors import InputError
from uxlocal.reportkit.plots import wants_log_scale
from uxlocal.suites.userproxy.ufs.frontier import (
    TABLE_1,
    Point,
    cheapest_at,
    dominates,
    efficient,
    frontier_table,
    pareto,
    table1_points,
)
from uxlocal.suites.userproxy.ufs.plot import frontier_svg, write_frontier_plot

PAPER_DOMINATED = {  # spec §A.7.1 [derived]: who dominates whom
    "Sonnet-4-6": ("Gemini-3.5-Flash", "Gemma-31B"),
    "Qwen3.6-35B": ("GPT-4.1-mini", "Gemma-26B", "Gemma-31B"),
    "GPT-5.4-mini": ("GPT-4.1-mini",),
}
PAPER_FRONTIER = ["GPT-4.1-mini", "Gemma-26B", "Gemma-31B", "Gemini-3.5-Flash"]


def test_table1_dominated_set_and_dominators_match_the_paper() -> None:
    rows = pareto(table1_points())
    dominated = {r.point.name: tuple(sorted(r.dominated_by)) for r in rows if r.dominated}
    assert dominated == {k: tuple(sorted(v)) for k, v in PAPER_DOMINATED.items()}


def test_table1_efficient_frontier_order_matches_the_paper() -> None:
    assert [p.name for p in efficient(table1_points())] == PAPER_FRONTIER
    ranks = {r.point.name: r.rank for r in pareto(table1_points())}
    assert [ranks[n] for n in PAPER_FRONTIER] == [1, 2, 3, 4]


@pytest.mark.parametrize(
    ("q", "proxy"),
    [
        (0.84, "Gemma-31B"),  # the paper's example: UFS .845 at about $0.0175/sim
        (0.86, "Gemini-3.5-Flash"),
        (0.75, "GPT-4.1-mini"),
        (0.87, None),  # nobody reaches it
    ],
)
def test_cheapest_proxy_at_fidelity_q(q: float, proxy: str | None) -> None:
    found = cheapest_at(table1_points(), q)
    assert (found.name if found else None) == proxy


def test_gemini_buys_about_two_points_at_about_three_times_the_cost() -> None:
    by = {p.name: p for p in table1_points()}
    gain = by["Gemini-3.5-Flash"].fidelity - by["Gemma-31B"].fidelity
    ratio = by["Gemini-3.5-Flash"].cost / by["Gemma-31B"].cost
    assert round(gain * 100, 1) == 1.9 and round(ratio, 1) == 3.2


@pytest.mark.parametrize(
    ("q", "p", "expected"),
    [
        (Point("q", 1, 0.5), Point("p", 2, 0.5), True),  # cheaper, as faithful
        (Point("q", 1, 0.6), Point("p", 1, 0.5), True),  # as cheap, more faithful
        (Point("q", 1, 0.5), Point("p", 1, 0.5), False),  # identical points do not dominate
        (Point("q", 1, 0.4), Point("p", 2, 0.5), False),  # a trade-off
    ],
)
def test_dominates(q: Point, p: Point, expected: bool) -> None:
    assert dominates(q, p) is expected


def test_pareto_refuses_duplicate_names() -> None:
    with pytest.raises(ValueError, match="unique"):
        pareto([Point("a", 1, 1), Point("a", 2, 1)])


def test_sql_pareto_macro_agrees_with_python_on_table1(store: duckdb.DuckDBPyConnection) -> None:
    store.execute("CREATE TEMP TABLE t1 (grp VARCHAR, name VARCHAR, cost DOUBLE, fidelity DOUBLE)")
    store.executemany(
        "INSERT INTO t1 VALUES ('paper', ?, ?, ?)", [(r.proxy, r.cost_per_sim, r.mean_ufs) for r in TABLE_1]
    )
    rows = store.execute(
        "SELECT name, dominated_by, frontier_rank FROM ufs_pareto('t1') ORDER BY name"
    ).fetchall()
    python = {r.point.name: (sorted(r.dominated_by), r.rank) for r in pareto(table1_points())}
    assert {name: (sorted(by), rank) for name, by, rank in rows} == python


def test_frontier_table_rows() -> None:
    columns, rows = frontier_table(pareto(table1_points()))
    assert columns[0] == "proxy" and rows[0][0] == "GPT-4.1-mini" and rows[0][3] == 1


def _texts(svg: str) -> str:
    return " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", svg))


def test_svg_plot_labels_every_proxy_marks_the_dominated_and_draws_the_frontier(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the frontier plot is drawn with matplotlib (extra 'plot')")
    rows = pareto(table1_points())
    path = write_frontier_plot(tmp_path / "frontier.svg", rows, x_label="cost per simulation (USD)")
    text = path.read_text()
    again = write_frontier_plot(tmp_path / "again.svg", rows, x_label="cost per simulation (USD)")
    assert text == again.read_text()  # deterministic
    ET.fromstring(text)  # one well-formed SVG document
    labels = _texts(text)
    assert all(r.proxy in labels for r in TABLE_1)
    assert sorted(re.findall(r"([\w.-]+) \(dominated\)", labels)) == sorted(PAPER_DOMINATED)
    assert "efficient frontier" in labels and "cost per simulation (USD)" in labels
    assert "Mean UFS (fraction 0-1)" in labels


def test_report_figure_and_cli_file_are_one_drawing(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="the frontier plot is drawn with matplotlib (extra 'plot')")
    rows = pareto(table1_points())
    figure = frontier_svg([("Cost-fidelity frontier", rows)], key="ufs-frontier")
    written = write_frontier_plot(tmp_path / "f.svg", rows).read_text()
    assert written == figure + "\n"


def test_frontier_log_axis_only_for_wide_positive_costs() -> None:
    pytest.importorskip("matplotlib", reason="the frontier plot is drawn with matplotlib (extra 'plot')")
    assert wants_log_scale([0.0001, 0.01]) and not wants_log_scale([0.001, 0.002])
    assert not wants_log_scale([0.0, 0.01])  # a free proxy cannot sit on a log axis
    svg = frontier_svg([("", pareto([Point("free", 0.0, 0.5), Point("paid", 0.01, 0.9)]))], key="free")
    assert "free" in _texts(svg) and "paid" in _texts(svg)


def test_frontier_without_points_is_a_labelled_empty_plot() -> None:
    pytest.importorskip("matplotlib", reason="the frontier plot is drawn with matplotlib (extra 'plot')")
    assert "no proxy has both a cost and a score" in _texts(frontier_svg([], key="empty"))


def test_png_plot_needs_matplotlib_or_says_which_extra(tmp_path: Path) -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(InputError, match=r"uxlocal\[plot\]"):
            write_frontier_plot(tmp_path / "f.png", pareto(table1_points()))
    else:
        path = write_frontier_plot(tmp_path / "f.png", pareto(table1_points()))
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_plot_format_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="use a .svg or .png"):
        write_frontier_plot(tmp_path / "f.pdf", pareto(table1_points()))
