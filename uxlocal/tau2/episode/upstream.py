"""One tau2 episode as tau2-bench 8ebb749 runs it (the "upstream" protocol): a scheduler program.

Layer contract: a pure episode program, like ``orchestrator.py``. It yields ``GenRequest``s, runs
tools on its own environment, records turns, tool calls and verdicts on the ``EpisodeContext`` and
returns an ``Outcome``; it never opens the store or a file. Every model reads upstream's words
(``Tau2Words``, from the user's checkout) in upstream's request shape (``upstream_requests``).

What it does, as upstream's half-duplex orchestrator does (checked request by request against
``../shared/conformance/tau2-episodes`` in ``tests/conformance/test_tau2_episodes.py``):

- **Requests**: per seat the system prompt and its view of the trajectory as OpenAI messages,
  tools as ``GenRequest.tools`` in definition order with ``tool_choice="auto"`` (``None`` and
  ``None`` for a seat without tools), temperature 0, the trial's seed (``trial_seed``), and no
  completion cap below the model's window (``NO_CAP``; engines clip to what is left).
- **Opening**: the fixed greeting as an agent message (no model call), or the task's message
  history; the seat its last message addresses goes first, and a history that ends in tool calls
  has them run first.
- **Routing**: a message with tool calls goes to the environment (on the caller's side; several
  calls run in order, each result its own ``tool`` message, text and calls together allowed),
  then back to the caller; a text goes to the other seat.
- **Steps and limits**: a step is one user message, one agent message, or one environment answer
  (all results of one message). After each step that does not wait for the environment:
  ``max_steps``, then ``max_errors`` (tool messages with ``error``) end the episode; they win over a
  stop token said in the same step, as upstream's checks run after the stop.
- **Stop**: a user text containing ``###STOP###``, ``###TRANSFER###`` or ``###OUT-OF-SCOPE###``
  (not a message with tool calls) ends it as ``user_stop``. The agent never stops.
- **Infrastructure errors**, which upstream raises and its batch runner stores as
  ``infrastructure_error`` (no reward, left out of the metrics): tool-call arguments that are not
  a JSON object, a message with neither text nor tool calls, a prompt beyond the window, a failed
  generation, and a judge reply its parser cannot read.
- **Reward**: ``score_episode``; when ``NL_ASSERTION`` gates it and the task has assertions, one
  judge call for all of them with upstream's prompt and transcript, its reply read as upstream
  reads it (``json.loads``; ``results[*].expectedOutcome / metExpectation / reasoning``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from uxlocal.engine.base import GenRequest, GenResult, Sampling
from uxlocal.episode import EpisodeContext, Outcome
from uxlocal.tau2 import (
    INFRASTRUCTURE_ERROR,
    USER_STOP,
    Domain,
    Message,
    Task,
    ToolCall,
    score_episode,
    user_stop_token,
    utc_now,
)
from uxlocal.tau2.reward_info import NLAssertionCheck, RewardInfo
from uxlocal.tau2.upstream_requests import agent_messages, sampling, user_messages
from uxlocal.tau2.upstream_words import Tau2Words

from .agent import AGENT_ROLE, GREETING
from .judge import JUDGE_ROLE
from .state import Ended, EpisodeState, Gen, Limits, check_finish
from .user_proxy import USER_ROLE
from .views import Seat

PROTOCOL = "upstream"
"""The name this protocol goes by in a run's identity and info (the other one is ``ours``)."""
NO_CAP = 1 << 20
"""Completion budget of every upstream-protocol request (tokens): upstream sets none, so this only
stands for "until the model stops or its window is full"; engines clip it to the room left."""
TRIAL_SEED_BASE = 300
"""Upstream's default run seed; trial k's seed is the (k+1)-th ``randint(0, 1000000)`` it draws."""


def trial_seed(trial: int, base: int = TRIAL_SEED_BASE) -> int:
    """Return the seed upstream's batch runner gives trial ``trial`` (0-based): 626729 for trial 0."""
    draws = random.Random(base)
    seeds = [draws.randint(0, 1_000_000) for _ in range(trial + 1)]
    return seeds[trial]


@dataclass(frozen=True)
class UpstreamSeats:
    """What every episode of one domain shares: the words, the agent's prompt and tools, the limits."""

    words: Tau2Words
    agent_system: str
    agent_tools: tuple[dict[str, Any], ...] | None
    limits: Limits = field(default_factory=Limits)
    agent_role: str = AGENT_ROLE
    judge_role: str = JUDGE_ROLE
    agent_temperature: float = 0.0
    """Upstream's default; the trial seed matters only above 0."""

    @classmethod
    def build(cls, words: Tau2Words, domain: Domain, limits: Limits | None = None, *,
              agent_temperature: float = 0.0) -> UpstreamSeats:
        """Read the agent's system prompt (domain policy) and listed tools from ``words``."""
        tools = words.tool_schemas("assistant")
        return cls(words, words.agent_system_prompt(domain.policy_text()),
                   tuple(tools) if tools else None, limits or Limits(), agent_temperature=agent_temperature)


@dataclass(frozen=True)
class UpstreamSetup:
    """Everything one upstream-protocol episode needs; ``seats`` and ``domain`` are shared."""

    domain: Domain
    task: Task
    trial: int
    seats: UpstreamSeats
    user_role: str = USER_ROLE
    seed: int | None = None
    """The trial's seed on every agent and user request; ``None``: ``trial_seed(trial)``."""
    user_temperature: float = 0.0
    """The user simulator's temperature (upstream's default 0; a UserProxyBench proxy may set its own)."""

    @property
    def user_tools(self) -> tuple[dict[str, Any], ...] | None:
        """The user's tools as upstream lists them for this task (``None`` when it has none)."""
        tools = self.seats.words.user_tools(self.task)
        return tuple(tools) if tools else None

    @property
    def user_system(self) -> str:
        """The user simulator's system prompt: guidelines (tools variant with tools) + scenario."""
        return self.seats.words.user_system_prompt(self.task.user_scenario,
                                                   has_tools=self.user_tools is not None)


def upstream_episode(ctx: EpisodeContext, setup: UpstreamSetup) -> Gen:
    """Run one episode as upstream does, then score it; returns an ``Outcome``."""
    outcome, _ = yield from upstream_trajectory(ctx, setup)
    return outcome


def upstream_trajectory(ctx: EpisodeContext, setup: UpstreamSetup) -> Gen:
    """``upstream_episode`` that also returns the trajectory: (``Outcome``, messages)."""
    return (yield from _Episode(ctx, setup).run())


class _Episode(EpisodeState):
    """One episode as upstream runs it: besides the shared state, who is addressed and the seed."""

    def __init__(self, ctx: EpisodeContext, setup: UpstreamSetup) -> None:
        roles = {"user": setup.user_role, "assistant": setup.seats.agent_role}
        super().__init__(ctx, setup.domain, setup.task, setup.trial, setup.seats.limits, roles, _turn_text)
        self.setup = setup
        self.seed = trial_seed(setup.trial) if setup.seed is None else setup.seed
        self.user_tools = setup.user_tools
        self.user_system = setup.user_system

    # --- conversation ---------------------------------------------------------------------

    def conversation(self) -> Gen:
        """Step until a termination (``infrastructure_error`` included), raised as ``Ended``."""
        sender, addressee = self._open()
        while True:
            sender, addressee = yield from self._step(sender, addressee)
            if addressee != "env":
                self.check_limits()

    def _open(self) -> tuple[str, str]:
        """Start from the task's history, or from the greeting; return (sender, addressee)."""
        history = self.task_history()
        if not history:
            self.record(Message.text("assistant", GREETING))
            return "assistant", "user"
        for message in history:
            self.record(message.model_copy(deep=True))
        last = history[-1]
        if last.role == "tool":
            return "env", last.requestor or "assistant"
        if last.is_tool_call():
            return last.role, "env"
        if last.role == "user" and user_stop_token(last.content):
            raise Ended(USER_STOP, "the task's history ends with a user stop")
        return last.role, "assistant" if last.role == "user" else "user"

    def _step(self, sender: str, addressee: str) -> Gen:
        """Deliver the last message to its addressee; return the next (sender, addressee)."""
        if addressee == "env":
            self._run_calls(self._awaiting_env())
            self.steps += 1
            return "env", sender
        seat: Seat = "user" if addressee == "user" else "assistant"
        message, result = yield from self._generate(seat)
        self.record(message, result=result)
        self.steps += 1
        if message.is_tool_call():
            return seat, "env"
        if seat == "user" and user_stop_token(message.content):
            self.check_limits()  # upstream's limit checks run after the stop and win over it
            raise Ended(USER_STOP)
        return seat, "user" if seat == "assistant" else "assistant"

    def _awaiting_env(self) -> Message:
        """Return the last seat message: it carries the tool calls the environment answers now."""
        return next(m for m in reversed(self.messages) if m.role != "tool")

    def request(self, seat: Seat) -> GenRequest:
        """Build the request upstream sends ``seat`` now (system prompt + its view, tools, seed)."""
        setup = self.setup
        if seat == "assistant":
            messages = agent_messages(setup.seats.agent_system, self.messages)
            tools, role = setup.seats.agent_tools, setup.seats.agent_role
        else:
            messages = user_messages(self.user_system, self.messages)
            tools, role = self.user_tools, setup.user_role
        fields = sampling(list(tools) if tools else None, self.seed)
        temperature = setup.seats.agent_temperature if seat == "assistant" else setup.user_temperature
        return GenRequest(role, tuple(messages),
                          Sampling(temperature=temperature, max_tokens=NO_CAP,
                                   seed=self.seed),
                          tools=tools, tool_choice=fields["tool_choice"], tag=f"{seat}:{len(self.messages)}")

    def _generate(self, seat: Seat) -> Gen:
        """Ask ``seat`` once and read its reply as upstream's ``generate`` does."""
        result: GenResult = yield self.request(seat)
        role = self.setup.seats.agent_role if seat == "assistant" else self.setup.user_role
        check_finish(result, role, window_reason=INFRASTRUCTURE_ERROR, error_reason=INFRASTRUCTURE_ERROR)
        calls = [_tool_call(raw, seat, f"call_{len(self.messages)}_{k}", role)
                 for k, raw in enumerate(result.tool_calls or [])]
        content = result.text if result.text.strip() else None  # a call alone: content null, as servers send
        if not calls and content is None:
            raise Ended(INFRASTRUCTURE_ERROR, f"the {role} message has neither content nor tool calls")
        message = Message(role=seat, content=content, tool_calls=calls or None, timestamp=utc_now())
        return message, result

    def _run_calls(self, message: Message) -> None:
        """Run a message's tool calls in order on the caller's side; each result is a ``tool`` message."""
        call_idx = self.messages.index(message)
        for k, call in enumerate(message.tool_calls or []):
            answer = self.run_call(call, call_idx, k)
            self.errors += int(not answer.ok)

    # --- reward -----------------------------------------------------------------------------

    def score(self, termination: str) -> Gen:
        """Model-free checks, upstream's judge when NL assertions gate the reward, the final reward."""
        setup = self.setup
        if termination == INFRASTRUCTURE_ERROR:
            return Outcome(termination, reward=None, info=self._info(None))
        draft = score_episode(setup.domain, setup.task, self.messages, termination)
        if not draft.needs_judge:
            info = draft.finish()
            return Outcome(termination, reward=info.reward, info=self._info(info))
        trajectory = [m.model_dump(mode="json") for m in self.messages]
        messages = setup.seats.words.judge_messages(trajectory, draft.nl_assertions)
        result: GenResult = yield GenRequest(setup.seats.judge_role, tuple(messages),
                                             Sampling(temperature=0.0, max_tokens=NO_CAP),
                                             tag="nl_assertions")
        try:
            checks = read_judge_reply(result)
        except ValueError as err:
            self.detail = f"the judge's reply cannot be read as upstream reads it: {err}"
            return Outcome(INFRASTRUCTURE_ERROR, reward=None, info=self._info(None))
        for k, check in enumerate(checks):
            self.ctx.verdict(f"nl_assertion:{k}", result=result, judge_role=setup.seats.judge_role,
                             label="met" if check.met else "not_met", score=float(check.met), valid=True,
                             value={"nl_assertion": check.nl_assertion, "met": check.met},
                             rationale=check.justification)
        info = draft.finish_checks(checks)
        return Outcome(termination, reward=info.reward, info=self._info(info))

    def _info(self, reward_info: RewardInfo | None) -> dict[str, Any]:
        source = self.setup.seats.words.source
        return self.info(PROTOCOL, reward_info, format_errors=[], seed=self.seed,
                         words_sha256=source.sha256 if source else None)


def read_judge_reply(result: GenResult) -> list[NLAssertionCheck]:
    """Read the judge's reply as upstream does: ``json.loads``, then one check per ``results`` entry.

    ``ValueError`` (an infrastructure error upstream) when the text is not that JSON.
    """
    if result.finish_reason in ("context_window", "error"):
        raise ValueError(result.error or result.finish_reason)
    try:
        data = json.loads(result.text)
        return [NLAssertionCheck(nl_assertion=entry["expectedOutcome"], met=entry["metExpectation"],
                                 justification=entry["reasoning"]) for entry in data.get("results", [])]
    except (json.JSONDecodeError, AttributeError, KeyError, TypeError) as err:
        raise ValueError(f"{type(err).__name__}: {err}") from None
    except Exception as err:  # pydantic's ValidationError: a field of the wrong type
        raise ValueError(str(err)) from None


def _tool_call(raw: dict[str, Any], seat: Seat, fallback_id: str, role: str) -> ToolCall:
    """One native tool call as upstream parses it; arguments that are no JSON object end the episode."""
    function = raw.get("function") or {}
    text = function.get("arguments")
    try:
        arguments = json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError as err:
        raise Ended(INFRASTRUCTURE_ERROR, f"the {role}'s call of {function.get('name')!r} has arguments "
                                          f"that are not JSON ({err})") from None
    if not isinstance(arguments, dict):
        raise Ended(INFRASTRUCTURE_ERROR, f"the {role}'s call of {function.get('name')!r} has arguments "
                                          "that are not a JSON object")
    return ToolCall(id=str(raw.get("id") or fallback_id), name=str(function.get("name", "")),
                    arguments=arguments, requestor=seat)


def _turn_text(message: Message) -> str:
    """Render a message for ``turns.content``: its text, then its calls as ``name(arguments)`` lines."""
    lines = [message.content] if message.content else []
    lines += [f"{c.name}({json.dumps(c.arguments, ensure_ascii=False)})" for c in message.tool_calls or []]
    return "\n".join(lines)
