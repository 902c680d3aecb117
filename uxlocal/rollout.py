"""The scheduler: runs episode programs (``episode.py``) in batches, with the cache and the store.

The scheduler advances every live episode until each waits on a generation, answers
what it can from the cache, sends the rest to each model's engine in one batched call per tick,
and streams rows to the store as episodes progress.

Resume: an episode row is written when the episode ends, in the same transaction as its last
rows. On restart, rows of episodes without a ``done`` row are deleted and those episodes run
again from the start; their earlier generations come back from the cache, so the rerun costs no
engine time and produces the same rows.

Generations are saved earlier than episodes: engines hand each result to the scheduler as soon
as it is final (``ResultSink``), the scheduler puts it in the cache and the writer at once, and
commits the writer at least every ``flush_every_s`` seconds, also in the middle of a tick and of
an engine call. A single-step suite is one tick of up to ``max_live`` episodes (minutes to hours
of engine time); a crash inside it loses at most the last ``flush_every_s`` seconds of finished
generations plus the requests still running, and the rerun answers the rest from the cache.
Only callbacks between engine steps do this, so the batches the engine sees stay as large as before.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
import sys
import time
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from uxlocal.engine.base import Engine, GenRequest, GenResult, PreparedRequest, request_hash
from uxlocal.engine.pool import ModelPool, ModelSlot
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome, Program, utcnow
from uxlocal.grammar import constraint_key
from uxlocal.progress import Progress
from uxlocal.store.db import json_value
from uxlocal.store.writer import StoreWriter

log = logging.getLogger(__name__)


@dataclass
class RunStats:
    """Counters of one scheduler run (this attempt only)."""

    episodes_total: int = 0
    episodes_done: int = 0
    episodes_failed: int = 0
    episodes_skipped: int = 0
    engine_calls: int = 0
    requests: int = 0
    cache_hits: int = 0
    completion_tokens: int = 0
    wall_s: float = 0.0
    engine_busy_s: float = 0.0
    failures: list[str] = field(default_factory=list)

    @property
    def busy_fraction(self) -> float:
        """Share of wall time spent inside engines."""
        return self.engine_busy_s / self.wall_s if self.wall_s > 0 else 0.0


@dataclass
class _Live:
    spec: EpisodeSpec
    ctx: EpisodeContext
    gen: Program
    seq: int = 0
    waiting: list[PreparedRequest] = field(default_factory=list)
    answers: dict[int, GenResult] = field(default_factory=dict)
    single: bool = True


class Cache:
    """Request hash -> result: this process's results plus the store's ``generations`` table."""

    def __init__(self, writer: StoreWriter | None) -> None:
        self.writer = writer
        self.memory: dict[str, GenResult] = {}

    def lookup(self, hashes: list[str]) -> dict[str, GenResult]:
        """Results for the hashes we have; one store query for those the store may hold (a scan
        of the table, so a tick of new requests, the usual case, asks nothing)."""
        found = {h: self.memory[h] for h in hashes if h in self.memory}
        missing = [h for h in dict.fromkeys(hashes) if h not in found]
        if self.writer is None:  # no store: the memory is the whole cache
            return found
        missing = [h for h in missing if self.writer.known.may_contain(h)] if missing else []
        if missing:
            rows = self.writer.con.execute(
                "SELECT request_hash, text, finish_reason, prompt_tokens, completion_tokens, latency_ms, "
                "valid, parsed, error, label_probs, model_identity FROM generations "
                "WHERE request_hash IN (SELECT unnest(?))", [missing]).fetchall()
            for row in rows:
                result = GenResult(row[1] or "", row[2] or "stop", prompt_tokens=row[3] or 0,
                                   completion_tokens=row[4] or 0, latency_ms=row[5] or 0.0,
                                   valid=bool(row[6]), parsed=json_value(row[7]), error=row[8],
                                   label_probs=json_value(row[9]), request_hash=row[0], model_identity=row[10])
                self.memory[row[0]] = result
                found[row[0]] = result
        return found



MEMORY_RESULTS = 50_000
"""Results the scheduler keeps in memory before it commits them and forgets them (the store answers
for them after that): a million-verdict job holds at most this many, not all of them."""

COMMIT_GAP_S = 0.25
"""Shortest gap between two early commits (made because the writer was idle): bounds commits to
four a second however fast generations finish."""


class Scheduler:
    """Advances episodes and batches their generation requests per model."""

    def __init__(self, pool: ModelPool, *, run_id: str = "adhoc", writer: StoreWriter | None = None,
                 seed: int = 0, max_live: int = 512, max_batch: int = 256, progress: bool = False,
                 description: str = "episodes", flush_every_s: float | None = None) -> None:
        import os

        self.pool = pool
        self.flush_every_s = float(os.environ.get("UXLOCAL_FLUSH_EVERY_S", "2.0")) if flush_every_s is None \
            else flush_every_s
        """Commit buffered rows at least this often (seconds), so a crash loses little work; 0 commits
        synchronously after every tick (slower, but nothing in flight is ever lost)."""
        self.run_id = run_id
        self.writer = writer
        self.seed = seed
        self.max_live = max_live
        self.max_batch = max_batch
        self.progress = progress
        self.description = description
        self.cache = Cache(writer)
        self.stats = RunStats()
        self._saved: set[str] = set()
        """Hashes of the generations this scheduler has handed to the writer (each goes once)."""
        self._last_flush = time.perf_counter()

    # ---- public -------------------------------------------------------------------------
    def run(self, episodes: Iterable[EpisodeSpec], *, total: int | None = None) -> RunStats:
        """Run every episode to completion; returns this attempt's counters."""
        started = time.perf_counter()
        queue: Iterator[EpisodeSpec] = iter(episodes)
        live: dict[str, _Live] = {}
        self.stats.episodes_total = total or 0
        with Progress(self.progress, total, self.description) as bar:
            self._fill(queue, live)
            self._last_flush = time.perf_counter()
            while live:
                self._tick(live)
                self._fill(queue, live)
                bar.update(self.stats.episodes_done + self.stats.episodes_failed, self.stats.requests,
                           self.stats.completion_tokens, time.perf_counter() - started)
                self.flush_if_due()
                self._forget_committed()
        if self.writer is not None:
            self.writer.flush()
        self.stats.wall_s = time.perf_counter() - started
        return self.stats

    def flush_if_due(self) -> None:
        """Commit buffered rows at least every ``flush_every_s``, and sooner when the writer is idle.

        The early commit (a group commit, at most every ``COMMIT_GAP_S``) means a crash usually
        loses well under ``flush_every_s``, while a busy writer still gets bigger, rarer batches.

        Called after every tick and, through ``_SaveAsFinished``, after every finished generation
        and every engine heartbeat. Never called between an episode's last rows and its episode
        row (those are added together at tick end), so the episode rule holds.
        """
        if self.writer is None:
            return
        waited = time.perf_counter() - self._last_flush
        if waited < self.flush_every_s and not (waited >= COMMIT_GAP_S and self.writer.pending
                                                and self.writer.idle):
            return
        self.writer.flush(wait=self.flush_every_s == 0)
        self._last_flush = time.perf_counter()

    def _forget_committed(self) -> None:
        """Past ``MEMORY_RESULTS`` results in memory: commit them all, then let the store answer for them.

        Only between ticks (no engine call is running, so no result is half handed over); without a
        store the memory is the only cache and is kept whole.
        """
        if self.writer is None or len(self.cache.memory) < MEMORY_RESULTS:
            return
        self.writer.flush(wait=True)
        self._last_flush = time.perf_counter()
        self.cache.memory.clear()
        self._saved.clear()  # a committed hash cannot come back as a miss: the store's cache has it

    # ---- episode lifecycle ----------------------------------------------------------------
    def _fill(self, queue: Iterator[EpisodeSpec], live: dict[str, _Live]) -> None:
        while len(live) < self.max_live:
            spec = next(queue, None)
            if spec is None:
                return
            ctx = EpisodeContext(self.run_id, spec)
            ctx.models = {role: self.pool.slots[ident].model.name for role, ident in self.pool.roles.items()}
            episode = _Live(spec, ctx, spec.program(ctx))
            live[spec.episode_id] = episode
            self._advance(episode, None, live)

    def _advance(self, episode: _Live, value: Any, live: dict[str, _Live]) -> None:
        """Send ``value`` into the program and queue what it asks for next (or finish it)."""
        try:
            ask = episode.gen.send(value)
        except StopIteration as stop:
            self._finish(episode, stop.value if isinstance(stop.value, Outcome) else Outcome(), live)
            return
        except Exception as exc:  # an episode bug must not sink the other episodes
            self._fail(episode, exc, live)
            return
        episode.single = not isinstance(ask, list)
        requests = [ask] if episode.single else list(ask)
        if not requests or not all(isinstance(r, GenRequest) for r in requests):
            self._fail(episode, TypeError(f"episode yielded {ask!r}; expected GenRequest(s)"), live)
            return
        try:
            episode.waiting = [self._prepare(episode, r) for r in requests]
        except Exception as exc:
            self._fail(episode, exc, live)
            return
        episode.answers = {}

    def _prepare(self, episode: _Live, request: GenRequest) -> PreparedRequest:
        slot = self.pool.slot(request.role)
        renderer = slot.renderer
        if getattr(renderer, "ids_in_engine", False):  # the engine tokenizes in groups (openai-http)
            prompt, ids = renderer.render_key(list(request.messages))
        else:
            prompt, ids = renderer.render(list(request.messages))
        seq = episode.seq
        episode.seq += 1
        seed = request.sampling.seed
        if seed is None and request.sampling.temperature > 0:
            digest = hashlib.sha256(f"{self.seed}:{episode.spec.episode_id}:{seq}".encode()).hexdigest()
            seed = int(digest[:8], 16)
        sampling = request.sampling if seed == request.sampling.seed else _with_seed(request.sampling, seed)
        # an identified adapter is keyed by its weights, else by its folder
        lora_id = None
        if request.lora:
            lora_id = slot.model.lora_ids.get(request.lora) or slot.model.lora.get(request.lora)
        key = request_hash(slot.model.identity, prompt, sampling, request.constraint, request.lora, lora_id)
        return PreparedRequest(request, prompt, ids, key, seed=seed, extra={"seq": seq})

    def _finish(self, episode: _Live, outcome: Outcome, live: dict[str, _Live]) -> None:
        ctx = episode.ctx
        self._drain(ctx)
        self._write("episodes", {
            "run_id": self.run_id, "episode_id": ctx.episode_id, "item_id": episode.spec.item_id,
            "task": episode.spec.task, "trial": episode.spec.trial, "status": "done",
            "termination": outcome.termination, "reward": outcome.reward, "info": outcome.info,
            "n_turns": ctx.n_turns, "started_at": ctx.started_at, "ended_at": utcnow()})
        self.stats.episodes_done += 1
        live.pop(ctx.episode_id, None)

    def _fail(self, episode: _Live, exc: Exception, live: dict[str, _Live]) -> None:
        text = "".join(traceback.format_exception(exc))
        if not self.stats.failures:
            print(f"episode {episode.spec.episode_id} failed:\n{text}", file=sys.stderr)
        self.stats.failures.append(f"{episode.spec.episode_id}: {type(exc).__name__}: {exc}")
        ctx = episode.ctx
        ctx.rows.clear()  # partial rows of a failed episode are not results
        self._write("episodes", {
            "run_id": self.run_id, "episode_id": ctx.episode_id, "item_id": episode.spec.item_id,
            "task": episode.spec.task, "trial": episode.spec.trial, "status": "failed",
            "termination": "error", "reward": None, "info": {"error": text[-4000:]},
            "n_turns": 0, "started_at": ctx.started_at, "ended_at": utcnow()})
        self.stats.episodes_failed += 1
        live.pop(ctx.episode_id, None)

    # ---- one tick -------------------------------------------------------------------------
    def _tick(self, live: dict[str, _Live]) -> None:
        """Answer from the cache what we can, then one engine call per model for the rest."""
        pending = [(ep, i, p) for ep in list(live.values()) for i, p in enumerate(ep.waiting) if i not in ep.answers]
        hits = self.cache.lookup([p.request_hash for _, _, p in pending])
        by_slot: dict[str, list[tuple[_Live, int, PreparedRequest]]] = {}
        for ep, i, prepared in pending:
            self.stats.requests += 1
            if prepared.request_hash in hits:
                self.stats.cache_hits += 1
                self._answer(ep, i, prepared, hits[prepared.request_hash], cached=True)
            else:
                by_slot.setdefault(self.pool.roles[prepared.request.role], []).append((ep, i, prepared))
        for ident, entries in by_slot.items():
            self._generate(self.pool.slots[ident], entries)
        for ep in list(live.values()):
            if ep.waiting and len(ep.answers) == len(ep.waiting):
                results = [ep.answers[i] for i in range(len(ep.waiting))]
                ep.waiting = []
                self._drain(ep.ctx)
                self._advance(ep, results[0] if ep.single else results, live)

    def _generate(self, slot: ModelSlot, entries: list[tuple[_Live, int, PreparedRequest]]) -> None:
        # identical requests in one tick are generated once
        unique: dict[str, PreparedRequest] = {}
        for _, _, prepared in entries:
            unique.setdefault(prepared.request_hash, prepared)
        batch = list(unique.values())
        results: dict[str, GenResult] = {}
        # an engine that refills its batch as requests end gets the whole list with max_batch as
        # its window (one call, always full); others get it in max_batch chunks, one call each
        rolling = _takes(slot.engine, "window")
        step = max(1, len(batch)) if rolling else self.max_batch
        for start in range(0, len(batch), step):
            chunk = batch[start:start + step]
            begun = time.perf_counter()
            extra: dict[str, Any] = {"window": self.max_batch} if rolling else {}
            if _takes(slot.engine, "sink"):
                outputs = slot.engine.generate(chunk, sink=_SaveAsFinished(self, slot, chunk), **extra)
            else:  # an engine without streaming: its results are saved when the call returns
                outputs = slot.engine.generate(chunk, **extra)
            self.stats.engine_busy_s += time.perf_counter() - begun
            self.stats.engine_calls += 1
            for prepared, result in zip(chunk, outputs):
                self.keep_generation(slot, prepared, result)
                results[prepared.request_hash] = result
        for ep, i, prepared in entries:
            self._answer(ep, i, prepared, results[prepared.request_hash], cached=False)

    def keep_generation(self, slot: ModelSlot, prepared: PreparedRequest, result: GenResult) -> None:
        """Put a fresh result in the cache and hand its generation row to the writer, once per hash."""
        if prepared.request_hash in self._saved:
            return
        self._saved.add(prepared.request_hash)
        result.request_hash = prepared.request_hash
        result.model_identity = slot.model.identity
        self.stats.completion_tokens += result.completion_tokens
        self.cache.memory[prepared.request_hash] = result
        self._store_generation(slot, prepared, result)

    def _answer(self, ep: _Live, i: int, prepared: PreparedRequest, result: GenResult, *, cached: bool) -> None:
        if cached:
            result = GenResult(**{**result.__dict__, "cached": True})
        ep.answers[i] = result
        request = prepared.request
        self._write("run_generations", {"run_id": self.run_id, "episode_id": ep.spec.episode_id,
                                        "seq": prepared.extra["seq"], "role": request.role, "tag": request.tag,
                                        "request_hash": prepared.request_hash, "cached": cached})

    # ---- store --------------------------------------------------------------------------
    def _store_generation(self, slot: ModelSlot, prepared: PreparedRequest, result: GenResult) -> None:
        request = prepared.request
        self._write("generations", {
            "request_hash": prepared.request_hash, "model_identity": slot.model.identity,
            "lora": request.lora, "prompt": prepared.prompt,
            "sampling": {**request.sampling.key(), "seed": prepared.seed},
            "constraint_spec": constraint_key(request.constraint), "text": result.text,
            "parsed": result.parsed, "valid": result.valid, "error": result.error,
            "label_probs": result.label_probs, "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens, "latency_ms": result.latency_ms,
            "finish_reason": result.finish_reason, "created_at": utcnow()})

    def _drain(self, ctx: EpisodeContext) -> None:
        rows, ctx.rows = ctx.rows, []
        for table, row in rows:
            self._write(table, row)

    def _write(self, table: str, row: dict[str, Any]) -> None:
        if self.writer is not None:
            self.writer.add(table, row)


class _SaveAsFinished:
    """The scheduler's ``ResultSink`` for one engine call: save each result as it finishes."""

    def __init__(self, scheduler: Scheduler, slot: ModelSlot, chunk: list[PreparedRequest]) -> None:
        self.scheduler = scheduler
        self.slot = slot
        self.chunk = chunk

    def done(self, index: int, result: GenResult) -> None:
        """Cache and store the generation now; commit if ``flush_every_s`` has passed."""
        self.scheduler.keep_generation(self.slot, self.chunk[index], result)
        self.scheduler.flush_if_due()

    def busy(self) -> None:
        """Commit what finished earlier if it has waited ``flush_every_s`` (no result since)."""
        self.scheduler.flush_if_due()


def _takes(engine: Engine, keyword: str) -> bool:
    """Whether ``engine.generate`` accepts ``keyword=`` (``sink`` or ``window``).

    Engines written before streaming take no ``sink`` (``**kwargs`` counts as taking it); ``window``
    counts only when named, since a window changes what one call holds.

    Asked on every call, not cached per engine type: ``generate`` can be replaced on a class or an
    instance (wrappers, test doubles), and a signature costs microseconds next to an engine call.
    """
    try:
        params = inspect.signature(engine.generate).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return False
    if keyword in params:
        return True
    return keyword == "sink" and any(p.kind is p.VAR_KEYWORD for p in params.values())


def _with_seed(sampling: Any, seed: int | None) -> Any:
    from dataclasses import replace

    return replace(sampling, seed=seed)
