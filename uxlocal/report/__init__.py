"""Reports: terminal tables, HTML with plots, Markdown, and the local trajectory viewer.

See ``README.md`` in this folder for the map; the viewer lives in ``viewer/``.
"""

from uxlocal.report.build import build_report
from uxlocal.report.html import render_html
from uxlocal.report.markdown import render_markdown
from uxlocal.reportkit.model import Figure, Report, ReportTable, RunInfo, Section, TableGroup
from uxlocal.reportkit.registry import register_figure, register_section
from uxlocal.reportkit.rows import NoData

__all__ = [
    "Figure",
    "NoData",
    "Report",
    "ReportTable",
    "RunInfo",
    "Section",
    "TableGroup",
    "build_report",
    "register_figure",
    "register_section",
    "render_html",
    "render_markdown",
]
