"""Native tool-call parsing (``uxlocal.engine.tool_calls``) on fixed model outputs.

vLLM's own parsers and request objects split the text as ``vllm serve --enable-auto-tool-choice
--tool-call-parser hermes`` would, with deterministic ids. Needs vllm importable, no model.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from _tiny_tokenizer import tiny_tokenizer_folder

from uxlocal.engine.base import GenRequest, GenResult, PreparedRequest
from uxlocal.engine.tool_calls import ToolCallParse, tool_call_id

pytest.importorskip("vllm.parser", reason="vLLM is not installed (pip install 'uxlocal[cpu]')")

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Today's weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
ASK = ({"role": "user", "content": "Weather in Paris and Lyon?"},)
TWO_CALLS = ('Let me check. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}'
             '\n</tool_call>\n<tool_call>{"name": "get_weather", "arguments": {"city": "Lyon"}}</tool_call>')


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_tokenizer_folder(tmp_path_factory.mktemp("tok"))))


def _parse(tokenizer: Any, tool_choice: str | None = None, parser: str = "hermes",
           messages: Any = ASK) -> ToolCallParse:
    return ToolCallParse.start(tokenizer, parser, GenRequest("candidate", messages, tools=(WEATHER,),
                                                             tool_choice=tool_choice))


def _finished(parse: ToolCallParse, text: str, request_hash: str = "h" * 64) -> GenResult:
    result = GenResult(text, "stop")
    request = GenRequest("candidate", ASK, tools=(WEATHER,))
    prepared = PreparedRequest(request, "prompt", [1, 2, 3], request_hash)
    parse.finish(result, prepared, [4, 5])
    return result


def test_split_returns_each_hermes_call_and_the_text_before_them(tokenizer: Any) -> None:
    text, calls = _parse(tokenizer).split(TWO_CALLS, "a" * 64)
    assert text == "Let me check. "
    assert calls is not None and [c["function"]["name"] for c in calls] == ["get_weather", "get_weather"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [{"city": "Paris"}, {"city": "Lyon"}]
    assert all(c["type"] == "function" and isinstance(c["function"]["arguments"], str) for c in calls)
    assert [c["id"] for c in calls] == [tool_call_id("a" * 64, 0), tool_call_id("a" * 64, 1)]


def test_tool_call_ids_are_the_same_on_a_rerun_and_differ_between_requests_and_calls(tokenizer: Any) -> None:
    first = _finished(_parse(tokenizer), TWO_CALLS).tool_calls
    again = _finished(_parse(tokenizer), TWO_CALLS).tool_calls
    other = _finished(_parse(tokenizer), TWO_CALLS, request_hash="b" * 64).tool_calls
    assert first is not None and again is not None and other is not None
    assert [c["id"] for c in first] == [c["id"] for c in again]
    ids = {c["id"] for c in first} | {c["id"] for c in other}
    assert len(ids) == 4 and all(i.startswith("chatcmpl-tool-") and len(i) == 30 for i in ids)


def test_finish_leaves_plain_text_alone_when_there_is_no_call(tokenizer: Any) -> None:
    result = _finished(_parse(tokenizer), "It is sunny in Paris.")
    assert result.text == "It is sunny in Paris." and result.tool_calls is None and result.valid


def test_finish_keeps_a_malformed_call_as_text_without_raising(tokenizer: Any) -> None:
    broken = 'Sure <tool_call>{"name": "get_weather", "arguments": {"city": </tool_call>'
    result = _finished(_parse(tokenizer), broken)
    assert result.tool_calls is None and result.text == broken and result.valid


def test_auto_choice_keeps_special_tokens_and_adds_no_grammar(tokenizer: Any) -> None:
    parse = _parse(tokenizer)  # no tool_choice: the server's request model makes it "auto"
    assert parse.request.tool_choice == "auto"
    assert parse.sampling_overrides() == {"skip_special_tokens": False}


def test_none_choice_is_not_adjusted_and_never_parses_calls(tokenizer: Any) -> None:
    parse = _parse(tokenizer, "none")
    assert parse.sampling_overrides() == {"skip_special_tokens": True}
    result = _finished(parse, TWO_CALLS)
    assert result.tool_calls is None and result.text == TWO_CALLS


def test_required_choice_gets_vllms_structural_tag_grammar(tokenizer: Any) -> None:
    overrides = _parse(tokenizer, "required").sampling_overrides()
    tag = json.loads(overrides["structured_outputs"].structural_tag)
    assert overrides["skip_special_tokens"] is False
    assert "get_weather" in json.dumps(tag) and "<tool_call>" in json.dumps(tag)


def test_history_with_calls_and_tool_messages_is_accepted(tokenizer: Any) -> None:
    call = {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    history = (*ASK, {"role": "assistant", "content": None,
                      "tool_calls": [{"id": "call-1", "type": "function", "function": call}]},
        {"role": "tool", "tool_call_id": "call-1", "content": "sunny"})
    parse = _parse(tokenizer, messages=history)
    assert parse.error is None and _finished(parse, TWO_CALLS).tool_calls is not None


def test_unknown_parser_makes_the_result_invalid_and_names_the_parser(tokenizer: Any) -> None:
    parse = _parse(tokenizer, parser="no-such-parser")
    assert parse.sampling_overrides() == {}
    result = _finished(parse, TWO_CALLS)
    assert not result.valid and "no-such-parser" in (result.error or "") and result.tool_calls is None

