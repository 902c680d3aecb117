"""The batcher: one tick's pending requests answered from the cache, the rest sent to engines in batches.

Requests are grouped by the model that serves their role, identical ones (same cache key) are
generated once, and each model gets one call per tick: the whole group with ``max_batch`` as its
window when the engine refills its own batch (``Engine.rolling``), else ``max_batch`` chunks.
Every result is kept in the cache (and its generation row handed to the writer) the moment the
engine reports it final, through the ``ResultSink`` this module gives each call.

Batch composition is a function of the tick's requests in the order the driver lists them (its
episodes in admission order, each episode's requests in the order it asked) and, for follow-ups,
of the engine step in which each request ended: nothing here depends on timing, memory or thread
counts. vLLM's outputs are not batch-invariant (a request's
numbers can move in the last bits with its batch mates), so equal batches are what make two runs
of the same command agree.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from uxlocal.engine.base import GenResult, PreparedRequest
from uxlocal.engine.pool import ModelPool, ModelSlot
from uxlocal.episode import utcnow
from uxlocal.errors import UxlocalError
from uxlocal.grammar import constraint_key
from uxlocal.rollout.stats import RunStats
from uxlocal.store.generation_cache import GenerationCache


@dataclass
class Pending:
    """One request an episode waits on: the episode (the driver's), its place in the ask, the request."""

    episode: Any
    index: int
    prepared: PreparedRequest


Answer = Callable[[Pending, GenResult, bool], None]
"""The driver's receiver: ``(pending, result, cached)`` for each pending request as it is answered."""
FOLLOW_UPS_PER_CALL = 4096
"""Most requests one engine call takes in all (follow-ups included); then it drains and the tick ends,
so the cache's memory is trimmed between ticks (``GenerationCache.forget_committed``) however long a
run one engine call could otherwise be."""
Follow = Callable[[], list[Pending]]
"""The driver's: what its episodes asked since the last call (a following engine's next requests)."""


def decode_generation(values: dict[str, Any]) -> GenResult:
    """Return a stored generation row (``GenerationCache.lookup``) as the result it was."""
    top = values.get("top_logprobs")
    return GenResult(values["text"] or "", values["finish_reason"] or "stop",
                     prompt_tokens=values["prompt_tokens"] or 0,
                     completion_tokens=values["completion_tokens"] or 0,
                     latency_ms=values["latency_ms"] or 0.0, valid=bool(values["valid"]),
                     parsed=values["parsed"], error=values["error"], label_probs=values["label_probs"],
                     request_hash=values["request_hash"], model_identity=values["model_identity"],
                     tool_calls=values.get("tool_calls"),
                     top_logprobs=None if top is None
                     else [[(str(t), float(lp)) for t, lp in pos] for pos in top])


def generation_row(model_identity: str, prepared: PreparedRequest, result: GenResult) -> dict[str, Any]:
    """Return the ``generations`` row of a fresh result (the cache and the resume mechanism)."""
    request = prepared.request
    return {
        "request_hash": prepared.request_hash, "model_identity": model_identity, "lora": request.lora,
        "prompt": prepared.prompt, "sampling": {**request.sampling.key(), "seed": prepared.seed},
        "constraint_spec": constraint_key(request.constraint), "text": result.text, "parsed": result.parsed,
        "valid": result.valid, "error": result.error, "label_probs": result.label_probs,
        "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
        "latency_ms": result.latency_ms, "finish_reason": result.finish_reason, "created_at": utcnow(),
        "tools": list(request.tools) if request.tools else None,
        "tool_calls": result.tool_calls, "top_logprobs": result.top_logprobs}


class Batcher:
    """Answers a tick's pending requests: cache hits at once, one engine call per model for the rest."""

    def __init__(self, pool: ModelPool, cache: GenerationCache[GenResult], stats: RunStats, *,
                 max_batch: int) -> None:
        self.pool = pool
        self.cache = cache
        self.stats = stats
        self.max_batch = max_batch

    def serve(self, pending: list[Pending], answer: Answer, follow: Follow | None = None) -> None:
        """Answer every pending request through ``answer``: cached ones first, then each model's batch.

        ``follow`` (the driver's) lists the requests episodes asked since it was last called: an
        engine that follows up (``Engine.follow_ups``) takes those for its model into its running
        call; the others wait for the next tick.
        """
        by_slot: dict[str, list[Pending]] = {}
        for entry in self.answer_hits(pending, answer):
            by_slot.setdefault(self.pool.roles[entry.prepared.request.role], []).append(entry)
        for ident, entries in by_slot.items():
            self.call(self.pool.slots[ident], entries, answer, follow)

    def answer_hits(self, pending: list[Pending], answer: Answer) -> list[Pending]:
        """Answer what the cache holds (counting every request); return the misses in order."""
        hits = self.cache.lookup([p.prepared.request_hash for p in pending])
        misses = []
        for entry in pending:
            self.stats.requests += 1
            hit = hits.get(entry.prepared.request_hash)
            if hit is not None:
                self.stats.cache_hits += 1
                answer(entry, hit, True)
            else:
                misses.append(entry)
        return misses

    def call(self, slot: ModelSlot, entries: list[Pending], answer: Answer, follow: Follow | None) -> None:
        """Generate each distinct request once on ``slot``'s engine, answering its entries as it ends."""
        waiters: dict[str, list[Pending]] = {}
        for entry in entries:
            waiters.setdefault(entry.prepared.request_hash, []).append(entry)
        batch = [group[0].prepared for group in waiters.values()]
        engine = slot.engine
        self.check_abilities(slot, batch)
        step = max(1, len(batch)) if engine.rolling else self.max_batch
        window = self.max_batch if engine.rolling else None
        for start in range(0, len(batch), step):
            chunk = batch[start:start + step]
            sink = EngineCall(self, slot, chunk, waiters, answer, follow if engine.follow_ups else None)
            begun = time.perf_counter()
            outputs = engine.generate(chunk, sink=sink, window=window)
            self.stats.engine_busy_s += time.perf_counter() - begun
            self.stats.engine_calls += 1
            for index, result in enumerate(outputs):
                sink.done(index, result)  # a no-op for what the engine handed over already

    @staticmethod
    def check_abilities(slot: ModelSlot, batch: list[PreparedRequest]) -> None:
        """Stop the run when the engine lacks an ability a request needs.

        Every such request would fail alike.
        """
        for prepared in batch:
            reason = slot.engine.unable(prepared.request)
            if reason is not None:
                raise UxlocalError(f"model {slot.model.name} (backend {slot.model.backend}) cannot serve "
                                   f"role {prepared.request.role!r}: it lacks {reason}")

    def keep(self, slot: ModelSlot, prepared: PreparedRequest, result: GenResult) -> None:
        """Put a fresh result in the cache and hand its generation row to the writer, once per hash."""
        result.request_hash = prepared.request_hash
        result.model_identity = slot.model.identity
        if self.cache.keep(prepared.request_hash, result,
                           lambda: generation_row(slot.model.identity, prepared, result)):
            self.stats.completion_tokens += result.completion_tokens
            self.stats.prompt_tokens += result.prompt_tokens
            self.stats.generations += 1


class EngineCall:
    """The ``ResultSink`` of one engine call: keep and answer each result as it ends, feed follow-ups.

    A following engine gets the requests its episodes asked meanwhile (``more``). Every request goes
    into the cache (and its generation row to the writer) the moment the engine reports it final;
    the commit follows the store's policy (``flush_if_due``).
    """

    def __init__(self, batcher: Batcher, slot: ModelSlot, chunk: list[PreparedRequest],
                 waiters: dict[str, list[Pending]], answer: Answer, follow: Follow | None) -> None:
        self.batcher = batcher
        self.slot = slot
        self.requests: list[PreparedRequest | None] = list(chunk)
        """The call's requests by the index the engine reports (chunk, then follow-ups); None once done."""
        self.waiters = waiters
        self.answer = answer
        self.follow = follow

    def done(self, index: int, result: GenResult) -> None:
        """Cache and store the generation, answer its waiters once; commit if ``flush_every_s`` has passed."""
        prepared = self.requests[index]
        if prepared is None:  # kept and answered already (the batcher hands back what generate returns)
            return
        self.requests[index] = None  # its episode has it now: a long call's memory stays flat
        self.batcher.keep(self.slot, prepared, result)
        for entry in self.waiters.pop(prepared.request_hash, []):
            self.answer(entry, result, False)
        self.batcher.cache.flush_if_due()

    def busy(self) -> None:
        """Commit what finished earlier if it has waited ``flush_every_s`` (no result since)."""
        self.batcher.cache.flush_if_due()

    def more(self) -> list[PreparedRequest]:
        """Return the new requests for this model.

        Cached ones are answered here, one already in flight gets one more waiter, another model's
        wait for the next tick.
        """
        taken: list[PreparedRequest] = []
        if len(self.requests) >= FOLLOW_UPS_PER_CALL:  # the call drains; the next tick starts fresh
            self.follow = None
        while self.follow is not None and (fresh := self.follow()):
            mine = [entry for entry in fresh if self.batcher.pool.roles[entry.prepared.request.role]
                    == self.slot.model.identity]
            for entry in self.batcher.answer_hits(mine, self.answer):  # answers may ask again: loop
                request = entry.prepared
                if request.request_hash in self.waiters:
                    self.waiters[request.request_hash].append(entry)
                    continue
                self.batcher.check_abilities(self.slot, [request])
                self.waiters[request.request_hash] = [entry]
                self.requests.append(request)
                taken.append(request)
        return taken
