from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

import uxlocal
from uxlocal.errors import UxlocalError
from uxlocal.store.db import connect, load_views, migrate, migration_files, view_files

CORE_TABLES = {"runs", "models", "run_models", "items", "quarantine", "episodes", "turns", "tool_calls",
               "generations", "run_generations", "verdicts", "_uxlocal_migrations"}
SUITE_UFS = "uxlocal.suites.userproxy/001_ufs_criteria.sql"
"""The UFS criteria tables' migration, shipped by the userproxy suite (core 002 made them before)."""


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables "
                                      "WHERE table_type = 'BASE TABLE'").fetchall()}


def test_migration_numbers_are_unique_and_contiguous() -> None:
    files = migration_files()
    assert [int(f.name[:3]) for f in files] == list(range(1, len(files) + 1))


def test_every_migration_opens_with_why_and_old_rows() -> None:
    for file in migration_files():
        head = file.read_text().splitlines()[:6]
        assert any(line.startswith("-- Why:") for line in head), file.name
        assert any(line.startswith("-- Old rows:") for line in head), file.name


def test_blank_store_migrates_to_the_full_schema() -> None:
    con = duckdb.connect(":memory:")
    applied = migrate(con)
    core = [f.name for f in migration_files()]
    assert applied[:len(core)] == core  # the core ones first, then the suites' own
    assert SUITE_UFS in applied[len(core):]
    assert CORE_TABLES | {"ufs_criteria_tasks", "ufs_criteria"} <= _tables(con)
    assert migrate(con) == []  # idempotent


def test_store_whose_core_002_made_the_criteria_tables_takes_the_suites_migration() -> None:
    """Stores written before issue 45 got the UFS tables from core 002; the suite's copy leaves them be."""
    fresh = duckdb.connect(":memory:")
    migrate(fresh)
    old = duckdb.connect(":memory:")
    migrate(old, upto=1)
    suite_sql = Path(uxlocal.__file__).parent / "suites/userproxy/migrations" / SUITE_UFS.split("/")[1]
    old.execute(suite_sql.read_text().replace(" IF NOT EXISTS", ""))  # what the old 002 ran
    old.execute("INSERT INTO ufs_criteria_tasks (criteria_set, domain, task_id, blueprint_sha256, source, "
                "n_written, created_at) VALUES ('s', 'mock', '0', 'x', 'file', 4, now())")
    old.execute("INSERT INTO _uxlocal_migrations VALUES ('002_ufs_criteria.sql', now())")
    applied = migrate(old)
    assert "002_ufs_criteria.sql" not in applied and SUITE_UFS in applied
    schema = "SELECT table_name, column_name, data_type FROM information_schema.columns ORDER BY ALL"
    assert old.execute(schema).fetchall() == fresh.execute(schema).fetchall()
    assert old.execute("SELECT count(*) FROM ufs_criteria_tasks").fetchone() == (1,)  # rows kept


@pytest.mark.parametrize("frozen_at", range(1, len(migration_files()) + 1))  # each older schema version
def test_store_frozen_at_older_number_migrates_forward(frozen_at: int) -> None:
    fresh = duckdb.connect(":memory:")
    migrate(fresh)
    old = duckdb.connect(":memory:")
    migrate(old, upto=frozen_at)
    assert len(old.execute("SELECT * FROM _uxlocal_migrations").fetchall()) == frozen_at
    migrate(old)
    schema = "SELECT table_name, column_name, data_type FROM information_schema.columns ORDER BY ALL"
    assert old.execute(schema).fetchall() == fresh.execute(schema).fetchall()


def test_gap_in_migration_numbers_is_refused(tmp_path: Path) -> None:
    (tmp_path / "001_a.sql").write_text("SELECT 1;")
    (tmp_path / "003_c.sql").write_text("SELECT 1;")
    with pytest.raises(UxlocalError, match="expected 002"):
        migration_files(tmp_path)


def test_views_load_on_blank_store_and_read_only_reopen(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    connect(db).close()
    con = connect(db, read_only=True)
    assert con.execute("SELECT count(*) FROM run_summary").fetchone() == (0,)
    con.close()


def test_every_view_file_has_metric_headers() -> None:
    files = view_files()
    # the core file plus one views.sql beside each built-in suite (issue 31: suites own their views)
    folders = {f.parent.name for f in files}
    assert folders >= {"views", "judge", "palate", "selftest", "tau2", "userproxy", "uxbench"}
    for file in files:
        text = file.read_text()
        views = text.count("CREATE OR REPLACE VIEW")
        assert views > 0 and text.count("-- metric:") >= views, file.name


def test_views_are_recreated_without_error_twice() -> None:
    con = duckdb.connect(":memory:")
    migrate(con)
    load_views(con)
    load_views(con)
