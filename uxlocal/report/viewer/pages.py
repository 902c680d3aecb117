"""The viewer's pages as HTML strings: the run and episode lists with filters, one run, one episode.

Layer contract: pure (dicts from ``queries.py`` in, HTML out); every value from the store is
escaped. Styles and the few lines of script are inline, so the pages load nothing from anywhere.
The script only submits the filter form when a field changes and highlights a verdict's evidence
turns; every page also works without it.
"""

from __future__ import annotations

import json
from html import escape
from typing import Any
from urllib.parse import urlencode

from uxlocal.report.html import render_table
from uxlocal.reportkit.model import ReportTable
from uxlocal.reportkit.tables import format_cell
from uxlocal.store.db import json_value

from .queries import PAGE_SIZE, Filters

CSS = """
:root { --ink: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa; --accent: #0072B2;
        --user: #eef6ff; --assistant: #f3f0ff; --tool: #f6f8fa; --system: #fff8e6; --mark: #fff1a8; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
header { padding: 10px 24px; border-bottom: 1px solid var(--line); background: var(--soft); }
header a { color: var(--accent); text-decoration: none; margin-right: 14px; }
header .store { color: var(--muted); font-size: 12.5px; }
main { padding: 8px 24px 40px; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 22px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0; }
th, td { border: 1px solid var(--line); padding: 3px 7px; vertical-align: top; text-align: left; }
th { background: var(--soft); }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
a { color: var(--accent); }
form.filters { display: flex; flex-wrap: wrap; gap: 8px 14px; align-items: end; padding: 10px;
               background: var(--soft); border: 1px solid var(--line); border-radius: 6px; }
form.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); }
form.filters select, form.filters input { font: inherit; min-width: 120px; }
form.filters input[type=number] { width: 90px; min-width: 0; }
.badge { display: inline-block; padding: 0 6px; border-radius: 9px; font-size: 12px; background: #e8eaed;
         margin: 1px; }
.badge.good, .badge.pass, .badge.met { background: #d7f5dd; } .badge.bad, .badge.fail { background: #ffd9d2; }
.badge.invalid { background: #ffe8b3; }
.muted, .note, caption { color: var(--muted); }
.note { font-size: 12.5px; }
.episode-grid { display: grid; grid-template-columns: minmax(0, 3fr) minmax(0, 2fr); gap: 20px; }
@media (max-width: 900px) { .episode-grid { grid-template-columns: 1fr; } }
.turn { border: 1px solid var(--line); border-radius: 6px; margin: 8px 0; padding: 6px 10px; }
.turn.role-user { background: var(--user); } .turn.role-assistant { background: var(--assistant); }
.turn.role-tool { background: var(--tool); } .turn.role-system { background: var(--system); }
.turn.evidence { border: 2px solid #b58900; box-shadow: 0 0 0 2px var(--mark); }
.turn.evidence-fail { border-color: #D55E00; box-shadow: 0 0 0 2px #ffd9d2; }
.cited { font-weight: 600; color: #7a4d00; }
.turn.focus { outline: 3px solid var(--accent); }
.turn header, .verdict header { all: unset; display: flex; gap: 8px; font-size: 12px; color: var(--muted); }
pre { white-space: pre-wrap; word-break: break-word; margin: 4px 0;
      font: 13px/1.4 ui-monospace, Menlo, monospace; }
.tool-call { border-left: 3px solid var(--accent); padding: 2px 8px; margin: 4px 0; background: #fff; }
.tool-call.error { border-left-color: #D55E00; }
.tool-call.seat-user { margin-left: 24px; border-left-style: dashed; }
.verdict { border: 1px solid var(--line); border-radius: 6px; padding: 6px 10px; margin: 8px 0;
           cursor: pointer; }
.verdict.invalid { background: #fffaf0; }
.rationale { white-space: pre-wrap; margin: 4px 0; }
details summary { cursor: pointer; color: var(--muted); font-size: 12px; }
.pager a { margin-right: 12px; }
"""

SCRIPT = """
document.querySelectorAll('form.filters select, form.filters input').forEach(function (field) {
  field.addEventListener('change', function () { field.form.submit(); });
});
document.querySelectorAll('.verdict[data-evidence]').forEach(function (card) {
  card.addEventListener('click', function () {
    document.querySelectorAll('.turn.focus').forEach(function (t) { t.classList.remove('focus'); });
    var first = null;
    card.dataset.evidence.split(' ').forEach(function (idx) {
      var turn = document.getElementById('turn-' + idx);
      if (turn) { turn.classList.add('focus'); first = first || turn; }
    });
    if (first) { first.scrollIntoView({block: 'center'}); }
  });
});
"""


def page(title: str, body: str, *, db: str) -> str:
    """Wrap ``body`` in a complete page."""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">'
        f"<title>{escape(title)} - uxlocal viewer</title><style>{CSS}</style></head><body>"
        f'<header><a href="/"><strong>uxlocal viewer</strong></a><a href="/#runs">Runs</a>'
        f'<a href="/#episodes">Episodes</a><span class="store">{escape(db)} (read-only)</span></header>'
        f"<main>{body}</main><script>{SCRIPT}</script></body></html>\n"
    )


def _link(path: str, **params: Any) -> str:
    query = urlencode({k: v for k, v in params.items() if v not in (None, "")})
    return escape(f"{path}?{query}" if query else path)


def _badges(values: list[str], css: bool = True) -> str:
    return "".join(f'<span class="badge {escape(v) if css else ""}">{escape(v)}</span>' for v in values)


# --- index ---------------------------------------------------------------------------------------


def runs_table(runs: list[dict[str, Any]]) -> str:
    """List the runs, each linking to its page and to its episodes."""
    rows = []
    for r in runs:
        rows.append(
            f'<tr><td><a href="{_link("/run", run=r["run_id"])}">{escape(r["run_id"])}</a></td>'
            f"<td>{escape(r['suite'])}</td><td>{escape(r['status'])}</td>"
            f'<td>{escape(format_cell(r["started_at"]))}</td><td class="num">{r["done"]}</td>'
            f'<td class="num">{r["failed"]}</td><td>{escape(r["models"] or "")}</td>'
            f'<td><a href="{_link("/", run=r["run_id"])}#episodes">episodes</a></td></tr>'
        )
    return (
        '<table id="runs-table"><thead><tr><th>run</th><th>suite</th><th>status</th><th>started</th>'
        "<th>done</th><th>failed</th><th>models</th><th></th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _select(name: str, label: str, options: list[str], chosen: str) -> str:
    items = ['<option value="">(all)</option>'] + [
        f'<option value="{escape(o)}"{" selected" if o == chosen else ""}>{escape(o)}</option>'
        for o in options
    ]
    return f'<label>{escape(label)}<select name="{name}">{"".join(items)}</select></label>'


def filter_form(options: dict[str, list[str]], filters: Filters, *, families: bool) -> str:
    """Render the GET form; each change reloads the list (Apply does the same without script)."""
    fields = [
        _select("suite", "suite", options["suite"], filters.suite),
        _select("run", "run", options["run"], filters.run),
        _select("model", "model", options["model"], filters.model),
        _select("verdict", "verdict", options["verdict"], filters.verdict),
    ]
    if families:
        fields.append(_select("family", "violation family", options["family"], filters.family))
    fields.append(_select("user", "user", options["user"], filters.user))
    fields += [
        f'<label>reward &ge;<input type="number" step="any" name="reward_min" '
        f'value="{escape(filters.reward_min)}"></label>',
        f'<label>reward &le;<input type="number" step="any" name="reward_max" '
        f'value="{escape(filters.reward_max)}"></label>',
        '<button type="submit">Apply</button><a href="/#episodes">clear</a>',
    ]
    return f'<form class="filters" id="filters" method="get" action="/">{"".join(fields)}</form>'


def _episode_row(e: dict[str, Any]) -> str:
    link = _link("/episode", run=e["run_id"], id=e["episode_id"])
    ending = e["termination"] or ""
    reward = "" if e["reward"] is None else format_cell(float(e["reward"]))
    return (
        f'<tr class="episode" data-suite="{escape(e["suite"])}" data-run="{escape(e["run_id"])}" '
        f'data-reward="{"" if e["reward"] is None else float(e["reward"])}">'
        f"<td>{escape(e['suite'])}</td><td>{escape(e['run_id'])}</td>"
        f'<td><a class="episode-link" href="{link}">{escape(e["episode_id"])}</a></td>'
        f"<td>{escape(e['task'] or '')}</td>"
        f"<td>{escape(e['status'])}{': ' if ending else ''}{escape(ending)}</td>"
        f'<td class="num">{escape(reward)}</td><td class="num">{escape(format_cell(e["n_turns"]))}</td>'
        f"<td>{_badges(list(e['labels']))}</td><td>{escape(e['user_key'] or '')}</td>"
        f"<td>{escape(e['candidate'] or '')}</td><td>{_badges(list(e['families']), css=False)}</td></tr>"
    )


def episodes_table(total: int, episodes: list[dict[str, Any]], filters: Filters) -> str:
    """One page of episodes, with a count and links to the neighbouring pages."""
    first = (filters.page - 1) * PAGE_SIZE
    shown = f"{first + 1}-{first + len(episodes)} of {total}" if episodes else f"0 of {total}"
    pager = []
    if filters.page > 1:
        pager.append(
            f'<a href="{_link("/", **filters.active(), page=filters.page - 1)}#episodes">previous</a>'
        )
    if first + len(episodes) < total:
        pager.append(f'<a href="{_link("/", **filters.active(), page=filters.page + 1)}#episodes">next</a>')
    head = (
        "<tr><th>suite</th><th>run</th><th>episode</th><th>task</th><th>ending</th><th>reward</th>"
        "<th>turns</th><th>verdicts</th><th>user</th><th>candidate</th><th>violations</th></tr>"
    )
    return (
        f'<p class="count" id="episode-count" data-total="{total}">episodes {shown}</p>'
        f'<table id="episodes-table"><thead>{head}</thead>'
        f"<tbody>{''.join(_episode_row(e) for e in episodes)}</tbody></table>"
        f'<p class="pager">{"".join(pager)}</p>'
    )


def index_page(
    runs: list[dict[str, Any]],
    options: dict[str, list[str]],
    filters: Filters,
    total: int,
    episodes: list[dict[str, Any]],
    *,
    db: str,
    families: bool,
) -> str:
    """Render the runs, then the filterable episode list."""
    body = (
        f'<h1 id="runs">Runs</h1>{runs_table(runs)}<h1 id="episodes">Episodes</h1>'
        f"{filter_form(options, filters, families=families)}{episodes_table(total, episodes, filters)}"
    )
    return page("Runs and episodes", body, db=db)


# --- one run -------------------------------------------------------------------------------------


def run_page(run: dict[str, Any], tables: list[ReportTable], problem: str | None, *, db: str) -> str:
    """Render a run's provenance and its suite's result tables."""
    config = run.get("config")
    pretty = (
        json.dumps(json_value(config, lenient=True), indent=1, ensure_ascii=False)
        if isinstance(config, str)
        else str(config)
    )
    facts = ReportTable(
        "",
        ["field", "value"],
        [
            (k, run.get(k))
            for k in (
                "run_id",
                "suite",
                "status",
                "config_sha256",
                "git_commit",
                "started_at",
                "ended_at",
                "wall_s",
            )
        ],
    )
    parts = [
        f"<h1>Run {escape(run['run_id'])}</h1>",
        f'<p><a href="{_link("/", run=run["run_id"])}#episodes">episodes of this run</a></p>',
        render_table(facts),
        f"<details><summary>config</summary><pre>{escape(pretty)}</pre></details>",
        "<h2>Results</h2>",
    ]
    parts += [render_table(t) for t in tables]
    if problem:
        parts.append(f'<p class="note">tables unavailable: {escape(problem)}</p>')
    return page(f"Run {run['run_id']}", "".join(parts), db=db)


# --- one episode ---------------------------------------------------------------------------------


def _json_block(value: Any) -> str:
    return f"<pre>{escape(json.dumps(value, indent=1, ensure_ascii=False, default=str))}</pre>"


SEAT_LABEL = {"user": "user seat (own device)", "assistant": "agent seat"}
"""Who ran a tool call: in dual-control domains (telecom) the user acts on its phone too."""


def _tool_call(call: dict[str, Any]) -> str:
    state = "ok" if call["ok"] else "error"
    seat = call["requestor"] or ""
    label = SEAT_LABEL.get(seat, seat)
    outcome = call["result"] if call["ok"] else (call["error"] or call["result"] or "")
    args = json.dumps(call["arguments"], ensure_ascii=False, default=str)
    return (
        f'<div class="tool-call {state} seat-{escape(seat)}"><strong>{escape(label)} calls '
        f"{escape(call['name'] or '')}</strong><pre>{escape(args)}</pre>"
        f'<span class="muted">{state}:</span><pre>{escape(str(outcome))}</pre></div>'
    )


FAILING = ("(fail)", "(bad)")
"""Verdict labels whose evidence turns are marked as where something went wrong."""


def _turn(turn: dict[str, Any], calls: list[dict[str, Any]], cited_by: list[str]) -> str:
    idx = turn["idx"]
    css = f"turn role-{escape(turn['role'])}" + (" evidence" if cited_by else "")
    if any(c.endswith(FAILING) for c in cited_by):
        css += " evidence-fail"
    seat = f" ({escape(turn['model_role'])})" if turn["model_role"] else ""
    cited = (f'<span class="cited">evidence for {escape(", ".join(cited_by))}</span>') if cited_by else ""
    meta = f"<details><summary>meta</summary>{_json_block(turn['meta'])}</details>" if turn["meta"] else ""
    return (
        f'<article class="{css}" id="turn-{idx}" data-idx="{idx}"><header><strong>#{idx}</strong>'
        f"<span>{escape(turn['role'])}{seat}</span>{cited}</header>"
        f'<pre class="content">{escape(turn["content"] or "")}</pre>'
        f"{''.join(_tool_call(c) for c in calls)}{meta}</article>"
    )


def _probs(probs: Any) -> str:
    if not isinstance(probs, dict) or not probs:
        return ""
    return " &middot; ".join(
        f"{escape(str(k))} {float(v):.2f}" for k, v in probs.items() if isinstance(v, (int, float))
    )


def _verdict(v: dict[str, Any]) -> str:
    label = v["label"] if v["valid"] else "invalid"
    evidence = " ".join(str(t) for t in v["evidence"])
    parts = [f"<header><strong>{escape(v['name'])}</strong>{_badges([label]) if label else ''}"]
    if v["score"] is not None:
        parts.append(f"<span>score {escape(format_cell(float(v['score'])))}</span>")
    parts.append(f"<span>judge {escape(v['judge_model'] or v['judge_role'] or '?')}</span></header>")
    probs = _probs(v["label_probs"])
    if probs:
        parts.append(f'<div class="muted">label probabilities: {probs}</div>')
    if v["rationale"]:
        parts.append(f'<div class="rationale">{escape(v["rationale"])}</div>')
    if v["evidence"]:
        links = ", ".join(f'<a href="#turn-{t}">#{t}</a>' for t in v["evidence"])
        parts.append(f"<div>evidence turns: {links}</div>")
    parts.append(f"<details><summary>value</summary>{_json_block(v['value'])}</details>")
    attrs = f' data-evidence="{evidence}"' if evidence else ""
    css = "verdict" + ("" if v["valid"] else " invalid")
    return f'<div class="{css}"{attrs}>{"".join(parts)}</div>'


def _facts(e: dict[str, Any]) -> str:
    seats = ", ".join(f"{m['role']}={m['model_name']}" for m in e["models"])
    rows = [
        ("run", e["run_id"]),
        ("suite", e["suite"]),
        ("episode", e["episode_id"]),
        ("item", e.get("item_id")),
        ("task", e.get("task")),
        ("trial", e.get("trial")),
        ("status", e["status"]),
        ("ending", e.get("termination")),
        ("reward", e.get("reward")),
        ("turns", e.get("n_turns")),
        ("started / ended", f"{format_cell(e.get('started_at'))} / {format_cell(e.get('ended_at'))}"),
        ("models", seats),
    ]
    return render_table(ReportTable("", ["field", "value"], rows))


def episode_page(e: dict[str, Any], *, db: str) -> str:
    """Render turns (with tool calls) beside the verdicts, highlighting the turns a verdict cites."""
    cited: dict[int, list[str]] = {}
    for v in e["verdicts"]:
        for t in v["evidence"]:
            cited.setdefault(t, []).append(f"{v['name']} ({v['label'] if v['valid'] else 'invalid'})")
    calls: dict[int, list[dict[str, Any]]] = {}
    for c in e["tool_calls"]:
        calls.setdefault(c["turn_idx"], []).append(c)
    turns = "".join(_turn(t, calls.get(t["idx"], []), cited.get(t["idx"], [])) for t in e["turns"])
    verdicts = "".join(_verdict(v) for v in e["verdicts"]) or '<p class="note">no verdict on this episode</p>'
    extras = []
    if e.get("info"):
        extras.append(f"<details><summary>episode info</summary>{_json_block(e['info'])}</details>")
    if e.get("item"):
        extras.append(f"<details><summary>item data</summary>{_json_block(e['item'])}</details>")
    body = (
        f"<h1>Episode {escape(e['episode_id'])}</h1>"
        f'<p><a href="{_link("/", run=e["run_id"])}#episodes">'
        f"&larr; episodes of run {escape(e['run_id'])}</a>"
        f' &middot; <a href="{_link("/run", run=e["run_id"])}">run results</a></p>{_facts(e)}'
        f'<div class="episode-grid"><section id="turns"><h2>Conversation ({len(e["turns"])} turns)</h2>'
        f"{turns or '<p class=note>no turns recorded</p>'}</section>"
        f'<section id="verdicts"><h2>Verdicts ({len(e["verdicts"])})</h2>{verdicts}</section></div>'
        f"{''.join(extras)}"
    )
    return page(f"Episode {e['episode_id']}", body, db=db)


def not_found(what: str, *, db: str) -> str:
    """Render a 404 page that says what was not found."""
    return page(
        "Not found", f'<h1>Not found</h1><p>{escape(what)}</p><p><a href="/">back to the runs</a></p>', db=db
    )
