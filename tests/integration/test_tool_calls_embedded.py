"""Native tool calls on the real embedded model through in-process vLLM (issue 42, part 3).

The embedded preset renders tools with our SmolLM2 template and parses calls with vLLM's hermes
parser, as ``vllm serve --enable-auto-tool-choice --tool-call-parser hermes`` would. A 135M model
may or may not call a tool, so these tests assert the shape of whatever comes back (calls with a
name, JSON-text arguments and a deterministic id, or plain text), never the text itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from uxlocal.engine.base import GenRequest, GenResult, Sampling
from uxlocal.engine.pool import ModelPool
from uxlocal.engine.tool_calls import tool_call_id
from uxlocal.episode import EpisodeContext, EpisodeSpec
from uxlocal.rollout import Scheduler
from uxlocal.store.db import connect
from uxlocal.store.writer import StoreWriter

pytestmark = pytest.mark.integration

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Return today's weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
BOOK = {"type": "function", "function": {
    "name": "book_table", "description": "Reserve a restaurant table.",
    "parameters": {"type": "object", "properties": {"people": {"type": "integer"}}, "required": ["people"]}}}
TOOLS = (WEATHER, BOOK)
STRICT = ({"type": "function", "function": {**WEATHER["function"], "strict": True}},)
"""With ``"strict": true`` vLLM's grammar pins the arguments to the schema too, so a forced call closes."""
ASKS = ["What is the weather in Paris today? Use a tool.", "Book a table for 4 people.",
        "Call get_weather for Lyon.", "Tell me a joke."]
HISTORY = ({"role": "user", "content": "Weather in Paris?"},
           {"role": "assistant", "content": None, "tool_calls": [
               {"id": "chatcmpl-tool-0", "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]},
           {"role": "tool", "tool_call_id": "chatcmpl-tool-0", "content": "sunny, 21 C"})


def _episodes(results: dict[str, GenResult]) -> list[EpisodeSpec]:
    def program(ctx: EpisodeContext, messages: tuple[Any, ...], choice: str | None) -> Any:
        tools = STRICT if choice == "required" else TOOLS
        results[ctx.episode_id] = yield GenRequest("candidate", messages, Sampling(max_tokens=64),
                                                   tools=tools, tool_choice=choice)

    chats = [(f"ask{k}", ({"role": "user", "content": a},), "auto") for k, a in enumerate(ASKS)]
    chats += [("history", HISTORY, None), ("forced", ({"role": "user", "content": ASKS[0]},), "required"),
              ("none", ({"role": "user", "content": ASKS[2]},), "none")]
    return [EpisodeSpec(name, (lambda m, c: lambda ctx: program(ctx, m, c))(messages, choice))
            for name, messages, choice in chats]


def _check_shape(result: GenResult) -> None:
    """Check a tool request ended as calls (name, JSON-text arguments, our id) or text, not an error."""
    assert result.error is None and result.finish_reason in ("stop", "length"), result
    for k, call in enumerate(result.tool_calls or []):
        assert call["type"] == "function" and call["function"]["name"]
        assert isinstance(call["function"]["arguments"], str)
        json.loads(call["function"]["arguments"])  # vLLM re-serialises what it parsed: valid JSON
        assert call["id"] == tool_call_id(result.request_hash, k)
    assert result.tool_calls or isinstance(result.text, str)


def test_tool_requests_end_as_parsed_calls_or_text_and_are_stored(vllm_pool: ModelPool,
                                                                  tmp_path: Path) -> None:
    engine = vllm_pool.slot("candidate").engine
    assert engine.tool_calls, "the embedded preset names a tool parser"
    con = connect(tmp_path / "s.duckdb")
    results: dict[str, GenResult] = {}
    stats = Scheduler(vllm_pool, run_id="a", writer=StoreWriter(con)).run(_episodes(results))
    assert stats.episodes_done == 7 and stats.episodes_failed == 0
    for result in results.values():
        _check_shape(result)
    assert results["none"].tool_calls is None  # tool_choice "none": never parsed, as the server does
    forced = results["forced"]  # "required" + strict: vLLM's structural tag makes the output a call
    assert forced.finish_reason == "stop" and forced.tool_calls, forced
    for call in forced.tool_calls:
        arguments = json.loads(call["function"]["arguments"])
        assert call["function"]["name"] == "get_weather" and isinstance(arguments["city"], str)
    stored = dict(con.execute("SELECT request_hash, tool_calls FROM generations").fetchall())
    for result in results.values():
        calls = stored[result.request_hash]
        assert (json.loads(calls) if calls else None) == result.tool_calls
    again: dict[str, GenResult] = {}
    calls_before = engine.calls
    stats2 = Scheduler(vllm_pool, run_id="b", writer=StoreWriter(con)).run(_episodes(again))
    assert stats2.cache_hits == 7 and engine.calls == calls_before
    assert {k: r.tool_calls for k, r in again.items()} == {k: r.tool_calls for k, r in results.items()}
