"""DuckDB's out-of-memory error at uxlocal's cap becomes one line saying how to resume."""

from __future__ import annotations

import importlib

import duckdb
import pytest

cli_main = importlib.import_module("uxlocal.cli.main")  # the module (the package exports its main())


@pytest.fixture(autouse=True)
def _no_process_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep main()'s re-exec with preloads and its compile default in os.environ out of the test."""
    monkeypatch.setenv("UXLOCAL_NO_PRELOAD", "1")
    monkeypatch.setenv("UXLOCAL_CPU_COMPILE", "0")


def _raise_oom(**_: object) -> None:
    raise duckdb.OutOfMemoryException("Out of Memory Error: could not allocate block of size 256.0 KiB\nmore")


def test_out_of_memory_says_how_to_resume(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli_main.cli, "main", _raise_oom)
    monkeypatch.setattr("sys.argv", ["uxlocal", "query", "--db", "x.duckdb", "select 1"])
    monkeypatch.delenv("UXLOCAL_DEBUG", raising=False)
    with pytest.raises(SystemExit) as exit_info:
        cli_main.main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 1
    assert "UXLOCAL_DUCKDB_MEMORY=2GB" in err and "resumes" in err
    assert "could not allocate block" in err and "more" not in err  # DuckDB's first line only
    assert len(err.strip().splitlines()) == 1


def test_out_of_memory_with_debug_shows_the_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_main.cli, "main", _raise_oom)
    monkeypatch.setattr("sys.argv", ["uxlocal", "--debug", "query"])
    with pytest.raises(duckdb.OutOfMemoryException):
        cli_main.main()


def test_other_errors_are_not_called_out_of_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(**_: object) -> None:
        raise RuntimeError("something else")
    monkeypatch.setattr(cli_main.cli, "main", boom)
    monkeypatch.setattr("sys.argv", ["uxlocal", "query"])
    with pytest.raises(RuntimeError, match="something else"):
        cli_main.main()
