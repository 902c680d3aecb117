"""One tau2 episode as a scheduler program: greeting, alternating seats, tool calls, limits, reward.

Layer contract: a pure episode program. It yields ``GenRequest``s, runs tools on its own
environment, records turns, tool calls and verdicts on the ``EpisodeContext`` and returns an
``Outcome``; it never opens the store or a file. The scheduler runs many of these at once and
batches their requests per model, so episodes of any length interleave freely.

The turn machine follows tau2's half-duplex orchestrator (spec §B.3.2-B.3.3, §B.4.2):

- The trajectory opens with the task's ``message_history`` (its writes are already applied to the
  environment) or, without one, with the fixed agent greeting; the next seat follows from the
  last message. Neither counts as a step.
- A step is one routed message: an agent or user message, a tool call, a tool result. After a
  tool result the same seat speaks again; after a message the other seat does.
- A user message containing ``###STOP###``, ``###TRANSFER###`` or ``###OUT-OF-SCOPE###`` ends the
  episode as ``user_stop`` (checked before the step limit: the user did finish).
- Tool errors count toward ``max_errors`` (``too_many_errors``) unless the domain says its tools
  answer refusals as text (banking, ``DomainSpec.tool_errors_count``); ``max_steps`` ends as
  ``max_steps``; both are checked after a tool's result, never between a call and its result.

Decisions where tau2 has no equivalent (local models, constrained decoding):

- **Unusable output** (invalid or truncated JSON, an empty message, neither a message nor a call)
  counts as one error toward ``max_errors``, like a tool error, and the same seat is asked again
  with every rejected output of this turn and a short note appended, so each retry prompt differs
  and neither greedy decoding nor the cache can loop on one answer. The rejected output never
  enters the trajectory; it stays in the store's ``generations`` and is listed in the episode's
  ``info.format_errors``. Re-asking is not a step.
- **Context window**: a seat whose prompt no longer fits its model (the engine answers with
  ``finish_reason="context_window"``) ends the episode normally as ``context_window_exceeded``.
- **Engine failure** (``finish_reason="error"``) ends it as ``infrastructure_error``, which tau2
  leaves out of average reward and pass^k (so do our views).

Reward (spec §B.4.8) is ``score_episode`` (model-free), then the judge seat for NL assertions when
they gate the reward (or always, on request), then ``draft.finish(verdicts)``; every verdict is
a ``verdicts`` row and the whole ``reward_info`` goes into ``Outcome.info``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from uxlocal.engine.base import GenResult
from uxlocal.episode import EpisodeContext, Outcome
from uxlocal.tau2 import (
    CONTEXT_WINDOW_EXCEEDED,
    INFRASTRUCTURE_ERROR,
    USER_STOP,
    Domain,
    Message,
    NLVerdict,
    RewardInfo,
    Task,
    ToolCall,
    score_episode,
    user_stop_token,
)

from .actions import TurnAction, TurnFormatError, action_json
from .agent import AGENT_ROLE, GREETING, AgentSeat
from .judge import JUDGE_ROLE, JudgeSeat
from .state import Ended, EpisodeState, Gen, Limits, check_finish
from .user_proxy import USER_ROLE, UserSeat
from .views import Seat

MODEL_ROLE: dict[str, str] = {"assistant": AGENT_ROLE, "user": USER_ROLE}
"""Trajectory role of a seat -> the model role that plays it."""


@dataclass(frozen=True)
class EpisodeSetup:
    """Everything one episode needs; the seats and the domain are shared between episodes."""

    domain: Domain
    task: Task
    trial: int
    agent: AgentSeat
    user: UserSeat
    judge: JudgeSeat
    limits: Limits = field(default_factory=Limits)
    judge_always: bool = False
    """Judge NL assertions even where they do not gate the reward (a diagnostic, as tau2's batch
    runs do); otherwise only where ``NL_ASSERTION`` is in the reward basis."""


def tau2_episode(ctx: EpisodeContext, setup: EpisodeSetup) -> Gen:
    """Run one episode: converse until a termination, then score; returns an ``Outcome``."""
    outcome, _ = yield from tau2_trajectory(ctx, setup)
    return outcome


def tau2_trajectory(ctx: EpisodeContext, setup: EpisodeSetup) -> Gen:
    """``tau2_episode`` that also returns the trajectory: (``Outcome``, messages).

    For programs that work on the finished conversation in the same episode (UFS grading in
    ``uxlocal run userproxy``) without reading the store back.
    """
    return (yield from _Episode(ctx, setup).run())


class _Episode(EpisodeState):
    """One episode in our protocol: every message is a step, unusable output is asked again."""

    def __init__(self, ctx: EpisodeContext, setup: EpisodeSetup) -> None:
        roles = {"user": setup.user.role, "assistant": AGENT_ROLE}
        super().__init__(ctx, setup.domain, setup.task, setup.trial, setup.limits, roles, _turn_text)
        self.setup = setup
        self.format_errors: list[dict[str, Any]] = []

    # --- conversation ---------------------------------------------------------------------

    def conversation(self) -> Gen:
        """Alternate the seats until a termination (raised as ``Ended``)."""
        seat = self._open()
        while True:
            seat = yield from self._turn(seat)

    def _open(self) -> Seat:
        """Start from the task's history, or from the greeting; return who speaks next."""
        history = self.task_history()
        if not history:
            self.record(Message.text("assistant", GREETING), step=False)
            return "user"
        for message in history:
            self.record(message.model_copy(deep=True), step=False)
        return _next_seat(history)

    def _turn(self, seat: Seat) -> Gen:
        action, result = yield from self._ask(seat)
        if action.kind == "message":
            self.record(Message.text(seat, action.text), result=result)
            if seat == "user" and user_stop_token(action.text):
                raise Ended(USER_STOP)
            self.check_limits()
            return "user" if seat == "assistant" else "assistant"
        self._call_tool(seat, action, result)
        self.check_limits()
        return seat

    def _ask(self, seat: Seat) -> Gen:
        """One usable turn from ``seat``, re-asking after unusable output (each one an error)."""
        chooser = self.setup.agent if seat == "assistant" else self.setup.user
        retries: list[tuple[str, str]] = []
        while True:
            result: GenResult = yield chooser.request(self.messages, retries)
            check_finish(result, MODEL_ROLE[seat], window_reason=CONTEXT_WINDOW_EXCEEDED,
                         error_reason=INFRASTRUCTURE_ERROR)
            try:
                return chooser.parse(result), result
            except TurnFormatError as err:
                self.errors += 1
                self.format_errors.append({"seat": MODEL_ROLE[seat], "turn_idx": len(self.messages),
                                           "error": str(err), "request_hash": result.request_hash})
                self.check_limits()
                retries.append((result.text, str(err)))

    def _call_tool(self, seat: Seat, action: TurnAction, result: GenResult) -> None:
        """Record the call, run it on the caller's side of the environment, record the result."""
        call = ToolCall(id=f"tc_{len(self.messages)}", name=action.tool, arguments=action.arguments,
                        requestor=seat)
        call_idx = self.record(Message.calls(seat, [call]), result=result)
        answer = self.run_call(call, call_idx, 0)
        if not answer.ok and (answer.internal or self.domain.spec.tool_errors_count):
            self.errors += 1

    def record(self, message: Message, *, result: GenResult | None = None, step: bool = True) -> int:
        """``EpisodeState.record`` that also counts a step, unless ``step`` is false (the opening)."""
        self.steps += int(step)
        return super().record(message, result=result)

    # --- reward -----------------------------------------------------------------------------

    def score(self, termination: str) -> Gen:
        """Model-free checks, the judge when needed, then the final reward."""
        setup = self.setup
        draft = score_episode(setup.domain, setup.task, self.messages, termination)
        verdicts: list[NLVerdict] | None = None
        if draft.scored and draft.nl_assertions and (draft.needs_judge or setup.judge_always):
            results = yield setup.judge.requests(draft.nl_assertions, self.messages)
            verdicts = [self._verdict(k, text, r)
                        for k, (text, r) in enumerate(zip(draft.nl_assertions, results, strict=True))]
        info = draft.finish(verdicts)
        return Outcome(termination, reward=info.reward, info=self._info(info))

    def _verdict(self, k: int, assertion: str, result: GenResult) -> NLVerdict:
        verdict, usable = JudgeSeat.verdict(result)
        self.ctx.verdict(f"nl_assertion:{k}", result=result, judge_role=JUDGE_ROLE,
                         label="met" if verdict.met else "not_met", score=float(verdict.met), valid=usable,
                         value={"nl_assertion": assertion, "met": verdict.met},
                         rationale=verdict.justification)
        return verdict

    def _info(self, reward_info: RewardInfo) -> dict[str, Any]:
        return self.info("ours", reward_info, format_errors=self.format_errors)


def _next_seat(history: list[Message]) -> Seat:
    """Who speaks after a task's message history."""
    last = history[-1]
    if last.role == "tool":
        return last.requestor or _caller(history, last.id) or "assistant"
    if last.role == "user":
        return "assistant" if last.has_text() else "user"
    return "user" if last.has_text() else "assistant"


def _caller(history: list[Message], call_id: str | None) -> Seat | None:
    for message in reversed(history):
        for call in message.tool_calls or []:
            if call.id == call_id and message.role in ("assistant", "user"):
                return message.role  # type: ignore[return-value]
    return None


def _turn_text(message: Message) -> str:
    """Render a message for ``turns.content``: its text, its calls as protocol JSON, or a result."""
    if message.tool_calls:
        calls = [action_json(TurnAction("tool", tool=c.name, arguments=c.arguments))
                 for c in message.tool_calls]
        text = [message.content.strip()] if message.has_text() and message.content else []
        return "\n".join(text + calls)
    return message.content or ""

