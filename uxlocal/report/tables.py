"""Terminal rendering of result tables (rich), with numbers rounded for reading."""

from __future__ import annotations

from typing import Any

from uxlocal.suites.base import ReportTable

__all__ = ["ReportTable", "format_cell", "render_tables"]


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

    console = Console(width=max(100, Console().width))
    for table in tables:
        grid = Table(title=table.title or None, title_justify="left", show_lines=False)
        for col in table.columns:
            grid.add_column(col, overflow="fold")
        for row in table.rows:
            grid.add_row(*(format_cell(v) for v in row))
        console.print(grid)
        if table.note:
            console.print(f"[dim]{table.note}[/dim]")
