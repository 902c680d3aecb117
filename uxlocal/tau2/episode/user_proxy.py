"""The user-proxy seat: a simulated customer who follows the task's private scenario.

System prompt = our guidelines (``prompts/user.md``, or ``user_tools.md`` when the domain gives
the user tools) + ``<scenario>`` holding ``render_scenario(task.user_scenario)``, the same
two-part shape as tau2's simulator (spec §B.3.1). It sees the role-flipped dialogue without the
agent's tool traffic (``views.py``). Without user tools it writes plain text, unconstrained; with
them, every turn is a message or one tool call under the turn constraint, like the agent's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from uxlocal.engine.base import GenRequest, GenResult, Sampling
from uxlocal.grammar import JsonSchema
from uxlocal.tau2 import Message, Task, render_scenario

from .actions import ToolGrammar, TurnAction, parse_text, parse_turn, turn_constraint
from .prompts import fill
from .views import seat_view, tool_list, with_retry_notes

USER_ROLE = "user"
"""The model role of this seat (``--model user=...``)."""


def guidelines(tool_schemas: Sequence[dict[str, Any]]) -> str:
    """Return the simulator's global guidelines (the tools version when the user has tools)."""
    if tool_schemas:
        return fill("user_tools.md", tools=tool_list(tool_schemas))
    return fill("user.md")


@dataclass(frozen=True)
class UserSeat:
    """The user's prompt (guidelines + scenario) and, when it has tools, its constraint."""

    system: str
    constraint: JsonSchema | None
    sampling: Sampling
    role: str = USER_ROLE
    """Model role the requests go to; ``uxlocal run userproxy`` seats each proxy as ``user:<name>``."""

    @classmethod
    def build(
        cls,
        task: Task,
        *,
        tool_schemas: Sequence[dict[str, Any]],
        sampling: Sampling,
        grammar: ToolGrammar = "strict",
        role: str = USER_ROLE,
    ) -> UserSeat:
        """Build the seat for one task; ``tool_schemas`` are the user tools this task allows."""
        scenario = render_scenario(task.user_scenario)
        system = f"{guidelines(tool_schemas)}\n\n<scenario>\n{scenario}\n</scenario>"
        constraint = (turn_constraint(tool_schemas, grammar, max_tokens=sampling.max_tokens)
                      if tool_schemas else None)
        return cls(system=system, constraint=constraint, sampling=sampling, role=role)

    @property
    def json_turns(self) -> bool:
        """Whether the seat answers in the JSON turn protocol (it has tools)."""
        return self.constraint is not None

    def request(self, messages: Sequence[Message], retries: Sequence[tuple[str, str]] = ()) -> GenRequest:
        """Ask for the user's next turn; ``retries`` = (rejected output, problem) of this turn so far."""
        chat = seat_view("user", self.system, messages, json_turns=self.json_turns)
        if retries:
            chat = with_retry_notes(chat, retries, json_turns=self.json_turns)
        return GenRequest(self.role, tuple(chat), self.sampling, self.constraint, tag="user")

    def parse(self, result: GenResult) -> TurnAction:
        """Read the turn in ``result``; raise ``TurnFormatError`` when it is unusable."""
        return parse_turn(result) if self.json_turns else parse_text(result)
