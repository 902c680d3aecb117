"""What a report holds, independent of how it is printed (HTML, Markdown, terminal).

Layer contract: plain dataclasses; no store, no rendering, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ReportTable:
    """A titled table: what a suite's ``report`` returns.

    Every output (terminal, HTML, Markdown, viewer) prints it, cells formatted by
    ``tables.format_cell``.
    """

    title: str
    columns: list[str]
    rows: list[tuple[Any, ...]]
    note: str = ""


@dataclass
class Figure:
    """One plot, already drawn: an SVG document as text, to be inlined in a page."""

    key: str
    """Stable id (``uxbench-reliability``); the HTML uses it as ``data-plot`` so tests can find it."""
    title: str
    svg: str
    caption: str = ""


@dataclass
class TableGroup:
    """Tables that belong to one run (``run_id``) or to the section as a whole (``run_id`` None)."""

    run_id: str | None
    tables: list[ReportTable]
    heading: str = ""


@dataclass
class Section:
    """One suite's part of the report: plots first, then its tables, then what could not be shown."""

    key: str
    title: str
    run_ids: list[str]
    figures: list[Figure] = field(default_factory=list)
    groups: list[TableGroup] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Why a table or plot is missing (a view absent from this store, a plot that failed)."""

    @property
    def empty(self) -> bool:
        """Nothing to show: no plot and no table with rows."""
        return not self.figures and not any(t.rows for g in self.groups for t in g.tables)


@dataclass
class RunInfo:
    """Provenance of one run: what was asked, with which models, prompts and package versions."""

    run_id: str
    suite: str
    status: str
    started_at: Any
    ended_at: Any
    config_sha256: str
    git_commit: str | None
    models: list[dict[str, Any]]
    """One dict per seat: role, model_name, model_identity, backend, dtype, prices."""
    prompt_hashes: dict[str, str]
    versions: dict[str, str]
    summary: dict[str, Any]
    """The ``run_summary`` row: episodes, generations, cache hits, tokens, cost, invalid outputs."""
    config: dict[str, Any] = field(default_factory=dict)


@dataclass
class Report:
    """Everything ``uxlocal report`` prints for a store and a set of runs."""

    db: str
    generated_at: str
    runs: list[RunInfo]
    sections: list[Section]
    skipped: list[str] = field(default_factory=list)
    """Sections left out entirely, each with its reason."""
