"""The episode protocol: what an episode program yields, receives and records.

An episode program is a generator: it ``yield``s a ``GenRequest`` (or a list of them, answered
together) and receives the ``GenResult`` (or list) back. It records turns, tool calls and
verdicts on its ``EpisodeContext`` (a buffer; programs never touch the store) and may return an
``Outcome``. Suites and the tau2 runtime write programs against this module alone; the scheduler
that runs them (``rollout/``: batching, cache, store) is above them and none of their business.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from uxlocal.engine.base import GenRequest, GenResult

Ask = GenRequest | list[GenRequest]
Program = Generator[Ask, Any, "Outcome | None"]
FROM_RESULT: Any = object()
"""``EpisodeContext.verdict``'s default for ``label_probs``: the judge result's own distribution."""


def utcnow() -> dt.datetime:
    """Timezone-aware UTC now."""
    return dt.datetime.now(dt.timezone.utc)


@dataclass
class Outcome:
    """How an episode ended."""

    termination: str = "done"
    reward: float | None = None
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class EpisodeSpec:
    """One unit of work: a program bound to an item."""

    episode_id: str
    program: Callable[["EpisodeContext"], Program]
    item_id: str | None = None
    task: str = ""
    trial: int = 0


class EpisodeContext:
    """Buffers one episode's rows; the scheduler drains the buffer into the store."""

    def __init__(self, run_id: str, spec: EpisodeSpec) -> None:
        self.run_id = run_id
        self.spec = spec
        self.episode_id = spec.episode_id
        self.rows: list[tuple[str, dict[str, Any]]] = []
        self.n_turns = 0
        self.started_at = utcnow()
        self.models: dict[str, str] = {}
        """role -> model name, filled by the scheduler (lets verdicts name their judge)."""

    def turn(self, role: str, content: str, *, model_role: str | None = None,
             result: GenResult | None = None, meta: dict[str, Any] | None = None) -> int:
        """Record a turn; returns its index in the episode."""
        idx = self.n_turns
        self.n_turns += 1
        self.rows.append(("turns", {"run_id": self.run_id, "episode_id": self.episode_id, "idx": idx,
                                    "role": role, "content": content, "model_role": model_role,
                                    "request_hash": result.request_hash if result else None, "meta": meta}))
        return idx

    def tool_call(self, *, turn_idx: int, call_idx: int, requestor: str, name: str,
                  arguments: Any, ok: bool, result: str | None, error: str | None = None) -> None:
        """Record one tool call and its result."""
        self.rows.append(("tool_calls", {"run_id": self.run_id, "episode_id": self.episode_id,
                                         "turn_idx": turn_idx, "call_idx": call_idx, "requestor": requestor,
                                         "name": name, "arguments": arguments, "ok": ok, "result": result,
                                         "error": error}))

    def verdict(self, name: str, *, result: GenResult | None = None, judge_role: str = "judge",
                label: str | None = None, score: float | None = None, valid: bool | None = None,
                value: Any = None, rationale: str | None = None, label_probs: Any = FROM_RESULT) -> None:
        """Record a verdict; defaults come from the judge's ``GenResult``.

        The one place a verdict row is built, for every suite. ``label_probs`` may replace the
        result's distribution (a rubric's mapped labels) or drop it (``None``).
        """
        if result is not None:
            valid = result.valid if valid is None else valid
            value = result.parsed if value is None else value
        if label_probs is FROM_RESULT:
            label_probs = result.label_probs if result else None
        self.rows.append(("verdicts", {
            "run_id": self.run_id, "episode_id": self.episode_id, "item_id": self.spec.item_id,
            "name": name, "judge_role": judge_role, "judge_model": self.models.get(judge_role),
            "label": label, "score": score, "valid": bool(valid), "value": value,
            "label_probs": label_probs, "rationale": rationale,
            "request_hash": result.request_hash if result else None}))

    def row(self, table: str, row: dict[str, Any]) -> None:
        """Record a row for a suite table (run_id and episode_id are filled in)."""
        self.rows.append((table, {"run_id": self.run_id, "episode_id": self.episode_id, **row}))
