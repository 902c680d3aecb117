"""The released data as the dataset card ships it: JSONL or Parquet, a folder per configuration."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from uxlocal.errors import InputError
from uxlocal.suites.uxbench.data import (
    SAMPLE_DIR,
    UXBenchFiles,
    load_eval,
    load_judge,
    load_recovery,
    task_files,
)
from uxlocal.suites.uxbench.upstream_run import read_rows

RECOVERY_ROWS = [
    {"cid": f"r{k}", "history": [{"role": "user", "content": f"question {k}"}],
     "failed_response": f"a long failed answer {k}", "user_complaint": f"too long {k}",
     "failure_dimension": "冗余啰嗦", "scenario": "信息与知识查询"}
    for k in range(3)
]


def _parquet(path: Path, rows: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def test_a_parquet_shard_in_the_configuration_folder_loads_like_jsonl(tmp_path: Path) -> None:
    shard = tmp_path / "task3_recovery" / "test-00000-of-00001.parquet"
    _parquet(shard, RECOVERY_ROWS)
    loaded = load_recovery(tmp_path)
    assert [i.item_id for i in loaded.items] == ["r0", "r1", "r2"]
    assert loaded.items[1].history[0].content == "question 1"
    assert loaded.items[1].failed_response.endswith("1")
    assert {(i.source_file, i.source_line) for i in loaded.items} == {
        ("task3_recovery/test-00000-of-00001.parquet", n) for n in (1, 2, 3)}
    rows = read_rows(tmp_path, task_files(tmp_path, UXBenchFiles(), "recovery"))
    assert rows[("task3_recovery/test-00000-of-00001.parquet", 2)]["user_complaint"] == "too long 1"


def test_a_parquet_twin_of_the_released_name_is_read(tmp_path: Path) -> None:
    _parquet(tmp_path / "uxbench_task3_recovery_500.parquet", RECOVERY_ROWS[:2])
    assert [i.item_id for i in load_recovery(tmp_path).items] == ["r0", "r1"]


def test_hub_folders_hold_each_t1_class_and_keep_its_implied_truth(tmp_path: Path) -> None:
    for config, name in (("task1_judge_bad", "uxbench_task1_judge_bad_1k.jsonl"),
                         ("task1_judge_good", "uxbench_task1_judge_good_1k.jsonl")):
        folder = tmp_path / "data" / config
        folder.mkdir(parents=True)
        rows = [json.loads(line) for line in (SAMPLE_DIR / name).read_text(encoding="utf-8").splitlines()]
        for row in rows:
            row.pop("ground_truth", None)  # the folder, not the row, says which class
        (folder / "test.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows),
                                           encoding="utf-8")
    items = load_judge(tmp_path).items
    assert len(items) == 80
    assert {i.ground_truth for i in items[:40]} == {-1} and {i.ground_truth for i in items[40:]} == {1}
    assert items[0].source_file == "data/task1_judge_bad/test.jsonl"


def test_the_released_name_wins_and_a_missing_task_names_the_released_file(tmp_path: Path) -> None:
    shutil.copy(SAMPLE_DIR / "uxbench_task3_recovery_500.jsonl", tmp_path)
    _parquet(tmp_path / "task3_recovery" / "x.parquet", RECOVERY_ROWS)
    assert len(load_recovery(tmp_path).items) == 20
    with pytest.raises(InputError, match="uxbench_task2_eval_4900.jsonl: file not found"):
        load_eval(tmp_path)
