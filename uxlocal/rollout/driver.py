"""The driver: runs episode programs (``episode.py``) to their end, one tick at a time.

Each tick it lets the batcher answer every waiting request (cache first, then one engine call
per model); an episode goes on the moment its answers are in, and new ones are admitted (up to
``max_live``) after the tick. With an engine that follows up (``Engine.follow_ups``, vLLM) what
episodes ask next, and the first requests of episodes admitted in the slots of those that ended,
join the call still running, so one long generation holds up only its own episode. It owns the
episode lifecycle only: requests are prepared in ``prepare.py``, batched in ``batcher.py``, and
cached and committed by the store's ``GenerationCache``.

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
from collections.abc import Callable, Iterable, Iterator
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

    def row(self, run_id: str, status: str, termination: str | None, reward: float | None, info: Any,
            n_turns: int) -> dict[str, Any]:
        """Return the episode's ``episodes`` row (written when it ends)."""
        spec = self.spec
        return {"run_id": run_id, "episode_id": spec.episode_id, "item_id": spec.item_id,
                "task": spec.task, "trial": spec.trial, "status": status, "termination": termination,
                "reward": reward, "info": info, "n_turns": n_turns, "started_at": self.ctx.started_at,
                "ended_at": utcnow()}

    def drain(self, add: Callable[[str, dict[str, Any]], None]) -> None:
        """Hand the rows the episode made since the last drain to ``add`` (table, row)."""
        rows, self.ctx.rows = self.ctx.rows, []
        for table, row in rows:
            add(table, row)

    def take(self, index: int, result: GenResult) -> Any:
        """Keep one answer; once all are in, return what the program gets (one result or the list)."""
        self.answers[index] = result
        if len(self.answers) < len(self.waiting):
            return None
        results = [self.answers[i] for i in range(len(self.waiting))]
        self.waiting = []
        return results[0] if self.single else results


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
        self._queue: Iterator[EpisodeSpec] = iter(())
        self._live: dict[str, _Live] = {}
        self._asked: list[Pending] = []  # what episodes asked since the batcher last looked (_follow)
        self._shown: Any = None

    def run(self, episodes: Iterable[EpisodeSpec], *, total: int | None = None) -> RunStats:
        """Run every episode to completion; returns this attempt's counters."""
        started = time.perf_counter()
        self._queue, self._live = iter(episodes), {}
        self.stats.episodes_total = total or 0
        with Progress(self.progress, total, self.description) as bar:
            self._shown = lambda: bar.update(self.stats.episodes_done + self.stats.episodes_failed,
                                             self.stats.requests, self.stats.completion_tokens,
                                             time.perf_counter() - started)
            self._fill()
            self.cache.start()
            while self._live:
                self._tick()
                self._fill()
                self._shown()
                self.cache.flush_if_due()
                self.cache.forget_committed()
            self._shown = None
        self.cache.flush()
        self.stats.wall_s = time.perf_counter() - started
        return self.stats

    # ---- episode lifecycle ----------------------------------------------------------------
    def _fill(self) -> None:
        """Admit queued episodes up to ``max_live`` (between ticks, or when a following engine asks)."""
        while len(self._live) < self.max_live:
            spec = next(self._queue, None)
            if spec is None:
                return
            ctx = EpisodeContext(self.run_id, spec)
            ctx.models = {role: self.pool.slots[ident].model.name for role, ident in self.pool.roles.items()}
            episode = _Live(spec, ctx, spec.program(ctx))
            self._live[spec.episode_id] = episode
            self._advance(episode, None)

    def _advance(self, episode: _Live, value: Any) -> None:
        """Send ``value`` into the program and queue what it asks for next (or finish it)."""
        try:
            ask = episode.gen.send(value)
        except StopIteration as stop:
            self._finish(episode, stop.value if isinstance(stop.value, Outcome) else Outcome())
            return
        except Exception as exc:  # an episode bug must not sink the other episodes
            self._fail(episode, exc)
            return
        episode.single = not isinstance(ask, list)
        requests = [ask] if episode.single else list(ask)
        if not requests or not all(isinstance(r, GenRequest) for r in requests):
            self._fail(episode, TypeError(f"episode yielded {ask!r}; expected GenRequest(s)"))
            return
        try:
            first, episode.seq = episode.seq, episode.seq + len(requests)
            episode.waiting = [prepare(self.pool, r, run_seed=self.seed, episode_id=episode.spec.episode_id,
                                       seq=first + k) for k, r in enumerate(requests)]
        except Exception as exc:
            self._fail(episode, exc)
            return
        episode.answers = {}
        self._asked += [Pending(episode, i, p) for i, p in enumerate(episode.waiting)]

    def _finish(self, episode: _Live, outcome: Outcome) -> None:
        ctx = episode.ctx
        episode.drain(self.cache.add)
        self.cache.add("episodes", episode.row(self.run_id, "done", outcome.termination, outcome.reward,
                                               outcome.info, ctx.n_turns))
        self.stats.episodes_done += 1
        self._live.pop(ctx.episode_id, None)
        self._ended()

    def _fail(self, episode: _Live, exc: Exception) -> None:
        text = "".join(traceback.format_exception(exc))
        if not self.stats.failures:
            print(f"episode {episode.spec.episode_id} failed:\n{text}", file=sys.stderr)
        self.stats.failures.append(f"{episode.spec.episode_id}: {type(exc).__name__}: {exc}")
        episode.ctx.rows.clear()  # partial rows of a failed episode are not results
        failed = episode.row(self.run_id, "failed", "error", None, {"error": text[-4000:]}, 0)
        self.cache.add("episodes", failed)
        self.stats.episodes_failed += 1
        self._live.pop(episode.ctx.episode_id, None)
        self._ended()

    def _ended(self) -> None:
        """Show that an episode ended (its slot is refilled after the tick, or when an engine follows up)."""
        if self._shown is not None:
            self._shown()

    # ---- one tick -------------------------------------------------------------------------
    def _tick(self) -> None:
        """Let the batcher answer every waiting request; each episode goes on as its answers come in.

        An episode whose answers are all in asks its next request at once; an engine that follows
        up (``Engine.follow_ups``) takes it into the call still running (``_follow``), any other
        request waits for the next tick.
        """
        pending = [Pending(ep, i, p) for ep in list(self._live.values()) for i, p in enumerate(ep.waiting)
                   if i not in ep.answers]
        self._asked = []
        self.batcher.serve(pending, self._answer, self._follow)
        self._asked = []

    def _follow(self) -> list[Pending]:
        """Refill the slots of ended episodes, then hand the batcher what episodes asked since it looked."""
        self._fill()
        asked, self._asked = self._asked, []
        return asked

    def _answer(self, entry: Pending, result: GenResult, cached: bool) -> None:
        episode: _Live = entry.episode
        value = episode.take(entry.index, replace(result, cached=True) if cached else result)
        request = entry.prepared.request
        self.cache.add("run_generations", {
            "run_id": self.run_id, "episode_id": episode.spec.episode_id, "seq": entry.prepared.extra["seq"],
            "role": request.role, "tag": request.tag, "request_hash": entry.prepared.request_hash,
            "cached": cached})
        if value is not None and episode.spec.episode_id in self._live:
            episode.drain(self.cache.add)
            self._advance(episode, value)

