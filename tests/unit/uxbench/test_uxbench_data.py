"""Loaders for the four UXBench files: every accepted spelling and every kind of bad row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from uxlocal.errors import InputError
from uxlocal.lang import detect_lang
from uxlocal.suites.uxbench.data import (
    UXBenchFiles,
    canonical_dimension,
    canonical_scenario,
    canonical_success,
    load_eval,
    load_judge,
    load_recovery,
)

FILES = UXBenchFiles()


def _write(path: Path, rows: list[Any]) -> Path:
    """Rows may be dicts (dumped as JSON) or raw strings (written as they are)."""
    lines = [row if isinstance(row, str) else json.dumps(row, ensure_ascii=False) for row in rows]
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _judge_dir(tmp_path: Path, bad: list[Any] | None = None, good: list[Any] | None = None) -> Path:
    _write(tmp_path / FILES.judge_bad, bad or [])
    _write(tmp_path / FILES.judge_good, good or [])
    return tmp_path


def _t1(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "cid": "c1", "ground_truth": -1,
        "source_query": {"turn_index": 2, "message": "And in English?"},
        "selected_history": [
            {"turn_index": 0, "role": "user", "message": "Say hello in French.",
             "create_time": "2026-01-01 10:00:00", "length": 20},
            {"turn_index": 1, "role": "assistant", "message": "Bonjour.",
             "create_time": "2026-01-01 10:00:04", "length": 8}],
        "agent_response_full": "Hello.", "failure_dimension": "Factual Error", "scenario": "信息与知识查询",
        "difficulty": "Medium"}
    row.update(overrides)
    return row


def _no_key(key: str, **overrides: Any) -> dict[str, Any]:
    row = _t1(**overrides)
    del row[key]
    return row


HISTORY = [{"role": "user", "content": "Say hello in French."}, {"role": "assistant", "content": "Bonjour."}]


# ---------------------------------------------------------------- T1 spellings


def test_load_judge_reads_released_schema_into_normalized_item(tmp_path: Path) -> None:
    item = load_judge(_judge_dir(tmp_path, bad=[_t1()])).items[0]
    assert item.item_id == "c1" and item.ground_truth == -1
    assert [(t.role, t.content) for t in item.history] == [("user", "Say hello in French."),
                                                            ("assistant", "Bonjour.")]
    assert (item.query, item.response, item.lang) == ("And in English?", "Hello.", "en")
    labels = (item.difficulty, item.scenario, item.failure_dimension)
    assert labels == ("medium", "信息与知识查询", "Factual Error")
    assert (item.source_file, item.source_line, item.response_was_rich) == (FILES.judge_bad, 1, False)


@pytest.mark.parametrize("overrides", [
    # simplified schema: history of {role, content} plus a top-level query
    {"selected_history": None, "source_query": None, "history": HISTORY, "query": "And in English?"},
    # source_query given as a plain string
    {"source_query": "And in English?"},
    # history stored as a JSON string
    {"selected_history": json.dumps(HISTORY)},
    # history stored as a Python-literal string (single quotes, as str(list) writes it)
    {"selected_history": str(HISTORY)},
    # turns keyed content instead of message
    {"selected_history": HISTORY},
    # source_query dict keyed content
    {"source_query": {"turn_index": 2, "content": "And in English?"}},
])
def test_load_judge_accepts_every_spelling(tmp_path: Path, overrides: dict[str, Any]) -> None:
    row = {k: v for k, v in _t1(**overrides).items() if v is not None}
    item = load_judge(_judge_dir(tmp_path, bad=[row])).items[0]
    assert [t.content for t in item.history] == ["Say hello in French.", "Bonjour."]
    assert item.query == "And in English?"


def test_turn_content_wins_over_message_when_both_present(tmp_path: Path) -> None:
    turns = [{"role": "user", "content": "from content", "message": "from message"},
             {"role": "assistant", "content": "", "message": "only message"}]
    item = load_judge(_judge_dir(tmp_path, bad=[_t1(selected_history=turns)])).items[0]
    assert [t.content for t in item.history] == ["from content", "only message"]


def test_turn_roles_are_normalized_and_aliases_mapped(tmp_path: Path) -> None:
    turns = [{"role": " USER ", "message": "a"}, {"role": "bot", "message": "b"},
             {"role": "system", "message": "c"}]
    item = load_judge(_judge_dir(tmp_path, bad=[_t1(selected_history=turns)])).items[0]
    assert [t.role for t in item.history] == ["user", "assistant", "system"]


def test_rich_response_is_reduced_to_text_and_recorded(tmp_path: Path) -> None:
    parts = [{"msg": "First part.", "type": "text"}, {"msg": "hidden plan", "type": "think"},
             {"msg": {"url": "x"}, "type": "card"}, {"msg": "Second part.", "type": "text"}]
    rich = json.dumps({"content": parts, "marks": []})
    item = load_judge(_judge_dir(tmp_path, bad=[_t1(agent_response_full=rich)])).items[0]
    assert item.response == "First part.\n\nSecond part."
    assert item.response_was_rich and item.response_raw == rich


def test_rich_response_given_as_object_is_accepted(tmp_path: Path) -> None:
    obj = {"content": [{"msg": "Only part.", "type": "text"}]}
    item = load_judge(_judge_dir(tmp_path, bad=[_t1(agent_response_full=obj)])).items[0]
    assert item.response == "Only part." and item.response_was_rich


def test_plain_response_that_merely_starts_with_brace_stays_raw(tmp_path: Path) -> None:
    text = '{"a": 1} is a JSON object with one key.'
    item = load_judge(_judge_dir(tmp_path, bad=[_t1(agent_response_full=text)])).items[0]
    assert item.response == text and not item.response_was_rich and item.response_raw is None


def test_ground_truth_comes_from_the_file_when_missing(tmp_path: Path) -> None:
    bad, good = _no_key("ground_truth", cid="b"), _no_key("ground_truth", cid="g")
    items = load_judge(_judge_dir(tmp_path, bad=[bad], good=[good])).items
    assert [(i.item_id, i.ground_truth) for i in items] == [("b", -1), ("g", 1)]


def test_ground_truth_accepts_numeric_strings(tmp_path: Path) -> None:
    folder = _judge_dir(tmp_path, bad=[_t1(ground_truth="-1")], good=[_t1(cid="g", ground_truth="1")])
    items = load_judge(folder).items
    assert [i.ground_truth for i in items] == [-1, 1]


def test_item_id_falls_back_to_file_stem_and_line(tmp_path: Path) -> None:
    items = load_judge(_judge_dir(tmp_path, bad=["", _no_key("cid")])).items
    assert items[0].item_id == "uxbench_task1_judge_bad_1k:2" and items[0].source_line == 2


def test_file_names_are_overridable(tmp_path: Path) -> None:
    _write(tmp_path / "b.jsonl", [_t1()])
    _write(tmp_path / "g.jsonl", [_t1(cid="g", ground_truth=1)])
    files = UXBenchFiles(judge_bad="b.jsonl", judge_good=str(tmp_path / "g.jsonl"))
    loaded = load_judge(tmp_path, files=files)
    assert [i.source_file for i in loaded.items] == ["b.jsonl", "g.jsonl"]


def test_missing_file_is_an_input_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"uxbench_task1_judge_bad_1k\.jsonl: file not found"):
        load_judge(tmp_path)


# ---------------------------------------------------------------- T1 bad rows




BAD_ROWS = [
    # a line that is not JSON at all
    ('{"cid": "x", ', "not valid JSON"),
    # a JSON value that is not an object
    ('["a", "b"]', "a row must be a JSON object, got list"),
    # neither source_query nor query
    (_no_key("source_query"), "source_query|query: missing"),
    # no reply to judge
    (_no_key("agent_response_full"), "agent_response_full|response: missing"),
    # blank query
    (_t1(source_query={"turn_index": 0, "message": "  "}), "source_query: is empty"),
    # source_query dict without its text
    (_t1(source_query={"turn_index": 0}), "source_query: is a dict without 'message'"),
    # ground_truth outside -1/1
    (_t1(ground_truth=0), "ground_truth: must be -1 (disliked) or 1 (liked), got 0"),
    # booleans are not labels
    (_t1(ground_truth=True), "ground_truth: must be -1 (disliked) or 1 (liked), got True"),
    # a liked label inside the disliked file
    (_t1(ground_truth=1), "ground_truth: is 1 but the row is in the disliked (bad) file"),
    # a history string neither JSON nor Python
    (_t1(selected_history="[{'role': 'user', 'message': 'hi'"),
     "selected_history: is a string that is neither JSON nor a Python literal list"),
    # a role chat templates cannot take
    (_t1(selected_history=[{"role": "tool", "message": "x"}]), "selected_history.0.role: Input should be"),
    # an empty reply
    (_t1(agent_response_full="   "), "agent_response_full: is empty"),
    # a rich reply with no text part
    (_t1(agent_response_full='{"content": [{"msg": "t", "type": "thinking"}]}'),
     "agent_response_full: is a rich message without any text part"),
]


@pytest.mark.parametrize(("row", "problem"), BAD_ROWS)
def test_bad_judge_row_raises_with_file_line_and_field(tmp_path: Path, row: Any, problem: str) -> None:
    folder = _judge_dir(tmp_path, bad=[_t1(cid="ok"), "", row])
    with pytest.raises(InputError) as err:
        load_judge(folder)
    assert str(err.value.message).startswith(f"{tmp_path / FILES.judge_bad}:3: {problem}")
    assert err.value.line == 3


def test_invalid_utf8_line_is_a_bad_row(tmp_path: Path) -> None:
    path = _judge_dir(tmp_path) / FILES.judge_bad
    path.write_bytes(b'{"cid": "\xff"}\n')
    with pytest.raises(InputError, match=r":1: not valid UTF-8"):
        load_judge(tmp_path)


def test_duplicate_cid_across_t1_files_names_both_places(tmp_path: Path) -> None:
    folder = _judge_dir(tmp_path, bad=[_t1(cid="same")], good=["", _t1(cid="same", ground_truth=1)])
    with pytest.raises(InputError) as err:
        load_judge(folder)
    expected = (f"{tmp_path / FILES.judge_good}:2: cid: duplicate cid 'same', "
                f"first used at {tmp_path / FILES.judge_bad}:1")
    assert err.value.message.startswith(expected)


def test_skip_bad_rows_quarantines_instead_of_raising(tmp_path: Path) -> None:
    broken = '{"cid": "x", '
    folder = _judge_dir(tmp_path, bad=[_t1(cid="a"), broken, _t1(cid="b", ground_truth=1)],
                        good=[_t1(cid="a", ground_truth=1), _t1(cid="c", ground_truth=1)])
    loaded = load_judge(folder, skip_bad_rows=True)
    assert [i.item_id for i in loaded.items] == ["a", "c"]
    got = [(q.task, Path(q.file).name, q.line, q.field) for q in loaded.quarantine]
    assert got == [("judge", FILES.judge_bad, 2, None), ("judge", FILES.judge_bad, 3, "ground_truth"),
                   ("judge", FILES.judge_good, 1, "cid")]
    assert loaded.quarantine[0].raw == broken
    assert loaded.quarantine[0].reason.startswith("not valid JSON")
    assert "duplicate cid 'a'" in loaded.quarantine[2].reason


# ---------------------------------------------------------------- T2


def _t2_dir(tmp_path: Path, rows: list[Any]) -> Path:
    _write(tmp_path / FILES.eval, rows)
    return tmp_path


def test_eval_row_without_messages_is_built_from_history_and_query(tmp_path: Path) -> None:
    item = load_eval(_t2_dir(tmp_path, [{"cid": "e", "history": HISTORY, "query": "And in English?",
                                          "dimension": "任务未完成"}])).items[0]
    assert [(m.role, m.content) for m in item.messages][-1] == ("user", "And in English?")
    assert len(item.messages) == 3 and item.messages_source == "history+query"
    assert item.dimension == "任务未完成"


def test_eval_messages_missing_the_query_get_it_appended(tmp_path: Path) -> None:
    messages = [{"role": "system", "content": "Be brief."}, *HISTORY]
    row = {"messages": messages, "history": HISTORY, "query": "Why?"}
    item = load_eval(_t2_dir(tmp_path, [row])).items[0]
    assert [m.role for m in item.messages] == ["system", "user", "assistant", "user"]
    assert item.messages[-1].content == "Why?" and item.messages_source == "messages+query"


def test_eval_messages_ending_with_the_query_are_kept_verbatim(tmp_path: Path) -> None:
    messages = [*HISTORY, {"role": "user", "content": "Why? "}]
    item = load_eval(_t2_dir(tmp_path, [{"messages": messages, "query": "Why?"}])).items[0]
    assert len(item.messages) == 3 and item.messages_source == "messages"


def test_eval_messages_alone_yield_query_and_history_without_system(tmp_path: Path) -> None:
    messages = [{"role": "system", "content": "Be brief."}, *HISTORY, {"role": "user", "content": "Why?"}]
    item = load_eval(_t2_dir(tmp_path, [{"messages": json.dumps(messages)}])).items[0]
    assert item.query == "Why?"
    assert [t.role for t in item.history] == ["user", "assistant"]


def test_eval_history_as_python_literal_string_with_message_key(tmp_path: Path) -> None:
    history = str([{"role": "user", "message": "你好"}, {"role": "assistant", "message": "你好！"}])
    item = load_eval(_t2_dir(tmp_path, [{"history": history, "query": "今天吃什么？"}])).items[0]
    assert [t.content for t in item.history] == ["你好", "你好！"] and item.lang == "zh"


@pytest.mark.parametrize(("row", "problem"), [
    # nothing to generate from
    ({"history": HISTORY}, "messages|query: missing"),
    # messages end with the assistant and no query says what the user asked
    ({"messages": HISTORY}, "query: missing and the last message is not a user turn"),
    # unparseable messages string
    ({"messages": "[{oops", "query": "q"}, "messages: is a string that is neither JSON"),
])
def test_bad_eval_row_raises_with_line_and_field(tmp_path: Path, row: dict[str, Any], problem: str) -> None:
    with pytest.raises(InputError) as err:
        load_eval(_t2_dir(tmp_path, [row]))
    assert err.value.message.startswith(f"{tmp_path / FILES.eval}:1: {problem}")


def test_duplicate_cid_in_eval_file_is_an_error(tmp_path: Path) -> None:
    rows = [{"cid": "d", "query": "a"}, {"cid": "d", "query": "b"}]
    with pytest.raises(InputError, match=r":2: cid: duplicate cid 'd', first used at .*:1"):
        load_eval(_t2_dir(tmp_path, rows))


# ---------------------------------------------------------------- T3


def _t3_dir(tmp_path: Path, rows: list[Any]) -> Path:
    _write(tmp_path / FILES.recovery, rows)
    return tmp_path


def test_recovery_row_loads_with_history_string_and_empty_failed_reply(tmp_path: Path) -> None:
    row = {"cid": "r", "history": json.dumps([{"role": "user", "message": "Name a prime."}]),
           "failed_response": "", "user_complaint": "You said nothing.",
           "failure_dimension": "System / Technical Error",
           "scenario": "信息与知识查询", "difficulty": ""}
    item = load_recovery(_t3_dir(tmp_path, [row])).items[0]
    assert (item.failed_response, item.user_complaint, item.difficulty) == ("", "You said nothing.", None)
    assert item.history[0].content == "Name a prime." and item.lang == "en"


@pytest.mark.parametrize(("row", "problem"), [
    # the complaint is what the candidate answers
    ({"history": [], "failed_response": "x"}, "user_complaint: missing"),
    # a blank complaint is as useless as none
    ({"failed_response": "x", "user_complaint": " "}, "user_complaint: is empty"),
    # the failed reply must be present, even if empty
    ({"user_complaint": "why"}, "failed_response: missing"),
])
def test_bad_recovery_row_raises_with_line_and_field(tmp_path: Path, row: dict[str, Any],
                                                     problem: str) -> None:
    with pytest.raises(InputError) as err:
        load_recovery(_t3_dir(tmp_path, [row]))
    assert err.value.message.startswith(f"{tmp_path / FILES.recovery}:1: {problem}")


# ---------------------------------------------------------------- language and taxonomy


@pytest.mark.parametrize(("primary", "fallback", "lang"), [
    ("How do I boil an egg?", "", "en"),  # plain English
    ("水的沸点是多少？", "", "zh"),  # plain Chinese
    ("Python 里的 list comprehension 怎么写", "", "zh"),  # Chinese question about code
    ("My friend 王明 asked me to proofread his English essay.", "", "en"),  # English quoting a name
    ("???", "好的，没问题。", "zh"),  # no letters in the user's words: the rest decides
    ("", "", "en"),  # nothing at all
])
def test_detect_lang_uses_cjk_share_of_letters(primary: str, fallback: str, lang: str) -> None:
    assert detect_lang(primary, fallback) == lang


def test_taxonomy_labels_map_across_languages() -> None:
    english = "Verbosity / Redundancy"
    assert canonical_dimension("冗余啰嗦") == canonical_dimension(english) == english
    assert canonical_dimension("格式结构问题") == "Instruction / Format Failure"
    assert canonical_dimension("其他") is None
    assert canonical_success("实用性/操作指导") == "Practical Guidance / Actionability"
    assert canonical_scenario("情绪与心理支持") == canonical_scenario("Emotion") == "Emotion"
