"""Render a ``Report`` as one self-contained HTML file: inline CSS, inline SVG plots, no scripts.

The file must open offline, from a USB stick, years later: nothing is fetched (no CDN, fonts or
images by URL), and a Content-Security-Policy meta tag makes the browser refuse any fetch a
future edit might slip in. Table cells go through ``tables.format_cell``, the terminal's own
formatter, so every number reads exactly as ``uxlocal run`` printed it.

Layer contract: pure (``Report`` in, text out); the CLI writes the file.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from uxlocal.reportkit.model import Figure, Report, ReportTable, RunInfo, Section, TableGroup
from uxlocal.reportkit.tables import format_cell

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'none'"

CSS = """
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa; --accent: #0072B2; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header { padding: 18px 28px 10px; border-bottom: 1px solid var(--line); background: var(--soft); }
header h1 { margin: 0 0 4px; font-size: 22px; }
.meta, .runs, .note, figcaption { color: var(--muted); }
nav.toc a { margin-right: 14px; color: var(--accent); text-decoration: none; }
main { padding: 8px 28px 40px; max-width: 1400px; }
section { margin: 26px 0; }
h2 { border-bottom: 2px solid var(--accent); padding-bottom: 4px; font-size: 19px; }
h3 { font-size: 15px; margin: 18px 0 6px; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(480px, 1fr)); gap: 18px; }
figure.plot { margin: 0; padding: 10px; border: 1px solid var(--line); border-radius: 6px; background: #fff; }
figure.plot svg { width: 100%; height: auto; display: block; }
figcaption { font-size: 12.5px; margin-bottom: 6px; }
figcaption strong { color: var(--ink); font-size: 14px; display: block; }
table { border-collapse: collapse; margin: 6px 0 4px; font-size: 13px; }
caption { text-align: left; font-weight: 600; padding: 4px 0; white-space: nowrap; }
th, td { border: 1px solid var(--line); padding: 3px 8px; vertical-align: top; }
th { background: var(--soft); text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.note { font-size: 12.5px; margin: 0 0 12px; }
ul.notes { color: #8a4b00; font-size: 13px; }
code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; word-break: break-all; }
.kv th { width: 190px; }
"""


def _num(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    text = str(value).strip().rstrip("%")
    try:
        float(text)
    except ValueError:
        return False
    return True


def render_table(table: ReportTable) -> str:
    """One ``ReportTable`` as an HTML table with its title as caption and its note below."""
    head = "".join(f"<th>{escape(str(c))}</th>" for c in table.columns)
    body = []
    for row in table.rows:
        cells = []
        for value in row:
            text = format_cell(value)
            css = ' class="num"' if text and _num(value) else ""
            cells.append(f"<td{css}>{escape(text)}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    caption = f"<caption>{escape(table.title)}</caption>" if table.title else ""
    note = f'<p class="note">{escape(table.note)}</p>' if table.note else ""
    return (
        f'<table class="results">{caption}<thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>{note}"
    )


def _figure(fig: Figure) -> str:
    caption = f"<figcaption><strong>{escape(fig.title)}</strong>{escape(fig.caption)}</figcaption>"
    key = escape(fig.key)
    return f'<figure class="plot" id="fig-{key}" data-plot="{key}">{caption}{fig.svg}</figure>'


def _group(group: TableGroup) -> str:
    heading = group.heading or (f"Run {group.run_id}" if group.run_id else "")
    parts = [f"<h3>{escape(heading)}</h3>"] if heading else []
    parts += [render_table(t) for t in group.tables]
    if not group.tables:
        parts.append('<p class="note">no result table for this run yet</p>')
    return f'<div class="table-group" data-run="{escape(group.run_id or "")}">{"".join(parts)}</div>'


def _section(section: Section) -> str:
    parts = [
        f"<h2>{escape(section.title)}</h2>",
        f'<p class="runs">runs: {", ".join(escape(r) for r in section.run_ids)}</p>',
    ]
    if section.figures:
        parts.append(f'<div class="figures">{"".join(_figure(f) for f in section.figures)}</div>')
    parts += [_group(g) for g in section.groups]
    if section.notes:
        parts.append('<ul class="notes">' + "".join(f"<li>{escape(n)}</li>" for n in section.notes) + "</ul>")
    return (
        f'<section class="suite-section" id="sec-{escape(section.key)}" data-section="{escape(section.key)}">'
        f"{''.join(parts)}</section>"
    )


def _kv(pairs: list[tuple[str, Any]]) -> str:
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{v}</td></tr>" for k, v in pairs)
    return f'<table class="kv">{rows}</table>'


def _run_pairs(run: RunInfo) -> list[tuple[str, Any]]:
    s = run.summary
    options = json.dumps(run.config.get("suite_config", {}), sort_keys=True, ensure_ascii=False)
    pairs: list[tuple[str, Any]] = [
        ("suite / status", escape(f"{run.suite} / {run.status}")),
        ("config sha256", f"<code>{escape(run.config_sha256)}</code>"),
        ("started / ended", escape(f"{format_cell(run.started_at)} / {format_cell(run.ended_at)}")),
        ("git commit", f"<code>{escape(run.git_commit or '(not a checkout)')}</code>"),
        ("seed / limit", escape(f"{run.config.get('seed', '')} / {run.config.get('limit') or 'none'}")),
        ("suite options", f"<code>{escape(options)}</code>"),
        ("versions", escape(", ".join(f"{k} {v}" for k, v in sorted(run.versions.items())))),
    ]
    if s:
        pairs += [
            ("episodes done / failed", escape(f"{s.get('episodes_done')} / {s.get('episodes_failed')}")),
            (
                "generations (cache hits, invalid)",
                escape(
                    f"{s.get('generations')} ({s.get('cache_hits')} cached, {s.get('invalid_generations')} "
                    "invalid)"
                ),
            ),
            ("tokens in / out", escape(f"{s.get('prompt_tokens')} / {s.get('completion_tokens')}")),
            ("cost (USD)", escape(format_cell(s.get("cost_usd")))),
            ("wall time (s)", escape(format_cell(s.get("wall_s")))),
        ]
    return pairs


def _provenance(runs: list[RunInfo]) -> str:
    parts = ["<h2>Run provenance</h2>"]
    for run in runs:
        models = ReportTable(
            "Models",
            ["role", "model", "identity", "backend", "dtype", "max len", "USD / Mtok in", "USD / Mtok out"],
            [
                (
                    m["role"],
                    m["model_name"],
                    m["model_identity"],
                    m.get("backend"),
                    m.get("dtype"),
                    m.get("max_model_len"),
                    m.get("price_input_per_mtok"),
                    m.get("price_output_per_mtok"),
                )
                for m in run.models
            ],
        )
        prompts = ReportTable(
            "Prompt and data file hashes (sha256)", ["file", "sha256"], sorted(run.prompt_hashes.items())
        )
        parts.append(
            f'<div class="run" id="run-{escape(run.run_id)}" data-run="{escape(run.run_id)}">'
            f"<h3>{escape(run.run_id)}</h3>{_kv(_run_pairs(run))}{render_table(models)}"
            f"{render_table(prompts) if prompts.rows else ''}</div>"
        )
    return f'<section id="provenance" data-section="provenance">{"".join(parts)}</section>'


def render_html(report: Report) -> str:
    """Render the report as a complete HTML document (a string)."""
    toc = "".join(
        f'<a href="#sec-{escape(s.key)}">{escape(s.title.split(":")[0])}</a>' for s in report.sections
    )
    toc += '<a href="#provenance">Provenance</a>'
    skipped = ""
    if report.skipped:
        skipped = (
            '<section id="skipped"><h2>Not shown</h2><ul class="notes">'
            + "".join(f"<li>{escape(s)}</li>" for s in report.skipped)
            + "</ul></section>"
        )
    body = "".join(_section(s) for s in report.sections) or '<p class="note">This store has no runs yet.</p>'
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
        f"<title>uxlocal report: {escape(report.db)}</title><style>{CSS}</style></head><body>"
        f'<header><h1>uxlocal report</h1><p class="meta">store {escape(report.db)} &middot; generated '
        f"{escape(report.generated_at)} &middot; {len(report.runs)} run(s)</p>"
        f'<nav class="toc">{toc}</nav></header>'
        f"<main>{body}{_provenance(report.runs)}{skipped}</main></body></html>\n"
    )
