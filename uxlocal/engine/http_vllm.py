"""vLLM's dialect of the OpenAI API: structured outputs, token-id prompts, exact label walks.

Chosen when ``/models`` says ``owned_by: vllm`` (or the preset says ``structured = "vllm"``):

- constraints go as ``structured_outputs`` (``choice`` / ``json`` / ``regex``), so a label comes
  unquoted and its logprobs come after the grammar mask;
- with a local tokenizer, label requests ask for ``token_id:N`` tokens (exact bytes), and an
  off-path trie node is expanded with one ``/completions`` call on the prompt's token ids: the
  in-process computation, so results agree within numerical noise;
- with ``batch_prompts`` > 1, label requests that share model, labels and sampling go as one
  ``/completions`` request with a list of token-id prompts (one choice per prompt, ``index``).
  vLLM refuses the whole list for one bad prompt, so a refused list is asked again one request
  per prompt: only the bad one ends invalid.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from uxlocal.engine.base import GenResult, PreparedRequest
from uxlocal.engine.http_dialects import AskOne, Member, OnDone, OpenAIDialect, each_alone, parsed_result
from uxlocal.engine.http_transport import FinalError
from uxlocal.engine.labelprobs import TrieNode, content_of_completion, dist_of_token_ids, max_label_tokens
from uxlocal.grammar import Choice, JsonSchema

log = logging.getLogger(__name__)


class VllmDialect(OpenAIDialect):
    """``OpenAIDialect`` with vLLM's ``structured_outputs``, token-id prompts and label batches."""

    name = "vllm"
    label_quote = ""
    masked = True

    def label_fields(self) -> dict[str, Any]:
        """Token ids as token texts, when we hold the tokenizer to read their exact bytes."""
        return {"return_tokens_as_token_ids": True} if self.renderer.has_tokenizer else {}

    def constraint_fields(self, constraint: Any) -> dict[str, Any]:
        """``structured_outputs`` for every constraint kind (regex included)."""
        if isinstance(constraint, Choice):
            return {"structured_outputs": {"choice": list(constraint.labels)}}
        if isinstance(constraint, JsonSchema):
            return {"structured_outputs": {"json": constraint.schema}}
        return {"structured_outputs": {"regex": constraint.pattern}}

    def answer_text(self, prepared: PreparedRequest, text: str) -> str:
        """Return the text as generated (labels come unquoted)."""
        return text

    async def next_token(self, prepared: PreparedRequest, node: TrieNode) -> dict[int, float] | None:
        """Unconstrained next-token alternatives after the prompt's ids plus ``node``'s (``/completions``)."""
        if not prepared.prompt_ids:
            return None
        payload = {"model": prepared.request.lora or self.served_model, "max_tokens": 1, "temperature": 0.0,
                   "prompt": list(prepared.prompt_ids) + list(node.prefix_ids),
                   "logprobs": self.top_logprobs, "return_tokens_as_token_ids": True}
        try:
            body = await self.transport.post("/completions", payload)
        except FinalError as exc:
            log.info("off-path label expansion refused (%s); using the proportional estimate", exc)
            return None
        logprobs = (body.get("choices") or [{}])[0].get("logprobs") or {}
        return dist_of_token_ids((logprobs.get("top_logprobs") or [None])[0] or {})

    # ---- label batches ------------------------------------------------------------------
    def groups(self, batch: list[PreparedRequest], size: int) -> list[list[int]]:
        """Return the indices sent together, a group per ``/completions`` request.

        Label requests with the same model, labels and sampling go up to ``size`` a group, when we
        can send their token ids; every other request alone.
        """
        if size <= 1 or not self.renderer.has_tokenizer:
            return [[i] for i in range(len(batch))]
        groups: list[list[int]] = []
        open_groups: dict[tuple[Any, ...], list[int]] = {}
        for i, prepared in enumerate(batch):
            key = batch_key(prepared)
            if key is None:
                groups.append([i])
                continue
            group = open_groups.get(key)
            if group is None or len(group) >= size:
                group = open_groups[key] = []
                groups.append(group)
            group.append(i)
        return groups

    async def group(self, members: list[Member], on_done: OnDone,
                    ask_one: AskOne) -> list[tuple[int, GenResult]]:
        """Label requests as one ``/completions`` request; their results to ``on_done`` together.

        vLLM refuses the whole list for one bad prompt (too long, say): then each is asked alone
        (``ask_one``), so the bad one gets its own invalid result and the others their answers.
        """
        started = time.perf_counter()
        try:
            body = await self.transport.post("/completions", self.group_payload([p for _, p in members]))
        except FinalError as exc:
            log.info("a batch of %d label requests was refused (%s); asking each alone", len(members), exc)
            return await each_alone(members, on_done, ask_one)
        choices = {c.get("index"): c for c in body.get("choices") or [] if isinstance(c, dict)}
        if set(choices) != set(range(len(members))):
            log.warning("%s answered %d choices for %d prompts; asking each alone", self.served_model,
                        len(choices), len(members))
            return await each_alone(members, on_done, ask_one)
        labels = members[0][1].request.constraint.labels  # type: ignore[union-attr]
        out = []
        for k, (index, prepared) in enumerate(members):
            choice = choices[k]
            content = content_of_completion(choice.get("logprobs") or {})
            result = parsed_result(prepared, str(choice.get("text") or ""), choice.get("finish_reason"),
                                   len(prepared.prompt_ids), len(content))
            result.label_probs = await self.label_probs(prepared, labels, content)
            result.latency_ms = (time.perf_counter() - started) * 1000
            out.append((index, result))
        if on_done is not None:
            on_done(out)
        return out

    def group_payload(self, group: list[PreparedRequest]) -> dict[str, Any]:
        """One ``/completions`` body for a group's token-id prompts."""
        request, sampling = group[0].request, group[0].sampling
        labels = request.constraint.labels  # type: ignore[union-attr]
        body: dict[str, Any] = {
            "model": request.lora or self.served_model, "prompt": [list(p.prompt_ids) for p in group],
            "max_tokens": max(1, min(sampling.max_tokens, max_label_tokens(labels))),
            "temperature": sampling.temperature, "top_p": sampling.top_p, "logprobs": self.top_logprobs,
            "return_tokens_as_token_ids": True, "structured_outputs": {"choice": list(labels)}}
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        return body


def batch_key(prepared: PreparedRequest) -> tuple[Any, ...] | None:
    """Return what label requests must share to go in one ``/completions`` request.

    None: send it alone (not a label request, or a sampled one with its own seed).
    """
    request, sampling = prepared.request, prepared.sampling
    if not isinstance(request.constraint, Choice):
        return None
    if sampling.temperature > 0 and prepared.seed is not None:
        return None
    return (request.lora, request.constraint.labels, sampling.max_tokens, sampling.temperature,
            sampling.top_p, tuple(sampling.stop or ()))
