"""A plan read chunk by chunk: items go to the store in batches, episodes are filtered per chunk.

Why: a judge job of a million conversations must not hold a million items, episodes and
"already done" ids at once. The runner reads a plan twice (``SuitePlan.chunks``): first every
item row into the store as the run starts (counting episodes for the progress total), then the
episodes to run, each chunk checked against the store with one query ("which of these are done")
instead of a Python set of every finished id. A plan held whole is one chunk, so every suite goes
through the same path and gets the same rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from uxlocal.episode import EpisodeSpec
from uxlocal.errors import InputError
from uxlocal.store.runs import finished_among
from uxlocal.suites.base import SuitePlan


@dataclass
class Tally:
    """What one read of the plan counted."""

    episodes: int = 0
    in_shard: int = 0
    """Episodes of this run's shard (all of them without ``--shard``)."""
    quarantine: list[dict[str, Any]] = field(default_factory=list)


def shard_episodes(episodes: list[EpisodeSpec], shard: str | None) -> list[EpisodeSpec]:
    """Keep the episodes of shard I/N by a stable hash of the item id (all trials together)."""
    if not shard:
        return episodes
    try:
        index, count = (int(x) for x in shard.split("/"))
        assert 0 <= index < count
    except (ValueError, AssertionError):
        raise InputError(f"--shard must be I/N with 0 <= I < N, got {shard!r}") from None

    def bucket(e: EpisodeSpec) -> int:
        key = f"{e.task}:{e.item_id or e.episode_id}"
        return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % count

    return [e for e in episodes if bucket(e) == index]


def item_rows(plan: SuitePlan, shard: str | None, tally: Tally) -> Iterator[dict[str, Any]]:
    """Every item row of the plan, counting its episodes and collecting set-aside rows in ``tally``."""
    for chunk in plan.chunks():
        tally.episodes += len(chunk.episodes)
        tally.in_shard += len(shard_episodes(chunk.episodes, shard))
        tally.quarantine += chunk.quarantine
        yield from chunk.items


def quarantine_rows(tally: Tally) -> Iterator[dict[str, Any]]:
    """Yield the set-aside rows ``item_rows`` collected; iterate only after it (``begin_run`` does)."""
    yield from tally.quarantine


def count(plan: SuitePlan, shard: str | None) -> Tally:
    """Read the plan once only to count it (a resumed run, whose items are already stored)."""
    tally = Tally()
    for _ in item_rows(plan, shard, tally):
        pass
    return tally


def todo(con: Any, run_id: str, plan: SuitePlan, shard: str | None) -> Iterator[EpisodeSpec]:
    """Yield the episodes still to run, in plan order: one store query per chunk for those already done."""
    for chunk in plan.chunks():
        mine = shard_episodes(chunk.episodes, shard)
        done = finished_among(con, run_id, [e.episode_id for e in mine])
        yield from (e for e in mine if e.episode_id not in done)
