"""Render conformance reports: the per-domain Markdown table and the mismatch details."""

from __future__ import annotations

from collections.abc import Sequence

from .compare import DomainReport

CONFORMANCE_DOMAINS: tuple[str, ...] = ("mock", "airline", "retail", "telecom", "banking_knowledge")
"""The domains the recorded suite covers, in its order (``all``)."""


def _pct(report: DomainReport, hits: int, total: int) -> str:
    return f"{100.0 * report.rate(hits, total):.1f} %" if total else "-"


def table(reports: Sequence[DomainReport]) -> str:
    """Return the per-domain figures as a Markdown table."""
    head = ("domain", "cases / calls", "schemas agent", "schemas user", "error flag", "exact text",
            "state", "change", "reward", "reward info", "time")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in reports:
        user = f"{r.schemas_user[0]}/{r.schemas_user[1]}" if r.schemas_user[1] else "-"
        cells = (r.domain, f"{r.cases} / {r.calls:,}", f"{r.schemas_agent[0]}/{r.schemas_agent[1]}", user,
                 _pct(r, r.error_same, r.calls), _pct(r, r.text_same, r.calls),
                 _pct(r, r.state_same, r.calls), _pct(r, r.change_same, r.calls),
                 f"{r.reward_same}/{r.scored}", f"{r.components_same}/{r.scored}", f"{r.seconds:.0f} s")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def details(report: DomainReport, show: int) -> str:
    """Return the most frequent mismatch classes and the first ``show`` mismatches of each kind."""
    out = [f"== {report.domain}: {report.cases} cases, {report.calls} calls, {report.scored} scored; "
           f"initial state equal in {report.initial_same}/{report.cases - report.setup_errors}"
           + (f"; setup errors {report.setup_errors}" if report.setup_errors else "")
           + (f"; upstream's evaluation raised in {report.upstream_raised} (not counted)"
              if report.upstream_raised else "")]
    if report.words_error:
        out.append(f"  upstream's tool words not loaded: {report.words_error}")
    for (kind, label), count in report.classes.most_common(12):
        out.append(f"  {count:6d}  {kind:<6} {label[:150]}")
    for kind, examples in report.mismatches.items():
        for example in examples[:show]:
            out.append(f"  {kind}: " + "; ".join(f"{k}={v}" for k, v in example.items()))
    return "\n".join(out)
