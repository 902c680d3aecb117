"""Counters of one scheduler run, shared by the driver (episodes) and the batcher (engine calls)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    prompt_tokens: int = 0
    """Prompt tokens of the fresh generations (each distinct request once, cache hits not counted)."""
    generations: int = 0
    """Fresh generations: distinct requests the engines ran in this attempt."""
    wall_s: float = 0.0
    engine_busy_s: float = 0.0
    failures: list[str] = field(default_factory=list)

    @property
    def busy_fraction(self) -> float:
        """Share of wall time spent inside engines."""
        return self.engine_busy_s / self.wall_s if self.wall_s > 0 else 0.0
