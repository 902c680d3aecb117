"""Assemble a ``Report`` from a store: provenance per run, then one section per registered part.

Layer contract: reads an open (normally read-only) DuckDB connection; writes nothing.

Robustness is the point of this module. A store holds whatever suites were run, written by
whatever version of the views was current, so a section appears only when its runs exist, and a
missing view or a failing plot becomes a note in that section (or a line in ``Report.skipped``)
instead of an exception: one broken plot never costs the reader the rest of the report.
"""

from __future__ import annotations

import datetime as dt
import importlib
import logging
from collections.abc import Sequence
from typing import Any

from uxlocal.errors import InputError
from uxlocal.reportkit.model import Report, RunInfo, Section, TableGroup
from uxlocal.reportkit.plots import PlotUnavailable
from uxlocal.reportkit.registry import SectionSpec, registered_sections
from uxlocal.reportkit.rows import NoData, rows_of
from uxlocal.store.db import json_value
from uxlocal.suites.base import get_suite, suites

log = logging.getLogger(__name__)


def reason(exc: BaseException) -> str:
    """Return the first line of an error, for a note the reader can act on."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def has_relation(con: Any, name: str) -> bool:
    """Whether a view or table called ``name`` exists (temporary views included)."""
    row = con.execute(
        "SELECT (SELECT count(*) FROM duckdb_views() WHERE view_name = ?) + "
        "(SELECT count(*) FROM duckdb_tables() WHERE table_name = ?)",
        [name, name],
    ).fetchone()
    return bool(row and row[0])


# --- runs and provenance -----------------------------------------------------------------------------


def select_runs(con: Any, run_ids: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """(run_id, suite) of the chosen runs in start order; an unknown id is an input error."""
    rows = con.execute("SELECT run_id, suite FROM runs ORDER BY started_at, run_id").fetchall()
    if not run_ids:
        return [(r[0], r[1]) for r in rows]
    known = {r[0]: r[1] for r in rows}
    unknown = [r for r in run_ids if r not in known]
    if unknown:
        hint = f"known: {', '.join(sorted(known))}" if known else "the store has no runs"
        raise InputError(f"no such run(s) in the store: {', '.join(unknown)}", hint)
    wanted = set(run_ids)
    return [(r[0], r[1]) for r in rows if r[0] in wanted]



def run_info(con: Any, run_id: str) -> RunInfo:
    """Provenance of one run: config hash, models, prompt hashes, versions, and its summary row."""
    run = rows_of(con, "SELECT * FROM runs WHERE run_id = ?", [run_id])[0]
    config = json_value(run.get("config"), lenient=True) or {}
    models = rows_of(
        con,
        "SELECT rm.role, rm.model_name, rm.model_identity, m.backend, m.dtype, m.max_model_len, "
        "m.price_input_per_mtok, m.price_output_per_mtok FROM run_models rm "
        "LEFT JOIN models m USING (model_identity) WHERE rm.run_id = ? ORDER BY rm.role",
        [run_id],
    )
    summary: dict[str, Any] = {}
    try:
        found = rows_of(con, "SELECT * FROM run_summary WHERE run_id = ?", [run_id])
        summary = found[0] if found else {}
    except Exception as exc:  # an old store without the view still has provenance
        log.debug("run_summary unavailable: %s", exc)
    return RunInfo(
        run_id=run_id,
        suite=run["suite"],
        status=run["status"],
        started_at=run.get("started_at"),
        ended_at=run.get("ended_at"),
        config_sha256=run.get("config_sha256") or "",
        git_commit=run.get("git_commit"),
        models=models,
        prompt_hashes=dict(config.get("prompt_hashes") or {}) if isinstance(config, dict) else {},
        versions=dict(json_value(run.get("versions"), lenient=True) or {}),
        summary=summary,
        config=config if isinstance(config, dict) else {},
    )


# --- sections -------------------------------------------------------------------------------------


def suite_tables(con: Any, run_ids: Sequence[str]) -> list[TableGroup]:
    """Each run's own ``Suite.report`` tables (the numbers the terminal prints)."""
    groups = []
    for run_id in run_ids:
        suite = con.execute("SELECT suite FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]
        groups.append(TableGroup(run_id, get_suite(suite).report(con, run_id)))
    return groups


def _tables(con: Any, spec: SectionSpec, run_ids: list[str], section: Section) -> None:
    if spec.tables is not None:
        try:
            section.groups = spec.tables(con, run_ids)
        except Exception as exc:
            log.debug("section %s tables failed", spec.key, exc_info=True)
            section.notes.append(f"tables unavailable: {reason(exc)}")
        return
    for run_id in run_ids:  # one run's failure leaves the other runs' tables in place
        try:
            section.groups += suite_tables(con, [run_id])
        except Exception as exc:
            log.debug("tables of %s failed", run_id, exc_info=True)
            section.notes.append(f"{run_id}: tables unavailable: {reason(exc)}")


def _figures(con: Any, spec: SectionSpec, run_ids: list[str], section: Section) -> None:
    for fn in spec.figures:
        name = (fn.__doc__ or fn.__name__).strip().splitlines()[0].rstrip(".")
        try:
            section.figures += fn(con, run_ids)
        except NoData as exc:
            section.notes.append(f"{name}: {reason(exc)}")
        except PlotUnavailable as exc:
            if reason(exc) not in section.notes:
                section.notes.append(reason(exc))
        except Exception as exc:
            log.debug("figure %s of %s failed", fn.__name__, spec.key, exc_info=True)
            section.notes.append(f"{name}: not drawn ({reason(exc)})")


def build_section(con: Any, spec: SectionSpec, run_ids: list[str], *, figures: bool = True) -> Section:
    """One section: its figures and tables, with a note for each part that could not be made."""
    section = Section(spec.key, spec.title, run_ids)
    if figures:
        _figures(con, spec, run_ids, section)
    _tables(con, spec, run_ids, section)
    return section


def section_specs() -> list[SectionSpec]:
    """Every registered section, each registered suite's ``report_section`` module imported first."""
    for suite in suites().values():
        if suite.report_section:
            importlib.import_module(suite.report_section)
    return registered_sections()


def _default_spec(suite: str) -> SectionSpec:
    known = suites().get(suite)
    title = f"{suite}: {known.help}" if known is not None and known.help else suite
    return SectionSpec(suite, title, (suite,), order=90)


def _plan(runs: list[tuple[str, str]]) -> list[tuple[SectionSpec, list[str]]]:
    """Which sections apply, each with its runs; suites no spec shows tables for get a default one."""
    plan = []
    tabled: set[str] = set()
    for spec in section_specs():
        ids = [run_id for run_id, suite in runs if suite in spec.suites]
        if ids:
            plan.append((spec, ids))
            if spec.tables is None:
                tabled.update(spec.suites)
    for suite in dict.fromkeys(s for _, s in runs):
        if suite not in tabled:
            plan.append((_default_spec(suite), [run_id for run_id, s in runs if s == suite]))
    return sorted(plan, key=lambda p: (p[0].order, p[0].key))


def build_report(
    con: Any, *, run_ids: Sequence[str] | None = None, db: str = "", figures: bool = True
) -> Report:
    """Build the whole report for the chosen runs (every run when ``run_ids`` is empty).

    ``figures=False`` skips drawing (the terminal and Markdown summaries show tables only, and
    matplotlib is the slow part).
    """
    runs = select_runs(con, run_ids)
    report = Report(
        db=db,
        generated_at=dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        runs=[run_info(con, run_id) for run_id, _ in runs],
        sections=[],
    )
    for spec, ids in _plan(runs):
        if spec.requires is not None:
            try:
                applies = spec.requires(con, ids)
            except Exception as exc:
                report.skipped.append(f"{spec.title}: {reason(exc)}")
                continue
            if not applies:
                continue
        section = build_section(con, spec, ids, figures=figures)
        if section.empty and not section.notes:
            continue
        report.sections.append(section)
    return report
