"""What each seat sees: the shared trajectory rendered as a plain chat for one seat's model.

Engines take ``{role, content}`` chats rendered by the model's own template, so tool traffic is
written as text: a seat's own tool call is its past turn in the protocol's JSON, and a tool result
comes back as a ``user`` message starting with ``Tool result``. That keeps the strict
user/assistant alternation most chat templates expect (runs of one role are merged).

- Agent view: customer text as ``user``, its own turns as ``assistant``, its own tool results as
  ``user``. The user's tool traffic is never shown.
- User view, role-flipped as tau2 does (spec §B.3.2): the agent's *text* as ``user``, the user's
  own turns as ``assistant``, the user's own tool results as ``user``. The agent's tool calls and
  results are dropped, so the user never sees them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from uxlocal.tau2 import Message

from .actions import TurnAction, action_json

Chat = list[dict[str, str]]
Seat = Literal["assistant", "user"]


def seat_view(
    seat: Seat, system: str, messages: Sequence[Message], *, json_turns: bool = True
) -> Chat:
    """Render the chat ``seat`` answers next.

    ``json_turns=False`` writes the seat's own text plainly: a plain-text user seat never wrote
    JSON, so it should not see its past turns as JSON.
    """
    names = _call_names(messages)
    chat: Chat = [{"role": "system", "content": system}]
    for message in messages:
        chat.extend(_render(seat, message, names, json_turns))
    return merge_runs(chat)


def _render(seat: Seat, message: Message, names: dict[str, str], json_turns: bool) -> Chat:
    if message.role == "tool":
        if (message.requestor or "assistant") != seat:
            return []
        name = names.get(message.id or "", "a tool")
        return [{"role": "user", "content": f"Tool result ({name}):\n{message.content or ''}"}]
    if message.role not in ("assistant", "user"):
        return []
    own = message.role == seat
    out: Chat = []
    if message.has_text():
        text = (message.content or "").strip()
        content = action_json(TurnAction("message", text=text)) if own and json_turns else text
        out.append({"role": "assistant" if own else "user", "content": content})
    if own:
        for call in message.tool_calls or []:
            action = TurnAction("tool", tool=call.name, arguments=call.arguments)
            out.append({"role": "assistant", "content": action_json(action)})
    return out


def _call_names(messages: Sequence[Message]) -> dict[str, str]:
    return {call.id: call.name for m in messages for call in m.tool_calls or [] if call.id}


def merge_runs(chat: Chat) -> Chat:
    """Join consecutive messages of one role (templates that demand alternation reject runs)."""
    merged: Chat = []
    for message in chat:
        if merged and merged[-1]["role"] == message["role"] and message["role"] != "system":
            joined = merged[-1]["content"] + "\n\n" + message["content"]
            merged[-1] = {"role": message["role"], "content": joined}
        else:
            merged.append(dict(message))
    return merged


def with_retry_notes(chat: Chat, attempts: Sequence[tuple[str, str]], *, json_turns: bool) -> Chat:
    """Append every rejected output of this turn, each followed by a note asking again.

    Keeping all attempts makes each retry prompt different, so greedy decoding (and the cache,
    which would answer an identical prompt with the identical output) cannot loop on one answer.
    """
    shape = (
        'Answer again with exactly one JSON object: {"message": "..."} or '
        '{"tool": "<name>", "arguments": {...}}.'
        if json_turns
        else "Write your next message again."
    )
    extra: Chat = []
    for number, (rejected, problem) in enumerate(attempts, start=1):
        if rejected.strip():
            extra.append({"role": "assistant", "content": rejected})
        note = f"(Your last turn could not be used: {problem}. {shape})"
        extra.append({"role": "user", "content": note if number == 1 else f"{note} (attempt {number})"})
    return merge_runs(chat + extra)


def tool_list(tool_schemas: Sequence[dict[str, object]]) -> str:
    """One compact JSON function description per line, for a seat's system prompt."""
    lines = (json.dumps(schema.get("function", schema), ensure_ascii=False) for schema in tool_schemas)
    return "\n".join(lines)
