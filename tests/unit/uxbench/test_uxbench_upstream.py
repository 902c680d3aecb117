"""Reading a UXBench checkout (``upstream.py``) and our re-implementation of its protocol.

``protocol.py`` on small inline cases; the full recorded comparison is in tests/conformance.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from tests.unit.uxbench.upstream_fixture import GRM_TEMPLATE, T1_TEMPLATE, write_checkout
from uxlocal.suites.uxbench import protocol
from uxlocal.suites.uxbench.upstream import UPSTREAM_COMMIT, CallSettings, UpstreamError, read_checkout

T1 = T1_TEMPLATE.replace("\\n", "\n")
GRM = GRM_TEMPLATE.replace("\\n", "\n")


def test_read_checkout_returns_templates_and_settings_of_each_call_site(tmp_path: Path) -> None:
    got = read_checkout(write_checkout(tmp_path))
    assert got.t1_template == T1 and got.grm_templates == {"eval": GRM, "recovery": GRM}
    assert got.t1_call == CallSettings(0.3, 900)  # call_llm's defaults: _judge_task1 passes none
    assert got.generation == {"eval": CallSettings(0.9, 300), "recovery": CallSettings(0.8, 200)}
    assert got.grm_call["eval"] == CallSettings(0.0, 3, 7)
    assert got.truncation == {"eval": ((0, 0), (4, 50)), "recovery": ((0, 0, 0), (20, 10, 30))}
    assert len(got.file_hashes) == 5 and len(got.digest()) == 64


def test_read_checkout_digest_follows_file_content(tmp_path: Path) -> None:
    first = read_checkout(write_checkout(tmp_path / "a")).digest()
    second = read_checkout(write_checkout(tmp_path / "b", eval_ladder="[(0, 0), (5, 50)]")).digest()
    assert first != second


def test_read_checkout_names_file_and_name_when_the_template_is_missing(tmp_path: Path) -> None:
    root = write_checkout(tmp_path)
    path = root / "src/utils/prompts.py"
    path.write_text("OTHER = 'x'\n", encoding="utf-8")
    with pytest.raises(UpstreamError) as err:
        read_checkout(root)
    message = str(err.value)
    assert str(path) in message and "POINTWISE_GRM" in message and UPSTREAM_COMMIT in message


@pytest.mark.parametrize(("template", "why"), [
    ("no fields at all", "has fields []"),  # a template that would ignore the conversation
    ("{context} {prompt} {reply}", "expected ['context', 'prompt', 'response']"),  # renamed field
])
def test_read_checkout_rejects_a_template_with_other_fields(tmp_path: Path, template: str, why: str) -> None:
    with pytest.raises(UpstreamError, match=r"prompts\.py.*POINTWISE_GRM") as err:
        read_checkout(write_checkout(tmp_path, t1_template=template))
    assert why in str(err.value)


def test_read_checkout_names_a_missing_file_and_a_bad_ladder(tmp_path: Path) -> None:
    root = write_checkout(tmp_path / "a")
    (root / "scripts/run_eval.py").unlink()
    with pytest.raises(UpstreamError, match=r"run_eval\.py: file not found"):
        read_checkout(root)
    with pytest.raises(UpstreamError, match=r"run_grm_judge_task2\.py:\d+: truncation_levels must be"):
        read_checkout(write_checkout(tmp_path / "b", eval_ladder="[(0, 0, 0)]"))
    with pytest.raises(UpstreamError, match="no such folder"):
        read_checkout(tmp_path / "nowhere")


def test_t1_messages_render_labels_fallbacks_and_the_empty_history_text() -> None:
    row = {"selected_history": [{"role": "user", "content": "", "message": "hi"},
                                {"role": "bot", "message": "yo"}],
           "source_query": {"message": "Q"}, "agent_response_full": "R"}
    got = protocol.t1_messages(row, T1)
    expected = "JUDGE\nctx=**用户：** hi\n**AI：** yo\nq=Q\nr=R\nEND"
    assert got.messages == [{"role": "user", "content": expected}]
    empty = protocol.t1_messages({"source_query": "plain", "agent_response_full": "R"}, T1)
    assert "ctx=（无历史对话）\nq=plain" in empty.text and empty.deviations == ()


def test_t1_messages_parse_a_string_history_and_say_so() -> None:
    row = {"selected_history": '[{"role": "user", "message": "hi"}]', "source_query": {"message": "Q"},
           "agent_response_full": "R"}
    got = protocol.t1_messages(row, T1)
    assert "**用户：** hi" in got.text and got.deviations == (protocol.HISTORY_STRING_PARSED,)


def test_grm_eval_prompt_keeps_the_last_turns_and_cuts_the_reply() -> None:
    row = {"history": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "", "message": "m"},
                       "junk", {"role": "user", "message": "c"}], "query": "Q"}
    full = protocol.grm_eval_prompt(row, "abcdef", GRM)
    assert full == "GRM\nctx=用户：a\nAI：\n用户：c\nq=Q\nr=abcdef\nANSWER"  # content wins even when empty
    cut = protocol.grm_eval_prompt(row, "abcdef", GRM, max_history_turns=2, max_response_chars=4)
    assert cut == "GRM\nctx=用户：c\nq=Q\nr=abcd...[截断]\nANSWER"  # the kept non-dict turn is skipped
    assert "ctx=无\n" in protocol.grm_eval_prompt({"history": "not a list"}, "x", GRM)


def test_grm_recovery_prompt_uses_only_the_failed_reply_as_context() -> None:
    row = {"history": [{"role": "user", "content": "never shown"}], "failed_response": "F" * 6,
           "user_complaint": "C" * 4}
    got = protocol.grm_prompt("recovery", row, "RR", GRM, (3, 2, 0))
    assert got == "GRM\nctx=AI：FFF...[截断]\nq=CC...[截断]\nr=RR\nANSWER"
    blank = {**row, "failed_response": "  "}
    assert "ctx=无\n" in protocol.grm_prompt("recovery", blank, "RR", GRM, (0, 0, 0))


def test_t3_messages_keep_roles_prefer_message_and_skip_an_empty_failed_reply() -> None:
    row = {"history": [{"role": "ai", "message": "m", "content": "c"}], "failed_response": "",
           "user_complaint": "why"}
    got = protocol.t3_messages(row).messages
    assert got == [{"role": "ai", "content": "m"}, {"role": "user", "content": "why"}]
    blank = protocol.t3_messages({**row, "history": [], "failed_response": " "}).messages
    assert blank == [{"role": "assistant", "content": " "}, {"role": "user", "content": "why"}]


@pytest.mark.parametrize(("content", "reasoning", "expected"), [
    ("好", "差", (1, "exact_content")),  # the answer wins over the reasoning
    ("好的，不过整体差", "", (1, "starts_content")),  # starts is checked before ends
    ("我觉得差", "", (-1, "ends_content")),
    ("判断：\n这个回复好。", "", (1, "last_line_content")),
    ("结论\n不好，说明如下。", "", (None, "cannot_parse")),  # 不好 blocks the last-line rule; rfind skips it
    ("嗯，差一点，但是好吧。嗯", "", (1, "rfind_content")),  # the later label wins
    ("用户会不满意。", "", (-1, "kw_bad_content")),
    ("能令用户满意。", "", (1, "kw_good_content")),
    ("", "x" * 600 + "答案：好", (1, "ends_reasoning")),
    ("嗯", "好" + "x" * 600, (None, "cannot_parse")),  # only the last 500 characters are read
])
def test_extract_verdict_follows_the_rule_cascade(content: str, reasoning: str,
                                                  expected: tuple[int | None, str]) -> None:
    assert protocol.extract_verdict(content, reasoning) == expected


def test_split_reasoning_separates_a_think_block_and_falls_back_when_the_answer_is_empty() -> None:
    assert protocol.split_reasoning("<think>hmm 好</think>\n差") == ("\n差", "hmm 好")
    assert protocol.split_reasoning("<think>hmm 好</think>  ") == ("hmm 好", "hmm 好")
    assert protocol.split_reasoning("plain") == ("plain", "")


def test_grm_score_reads_the_first_non_blank_position_naming_a_label() -> None:
    both = protocol.grm_score([(" ", [(" ", -0.1), ("好", -3.0)]), ("差", [("差", -0.5), (" 好 ", -1.0)])])
    assert both.good_logprob == -1.0 and both.bad_logprob == -0.5
    assert math.isclose(both.score or 0, math.exp(-1.0) / (math.exp(-1.0) + math.exp(-0.5)), abs_tol=1e-15)
    bad_only = protocol.grm_score([("差", [("差", -0.2), ("一", -3.0)]), ("好", [("好", -0.1)])])
    assert bad_only.good_logprob is None
    assert math.isclose(bad_only.score or 0, 1 - math.exp(-0.2), abs_tol=1e-15)
    assert protocol.grm_score([("嗯", [("嗯", -0.1)])]).score is None
    assert protocol.grm_score([]).score is None


@pytest.mark.parametrize(("content", "verdict"), [(" 好的", 1), ("差", -1), ("嗯好", 0), ("", 0)])
def test_grm_verdict_reads_the_first_character(content: str, verdict: int) -> None:
    assert protocol.grm_verdict(content) == verdict
