"""Render a ``Report`` as a Markdown summary: every table (GitHub pipe tables) and the provenance.

Plots are listed by title and caption only; Markdown viewers differ too much in what inline SVG
they show, so the pictures stay in the HTML report. Cells go through ``tables.format_cell``, as in
the terminal and the HTML.

Layer contract: pure (``Report`` in, text out).
"""

from __future__ import annotations

from typing import Any

from uxlocal.reportkit.model import Report, ReportTable, RunInfo, Section
from uxlocal.reportkit.tables import format_cell


def _cell(value: Any) -> str:
    text = format_cell(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown_table(table: ReportTable) -> str:
    """Render a pipe table with the title in bold above and the note in italics below."""
    lines = [f"**{table.title}**", ""] if table.title else []
    lines.append("| " + " | ".join(_cell(c) for c in table.columns) + " |")
    lines.append("|" + "|".join(" --- " for _ in table.columns) + "|")
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in table.rows]
    if table.note:
        lines += ["", f"_{table.note}_"]
    return "\n".join(lines)


def _section(section: Section) -> list[str]:
    out = [f"## {section.title}", "", f"Runs: {', '.join(f'`{r}`' for r in section.run_ids)}", ""]
    if section.figures:
        out += ["Plots:", ""]
        out += [f"- {f.title}: {f.caption}" if f.caption else f"- {f.title}" for f in section.figures]
        out.append("")
    for group in section.groups:
        heading = group.heading or (f"Run `{group.run_id}`" if group.run_id else "")
        if heading:
            out += [f"### {heading}", ""]
        for table in group.tables:
            out += [markdown_table(table), ""]
    out += [f"> note: {n}" for n in section.notes]
    if section.notes:
        out.append("")
    return out


def _provenance(run: RunInfo) -> list[str]:
    s = run.summary
    lines = [
        f"### `{run.run_id}`",
        "",
        f"- suite / status: {run.suite} / {run.status}",
        f"- config sha256: `{run.config_sha256}`",
        f"- started / ended: {format_cell(run.started_at)} / {format_cell(run.ended_at)}",
        f"- git commit: `{run.git_commit or '(not a checkout)'}`",
        f"- versions: {', '.join(f'{k} {v}' for k, v in sorted(run.versions.items()))}",
    ]
    if s:
        lines.append(
            f"- episodes done / failed: {s.get('episodes_done')} / {s.get('episodes_failed')}; "
            f"generations {s.get('generations')} ({s.get('cache_hits')} cached, "
            f"{s.get('invalid_generations')} invalid); cost {format_cell(s.get('cost_usd'))} USD"
        )
    models = ReportTable(
        "",
        ["role", "model", "identity", "backend", "dtype"],
        [
            (m["role"], m["model_name"], m["model_identity"], m.get("backend"), m.get("dtype"))
            for m in run.models
        ],
    )
    lines += ["", markdown_table(models)]
    if run.prompt_hashes:
        lines += [
            "",
            markdown_table(
                ReportTable("", ["prompt or data file", "sha256"], sorted(run.prompt_hashes.items()))
            ),
        ]
    return lines + [""]


def render_markdown(report: Report) -> str:
    """Render the report as one Markdown document."""
    out = [
        "# uxlocal report",
        "",
        f"Store `{report.db}`, generated {report.generated_at}, "
        f"{len(report.runs)} run(s). Plots are in the HTML report (`uxlocal report --html FILE`).",
        "",
    ]
    for section in report.sections:
        out += _section(section)
    if not report.sections:
        out += ["This store has no runs yet.", ""]
    out += ["## Run provenance", ""]
    for run in report.runs:
        out += _provenance(run)
    if report.skipped:
        out += ["## Not shown", ""] + [f"- {s}" for s in report.skipped] + [""]
    return "\n".join(out).rstrip() + "\n"
