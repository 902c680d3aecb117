"""Native tool calls on in-process vLLM, parsed as ``vllm serve --enable-auto-tool-choice`` parses them.

tau2-bench reaches a local model through litellm and ``vllm serve --enable-auto-tool-choice
--tool-call-parser NAME``. For one non-streaming chat completion that server (vLLM 0.32,
``entrypoints/openai/chat_completion/serving.py`` and ``renderers/online_renderer.py``) does, in
this order: build a ``ChatCompletionRequest`` (tools given and no ``tool_choice``: it becomes
``"auto"``); compose a ``Parser`` class with ``ParserManager.get_parser`` (auto tools on, the
default strict level); unless ``tool_choice`` is ``"none"``, let a parser instance
``adjust_request`` it, which may change sampling (the hermes parser keeps special tokens; a
``"required"`` or named choice gets a structural-tag grammar); sample with the adjusted request's
settings; then ``parse`` the output text with a parser instance, keeping what is left as content
and, when ``parallel_tool_calls`` is false, the first call only. ``ToolCallParse`` does the same
steps with the same vLLM objects, so a uxlocal run and a ``vllm serve`` run of one model split
text and calls alike.

One difference on purpose: the server gives each call a random id (``chatcmpl-tool-<hex>``); we
derive it from the request hash and the call's index (``tool_call_id``), so a rerun, a resumed run
and the cache agree on every id the next turn's history quotes.

Contract: pure; vllm is imported lazily (only engines that parse tool calls need it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from uxlocal.engine.base import GenRequest, GenResult, Message, PreparedRequest, ToolSchema


def tool_call_id(request_hash: str, index: int) -> str:
    """Return the id of call ``index`` of a generation: vLLM's ``chatcmpl-tool-`` prefix, 16 hex digits.

    Deterministic (sha256 of the request hash and the index), unlike the server's random ids, so
    reruns and cache hits quote the same ids in later turns.
    """
    digest = hashlib.sha256(f"{request_hash}:{index}".encode()).hexdigest()
    return f"chatcmpl-tool-{digest[:16]}"


_COMPOSED: dict[tuple[str, int], tuple[Any, Any]] = {}
"""(parser name, id of tokenizer) -> (tokenizer, composed class): composed once per engine, as the
server composes it once at start-up (the tokenizer is kept so its id is not reused)."""


def parser_class(parser_name: str, tokenizer: Any) -> Any:
    """Return vLLM's composed ``Parser`` class for ``--tool-call-parser parser_name``, auto tools on.

    Raises ``KeyError`` naming the parser when vLLM does not know it.
    """
    key = (parser_name, id(tokenizer))
    if key not in _COMPOSED:
        from vllm.parser import ParserManager

        cls = ParserManager.get_parser(tool_parser_name=parser_name, enable_auto_tools=True,
                                       tokenizer=tokenizer)
        if cls is None or cls.tool_parser_cls is None:
            raise KeyError(f"vLLM has no tool parser named {parser_name!r}")
        _COMPOSED[key] = (tokenizer, cls)
    return _COMPOSED[key][1]


def chat_request(messages: Sequence[Message], tools: Sequence[ToolSchema] | None,
                 tool_choice: str | None) -> Any:
    """Return the ``ChatCompletionRequest`` a client would send for our request (no model name)."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest

    body: dict[str, Any] = {"model": "", "messages": [dict(m) for m in messages]}
    if tools:
        body["tools"] = [dict(t) for t in tools]
    if tool_choice is not None:
        body["tool_choice"] = tool_choice
    return ChatCompletionRequest(**body)


@dataclass
class ToolCallParse:
    """One request's tool-call handling: the sampling changes before, the split of its output after.

    Building it never raises for a request's content or a preset's parser name: the problem is
    kept in ``error`` and the request's result comes back invalid with it (the server would answer
    400), so one bad request never fails its batch.
    """

    parser: Any = None
    """A vLLM ``Parser`` instance (stateful: one per request, as the server makes one per choice)."""
    request: Any = None
    """The ``ChatCompletionRequest``, after ``adjust_request`` when the server would call it."""
    error: str | None = None

    @classmethod
    def start(cls, tokenizer: Any, parser_name: str, request: GenRequest) -> ToolCallParse:
        """Build the request and parser, and adjust the request where the server does.

        The server skips ``adjust_request`` for ``tool_choice="none"`` unless the parser always
        adjusts or has a reasoning part (``preprocess_chat`` in ``online_renderer.py``).
        """
        try:
            composed = parser_class(parser_name, tokenizer)
            chat = chat_request(request.messages, request.tools, request.tool_choice)
            if composed.always_adjust_request or composed.reasoning_parser_cls is not None \
                    or chat.tool_choice != "none":
                chat = composed(tokenizer, chat.tools).adjust_request(chat)
            return cls(composed(tokenizer, chat.tools), chat)
        except Exception as exc:  # the request or preset is wrong, not the engine
            return cls(error=f"native tool calls ({parser_name}): {type(exc).__name__}: {exc}")

    def sampling_overrides(self) -> dict[str, Any]:
        """``SamplingParams`` keywords the adjusted request sets: special tokens, a tool-call grammar.

        A grammar here (``tool_choice`` ``"required"`` or a named tool) replaces the request's
        own constraint, as the server ignores structured outputs when a call is forced.
        """
        if self.request is None:
            return {}
        overrides: dict[str, Any] = {"skip_special_tokens": bool(self.request.skip_special_tokens)}
        structured = self.request.extract_structured_outputs()
        if structured is not None:
            overrides["structured_outputs"] = structured
        return overrides

    def split(self, text: str, request_hash: str, *, prompt_ids: Sequence[int] = (),
              output_ids: Sequence[int] = ()) -> tuple[str, list[dict[str, Any]] | None]:
        """Return the content left over and the calls (``GenResult.tool_calls`` shape; None: no call).

        The parser leaves text it cannot read as content, as the server does.
        """
        self.parser.set_prompt_token_ids(list(prompt_ids))
        _, content, calls = self.parser.parse(text, self.request, enable_auto_tools=True,
                                              model_output_token_ids=list(output_ids))
        if calls and self.request.parallel_tool_calls is False:
            calls = calls[:1]
        if not calls:
            return content or "", None
        return content or "", [
            {"id": tool_call_id(request_hash, k), "type": "function",
             "function": {"name": call.name, "arguments": call.arguments}}
            for k, call in enumerate(calls)]

    def finish(self, result: GenResult, prepared: PreparedRequest, output_ids: Sequence[int]) -> None:
        """Fill ``result`` in place: content in ``text``, calls in ``tool_calls``; or mark it invalid."""
        if self.error is not None:
            result.valid, result.parsed, result.error = False, None, self.error
            return
        try:
            result.text, result.tool_calls = self.split(result.text, prepared.request_hash,
                                                        prompt_ids=prepared.prompt_ids, output_ids=output_ids)
        except Exception as exc:  # a parser bug on odd output: keep the text, say why
            result.valid, result.parsed = False, None
            result.error = f"native tool calls: parsing failed: {type(exc).__name__}: {exc}"
