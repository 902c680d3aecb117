"""``uxlocal judge`` through click: tables printed, query returns the same numbers, clean errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from uxlocal.cli import cli
from uxlocal.engine import pool as pool_module
from uxlocal.engine.backends import Backend
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.render import PlainRenderer

from .conftest import chat, label_judge, write_jsonl


@pytest.fixture
def scripted_fake(monkeypatch: pytest.MonkeyPatch) -> list[FakeEngine]:
    """``--model judge=fake`` answers with ``label_judge``; the engines built are collected."""
    built: list[FakeEngine] = []

    def engine(model: Any, renderer: Any, options: dict[str, Any]) -> FakeEngine:
        built.append(FakeEngine(label_judge, identity=model.identity))
        return built[-1]
    monkeypatch.setitem(pool_module._BACKENDS, "fake", Backend("fake", lambda m: PlainRenderer(), engine))
    return built


def test_judge_cli_prints_counts_agreement_and_query_agrees(tmp_path: Path, scripted_fake: list[FakeEngine],
                                                            network_guard: Any) -> None:
    path = write_jsonl(tmp_path / "mine.jsonl", [{"id": i, "conversation": chat(i), "thumb": i % 2} for i in range(8)])
    db = str(tmp_path / "j.duckdb")
    args = ["judge", str(path), "--rubric", "ux-liked", "-m", "judge=fake", "--human-col", "thumb", "--db", db,
            "--bootstrap", "50"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "Judge verdicts" in result.output and "disliked 4, liked 4" in result.output
    assert "verdicts/s" in result.output and "kappa" in result.output
    query = CliRunner().invoke(cli, ["query", "--db", db, "--format", "csv",
                                     "select accuracy, n from judge_label_agreement"])
    assert query.output.strip().splitlines()[1] == "1.0,8"
    again = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert "(resumed)" in again.output and "0 engine calls" in again.output and "8 items already judged" in again.output
    assert "kappa" in again.output  # the finished run reports again from the store
    assert network_guard.attempts == []  # the judge path (inputs, rubrics, store, report) stays offline


def test_judge_cli_exits_2_with_file_line_column_when_row_is_bad(tmp_path: Path, scripted_fake: list[FakeEngine]) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [{"conversation": chat(1), "thumb": "maybe"}])
    from uxlocal.cli import main

    result = CliRunner().invoke(cli, ["judge", str(path), "-m", "judge=fake", "--human-col", "thumb",
                                      "--db", str(tmp_path / "j.duckdb")])
    assert result.exit_code == 2
    assert f"{path}:1: thumb: 'maybe' is not one of ['liked', 'disliked']" in result.output
    assert main  # the console entry point prints the same one line (InputError.show)


def test_judge_cli_lists_builtin_rubrics_with_identity() -> None:
    result = CliRunner().invoke(cli, ["judge", "--list-rubrics"])
    assert result.exit_code == 0
    names = [line.split()[0] for line in result.output.splitlines()]
    assert {"ux-liked", "helpfulness", "preference", "palate-session"} <= set(names)
