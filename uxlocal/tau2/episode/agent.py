"""The agent seat (the candidate under test): a policy-following agent on any local model.

System prompt = our instructions (``prompts/agent.md``) + the domain policy + the agent tools.
Every turn is produced under the turn constraint (``actions.py``): a message or one tool call. With
``first_tool`` (``--agent-first-tool``), the agent's first move after each user message is held to a
call of that tool (retrieve, then answer); the protocol is otherwise unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from uxlocal.engine.base import GenRequest, GenResult, Sampling
from uxlocal.grammar import JsonSchema
from uxlocal.tau2 import Message

from .actions import ToolGrammar, TurnAction, calls_only_constraint, parse_turn, turn_constraint
from .prompts import fill
from .views import seat_view, tool_list, with_retry_notes

AGENT_ROLE = "agent"
"""The model role of this seat (``--model agent=...``)."""
GREETING = "Hi! How can I help you today?"
"""tau2's fixed opening line (spec §B.2), sent before any model speaks unless the task has a history."""


@dataclass(frozen=True)
class AgentSeat:
    """The agent's prompt and constraint for one domain; shared by every episode of that domain."""

    system: str
    constraint: JsonSchema
    sampling: Sampling
    first_constraint: JsonSchema | None = None
    """The constraint of a turn that answers a user message, when ``first_tool`` is set and offered."""

    @classmethod
    def build(
        cls,
        *,
        policy: str,
        tool_schemas: Sequence[dict[str, Any]],
        sampling: Sampling,
        grammar: ToolGrammar = "strict",
        first_tool: str | None = None,
    ) -> AgentSeat:
        """Assemble the system prompt from the policy and the tools the agent may call.

        ``first_tool`` applies only when it is among ``tool_schemas`` (a domain without it is unchanged).
        """
        system = fill("agent.md", policy=policy.strip(), tools=tool_list(tool_schemas))
        constraint = turn_constraint(tool_schemas, grammar, max_tokens=sampling.max_tokens)
        chosen = [s for s in tool_schemas if first_tool is not None and s["function"]["name"] == first_tool]
        first = calls_only_constraint(chosen, grammar, max_tokens=sampling.max_tokens) if chosen else None
        return cls(system=system, constraint=constraint, sampling=sampling, first_constraint=first)

    def request(self, messages: Sequence[Message], retries: Sequence[tuple[str, str]] = ()) -> GenRequest:
        """Ask for the agent's next turn; ``retries`` = (rejected output, problem) of this turn so far."""
        chat = seat_view("assistant", self.system, messages)
        if retries:
            chat = with_retry_notes(chat, retries, json_turns=True)
        constraint = self.constraint
        if (
            self.first_constraint is not None
            and messages
            and messages[-1].role == "user"
            and messages[-1].has_text()
        ):
            constraint = self.first_constraint
        return GenRequest(AGENT_ROLE, tuple(chat), self.sampling, constraint, tag="agent")

    @staticmethod
    def parse(result: GenResult) -> TurnAction:
        """Read the turn in ``result``; raise ``TurnFormatError`` when it is unusable."""
        return parse_turn(result)
