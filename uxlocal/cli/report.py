"""Reading a store as a person would: ``uxlocal report`` (terminal, HTML, Markdown) and ``uxlocal view``."""

from __future__ import annotations

from pathlib import Path

import click

from uxlocal.clikit import CONTEXT, read_store_option
from uxlocal.errors import UxlocalError


@click.command(name="report", context_settings=CONTEXT)
@read_store_option()
@click.option("--run", "run_ids", multiple=True, metavar="RUN_ID",
              help="Report only this run (repeatable; default: every run in the store).")
@click.option("--html", "html_path", default=None, type=click.Path(dir_okay=False),
              help="Write one self-contained HTML file (tables and plots, no network) here.")
@click.option("--format", "fmt", type=click.Choice(["terminal", "html", "md"]), default=None,
              help="terminal tables (default), html, or md (a Markdown summary).")
@click.option("-o", "--out", default=None, type=click.Path(dir_okay=False),
              help="Write the html or md output here instead of stdout.")
def report_cmd(db: str, run_ids: tuple[str, ...], html_path: str | None, fmt: str | None,
               out: str | None) -> None:
    """Show a store's results: terminal tables, an HTML report with plots, or Markdown.

    \b
    Examples:
      uxlocal report --db uxlocal.duckdb
      uxlocal report --db uxlocal.duckdb --html report.html
      uxlocal report --db uxlocal.duckdb --run uxbench-0123456789ab --format md -o summary.md
    """
    from uxlocal.report import build_report, render_html, render_markdown
    from uxlocal.report.readonly import open_store
    from uxlocal.reportkit.tables import render_report

    fmt, target = _report_target(html_path, fmt, out)
    con, broken_views = open_store(db)
    try:
        report = build_report(con, run_ids=list(run_ids), db=db, figures=fmt == "html")
    finally:
        con.close()
    report.skipped += [f"view not available in this store: {line}" for line in broken_views]
    if fmt == "terminal":
        render_report(report)
        return
    text = render_html(report) if fmt == "html" else render_markdown(report)
    if target is None:
        click.echo(text, nl=False)
        return
    Path(target).write_text(text, encoding="utf-8")
    plots = sum(len(s.figures) for s in report.sections)
    click.echo(f"wrote {target}: {len(report.sections)} section(s), {plots} plot(s), "
               f"{len(report.runs)} run(s)")


def _report_target(html_path: str | None, fmt: str | None, out: str | None) -> tuple[str, str | None]:
    """Resolve ``--html``, ``--format`` and ``--out`` into (format, file or None); conflicts: usage errors."""
    if html_path and fmt not in (None, "html"):
        raise click.UsageError(f"--html writes HTML; drop --format {fmt} (or use --format {fmt} --out FILE)")
    if html_path and out:
        raise click.UsageError("give the HTML file once: --html FILE")
    fmt = fmt or ("html" if html_path else "terminal")
    target = html_path or out
    if fmt == "terminal" and target:
        raise click.UsageError("--out needs --format html or md")
    return fmt, target


@click.command(name="view", context_settings=CONTEXT)
@read_store_option("Store to browse.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True,
              envvar="UXLOCAL_VIEW_PORT", help="Port on 127.0.0.1.")
def view_cmd(db: str, port: int) -> None:
    """Browse runs and conversations in a local web page (127.0.0.1 only, store opened read-only).

    \b
    Example:
      uxlocal view --db uxlocal.duckdb --port 8765
    """
    try:
        from uxlocal.report.viewer import serve
    except ModuleNotFoundError as exc:
        raise UxlocalError(f"the viewer needs {exc.name}: pip install 'uxlocal[report]'") from exc
    serve(db, port=port, echo=click.echo)
