"""The driver: runs episode programs (``episode.py``) to their end, one tick at a time.

Each tick it advances every live episode until each waits on generations, lets the batcher
answer them (cache first, then one engine call per model), and admits new episodes up to
``max_live``. It owns the episode lifecycle only: requests are prepared in ``prepare.py``,
batched in ``batcher.py``, and cached and committed by the store's ``GenerationCache``.

Resume: an episode row is written when the episode ends, in the same transaction as its last
rows. On restart, rows of episodes without a ``done`` row are deleted and those episodes run
again from the start; their earlier generations come back from the cache, so the rerun costs no
engine time and produces the same rows.

Generations are saved earlier than episodes: engines hand each result over as soon as it is
final (``ResultSink``), it goes into the cache and the writer at once, and the cache commits at
least every ``flush_every_s`` seconds, also in the middle of a tick and of an engine call. A
single-step suite is one tick of up to ``max_live`` episodes (minutes to hours of engine time); a
crash inside it loses at most the last ``flush_every_s`` seconds of finished generations plus the
requests still running, and the rerun answers the rest from the cache.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from uxlocal import settings
from uxlocal.engine.base import GenRequest, GenResult, PreparedRequest
from uxlocal.engine.pool import ModelPool
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome, Program, utcnow
from uxlocal.progress import Progress
from uxlocal.rollout.batcher import Batcher, Pending, decode_generation
from uxlocal.rollout.prepare import prepare
from uxlocal.rollout.stats import RunStats
from uxlocal.store.generation_cache import GenerationCache
from uxlocal.store.writer import StoreWriter


@dataclass
class _Live:
    spec: EpisodeSpec
    ctx: EpisodeContext
    gen: Program
    seq: int = 0
    waiting: list[PreparedRequest] = field(default_factory=list)
    answers: dict[int, GenResult] = field(default_factory=dict)
    single: bool = True


class Scheduler:
    """Advances episodes; their requests go through the batcher, their rows to the store."""

    def __init__(self, pool: ModelPool, *, run_id: str = "adhoc", writer: StoreWriter | None = None,
                 seed: int = 0, max_live: int = 512, max_batch: int = 256, progress: bool = False,
                 description: str = "episodes", flush_every_s: float | None = None) -> None:
        if flush_every_s is None:
            flush_every_s = settings.current().flush_every_s
        self.pool = pool
        self.run_id = run_id
        self.writer = writer
        self.seed = seed
        self.max_live = max_live
        self.progress = progress
        self.description = description
        self.stats = RunStats()
        self.cache: GenerationCache[GenResult] = GenerationCache(writer, decode_generation,
                                                                 flush_every_s=flush_every_s)
        self.batcher = Batcher(pool, self.cache, self.stats, max_batch=max_batch)

    def run(self, episodes: Iterable[EpisodeSpec], *, total: int | None = None) -> RunStats:
        """Run every episode to completion; returns this attempt's counters."""
        started = time.perf_counter()
        queue: Iterator[EpisodeSpec] = iter(episodes)
        live: dict[str, _Live] = {}
        self.stats.episodes_total = total or 0
        with Progress(self.progress, total, self.description) as bar:
            self._fill(queue, live)
            self.cache.start()
            while live:
                self._tick(live)
                self._fill(queue, live)
                bar.update(self.stats.episodes_done + self.stats.episodes_failed, self.stats.requests,
                           self.stats.completion_tokens, time.perf_counter() - started)
                self.cache.flush_if_due()
                self.cache.forget_committed()
        self.cache.flush()
        self.stats.wall_s = time.perf_counter() - started
        return self.stats

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
        seq = episode.seq
        episode.seq += 1
        return prepare(self.pool, request, run_seed=self.seed, episode_id=episode.spec.episode_id, seq=seq)

    def _finish(self, episode: _Live, outcome: Outcome, live: dict[str, _Live]) -> None:
        ctx = episode.ctx
        self._drain(ctx)
        self.cache.add("episodes", self._episode_row(episode, "done", outcome.termination, outcome.reward,
                                                     outcome.info, ctx.n_turns))
        self.stats.episodes_done += 1
        live.pop(ctx.episode_id, None)

    def _fail(self, episode: _Live, exc: Exception, live: dict[str, _Live]) -> None:
        text = "".join(traceback.format_exception(exc))
        if not self.stats.failures:
            print(f"episode {episode.spec.episode_id} failed:\n{text}", file=sys.stderr)
        self.stats.failures.append(f"{episode.spec.episode_id}: {type(exc).__name__}: {exc}")
        episode.ctx.rows.clear()  # partial rows of a failed episode are not results
        self.cache.add("episodes", self._episode_row(episode, "failed", "error", None, {"error": text[-4000:]}, 0))
        self.stats.episodes_failed += 1
        live.pop(episode.ctx.episode_id, None)

    def _episode_row(self, episode: _Live, status: str, termination: str | None, reward: float | None,
                     info: Any, n_turns: int) -> dict[str, Any]:
        spec = episode.spec
        return {"run_id": self.run_id, "episode_id": spec.episode_id, "item_id": spec.item_id, "task": spec.task,
                "trial": spec.trial, "status": status, "termination": termination, "reward": reward,
                "info": info, "n_turns": n_turns, "started_at": episode.ctx.started_at, "ended_at": utcnow()}

    # ---- one tick -------------------------------------------------------------------------
    def _tick(self, live: dict[str, _Live]) -> None:
        """Let the batcher answer every waiting request, then advance each episode whose answers are in."""
        pending = [Pending(ep, i, p) for ep in list(live.values()) for i, p in enumerate(ep.waiting)
                   if i not in ep.answers]
        self.batcher.serve(pending, self._answer)
        for ep in list(live.values()):
            if ep.waiting and len(ep.answers) == len(ep.waiting):
                results = [ep.answers[i] for i in range(len(ep.waiting))]
                ep.waiting = []
                self._drain(ep.ctx)
                self._advance(ep, results[0] if ep.single else results, live)

    def _answer(self, entry: Pending, result: GenResult, cached: bool) -> None:
        episode: _Live = entry.episode
        episode.answers[entry.index] = replace(result, cached=True) if cached else result
        request = entry.prepared.request
        self.cache.add("run_generations", {
            "run_id": self.run_id, "episode_id": episode.spec.episode_id, "seq": entry.prepared.extra["seq"],
            "role": request.role, "tag": request.tag, "request_hash": entry.prepared.request_hash,
            "cached": cached})

    def _drain(self, ctx: EpisodeContext) -> None:
        rows, ctx.rows = ctx.rows, []
        for table, row in rows:
            self.cache.add(table, row)
