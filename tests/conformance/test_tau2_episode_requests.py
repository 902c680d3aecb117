"""Issue 42 part 1, step 3: upstream's request messages rebuilt from the trajectory, per seat.

Every agent and user request of ``../shared/conformance/tau2-episodes`` is rebuilt from the
recorded final trajectory, cut where the call's own reply enters it, by ``upstream_requests``
(the recorded system message is reused: ``test_tau2_episode_words.py`` checks it). Tool-call
arguments take their order from the scripted replies (the recording's trajectory sorts keys),
or from the task's message history. Skipped with the reason when ``../shared`` lacks the data.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from uxlocal.tau2.conformance import CONFORMANCE_DOMAINS
from uxlocal.tau2.conformance.episodes import read_episodes
from uxlocal.tau2.messages import Message, ToolCall
from uxlocal.tau2.tasks import Task, load_tasks
from uxlocal.tau2.upstream_requests import agent_messages, sampling, user_messages

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
DATA = SHARED / "data" / "tau2"
EPISODES = SHARED / "conformance" / "tau2-episodes"
SEED = 626729
"""The trial seed every recorded request carries (the recording's ``run_config.trial_seed``)."""
CALLS = {"mock": (26, 27), "airline": (82, 57), "retail": (192, 57), "telecom": (88, 155),
         "banking_knowledge": (95, 134)}
"""Agent and user requests per domain, as the recording's README counts them."""


def _history(task: Task) -> list[Message]:
    return list(task.initial_state.message_history or []) if task.initial_state else []


def _trajectory(episode: dict[str, Any], task: Task) -> list[Message]:
    """Rebuild the recorded trajectory as our messages, tool-call arguments in the order sent."""
    sent = {call["id"]: call["function"]["arguments"]  # JSON text (a malformed one never enters)
            for seat in ("agent", "user") for reply in episode["script"][seat]
            for call in reply.get("tool_calls") or []}
    sent.update({call.id: json.dumps(call.arguments)
                 for message in _history(task) for call in message.tool_calls or []})
    raw = episode["result"]["messages"] if episode["result"] else episode["partial"]["messages"]
    out = []
    for message in raw:
        calls = [ToolCall(id=c["id"], name=c["name"], arguments=json.loads(sent[c["id"]]),
                          requestor=c["requestor"]) for c in message.get("tool_calls") or []]
        out.append(Message.model_validate({**message, "tool_calls": calls or None}))
    return out


def _rebuilt(domain: str) -> Counter[str]:
    recording = read_episodes(EPISODES / f"{domain}.json.gz")
    tasks = {task.id: task for task in load_tasks(DATA, domain, split=None)}
    seen: Counter[str] = Counter()
    for episode in recording["episodes"]:
        task = tasks[episode["task_id"]]
        trajectory = _trajectory(episode, task)
        first = len([m for m in _history(task) if m.role != "tool"]) or 1  # the history, else the greeting
        replies = [i for i, m in enumerate(trajectory) if m.role != "tool"][first:]
        seat_calls = [call for call in episode["calls"] if call["seat"] != "judge"]
        for index, call in enumerate(seat_calls):
            end = replies[index] if index < len(replies) else len(trajectory)  # a raising call adds nothing
            request, build = call["request"], agent_messages if call["seat"] == "agent" else user_messages
            seen[call["seat"]] += 1
            seen[f"{call['seat']} equal"] += build(request["messages"][0]["content"], trajectory[:end]) \
                == request["messages"]
            fields = sampling(request["tools"], SEED)
            seen[f"{call['seat']} sampling"] += all(request[key] == value for key, value in fields.items())
        for call in episode["calls"]:
            if call["seat"] == "judge":
                seen["judge"] += 1
                fields = sampling(None, None)
                seen["judge sampling"] += "seed" not in call["request"] and all(
                    call["request"][key] == value for key, value in fields.items())
    return seen


@pytest.mark.parametrize("domain", CONFORMANCE_DOMAINS)
def test_every_recorded_request_is_rebuilt_from_the_trajectory(domain: str) -> None:
    if not (EPISODES / f"{domain}.json.gz").is_file() or not (DATA / "domains" / domain).is_dir():
        pytest.skip(f"the episode recording or tau2 data is not at {EPISODES} / {DATA}")
    seen = _rebuilt(domain)
    assert (seen["agent"], seen["user"]) == CALLS[domain]
    for seat in ("agent", "user"):
        assert seen[f"{seat} equal"] == seen[f"{seat} sampling"] == seen[seat], seen
    assert seen["judge sampling"] == seen["judge"] == (7 if domain == "retail" else 0)
