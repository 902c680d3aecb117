"""Terminal rendering of result tables (rich), with numbers rounded for reading."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from uxlocal.reportkit.model import ReportTable

if TYPE_CHECKING:
    from uxlocal.reportkit.model import Report

__all__ = ["ReportTable", "format_cell", "render_report", "render_tables"]


def format_cell(value: Any) -> str:
    """Floats to 3 significant decimals, None to an empty cell."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def render_tables(tables: list[ReportTable]) -> None:
    """Print tables to stdout (plain text when not a terminal)."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    probe = Console()
    # a terminal keeps its width; a log or pipe gets room for the widest table (Table 1: 14 columns)
    console = Console(width=max(100, probe.width) if probe.is_terminal else 200)
    for table in tables:
        grid = Table(title=table.title or None, title_justify="left", show_lines=False)
        for col in table.columns:
            grid.add_column(Text(col), overflow="fold")
        for row in table.rows:  # cells are data: "[mobile_data_issue]" is a task id, not rich markup
            grid.add_row(*(Text(format_cell(v)) for v in row))
        console.print(grid)
        if table.note:
            console.print(Text(table.note, style="dim"))


def render_report(report: "Report") -> None:
    """Print a report's tables, section by section, to stdout (what ``uxlocal report`` shows)."""
    from rich.console import Console

    console = Console(width=max(100, Console().width))
    for section in report.sections:
        console.rule(f"[bold]{section.title}")
        for group in section.groups:
            heading = group.heading or (f"run {group.run_id}" if group.run_id else "")
            if heading:
                console.print(f"[bold]{heading}[/bold]")
            render_tables(group.tables)
        for note in section.notes:
            console.print(f"[yellow]note:[/yellow] {note}")
    for line in report.skipped:
        console.print(f"[dim]not shown: {line}[/dim]")
