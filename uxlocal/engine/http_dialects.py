"""What an OpenAI-compatible server understands: request bodies, answers, label walks.

``OpenAIDialect`` is the portable one (SGLang, llama.cpp, any OpenAI-compatible gateway):
constraints go as ``response_format`` JSON schemas (a Choice becomes a string enum, so its answer
comes quoted and is unquoted before parsing; a Regex has no portable form and goes unconstrained,
then parsed), and label probabilities come from the returned alternatives alone.
``http_vllm.VllmDialect`` adds vLLM's extras. ``HttpEngine`` picks one when it learns who serves
the model, and no method asks which one it has.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any

from uxlocal.engine.base import GenResult, PreparedRequest
from uxlocal.engine.http_transport import CONFIG_STATUSES, FinalError, Finished, OpenAITransport
from uxlocal.engine.labelprobs import TrieNode, max_label_tokens, walk_alternatives
from uxlocal.errors import UxlocalError
from uxlocal.grammar import Choice, JsonSchema, parse_output

log = logging.getLogger(__name__)
_CONTEXT_ERROR = re.compile(r"context (length|size|window)|maximum context|too long", re.IGNORECASE)
Member = tuple[int, PreparedRequest]
OnDone = Callable[[Finished], None] | None
AskOne = Callable[[PreparedRequest, int, OnDone], Awaitable[GenResult]]
"""The engine's one-request path: (request, its index in the batch, who hears of the result)."""
_FINISH = {"stop": "stop", "length": "length", "tool_calls": "stop", None: "stop"}


class OpenAIDialect:
    """Chat requests with ``response_format`` constraints; answers parsed the same way for all."""

    name = "response_format"
    label_quote = '"'
    """What precedes a label in the answer: a JSON string enum's opening quote."""
    masked = False
    """Whether the server's logprobs come after the grammar mask (so off-path mass is not in them)."""

    def __init__(self, transport: OpenAITransport, served_model: str, *, top_logprobs: int,
                 renderer: Any, api_key_env: str, window: int | None = None) -> None:
        self.transport = transport
        self.max_model_len = window
        """The model's window as the preset gives it: a ``max_tokens`` at or above it is no cap at all,
        so none is sent (the server then allows what the window leaves, as a harness that sends no
        ``max_tokens`` gets: tau2's upstream protocol asks for no cap)."""
        self.served_model = served_model
        self.top_logprobs = top_logprobs
        self.renderer = renderer
        self.api_key_env = api_key_env

    # ---- requests -----------------------------------------------------------------------
    def payload(self, prepared: PreparedRequest) -> dict[str, Any]:
        """Return the ``/chat/completions`` body of one request."""
        request, sampling = prepared.request, prepared.sampling
        body: dict[str, Any] = {
            "model": request.lora or self.served_model, "messages": [dict(m) for m in request.messages],
            "max_tokens": sampling.max_tokens, "temperature": sampling.temperature, "top_p": sampling.top_p}
        if self.max_model_len is not None and sampling.max_tokens >= self.max_model_len:
            del body["max_tokens"]
        if prepared.seed is not None:  # a sampled request's, or one the request names (tau2's trial seed)
            body["seed"] = prepared.seed
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if request.tools:
            body["tools"] = [dict(tool) for tool in request.tools]
        if request.tool_choice is not None:
            body["tool_choice"] = request.tool_choice
        if sampling.logprobs:
            body.update(logprobs=True, top_logprobs=sampling.logprobs)
        constraint = request.constraint
        if constraint is None:
            return body
        if isinstance(constraint, Choice):
            extra = len(self.label_quote) * 2
            body["max_tokens"] = max(1, min(sampling.max_tokens, max_label_tokens(constraint.labels) + extra))
            body.update(logprobs=True, top_logprobs=self.top_logprobs, **self.label_fields())
        body.update(self.constraint_fields(constraint))
        return body

    def label_fields(self) -> dict[str, Any]:
        """Extra body fields of a label request (none here)."""
        return {}

    def constraint_fields(self, constraint: Any) -> dict[str, Any]:
        """Return the body fields that carry ``constraint``."""
        if isinstance(constraint, Choice):
            schema: dict[str, Any] = {"type": "string", "enum": list(constraint.labels)}
        elif isinstance(constraint, JsonSchema):
            schema = constraint.schema
        else:
            return {}  # no portable regex constraint: generate freely, the parser judges
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "output", "schema": schema}}}

    # ---- answers ------------------------------------------------------------------------
    def answer_text(self, prepared: PreparedRequest, text: str) -> str:
        """Return the answer's text as the parser should see it: a label's JSON quotes taken off."""
        return _unquote(text) if isinstance(prepared.request.constraint, Choice) else text

    def result(self, prepared: PreparedRequest, body: dict[str, Any]) -> GenResult:
        """One chat answer as a ``GenResult`` (label probabilities come after, ``label_probs``)."""
        choices = body.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        message = choice.get("message") or {}
        usage = body.get("usage") or {}
        result = parsed_result(prepared, self.answer_text(prepared, str(message.get("content") or "")),
                               choice.get("finish_reason"),
                               int(usage.get("prompt_tokens") or len(prepared.prompt_ids)),
                               int(usage.get("completion_tokens") or 0))
        calls = message.get("tool_calls")
        if calls:
            result.tool_calls = [_tool_call(call) for call in calls]
        if prepared.sampling.logprobs:
            content = (choice.get("logprobs") or {}).get("content") or []
            result.top_logprobs = [[(str(alt.get("token", "")), float(alt.get("logprob", float("-inf"))))
                                    for alt in position.get("top_logprobs") or []] for position in content]
        return result

    def final_error(self, model_name: str, prepared: PreparedRequest, exc: FinalError) -> GenResult:
        """Return a 4xx as this request's invalid result; 401/403/404 (configuration) stop the run."""
        if exc.status in CONFIG_STATUSES:
            raise UxlocalError(f"model {model_name}: {exc} (check the served model name "
                               f"{self.served_model!r}, the URL and {self.api_key_env})") from None
        if _CONTEXT_ERROR.search(exc.message):
            return GenResult("", "context_window", prompt_tokens=len(prepared.prompt_ids), valid=False,
                             error=f"prompt exceeds the server's context window: {exc.message[:300]}")
        return GenResult("", "error", prompt_tokens=len(prepared.prompt_ids), valid=False,
                         error=str(exc)[:500])

    # ---- batches ------------------------------------------------------------------------
    def groups(self, batch: list[PreparedRequest], size: int) -> list[list[int]]:
        """Return the indices sent together: here each request alone (no portable list form)."""
        return [[i] for i in range(len(batch))]

    async def group(self, members: list[Member], on_done: OnDone,
                    ask_one: AskOne) -> list[tuple[int, GenResult]]:
        """Return several requests' results; without a list form, each asked alone."""
        return await each_alone(members, on_done, ask_one)

    # ---- label probabilities ------------------------------------------------------------
    async def label_probs(self, prepared: PreparedRequest, labels: tuple[str, ...],
                          content: list[dict[str, Any]]) -> dict[str, float] | None:
        """Label distribution from the per-position alternatives (``labelprobs.walk_alternatives``)."""
        quote = self.label_quote

        async def read_next(node: TrieNode) -> dict[int, float] | None:
            return await self.next_token(prepared, node)

        probs = await walk_alternatives(tuple(quote + label for label in labels), content, self.renderer,
                                        masked=self.masked, read_next=read_next)
        return None if probs is None else {label: probs[quote + label] for label in labels}

    async def next_token(self, prepared: PreparedRequest, node: TrieNode) -> dict[int, float] | None:
        """Return unconstrained next-token alternatives after the prompt plus ``node``'s tokens.

        None here: the walk shares an off-path node's mass among its labels (no portable way to ask).
        """
        return None


async def each_alone(members: list[Member], on_done: OnDone, ask_one: AskOne) -> list[tuple[int, GenResult]]:
    """Ask each member alone (``ask_one`` hands each result to ``on_done`` as it comes back)."""
    results = await asyncio.gather(*(ask_one(p, i, on_done) for i, p in members))
    return [(i, r) for (i, _), r in zip(members, results, strict=True)]


def parsed_result(prepared: PreparedRequest, text: str, finish_reason: Any, prompt_tokens: int,
                  completion_tokens: int) -> GenResult:
    """Return the result of one answer's text (chat or completions), parsed against its constraint."""
    finish = _FINISH.get(finish_reason, "error")
    parsed = parse_output(prepared.request.constraint, text, finish)
    return GenResult(text, finish, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                     valid=parsed.valid, parsed=parsed.value, error=parsed.error)


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    """Return a server's tool call in our shape (``GenResult.tool_calls``): id, type, name, arguments text."""
    function = call.get("function") or {}
    return {"id": str(call.get("id") or ""), "type": "function",
            "function": {"name": str(function.get("name") or ""),
                         "arguments": str(function.get("arguments") or "")}}


def _unquote(text: str) -> str:
    """Return a JSON string (``"good"``) as its value; anything else unchanged."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, str) else text
