"""The HTML report on a demo-shaped store: every section and plot, self-contained, same numbers."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path
from typing import Any

import pytest

from uxlocal.report import render_html
from uxlocal.reportkit.model import Report
from uxlocal.reportkit.tables import format_cell
from uxlocal.store.db import connect
from uxlocal.suites.base import get_suite


@pytest.fixture(scope="module")
def html(demo_report: Report) -> str:
    return render_html(demo_report)


def _figure_blocks(html: str) -> dict[str, str]:
    return dict(
        re.findall(r'<figure class="plot" id="fig-[^"]+" data-plot="([^"]+)">(.*?)</figure>', html, re.S)
    )


def test_html_has_a_section_per_suite_and_an_svg_per_plot(
    html: str, figures_expected: dict[str, set[str]]
) -> None:
    sections = set(re.findall(r'<section class="suite-section" id="sec-([^"]+)"', html))
    assert sections == set(figures_expected)
    blocks = _figure_blocks(html)
    for keys in figures_expected.values():
        for key in keys:
            assert key in blocks, f"plot {key} missing"
            assert blocks[key].count("<svg") == 1 and "</svg>" in blocks[key]


def test_html_plots_sit_in_their_own_section(html: str, figures_expected: dict[str, set[str]]) -> None:
    for section, keys in figures_expected.items():
        body = html.split(f'id="sec-{section}"', 1)[1].split("</section>", 1)[0]
        assert set(_figure_blocks(body)) == keys


def test_html_loads_nothing_from_the_network(html: str) -> None:
    # SVG namespace URIs (xmlns, rdf metadata) name vocabularies; nothing else may point outside
    assert not re.search(r"""(src|href|action)\s*=\s*["']?\s*(https?:|//)""", html, re.I)
    assert not re.search(r"url\(\s*['\"]?(https?:|//)", html, re.I)
    assert "@import" not in html and "<script" not in html and "<iframe" not in html
    assert "default-src 'none'" in html  # the CSP that makes a browser refuse any fetch


def test_html_tables_print_the_terminal_numbers(html: str, demo_store: tuple[Path, dict[str, Any]]) -> None:
    db, runs = demo_store
    con = connect(db, read_only=True)
    try:
        for suite in ("uxbench", "palate"):
            tables = get_suite(suite).report(con, runs[suite])
            assert tables
            for table in tables:
                assert escape(table.title) in html
                for row in table.rows:
                    for value in row:
                        assert f">{escape(format_cell(value))}</td>" in html
    finally:
        con.close()


def test_html_shows_intervals_and_invalid_counts(html: str) -> None:
    assert "<th>95% CI</th>" in html and "<th>invalid</th>" in html
    assert re.search(r"<td>\[\d+\.\d, \d+\.\d\]</td>", html)  # UXBench bootstrap interval cells


def test_html_provenance_names_hash_models_prompts_and_versions(html: str, demo_report: Report) -> None:
    provenance = html.split('id="provenance"', 1)[1]
    for run in demo_report.runs:
        assert f'data-run="{run.run_id}"' in provenance
        assert run.config_sha256 and run.config_sha256 in provenance
        for model in run.models:
            assert escape(model["model_identity"]) in provenance
        for name, digest in run.prompt_hashes.items():
            assert escape(name) in provenance and digest in provenance
        assert f"python {run.versions['python']}" in provenance
    assert any(run.prompt_hashes for run in demo_report.runs)


def test_html_escapes_titles_and_cells() -> None:
    from uxlocal.reportkit.model import ReportTable, Section, TableGroup

    table = ReportTable("<b>t</b>", ["a<b"], [("<script>alert(1)</script>",)], note="x & y")
    report = Report(
        db="<db>",
        generated_at="now",
        runs=[],
        sections=[Section("k", "T <i>", ["r"], groups=[TableGroup("r", [table])])],
    )
    out = render_html(report)
    assert "<script>alert" not in out and "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "&lt;b&gt;t&lt;/b&gt;" in out and "x &amp; y" in out and "T &lt;i&gt;" in out
