"""The run's rows inside the checkout's published leaderboard tables (made-up tables, our numbers)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unit.uxbench.test_uxbench_upstream_suite import _run, script
from tests.unit.uxbench.upstream_fixture import write_checkout
from uxlocal.engine.fake import FakeEngine
from uxlocal.store.db import connect
from uxlocal.suites.uxbench.published import LOCAL_MARK, T1_FILE, T2_FILE, LocalRow, t1_table, t2_table

T1_MD = """# Task 1

Some words before the table.

| # | Model | Good-Acc | Bad-Acc | Avg-Acc |
|---|---|---|---|---|
| 1 | Alpha | 90.0 | 70.0 | 80.0 |
| 2 | Beta | 80.0 | 60.0 | 70.0 |
| 3 | Gamma | 95.0 | 25.0 | 60.0 |
"""


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_t1_table_places_the_local_row_by_avg_acc(tmp_path: Path) -> None:
    _write(tmp_path, T1_FILE, T1_MD)
    local = LocalRow("mine", {"good": 85.0, "bad": 65.0, "avg": 75.0}, {"avg": "[70.0, 80.0]"})
    table = t1_table(tmp_path, local)
    assert table is not None and table.columns == ["#", "Model", "Good-Acc", "Bad-Acc", "Avg-Acc"]
    models = [row[1] for row in table.rows]
    assert models[0] == "Alpha" and LOCAL_MARK in models[1] and models[2] == "Beta" and len(models) == 4
    assert table.rows[1][2:] == ("85.0", "65.0", "75.0 [70.0, 80.0]")


def test_t1_table_is_none_without_a_table_with_the_three_columns(tmp_path: Path) -> None:
    _write(tmp_path, T1_FILE, "| a | b |\n|---|---|\n| 1 | 2 |\n")
    assert t1_table(tmp_path, LocalRow("m", {}, {})) is None
    assert t1_table(tmp_path / "nowhere", LocalRow("m", {}, {})) is None


def test_t2_table_reads_records_or_a_model_keyed_object(tmp_path: Path) -> None:
    mine = LocalRow("cand", {"rate": 50.0}, {"rate": "[45.0, 55.0]"})
    records = [{"model": "A", "good_pct": 57.1, "recovery_rate": 9.2},
               {"model": "B", "good_pct": 30.8, "recovery_rate": 5.4}]
    _write(tmp_path, T2_FILE, json.dumps({"models": records}))
    table = t2_table(tmp_path, mine, LocalRow("cand", {"rate": 10.0}, {"rate": None}))
    assert table is not None and table.columns == ["model", "T2 Good %", "T3 Recovery %"]
    assert [r[0] for r in table.rows] == ["A", f"**cand** ({LOCAL_MARK}, uxlocal)", "B"]
    assert table.rows[1][1:] == ("50.0 [45.0, 55.0]", "10.0")
    _write(tmp_path, T2_FILE, json.dumps({"A": {"good": 57.1}, "B": {"good": 60.0}}))
    keyed = t2_table(tmp_path, mine, None)
    assert keyed is not None and [r[0] for r in keyed.rows][0] == "B" and len(keyed.rows) == 3
    _write(tmp_path, T2_FILE, "not json")
    assert t2_table(tmp_path, mine, None) is None


def test_upstream_run_report_shows_the_published_tables_with_its_rows(tmp_path: Path) -> None:
    checkout = write_checkout(tmp_path / "UXBench")
    _write(checkout, T1_FILE, T1_MD)
    _write(checkout, T2_FILE, json.dumps([{"model": "A", "good_pct": 57.1}]))
    result = _run(tmp_path, FakeEngine(script, identity="fake-judge"), tasks="judge,eval",
                  upstream=str(checkout), bootstrap=50)
    titles = [t.title for t in result.tables]
    t1 = next(t for t in result.tables if t.title.startswith("UXBench T1 leaderboard as published"))
    t2 = next(t for t in result.tables if t.title.startswith("UXBench T2/T3 leaderboard as published"))
    assert titles.index(t1.title) > titles.index("UXBench protocol")
    local = next(r for r in t1.rows if LOCAL_MARK in r[1])
    con = connect(tmp_path / "ux.duckdb", read_only=True)
    judge = con.execute("SELECT judge_model FROM uxbench_t1 WHERE run_id = ?", [result.run_id]).fetchone()[0]
    assert local[1] == f"**{judge}** ({LOCAL_MARK}, uxlocal)"
    assert local[4].count("[") == 1  # Avg-Acc with its interval
    assert sum(LOCAL_MARK in r[0] for r in t2.rows) == 1 and len(t2.rows) == 2
