"""``uxlocal palate ...`` commands that need no model: check, import/export, freeze-panel, errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from uxlocal.cli import cli
from uxlocal.suites.palate.cardfiles import load_cards
from uxlocal.suites.palate.profiles import Bilingual, write_cards


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_check_passes_on_the_bundled_pool_and_panel() -> None:
    code, out = invoke("palate", "check")
    assert code == 0 and "300 cards" in out and "panel default v1" in out and out.strip().endswith("ok")


def test_check_reports_a_changed_panel_card(tmp_path: Path) -> None:
    cards = load_cards()
    cards[77] = cards[77].model_copy(update={"greeting": Bilingual(en="Hello.", zh="你好。")})  # on the panel
    write_cards(cards, tmp_path / "pool.jsonl")
    code, out = invoke("palate", "check", "--cards", str(tmp_path / "pool.jsonl"))
    assert code == 1 and "card c0078 changed since the panel was frozen" in out


def test_export_import_freeze_round_trip(tmp_path: Path) -> None:
    code, out = invoke(
        "palate",
        "export-cards",
        "--ids",
        "c0001,c0002,c0003",
        "--lang",
        "zh",
        "--out-dir",
        str(tmp_path / "v2"),
    )
    assert code == 0 and "3 card(s)" in out
    assert json.loads((tmp_path / "v2" / "c0002.zh.json").read_text())["spec"] == "chara_card_v2"
    code, out = invoke(
        "palate",
        "import-cards",
        *map(str, sorted((tmp_path / "v2").glob("*.json"))),
        "--out",
        str(tmp_path / "mine.jsonl"),
    )
    assert code == 0 and "3 card(s)" in out
    assert load_cards(tmp_path / "mine.jsonl") == load_cards()[:3]
    code, out = invoke(
        "palate",
        "freeze-panel",
        "--cards",
        str(tmp_path / "mine.jsonl"),
        "--size",
        "2",
        "--name",
        "mine",
        "--out",
        str(tmp_path / "mine.json"),
    )
    assert code == 0 and "panel mine v1" in out
    code, out = invoke(
        "palate", "check", "--cards", str(tmp_path / "mine.jsonl"), "--panel", str(tmp_path / "mine.json")
    )
    assert code == 0, out


def test_freeze_from_an_existing_panel_bumps_the_version(tmp_path: Path) -> None:
    code, out = invoke("palate", "freeze-panel", "--from", "default", "--out", str(tmp_path / "v2.json"))
    assert code == 0 and "panel default v2" in out


def test_agreement_with_unknown_user_is_a_usage_error(tmp_path: Path) -> None:
    code, out = invoke(
        "palate", "agreement", "--users", "u9", "-m", "judge=fake", "--db", str(tmp_path / "x.duckdb")
    )
    assert code == 2 and "unknown user(s) u9" in out


def test_run_palate_without_candidates_explains_what_to_pass(tmp_path: Path) -> None:
    code, out = invoke("run", "palate", "-m", "judge=fake", "--db", str(tmp_path / "x.duckdb"))
    assert code == 2 and "needs --candidates" in out
