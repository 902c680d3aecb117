"""The chat requests tau2-bench sends each seat, built from a trajectory (pure functions).

Upstream keeps one history per seat and sends it as OpenAI chat messages. Rules (ours, checked
against every request of ``../shared/conformance/tau2-episodes``):

- **agent view**: its own messages as ``assistant`` (``tool_calls`` null for text; each call
  ``{"id", "name", "function": {"name", "arguments"}, "type": "function"}``, the arguments as
  ``json.dumps`` of the call's arguments in their order, with the extra top-level ``name``), user
  texts as ``user`` (no ``tool_calls`` key), and the results of its own calls as ``tool``
  messages with ``tool_call_id``. It never sees the user's tool calls or their results.
- **user view**, roles flipped: the user's own messages as ``assistant`` (with its tool calls),
  the results of its own calls as ``tool``, agent texts as ``user``. It never sees an agent
  message that carries tool calls (not even its text), nor the agent's tool results.
- **sampling**: ``tools`` and ``tool_choice: "auto"`` when the seat has tools (both null
  otherwise), temperature 0, the trial's seed; the judge gets no tools and no seed.

No engine, no scheduler: callers pass a system prompt (``upstream_words.Tau2Words``) and the
trajectory so far, and get the request's ``messages`` back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from .messages import Message, ToolCall


def agent_messages(system: str, trajectory: Sequence[Message]) -> list[dict[str, Any]]:
    """Build the agent's request messages: its system prompt, then its view of the trajectory."""
    return _view(system, trajectory, "assistant")


def user_messages(system: str, trajectory: Sequence[Message]) -> list[dict[str, Any]]:
    """Build the user simulator's request messages: its system prompt, then the flipped view."""
    return _view(system, trajectory, "user")


def _view(system: str, trajectory: Sequence[Message],
          seat: Literal["assistant", "user"]) -> list[dict[str, Any]]:
    """Build ``seat``'s view: its messages as ``assistant``, the other's plain texts, its own results.

    A tool result without a ``requestor`` belongs to the agent, as upstream routes it.
    """
    other = "user" if seat == "assistant" else "assistant"
    out: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for message in trajectory:
        if message.role == seat:
            out.append(_assistant(message))
        elif message.role == other and not message.tool_calls:
            out.append({"role": "user", "content": message.content})
        elif message.role == "tool" and (message.requestor == "user") == (seat == "user"):
            out.append(_tool(message))
    return out


def sampling(tools: list[dict[str, Any]] | None, seed: int | None) -> dict[str, Any]:
    """Give the request's fields besides ``messages``: tools, tool choice, temperature, seed.

    ``seed`` None leaves the key out, as upstream's judge request does.
    """
    fields: dict[str, Any] = {"tools": tools or None, "tool_choice": "auto" if tools else None,
                              "temperature": 0.0}
    if seed is not None:
        fields["seed"] = seed
    return fields


def _assistant(message: Message) -> dict[str, Any]:
    calls = [_call(call) for call in message.tool_calls] if message.tool_calls else None
    return {"role": "assistant", "content": message.content, "tool_calls": calls}


def _call(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}


def _tool(message: Message) -> dict[str, Any]:
    return {"role": "tool", "content": message.content, "tool_call_id": message.id}
