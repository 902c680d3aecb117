"""Input loading: every format, the column map, and ``file:line: column: problem`` for bad rows."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from uxlocal.errors import InputError
from uxlocal.suites.judge.inputs import Columns, load_items

from .conftest import chat, write_jsonl


def test_load_items_reads_conversation_column_when_jsonl(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "a.jsonl", [{"id": "x", "conversation": chat(1)},
                                              {"id": "y", "messages": json.dumps(chat(2))}])
    items = load_items(str(path), Columns()).items
    assert [i.item_id for i in items] == ["x", "y"]
    assert items[1].conversation[1] == {"role": "assistant", "content": "answer 2"}
    assert items[0].source_line == 1 and items[1].source_line == 2


def test_load_items_builds_one_turn_from_prompt_and_response_when_csv(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text('q,r,who,grade\nhello,"hi\nthere",u1,good\nbye,ciao,u2,bad\n', encoding="utf-8")
    loaded = load_items(str(path), Columns(prompt="q", response="r", group="who", human="grade"))
    assert [i.conversation[1]["content"] for i in loaded.items] == ["hi\nthere", "ciao"]
    assert [i.group for i in loaded.items] == ["u1", "u2"]
    assert [i.human for i in loaded.items] == ["good", "bad"]
    assert [i.source_line for i in loaded.items] == [2, 4]  # the quoted newline takes a line
    assert loaded.items[0].item_id == "a:2"  # no id column: file stem and line


def test_load_items_reads_parquet_rows_with_list_conversations(tmp_path: Path) -> None:
    path = tmp_path / "a.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": 7, "conversation": chat(7), "score": 4.0}]), path)
    item = load_items(str(path), Columns(human="score"), human=float).items[0]
    assert item.item_id == "7" and item.human == 4.0 and len(item.conversation) == 2


def test_load_items_runs_a_query_when_duckdb_source(tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE t (k VARCHAR, p VARCHAR, a VARCHAR, b VARCHAR, pref VARCHAR)")
        con.execute(
            "INSERT INTO t VALUES ('k1', 'pick one', 'left', 'right', 'A'), ('k2', 'again', 'l', 'r', 'tie')"
        )
    loaded = load_items(
        f"duckdb:{db}::select * from t order by k",
        Columns(id="k", prompt="p", response_a="a", response_b="b", human="pref"),
        pairwise=True,
    )
    assert [(i.item_id, i.response_a, i.human) for i in loaded.items] == [
        ("k1", "left", "A"),
        ("k2", "l", "tie"),
    ]
    assert loaded.items[0].conversation == ({"role": "user", "content": "pick one"},)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # not JSON at all
        ("{oops", "a.jsonl:2: invalid JSON"),
        # a list instead of an object
        ("[1, 2]", "a.jsonl:2: is not a JSON object"),
        # conversation missing entirely (and no prompt/response columns)
        ('{"id": "b"}', "a.jsonl:2: prompt: is missing"),
        # a role chat templates reject
        (
            '{"id": "b", "conversation": [{"role": "narrator", "content": "x"}]}',
            "a.jsonl:2: conversation: message 0 has role",
        ),
        # a JSON string that is not JSON
        ('{"id": "b", "conversation": "[{"}', "a.jsonl:2: conversation: is a string but not JSON"),
        # nothing to judge
        (
            '{"id": "b", "conversation": [{"role": "user", "content": "x"}]}',
            "a.jsonl:2: conversation: has no assistant turn",
        ),
        # the id used twice
        (
            '{"id": "a", "conversation": [{"role": "user", "content": "x"}, '
            '{"role": "assistant", "content": "y"}]}',
            "a.jsonl:2: id: id 'a' already used at line 1",
        ),
    ],
)
def test_load_items_names_file_line_and_column_when_row_is_bad(
    tmp_path: Path, line: str, expected: str
) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"id": "a", "conversation": chat(1)}) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        load_items(str(path), Columns())
    assert err.value.format_message().startswith(f"{tmp_path}/{expected}")


def test_load_items_reports_bad_human_value_with_its_column(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "h.jsonl", [{"conversation": chat(1), "score": "high"}])

    def number(value: object) -> float:
        try:
            return float(value)  # type: ignore[arg-type]
        except ValueError:
            raise ValueError(f"{value!r} is not a number") from None
    with pytest.raises(InputError, match=r"h.jsonl:1: score: 'high' is not a number"):
        load_items(str(path), Columns(human="score"), human=number)


def test_load_items_quarantines_bad_rows_when_skip_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(
        json.dumps({"conversation": chat(1)}) + "\n\n{bad\n" + json.dumps({"conversation": chat(3)}) + "\n",
        encoding="utf-8",
    )
    loaded = load_items(str(path), Columns(), skip_bad_rows=True)
    assert [i.source_line for i in loaded.items] == [1, 4]  # the blank line still counts
    assert [(q.line, q.raw) for q in loaded.quarantine] == [(3, "{bad")]
    assert loaded.quarantine[0].reason.startswith("invalid JSON")


def test_load_items_rejects_unknown_format(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="unknown input format"):
        load_items(str(path), Columns())
