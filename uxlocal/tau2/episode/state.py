"""What both tau2 episode programs keep and record the same way: trajectory, counters, limits, info.

``orchestrator.py`` (our protocol) and ``upstream.py`` (tau2-bench's) differ in how a seat is
asked, how its reply is read and routed, what counts as a step or an error, and how the judge is
called. They agree on the rest, which lives here once: the episode's environment and trajectory,
how a message becomes a store turn, how a tool call is run and recorded, the limit checks, the
ending exception and the common part of ``Outcome.info``.

Layer contract: as for the programs themselves; nothing here opens the store or a file.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from uxlocal.engine.base import GenResult
from uxlocal.episode import Ask, EpisodeContext, Outcome
from uxlocal.tau2 import (
    DEFAULT_MAX_ERRORS,
    DEFAULT_MAX_STEPS,
    MAX_STEPS,
    TOO_MANY_ERRORS,
    Domain,
    Environment,
    Message,
    RewardInfo,
    Task,
    ToolCall,
    ToolResult,
    utc_now,
)

Gen = Generator[Ask, Any, Any]


@dataclass(frozen=True)
class Limits:
    """When an episode is cut off (tau2's defaults)."""

    max_steps: int = DEFAULT_MAX_STEPS
    max_errors: int = DEFAULT_MAX_ERRORS


class Ended(Exception):
    """The conversation is over, for ``reason`` (a termination name); ``detail`` says why."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def check_finish(result: GenResult, role: str, *, window_reason: str, error_reason: str) -> None:
    """End the episode when the engine could not answer ``role`` at all (window full, failure)."""
    if result.finish_reason == "context_window":
        raise Ended(window_reason, f"the {role} prompt exceeds its model's window")
    if result.finish_reason == "error":
        raise Ended(error_reason, f"{role} generation failed: {result.error}")


@dataclass(eq=False)
class EpisodeState:
    """The mutable state of one episode; a protocol subclasses it with its turns and its reward.

    A subclass supplies ``conversation`` (steps until it raises ``Ended``) and ``score``; ``roles``
    maps a trajectory role (``assistant``, ``user``) to the model role that plays it, and
    ``turn_text`` renders a message for ``turns.content``.
    """

    ctx: EpisodeContext
    domain: Domain
    task: Task
    trial: int
    limits: Limits
    roles: dict[str, str]
    turn_text: Callable[[Message], str]
    env: Environment = field(init=False)
    messages: list[Message] = field(init=False, default_factory=list)
    steps: int = field(init=False, default=0)
    errors: int = field(init=False, default=0)
    detail: str = field(init=False, default="")
    start_time: str = field(init=False)
    _clock: float = field(init=False)

    def __post_init__(self) -> None:
        self.env = Environment.for_task(self.domain, self.task)
        self.start_time = utc_now()
        self._clock = time.perf_counter()

    def run(self) -> Gen:
        """Converse, then score; returns (``Outcome``, the trajectory's messages)."""
        termination = yield from self.converse()
        outcome: Outcome = yield from self.score(termination)
        return outcome, list(self.messages)

    def converse(self) -> Gen:
        """Run ``conversation`` until it ends; returns the termination reason (its detail kept)."""
        try:
            yield from self.conversation()
        except Ended as end:
            self.detail = end.detail
            return end.reason
        raise AssertionError("a conversation ends only by raising Ended")

    def conversation(self) -> Gen:
        """Step through the conversation; never returns, raises ``Ended``."""
        raise NotImplementedError

    def score(self, termination: str) -> Gen:
        """Score the finished trajectory; returns an ``Outcome``."""
        raise NotImplementedError

    def task_history(self) -> list[Message]:
        """Return the task's opening ``message_history`` (empty when it has none)."""
        state = self.task.initial_state
        return list(state.message_history or []) if state is not None else []

    def record(self, message: Message, *, result: GenResult | None = None) -> int:
        """Add a message to the trajectory and the store's turns; ``turn_idx`` is its position."""
        idx = len(self.messages)
        update: dict[str, Any] = {"turn_idx": idx}
        if result is not None:
            update["usage"] = {"prompt_tokens": result.prompt_tokens,
                               "completion_tokens": result.completion_tokens}
        message = message.model_copy(update=update)
        self.messages.append(message)
        model_role = self.roles.get(message.role) if result is not None else None
        self.ctx.turn(message.role, self.turn_text(message), model_role=model_role, result=result,
                      meta={"message": message.model_dump(mode="json")})
        return idx

    def run_call(self, call: ToolCall, turn_idx: int, call_idx: int) -> ToolResult:
        """Run a call on its caller's side; its result joins the trajectory (``record``) and the store."""
        answer = self.env.call(call.name, call.arguments, call.requestor)
        self.record(Message.tool_result(call, answer.content, error=not answer.ok))
        error = answer.error if not answer.internal else f"internal: {answer.error}"
        self.ctx.tool_call(turn_idx=turn_idx, call_idx=call_idx, requestor=call.requestor, name=call.name,
                           arguments=call.arguments, ok=answer.ok, result=answer.content, error=error)
        return answer

    def check_limits(self) -> None:
        """End the episode at ``max_errors`` errors, then at ``max_steps`` steps."""
        if self.errors >= self.limits.max_errors:
            raise Ended(TOO_MANY_ERRORS, f"{self.errors} errors (limit {self.limits.max_errors})")
        if self.steps >= self.limits.max_steps:
            raise Ended(MAX_STEPS, f"{self.steps} steps (limit {self.limits.max_steps})")

    def info(self, protocol: str, reward_info: RewardInfo | None, *,
             format_errors: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        """``Outcome.info``: the episode's identity, ``extra`` after ``protocol``, counters, times, reward."""
        return {
            "domain": self.domain.name, "task_id": self.task.id, "trial": self.trial,
            "tau2_version": self.domain.tau2_version, "protocol": protocol, **extra,
            "gold_requestors": self.task.gold_requestors(), **self.domain.spec.episode_info,
            "steps": self.steps, "errors": self.errors, "format_errors": format_errors,
            "termination_detail": self.detail, "start_time": self.start_time, "end_time": utc_now(),
            "duration": round(time.perf_counter() - self._clock, 3),
            "reward_info": reward_info.model_dump(mode="json") if reward_info is not None else None,
        }
