"""The Markdown summary: every section's tables as pipe tables, provenance, escaping."""

from __future__ import annotations

import pytest

from uxlocal.report import render_markdown
from uxlocal.report.markdown import markdown_table
from uxlocal.reportkit.model import Report, ReportTable
from uxlocal.reportkit.tables import format_cell


def test_markdown_has_every_section_table_and_run(demo_report: Report) -> None:
    md = render_markdown(demo_report)
    assert md.startswith("# uxlocal report\n")
    for section in demo_report.sections:
        assert f"## {section.title}" in md
        for group in section.groups:
            for table in group.tables:
                assert f"**{table.title}**" in md
                assert "| " + " | ".join(table.columns) + " |" in md
    for run in demo_report.runs:
        assert f"### `{run.run_id}`" in md and run.config_sha256 in md
    assert "## Run provenance" in md


def test_markdown_cells_use_the_terminal_format_and_escape_pipes() -> None:
    table = ReportTable("t", ["a|b", "x"], [("1|2", 0.12345), (None, 12345.6)], note="n")
    lines = markdown_table(table).splitlines()
    assert lines[2] == "| a\\|b | x |"
    assert lines[4] == f"| 1\\|2 | {format_cell(0.12345)} |"
    assert lines[5] == f"|  | {format_cell(12345.6)} |" and lines[-1] == "_n_"


def test_markdown_lists_plots_when_drawn(demo_report: Report) -> None:
    md = render_markdown(demo_report)
    for section in demo_report.sections:
        for figure in section.figures:
            assert f"- {figure.title}" in md


def test_terminal_tables_print_bracketed_cells_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    """Telecom task ids look like rich markup ("[mobile_data_issue]…"); they must print as they are."""
    from uxlocal.reportkit.model import ReportTable
    from uxlocal.reportkit.tables import render_tables

    render_tables(
        [ReportTable("T [x]", ["task [id]"], [("[mobile_data_issue]airplane_mode_on",)], "note [dim]")]
    )
    out = capsys.readouterr().out
    assert "[mobile_data_issue]airplane_mode_on" in out and "task [id]" in out and "note [dim]" in out
