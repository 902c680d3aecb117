"""A backend plugin installed from a temporary folder runs a suite (issue 45: backends join as suites do)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.plugin_install import install_example
from uxlocal.cli import cli

EXAMPLE = Path(__file__).resolve().parents[1] / "plugin_backend_example"
CONVERSATIONS = Path(__file__).resolve().parents[2] / "uxlocal" / "data" / "judge" / "conversations.jsonl"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_example(EXAMPLE, "uxlocal_echo", tmp_path_factory.mktemp("backend"))


@pytest.fixture
def plugin(installed: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(installed))
    yield
    for name in [m for m in sys.modules if m.startswith("uxlocal_echo")]:
        del sys.modules[name]


@pytest.mark.usefixtures("plugin")
def test_a_backend_plugin_judges_conversations_through_the_cli(tmp_path: Path) -> None:
    folder = tmp_path / "echo-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}", encoding="utf-8")
    db = str(tmp_path / "echo.duckdb")
    result = CliRunner().invoke(cli, ["judge", str(CONVERSATIONS), "--rubric", "ux-liked", "-m",
                                      f"judge={folder}@echo", "--db", db, "--no-progress"])
    assert result.exit_code == 0, result.output
    out = CliRunner().invoke(cli, ["query", "--db", db, "--format", "csv",
                                   "SELECT count(*), count(DISTINCT value) FROM verdicts"])
    assert out.exit_code == 0 and out.output.splitlines()[1] == "40,1", out.output  # every row, one label
    models = CliRunner().invoke(cli, ["query", "--db", db, "--format", "csv", "SELECT backend FROM models"])
    assert models.output.splitlines()[1:] == ["echo"], models.output


def test_without_the_plugin_the_backend_is_unknown(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["judge", str(CONVERSATIONS), "--rubric", "ux-liked", "-m",
                                      f"judge={tmp_path}@echo", "--db", str(tmp_path / "x.duckdb")])
    assert result.exit_code != 0
