"""The message shape of a tau2 trajectory: what seats produce, what reward reads, what results.json holds.

One tolerant model covers every role (tau2 tells the kinds apart by ``role``). Unknown keys from
newer tau2 files are kept (``extra="allow"``) so that reading and writing a file loses nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Role = Literal["system", "assistant", "user", "tool"]
Requestor = Literal["assistant", "user"]
"""Which seat a tool call comes from; it picks the side of the environment (agent DB or user DB)."""


def utc_now() -> str:
    """Return an ISO-8601 UTC timestamp with offset, the form we write into ``timestamp`` fields."""
    return datetime.now(UTC).isoformat()


class ToolCall(BaseModel):
    """One function call inside an assistant or user message."""

    model_config = ConfigDict(extra="allow")

    id: str = ""
    """Pairs the call with its ``tool`` message; may be empty in hand-written task histories."""
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    requestor: Requestor = "assistant"


class Message(BaseModel):
    """One entry of a trajectory; by tau2's protocol a turn carries text or tool calls, not both."""

    model_config = ConfigDict(extra="allow")

    role: Role
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    id: str | None = None
    """For ``tool`` messages: the id of the call this answers."""
    requestor: Requestor | None = None
    """For ``tool`` messages: the seat whose call this answers."""
    error: bool = False
    """For ``tool`` messages: the call failed and ``content`` starts with ``Error:``."""
    turn_idx: int | None = None
    timestamp: str | None = None
    cost: float | None = None
    """USD spent generating this message; tau2 sums it into ``agent_cost`` / ``user_cost``."""
    usage: dict[str, Any] | None = None
    raw_data: dict[str, Any] | None = None

    def has_text(self) -> bool:
        """Whether the message says something to the other party (tool calls do not)."""
        return bool(self.content and self.content.strip())

    def is_tool_call(self) -> bool:
        """Whether the message asks the environment to run tools."""
        return bool(self.tool_calls)

    @classmethod
    def text(
        cls, role: Literal["assistant", "user"], content: str, *, turn_idx: int | None = None
    ) -> Message:
        """Build a plain text turn, stamped now."""
        return cls(role=role, content=content, turn_idx=turn_idx, timestamp=utc_now())

    @classmethod
    def calls(
        cls, role: Literal["assistant", "user"], tool_calls: list[ToolCall], *, turn_idx: int | None = None
    ) -> Message:
        """Build a tool-call turn; each call is re-tagged with the caller's seat as tau2 does."""
        tagged = [call.model_copy(update={"requestor": role}) for call in tool_calls]
        return cls(role=role, tool_calls=tagged, turn_idx=turn_idx, timestamp=utc_now())

    @classmethod
    def tool_result(
        cls, call: ToolCall, content: str, *, error: bool, turn_idx: int | None = None
    ) -> Message:
        """Build the environment's answer to ``call``, stored as its own message after the caller's."""
        return cls(
            role="tool",
            id=call.id,
            content=content,
            requestor=call.requestor,
            error=error,
            turn_idx=turn_idx,
            timestamp=utc_now(),
        )


def trajectory_tool_calls(messages: Sequence[Message]) -> list[ToolCall]:
    """Every tool call of a trajectory in order, each tagged with the seat that made it.

    A call without an explicit ``requestor`` belongs to the role of its message (hand-written task
    histories omit it, and a user's call must not be run on the agent side).
    """
    calls: list[ToolCall] = []
    for message in messages:
        if message.role not in ("assistant", "user"):
            continue
        for call in message.tool_calls or []:
            if "requestor" not in call.model_fields_set and call.requestor != message.role:
                call = call.model_copy(update={"requestor": message.role})
            calls.append(call)
    return calls
