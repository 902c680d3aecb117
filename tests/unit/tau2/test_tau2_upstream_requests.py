"""Per-seat request messages built from a trajectory (``upstream_requests``), on a hand-made one.

Every recorded request is rebuilt in ``tests/conformance/test_tau2_episode_requests.py``.
"""

from __future__ import annotations

from uxlocal.tau2.messages import Message, ToolCall
from uxlocal.tau2.upstream_requests import agent_messages, sampling, user_messages


def _trajectory() -> list[Message]:
    agent_call = ToolCall(id="a1", name="look", arguments={"z": 1, "a": 2}, requestor="assistant")
    user_call = ToolCall(id="u1", name="reboot", arguments={}, requestor="user")
    return [
        Message(role="assistant", content="Hello."),
        Message(role="user", content="Help."),
        Message(role="assistant", content="Checking.", tool_calls=[agent_call]),
        Message(role="tool", id="a1", requestor="assistant", content="found"),
        Message(role="assistant", content="Please reboot."),
        Message(role="user", tool_calls=[user_call]),
        Message(role="tool", id="u1", requestor="user", content="rebooted", error=False),
        Message(role="user", content="Done."),
    ]


def test_agent_view_keeps_its_calls_and_hides_the_users_tools() -> None:
    messages = agent_messages("S", _trajectory())
    roles = ["system", "assistant", "user", "assistant", "tool", "assistant", "user"]
    assert [m["role"] for m in messages] == roles
    call = messages[3]["tool_calls"][0]
    assert messages[3]["content"] == "Checking."
    assert call == {"id": "a1", "name": "look", "type": "function",
                    "function": {"name": "look", "arguments": '{"z": 1, "a": 2}'}}  # the order as called
    assert messages[4] == {"role": "tool", "content": "found", "tool_call_id": "a1"}
    assert messages[2] == {"role": "user", "content": "Help."} and messages[1]["tool_calls"] is None


def test_user_view_flips_roles_and_never_sees_agent_tool_messages() -> None:
    messages = user_messages("S", _trajectory())
    assert [(m["role"], m["content"]) for m in messages] == [
        ("system", "S"), ("user", "Hello."), ("assistant", "Help."), ("user", "Please reboot."),
        ("assistant", None), ("tool", "rebooted"), ("assistant", "Done.")]
    assert messages[4]["tool_calls"][0]["function"] == {"name": "reboot", "arguments": "{}"}


def test_sampling_offers_tools_only_when_there_are_some() -> None:
    tools = [{"type": "function", "function": {"name": "look"}}]
    assert sampling(tools, 7) == {"tools": tools, "tool_choice": "auto", "temperature": 0.0, "seed": 7}
    assert sampling([], None) == {"tools": None, "tool_choice": None, "temperature": 0.0}
