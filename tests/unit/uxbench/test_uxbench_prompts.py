"""Prompt rendering: language per item, chat shapes, labels, verdict parsing, file hashes, sizes."""

from __future__ import annotations

import hashlib
import json

import pytest

from uxlocal.lang import Lang
from uxlocal.suites.uxbench.data import (
    SAMPLE_DIR,
    EvalItem,
    JudgeItem,
    RecoveryItem,
    Turn,
    load_eval,
    load_judge,
    load_recovery,
)
from uxlocal.suites.uxbench.prompts import (
    PROMPTS_DIR,
    JudgeMode,
    eval_generation_messages,
    eval_judge_messages,
    judge_messages,
    labels_for,
    parse_verdict,
    prompt_hashes,
    reason_model,
    recovery_generation_messages,
    recovery_judge_messages,
    render_transcript,
)


def _judge_item(lang: Lang = "en", history: list[Turn] | None = None) -> JudgeItem:
    query, response = ("Is it raining?", "Yes, bring an umbrella.")
    if lang == "zh":
        query, response = ("下雨了吗？", "下雨了，记得带伞。")
    return JudgeItem(item_id="j", lang=lang, ground_truth=1, history=history or [], query=query,
                     response=response, source_file="f.jsonl", source_line=1)


def _recovery_item(lang: Lang = "en") -> RecoveryItem:
    return RecoveryItem(item_id="r", lang=lang, history=[Turn(role="user", content="Name a prime above 10.")],
                        failed_response="9 is prime.", user_complaint="9 is not prime!",
                        source_file="f.jsonl", source_line=1)


def test_labels_for_each_language() -> None:
    assert labels_for("en") == ("good", "bad") and labels_for("zh") == ("好", "差")


@pytest.mark.parametrize(("lang", "marker", "answer_line"), [
    ("en", "The assistant's reply:",
     "Answer with one word only: good if the user would be satisfied, bad if not."),
    ("zh", "AI 助手的回复：", "只回答一个字：用户会满意就答“好”，不会满意就答“差”。"),
])
def test_judge_label_prompt_follows_item_language(lang: Lang, marker: str, answer_line: str) -> None:
    messages = judge_messages(_judge_item(lang))
    assert [m["role"] for m in messages] == ["user"]
    text = messages[0]["content"]
    assert marker in text and text.endswith(answer_line)
    assert _judge_item(lang).response in text and _judge_item(lang).query in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_judge_reason_prompt_asks_for_json_with_the_labels(lang: Lang) -> None:
    text = judge_messages(_judge_item(lang), "reason")[0]["content"]
    good, bad = labels_for(lang)
    assert '"reasoning"' in text and '"verdict"' in text and f'"{good}"' in text and f'"{bad}"' in text


def test_transcript_shows_every_non_user_role_as_assistant() -> None:
    turns = [Turn(role="system", content="Be nice."), Turn(role="user", content="Hi"),
             Turn(role="assistant", content="Hello")]
    assert render_transcript(turns, "en") == "Assistant: Be nice.\nUser: Hi\nAssistant: Hello"
    assert render_transcript(turns, "zh") == "助手：Be nice.\n用户：Hi\n助手：Hello"


def test_empty_history_renders_a_placeholder() -> None:
    assert render_transcript([], "en") == "(none)" and render_transcript([], "zh") == "（无）"
    assert "Conversation so far:\n(none)\n" in judge_messages(_judge_item("en"))[0]["content"]


def test_eval_judge_uses_the_t1_label_prompt_with_the_candidate_reply() -> None:
    history = [Turn(role="user", content="Hi"), Turn(role="assistant", content="Hello")]
    item = EvalItem(item_id="e", lang="en", messages=[*history, Turn(role="user", content="Is it raining?")],
                    history=history, query="Is it raining?", messages_source="history+query",
                    source_file="f.jsonl", source_line=1)
    same = _judge_item("en", history).model_copy(update={"response": "No, it's dry."})
    assert eval_judge_messages(item, "No, it's dry.") == judge_messages(same, "label")


def test_recovery_judge_sees_failed_reply_and_complaint_but_not_history() -> None:
    text = recovery_judge_messages(_recovery_item(), "Sorry: 11 is prime.")[0]["content"]
    assert "Conversation so far:\nAssistant: 9 is prime.\n" in text
    assert "The user's latest message:\n9 is not prime!\n" in text
    assert "Sorry: 11 is prime." in text and "Name a prime" not in text


def test_recovery_judge_with_empty_failed_reply_shows_no_prior_turn() -> None:
    item = _recovery_item().model_copy(update={"failed_response": ""})
    assert "Conversation so far:\n(none)\n" in recovery_judge_messages(item, "x")[0]["content"]


def test_recovery_generation_is_history_then_failed_reply_then_complaint() -> None:
    messages = recovery_generation_messages(_recovery_item())
    assert [(m["role"], m["content"]) for m in messages] == [
        ("user", "Name a prime above 10."), ("assistant", "9 is prime."), ("user", "9 is not prime!")]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_recovery_generation_system_prompt_is_optional_and_in_item_language(lang: Lang) -> None:
    messages = recovery_generation_messages(_recovery_item(lang), system_prompt=True)
    assert messages[0]["role"] == "system" and len(messages) == 4
    expected = (PROMPTS_DIR / f"recovery_system.{lang}.j2").read_text(encoding="utf-8").strip()
    assert messages[0]["content"] == expected


def test_recovery_generation_merges_into_an_existing_system_turn() -> None:
    item = _recovery_item().model_copy(update={"history": [Turn(role="system", content="House rules."),
                                                           Turn(role="user", content="Q")]})
    messages = recovery_generation_messages(item, system_prompt=True)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[0]["content"].startswith("House rules.\n\n")


def test_eval_generation_passes_messages_verbatim() -> None:
    item = load_eval(SAMPLE_DIR).items[0]
    messages = eval_generation_messages(item)
    assert messages == [{"role": t.role, "content": t.content} for t in item.messages]
    assert messages[-1] == {"role": "user", "content": item.query}


@pytest.mark.parametrize(("text", "lang", "mode", "verdict"), [
    ("good", "en", "label", 1),  # exact label
    (" Bad\n", "en", "label", -1),  # whitespace and case are tolerated in English
    ("好", "zh", "label", 1),  # Chinese label
    ("差", "zh", "label", -1),
    ("好的", "zh", "label", None),  # no prefix guessing
    ("good", "zh", "label", None),  # the other language's label is invalid
    ('{"reasoning": "wrong fact", "verdict": "bad"}', "en", "reason", -1),
    ('{"reasoning": "答得准", "verdict": "好"}', "zh", "reason", 1),
    ('{"reasoning": "x", "verdict": "maybe"}', "en", "reason", None),  # label outside the schema
    ('{"reasoning": "x", "verdict": "go', "en", "reason", None),  # cut off
])
def test_parse_verdict(text: str, lang: Lang, mode: JudgeMode, verdict: int | None) -> None:
    assert parse_verdict(text, lang, mode) == verdict


def test_reason_model_schema_lists_the_language_labels() -> None:
    langs: tuple[Lang, ...] = ("en", "zh")
    for lang in langs:
        schema = reason_model(lang).model_json_schema()
        assert schema["properties"]["verdict"]["enum"] == list(labels_for(lang))
        assert schema["required"] == ["reasoning", "verdict"]


def test_prompt_hashes_cover_every_template_in_both_languages() -> None:
    hashes = prompt_hashes()
    files = sorted(p.name for p in PROMPTS_DIR.glob("*.j2"))
    assert sorted(hashes) == files
    for name in files:
        assert hashes[name] == hashlib.sha256((PROMPTS_DIR / name).read_bytes()).hexdigest()
    stems = {name.rsplit(".", 2)[0] for name in files}
    for stem in stems:
        assert {f"{stem}.en.j2", f"{stem}.zh.j2"} <= set(files)


def test_every_sample_prompt_renders_in_its_language_and_fits() -> None:
    judge, evals, recovery = load_judge(SAMPLE_DIR), load_eval(SAMPLE_DIR), load_recovery(SAMPLE_DIR)
    for item in judge.items:
        text = judge_messages(item)[0]["content"]
        assert ("用户最新的话" in text) == (item.lang == "zh")
        content = sum(len(t.content) for t in item.history) + len(item.query) + len(item.response)
        overhead = len(text) - content
        assert overhead < (800 if item.lang == "en" else 350), item.item_id
        assert len(text) < 2000
    for eval_item in evals.items:
        assert len(eval_judge_messages(eval_item, "ok")[0]["content"]) < 1600
    for recovery_item in recovery.items:
        assert len(recovery_judge_messages(recovery_item, "ok")[0]["content"]) < 1600
        assert json.dumps(recovery_generation_messages(recovery_item, system_prompt=True), ensure_ascii=False)
