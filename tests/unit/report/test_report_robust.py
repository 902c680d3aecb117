"""The report survives what real stores hold, and sections plug in through the registry.

Missing views, runs of unknown suites, empty stores and failing plots become notes, never errors.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from uxlocal.errors import InputError
from uxlocal.report import (
    NoData,
    build_report,
    register_figure,
    register_section,
    render_html,
    render_markdown,
)
from uxlocal.reportkit import registry
from uxlocal.reportkit.model import Figure
from uxlocal.store.db import connect


def _store_without(tmp_path: Path, demo: Path, prefixes: tuple[str, ...]) -> duckdb.DuckDBPyConnection:
    """Return a copy of the demo store whose views starting with ``prefixes`` are gone (an older checkout)."""
    copy = tmp_path / "copy.duckdb"
    shutil.copy(demo, copy)
    con = duckdb.connect(str(copy))
    for (name,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall():
        if name.startswith(prefixes):
            con.execute(f"DROP VIEW {name}")
    return con


def _bare_store(tmp_path: Path, *runs: tuple[str, str]) -> Path:
    """Return a migrated store holding only run rows (no episodes)."""
    db = tmp_path / "bare.duckdb"
    con = connect(db)
    for run_id, suite in runs:
        con.execute(
            "INSERT INTO runs (run_id, suite, config, config_sha256, status, started_at) VALUES "
            "(?, ?, ?, ?, 'done', ?)",
            [
                run_id,
                suite,
                json.dumps({"suite": suite, "prompt_hashes": {}}),
                "0" * 64,
                dt.datetime.now(dt.timezone.utc),
            ],
        )
    con.close()
    return db


@pytest.fixture
def plugin_section() -> Iterator[str]:
    """Yield a section registered for a suite no one installed; removed again after the test."""
    key = "plugin_demo"
    yield key
    registry._SECTIONS.pop(key, None)


def test_missing_palate_and_ufs_views_leave_the_rest_of_the_report(
    tmp_path: Path, demo_store: tuple[Path, dict[str, Any]]
) -> None:
    con = _store_without(tmp_path, demo_store[0], ("palate_", "ufs_"))
    try:
        report = build_report(con, db="copy")
    finally:
        con.close()
    keys = [s.key for s in report.sections]
    assert "uxbench" in keys and "ufs" not in keys
    palate = next(s for s in report.sections if s.key == "palate")
    assert not palate.figures and any("palate_" in n for n in palate.notes)
    html = render_html(report)
    assert 'id="sec-uxbench"' in html
    # tau2 runs exist, so the UFS section is listed as not shown, with why
    assert any(line.startswith("UserProxyBench") and "ufs_episodes" in line for line in report.skipped)
    assert "Not shown" in html


def test_report_of_one_run_shows_only_its_section(demo_store: tuple[Path, dict[str, Any]]) -> None:
    db, runs = demo_store
    con = connect(db, read_only=True)
    try:
        report = build_report(con, run_ids=[runs["uxbench"]], figures=False)
    finally:
        con.close()
    assert [s.key for s in report.sections] == ["uxbench"]
    assert [r.run_id for r in report.runs] == [runs["uxbench"]]
    assert all(not s.figures for s in report.sections)


def test_unknown_run_id_is_an_input_error_listing_known_runs(demo_store: tuple[Path, dict[str, Any]]) -> None:
    con = connect(demo_store[0], read_only=True)
    try:
        with pytest.raises(InputError, match="no such run.*nope.*known: "):
            build_report(con, run_ids=["nope"])
    finally:
        con.close()


def test_empty_store_reports_no_runs(tmp_path: Path) -> None:
    con = connect(_bare_store(tmp_path), read_only=True)
    try:
        report = build_report(con, db="bare")
    finally:
        con.close()
    assert (
        report.sections == []
        and "no runs yet" in render_html(report)
        and "no runs yet" in render_markdown(report)
    )


def test_tau2_run_without_episodes_or_grading_gives_notes_not_errors(tmp_path: Path) -> None:
    con = connect(_bare_store(tmp_path, ("tau2-000000000000", "tau2")), read_only=True)
    try:
        report = build_report(con)
    finally:
        con.close()
    tau2 = next(s for s in report.sections if s.key == "tau2")
    assert any("no finished tau2 episode" in n for n in tau2.notes)
    assert any("no UFS grading verdicts" in line for line in report.skipped)


def test_run_of_an_unregistered_suite_gets_a_default_section_with_a_note(tmp_path: Path) -> None:
    con = connect(_bare_store(tmp_path, ("mystery-1", "mystery")), read_only=True)
    try:
        report = build_report(con)
    finally:
        con.close()
    (section,) = report.sections
    assert section.key == "mystery" and any("unknown suite 'mystery'" in n for n in section.notes)


def test_registered_section_adds_figures_and_a_failing_figure_becomes_a_note(
    tmp_path: Path, plugin_section: str
) -> None:
    register_section(plugin_section, title="Plugin demo", order=5)

    @register_figure(plugin_section)
    def drawn(con: Any, run_ids: Any) -> list[Figure]:
        """Drawn plot."""
        return [Figure("plugin-plot", "A plot", "<svg></svg>")]

    @register_figure(plugin_section)
    def broken(con: Any, run_ids: Any) -> list[Figure]:
        """Broken plot."""
        raise RuntimeError("boom\nsecond line")

    @register_figure(plugin_section)
    def empty(con: Any, run_ids: Any) -> list[Figure]:
        """Empty plot."""
        raise NoData("nothing for these runs")

    con = connect(_bare_store(tmp_path, ("p-1", plugin_section)), read_only=True)
    try:
        report = build_report(con)
    finally:
        con.close()
    (section,) = report.sections
    assert section.title == "Plugin demo" and [f.key for f in section.figures] == ["plugin-plot"]
    assert "Broken plot: not drawn (boom)" in section.notes
    assert "Empty plot: nothing for these runs" in section.notes


def test_register_figure_needs_a_declared_section() -> None:
    with pytest.raises(KeyError, match="register_section"):
        register_figure("no-such-section")(lambda con, ids: [])


def test_store_from_before_a_migration_still_opens_with_the_views_that_bind(tmp_path: Path) -> None:
    from uxlocal.report.readonly import open_store
    from uxlocal.store.db import migrate

    db = tmp_path / "old.duckdb"
    con = duckdb.connect(str(db))
    migrate(con, upto=1)  # a store written before 002_ufs_criteria.sql: no criteria tables
    con.close()
    with pytest.raises(Exception, match="view definition failed"):
        connect(db, read_only=True)
    opened, failed = open_store(db)
    try:
        assert failed and all("ufs_criteria" in line for line in failed)
        assert opened.execute("SELECT count(*) FROM run_summary").fetchone() == (0,)
        assert build_report(opened).sections == []
    finally:
        opened.close()
