"""The trajectory as the UFS grader (and the criteria writer's sample) reads it.

Every message becomes one numbered block; the number is the message's position in the
trajectory (0-based, the same as tau2's ``turn_idx`` and the store's ``turns.idx``), so a judge's
``evidence_turns`` point straight at stored rows. The simulated user's turns are marked
``USER*``: it is the only party being evaluated. Agent tool calls and tool results stay visible
(spec §A.9 step 5), each result labelled with the side that called it.

Nothing about who played either seat is shown: no model names, costs, token counts or raw
provider data; only the roles and what was said and done.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from uxlocal.tau2 import Message

USER_MARK = "USER*"
LEGEND = (
    f"Each block starts with its turn number. {USER_MARK} marks the simulated user's turns (the only "
    "party under evaluation); AGENT is the customer-service agent; TOOL blocks are results returned "
    "to whichever side made the call. The agent never sees the user's tool calls or their results."
)


def render_trajectory(messages: Sequence[Message], *, max_tool_chars: int | None = None) -> str:
    """Render a trajectory as numbered blocks; ``max_tool_chars`` shortens long tool results.

    Tool results are cut (with a note saying how much) only when ``max_tool_chars`` is set: a
    judge that must check a groundedness claim needs the result, so the default keeps it whole.
    """
    names = {call.id: call.name for m in messages for call in m.tool_calls or [] if call.id}
    blocks = []
    for index, message in enumerate(messages):
        block = _block(index, message, names, max_tool_chars)
        if block:
            blocks.append(block)
    return "\n\n".join(blocks) if blocks else "(empty conversation)"


def _who(role: str) -> str:
    return USER_MARK if role == "user" else "AGENT"


def _block(index: int, message: Message, names: dict[str, str], cap: int | None) -> str:
    if message.role == "system":
        return ""
    if message.role == "tool":
        caller = _who(message.requestor or "assistant")
        name = names.get(message.id or "", "tool")
        status = "error" if message.error else "result"
        return f"[{index}] TOOL {status} for {caller} ({name}):\n{_cut(message.content or '', cap)}"
    who = _who(message.role)
    parts = []
    if message.has_text():
        parts.append(f"[{index}] {who} says:\n{(message.content or '').strip()}")
    for call in message.tool_calls or []:
        arguments = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True)
        parts.append(f"[{index}] {who} calls tool {call.name} with {arguments}")
    return "\n".join(parts) if parts else f"[{index}] {who} says nothing"


def _cut(text: str, cap: int | None) -> str:
    if cap is None or len(text) <= cap:
        return text
    return f"{text[:cap]} [... {len(text) - cap} more characters not shown]"


def user_turns(messages: Sequence[Message]) -> list[int]:
    """Positions of the user's messages (text or tool calls): the valid ``evidence_turns`` targets."""
    return [i for i, m in enumerate(messages) if m.role == "user"]
