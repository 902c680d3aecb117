"""``uxlocal ufs`` commands: pre-checks, criteria import, frontier (issue 5, items 1, 3, 6)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from uxlocal.cli import cli
from uxlocal.store.db import connect
from uxlocal.suites.userproxy.ufs.store import load_criteria
from uxlocal.tau2 import Task


def _criteria_file(tmp_path: Path, **override: str) -> Path:
    row = {
        "domain": "retail",
        "task_id": "0",
        "criterion_id": "c1",
        "family": "premature_disclosure",
        "mode": "volunteers_unasked_info",
        "text": "The user gives its zip code only when asked.",
        "grounding_span": "You are Yusuf Rossi in zip code 19122.",
        "applies_when": "always",
        "evidence_hint": "opening",
        **override,
    }
    path = tmp_path / "criteria.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return path


def test_criteria_import_freezes_a_file_into_a_set(tmp_path: Path, data_dir: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = _criteria_file(tmp_path)
    args = [
        "ufs",
        "criteria-import",
        str(path),
        "--set",
        "hand",
        "--tau2-data",
        str(data_dir),
        "--db",
        str(db),
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "1 tasks written, 0 already identical, 0 criteria dropped" in result.output
    again = CliRunner().invoke(cli, args)
    assert "0 tasks written, 1 already identical" in again.output
    con = connect(db)
    stored = load_criteria(con, "hand")[("retail", "0")]
    assert stored.provenance.source == "file" and stored.graded()[0].criterion_id == "c1"


def test_criteria_import_contract_choice_changes_the_blueprint(tmp_path: Path, data_dir: Path) -> None:
    db = tmp_path / "s.duckdb"
    path = _criteria_file(tmp_path)
    for name, contract in (("ours", "ours"), ("theirs", "tau2")):
        result = CliRunner().invoke(
            cli,
            [
                "ufs",
                "criteria-import",
                str(path),
                "--set",
                name,
                "--contract",
                contract,
                "--tau2-data",
                str(data_dir),
                "--db",
                str(db),
            ],
        )
        assert result.exit_code == 0, result.output
    con = connect(db)
    assert (
        load_criteria(con, "ours")[("retail", "0")].blueprint_sha256
        != load_criteria(con, "theirs")[("retail", "0")].blueprint_sha256
    )


def test_criteria_import_stops_at_an_ungrounded_span_with_file_and_line(
    tmp_path: Path, data_dir: Path
) -> None:
    path = _criteria_file(tmp_path, grounding_span="Yusuf lives in the 19122 area")
    result = CliRunner().invoke(
        cli,
        [
            "ufs",
            "criteria-import",
            str(path),
            "--set",
            "s",
            "--tau2-data",
            str(data_dir),
            "--db",
            str(tmp_path / "s.duckdb"),
        ],
    )
    assert result.exit_code == 2
    assert f"{path}:1: grounding_span: grounding_span is not an exact substring" in result.output
    lenient = CliRunner().invoke(
        cli,
        [
            "ufs",
            "criteria-import",
            str(path),
            "--set",
            "s",
            "--lenient",
            "--tau2-data",
            str(data_dir),
            "--db",
            str(tmp_path / "s.duckdb"),
        ],
    )
    assert lenient.exit_code == 0 and "1 criteria dropped" in lenient.output


def test_precheck_command_on_an_empty_store(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["ufs", "precheck", "--db", str(tmp_path / "s.duckdb")])
    assert result.exit_code == 0 and "pre-checks on 0 trajectories: 0 flagged" in result.output


def test_frontier_command_without_graded_proxies_is_a_clean_error(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    connect(db).close()
    result = CliRunner().invoke(cli, ["ufs", "frontier", "--db", str(db)])
    assert result.exit_code == 1 and "no graded proxies" in result.output


def test_frontier_command_prints_and_plots(tmp_path: Path, tasks: Callable[[str], dict[str, Task]]) -> None:
    from uxlocal.store.writer import StoreWriter

    db = tmp_path / "s.duckdb"
    con = connect(db)
    writer = StoreWriter(con)
    for proxy, price, passed in (("cheap", 0.1, True), ("pricey", 10.0, False)):
        run_id = f"run-{proxy}"
        con.execute(
            "INSERT INTO runs (run_id, suite, config, config_sha256, status, started_at) "
            "VALUES (?, 'tau2', '{}', 'x', 'done', now())",
            [run_id],
        )
        con.execute("INSERT INTO run_models VALUES (?, 'user', ?, ?)", [run_id, f"id-{proxy}", proxy])
        con.execute(
            "INSERT INTO models (model_identity, name, price_input_per_mtok, price_output_per_mtok) "
            "VALUES (?, ?, ?, ?)",
            [f"id-{proxy}", proxy, price, price],
        )
        writer.insert_rows(
            "episodes",
            [
                {
                    "run_id": run_id,
                    "episode_id": "retail/0/trial-0",
                    "item_id": "retail/0",
                    "task": "retail",
                    "trial": 0,
                    "status": "done",
                    "termination": "user_stop",
                    "reward": 1.0,
                    "info": {},
                }
            ],
        )
        writer.insert_rows(
            "generations",
            [
                {
                    "request_hash": f"h-{proxy}",
                    "model_identity": f"id-{proxy}",
                    "valid": True,
                    "prompt_tokens": 1000,
                    "completion_tokens": 100,
                    "latency_ms": 50.0,
                }
            ],
        )
        writer.insert_rows(
            "run_generations",
            [
                {
                    "run_id": run_id,
                    "episode_id": "retail/0/trial-0",
                    "seq": 0,
                    "role": "user",
                    "request_hash": f"h-{proxy}",
                }
            ],
        )
        writer.insert_rows(
            "verdicts",
            [
                {
                    "run_id": run_id,
                    "episode_id": "retail/0/trial-0",
                    "name": "ufs:c1",
                    "judge_model": "j",
                    "valid": True,
                    "label": "x",
                    "value": {
                        "criteria_set": "s",
                        "family": "groundedness",
                        "mode": "self_contradiction",
                        "applicable": True,
                        "passed": passed,
                    },
                }
            ],
        )
    con.close()
    plot = tmp_path / "frontier.svg"
    result = CliRunner().invoke(cli, ["ufs", "frontier", "--db", str(db), "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert "cheap" in result.output and "pricey" in result.output and plot.read_text().startswith("<svg")
    assert "(dominated)" in plot.read_text()  # the report's frontier figure marks the dominated proxy


@pytest.mark.parametrize("command", [["ingest", "-h"], ["ufs", "-h"], ["ufs", "frontier", "-h"]])
def test_help_works(command: list[str]) -> None:
    result = CliRunner().invoke(cli, command)
    assert result.exit_code == 0 and "Example" in result.output
