"""One request in vLLM's terms and back: the inputs of a ``PreparedRequest``, the result of its output.

The vLLM backend (``vllm.py``) and its step loop (``vllm_stream.py``) share this translation; we
pass token ids, not chats, so the prompt vLLM sees is exactly the one we hashed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from uxlocal.engine.base import GenResult, PreparedRequest
from uxlocal.engine.labelprobs import (
    WALK_ROUNDS,
    LabelWalk,
    TrieNode,
    expand,
    expand_on_path,
    max_label_tokens,
    start_walk,
)
from uxlocal.engine.render import HfChatRenderer
from uxlocal.engine.tool_calls import ToolCallParse
from uxlocal.errors import UxlocalError
from uxlocal.grammar import Choice, JsonSchema, Regex, outlines_schema, parse_output
from uxlocal.models import ResolvedModel

TOP_LOGPROBS = 20
"""Top-k logprobs requested for label walks; a Choice has few valid first tokens."""
READ_LOGPROBS = 64
"""Logprobs of one off-path label read (the engine's ``max_logprobs``)."""


def probs(position: Any) -> dict[int, float]:
    """VLLM's ``{token_id: Logprob}`` at one position as plain probabilities."""
    return {int(tid): math.exp(lp.logprob) for tid, lp in position.items() if lp.logprob > -1e30}


def _top(position: Any, k: int) -> list[tuple[str, float]]:
    """Return the ``k`` best (token text, log-probability) pairs of one position, best first.

    vLLM adds the sampled token to the top ``k`` when it ranks lower; OpenAI's ``top_logprobs``
    (what upstream harnesses read) holds the top ``k`` only, so that one is left out.
    """
    ranked = sorted(position.values(), key=lambda lp: lp.rank if lp.rank is not None else 1 << 30)
    return [(str(lp.decoded_token or ""), float(lp.logprob)) for lp in ranked[:k]]


@dataclass
class PendingWalk:
    """A Choice result waiting for its label walk; ``waiting`` counts off-path reads in flight."""

    result: GenResult
    walk: LabelWalk
    path: list[int]
    logprobs: Any
    rounds: int = 0
    waiting: int = 0

    def round(self, token_bytes: list[bytes], eos_ids: set[int]) -> list[TrieNode]:
        """Expand pending nodes on the generated path (free); return the ones that need a read."""
        while self.walk.pending and self.rounds < WALK_ROUNDS:
            self.rounds += 1
            off = expand_on_path(self.walk, self.path, self.logprobs, token_bytes, eos_ids, as_dist=probs)
            if off:
                return off
        return []


@dataclass(eq=False)
class VllmRequests:
    """Translates one model's requests into vLLM inputs and vLLM's outputs into results.

    ``loras`` is the engine's own adapter table (adapters added later are seen here);
    ``tokenizer`` returns vLLM's tokenizer, asked only for native tool calls (``tool_parser``).
    """

    model: ResolvedModel
    renderer: HfChatRenderer
    grammar: str
    loras: dict[str, str]
    tool_parser: str | None = field(kw_only=True)
    tokenizer: Callable[[], Any] = field(kw_only=True)
    _lora_ids: dict[str, int] = field(default_factory=dict, init=False)
    """Adapter name -> the id vLLM knows it by (fixed once given)."""

    def inputs(self, prepared: PreparedRequest) -> tuple[Any, Any, Any]:
        """Return the request's (prompt, sampling parameters, LoRA request) for ``LLM.enqueue``."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        sampling = prepared.sampling
        room = self.model.max_model_len - len(prepared.prompt_ids)
        max_tokens = max(1, min(sampling.max_tokens, room))
        kwargs: dict[str, Any] = {
            "temperature": sampling.temperature, "top_p": sampling.top_p, "max_tokens": max_tokens,
            "seed": prepared.seed if sampling.temperature > 0 else None, "stop": list(sampling.stop) or None,
        }
        constraint = prepared.request.constraint
        if constraint is not None:
            kwargs["structured_outputs"] = self.structured(constraint, self.grammar)
            if isinstance(constraint, Choice):
                kwargs["max_tokens"] = max(1, min(max_tokens, max_label_tokens(constraint.labels)))
                kwargs["logprobs"] = max(TOP_LOGPROBS, sampling.logprobs)
        if sampling.logprobs and "logprobs" not in kwargs:
            kwargs["logprobs"] = sampling.logprobs
        if self.tool_parser and prepared.request.tools:  # as `vllm serve --tool-call-parser` does
            prepared.extra["tool_parse"] = ToolCallParse.start(self.tokenizer(), self.tool_parser,
                                                               prepared.request)
            kwargs.update(prepared.extra["tool_parse"].sampling_overrides())
        prompt = TokensPrompt(prompt_token_ids=prepared.prompt_ids)
        return prompt, SamplingParams(**kwargs), self.lora(prepared)

    def label_reads(self, prepared: PreparedRequest, nodes: list[TrieNode]) -> tuple[list[Any], Any, Any]:
        """Return one-token greedy reads of the next-token distribution after each node's prefix."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        prompts = [TokensPrompt(prompt_token_ids=prepared.prompt_ids + list(node.prefix_ids))
                   for node in nodes]
        params = SamplingParams(temperature=0.0, max_tokens=1, logprobs=READ_LOGPROBS)
        return prompts, params, self.lora(prepared)

    @staticmethod
    def structured(constraint: Any, grammar: str) -> Any:
        """Return vLLM's structured-output request; for outlines, integer bounds become enums."""
        from vllm.sampling_params import StructuredOutputsParams

        if isinstance(constraint, Choice):
            return StructuredOutputsParams(choice=list(constraint.labels))
        if isinstance(constraint, JsonSchema):
            schema = outlines_schema(constraint.schema) if grammar == "outlines" else constraint.schema
            return StructuredOutputsParams(json=schema)
        if isinstance(constraint, Regex):
            return StructuredOutputsParams(regex=constraint.pattern)
        raise TypeError(f"unknown constraint {constraint!r}")

    def lora(self, prepared: PreparedRequest) -> Any:
        """Return the request's ``LoRARequest`` (None for the base model); ids stay fixed per adapter name."""
        name = prepared.request.lora
        if not name:
            return None
        from vllm.lora.request import LoRARequest

        if name not in self.loras:
            raise UxlocalError(f"model {self.model.name} has no LoRA adapter named {name!r}")
        lora_id = self._lora_ids.setdefault(name, len(self._lora_ids) + 1)
        return LoRARequest(name, lora_id, self.loras[name])

    def result(self, prepared: PreparedRequest, out: Any) -> tuple[GenResult, PendingWalk | None]:
        """Return the request's result, and the label walk still to finish for a Choice request."""
        completion = out.outputs[0]
        finish = completion.finish_reason or "stop"
        if finish == "abort":
            finish = "error"
        parsed = parse_output(prepared.request.constraint, completion.text, finish)
        result = GenResult(completion.text, finish, prompt_tokens=len(prepared.prompt_ids),
                           completion_tokens=len(completion.token_ids), valid=parsed.valid,
                           parsed=parsed.value, error=parsed.error)
        if "tool_parse" in prepared.extra:
            prepared.extra["tool_parse"].finish(result, prepared, completion.token_ids)
        if prepared.sampling.logprobs and completion.logprobs:
            asked = prepared.sampling.logprobs
            result.top_logprobs = [_top(position, asked) for position in completion.logprobs]
        constraint = prepared.request.constraint
        if isinstance(constraint, Choice) and completion.logprobs:
            walk, root = start_walk(constraint.labels)
            expand(walk, root, probs(completion.logprobs[0]), self.renderer.token_bytes(),
                   self.renderer.eos_ids, masked=True)
            return result, PendingWalk(result, walk, list(completion.token_ids), completion.logprobs)
        return result, None
