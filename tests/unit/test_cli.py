from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner

from uxlocal.cli import cli
from uxlocal.store.db import connect


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_run_reports_bad_model_flag_with_exit_2() -> None:
    code, out = invoke("run", "selftest", "--model", "judge")
    assert code == 2 and "--model expects ROLE=PRESET_OR_PATH" in out


def test_run_reports_unknown_model_with_exit_2(tmp_path: Path) -> None:
    code, out = invoke(
        "run", "selftest", "--model", "judge=no-such-model", "--db", str(tmp_path / "x.duckdb")
    )
    assert code == 2 and "neither a preset nor an HF folder" in out


def test_run_reports_missing_role_with_exit_2(tmp_path: Path) -> None:
    code, out = invoke("run", "selftest", "--model", "judge=fake", "--db", str(tmp_path / "x.duckdb"))
    assert code == 2 and "needs a model for role(s) candidate, user" in out


def test_unknown_suite_is_a_usage_error() -> None:
    code, out = invoke("run", "nosuchsuite")
    assert code == 2 and "No such command" in out


def test_query_on_missing_store_names_the_file(tmp_path: Path) -> None:
    code, out = invoke("query", "--db", str(tmp_path / "nope.duckdb"), "select 1")
    assert code == 2 and "nope.duckdb: no such store" in out


def test_query_bad_sql_is_one_clean_line(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    connect(db).close()
    code, out = invoke("query", "--db", str(db), "selec nonsense")
    assert code == 2 and out.count("\n") == 1 and "SQL failed" in out


def test_query_is_read_only(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    connect(db).close()
    code, out = invoke("query", "--db", str(db), "create table t(x int)")
    assert code == 2 and "read-only" in out.lower()


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])  # every output format renders
def test_query_formats(tmp_path: Path, fmt: str) -> None:
    db = tmp_path / "s.duckdb"
    connect(db).close()
    code, out = invoke("query", "--db", str(db), "select 42 as answer", "--format", fmt)
    assert code == 0 and "42" in out and "answer" in out


def test_models_list_shows_embedded_preset() -> None:
    code, out = invoke("models", "list")
    assert code == 0 and "embedded" in out


def test_models_prepare_unknown_preset_exit_2() -> None:
    code, out = invoke("models", "prepare", "nope")
    assert code == 2 and "unknown preset 'nope'" in out


def test_help_shows_examples() -> None:
    code, out = invoke("--help")
    assert code == 0 and "uxlocal demo" in out
    assert isinstance(duckdb.__version__, str)
