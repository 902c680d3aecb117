"""results.json (spec §B.2): our runs round-trip every message; tau2-shaped files keep unknown keys."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from uxlocal.errors import InputError
from uxlocal.tau2 import (
    USER_STOP,
    Domain,
    Environment,
    EnvironmentInfo,
    Message,
    Results,
    RunInfo,
    Simulation,
    Task,
    ToolCall,
    compute_reward,
    read_results,
    write_results,
)


def _simulation(domain: Domain, task: Task) -> Simulation:
    """Build a small but complete episode: greeting, user text, tool call + result, user stop."""
    env = Environment.for_task(domain, task)
    call = ToolCall(
        id="call_1", name="create_task", arguments={"user_id": "user_1", "title": "Important Meeting"}
    )
    result = env.call_tool(call)
    messages = [
        Message.text("assistant", "Hi! How can I help you today?", turn_idx=0),
        Message.text("user", "Please create 'Important Meeting' for user_1.", turn_idx=1),
        Message.calls("assistant", [call], turn_idx=2),
        Message.tool_result(call, result.content, error=not result.ok, turn_idx=3),
        Message(
            role="tool",
            id="call_x",
            content="Error: unknown tool 'fly'",
            requestor="assistant",
            error=True,
            turn_idx=4,
        ),
        Message(
            role="assistant",
            content="Done: task_2 is created.",
            turn_idx=5,
            cost=0.0012,
            usage={"prompt_tokens": 120, "completion_tokens": 9},
            raw_data={"finish_reason": "stop"},
        ),
        Message(role="user", content="Thanks! ###STOP###", turn_idx=6, cost=0.0004),
    ]
    reward = compute_reward(domain, task, messages, USER_STOP)
    return Simulation(
        task_id=task.id,
        trial=1,
        seed=300,
        start_time="2026-01-01T00:00:00+00:00",
        end_time="2026-01-01T00:00:03+00:00",
        duration=3.0,
        termination_reason=USER_STOP,
        agent_cost=0.0012,
        user_cost=0.0004,
        reward_info=reward,
        messages=messages,
    )


def test_results_round_trip_preserves_every_message(
    mock: Domain, tasks_of: Callable[[str], list[Task]], tmp_path: Path
) -> None:
    task = tasks_of("mock")[0]
    results = Results(
        info=RunInfo(environment_info=EnvironmentInfo(domain_name="mock", policy=mock.policy_text())),
        tasks=[task],
        simulations=[_simulation(mock, task)],
    )
    (tmp_path / "run").mkdir()
    path = write_results(tmp_path / "run", results)  # a folder gets results.json inside
    assert path == tmp_path / "run" / "results.json"
    loaded = read_results(path)
    assert loaded == results
    assert loaded.simulations[0].messages == results.simulations[0].messages
    assert loaded.simulations[0].reward_info is not None and loaded.simulations[0].reward_info.reward == 1.0
    assert loaded.tasks[0] == task


def _tau2_file() -> dict[str, Any]:
    """Return a results file shaped like tau2's, with fields we do not model (they must survive)."""
    return {
        "timestamp": "2025-06-17T12:00:00",
        "info": {
            "git_commit": "abc",
            "num_trials": 1,
            "max_steps": 200,
            "max_errors": 10,
            "user_info": {
                "implementation": "user_simulator",
                "llm": "gpt-4.1",
                "llm_args": {"temperature": 0},
                "global_simulation_guidelines": "...",
                "voice_settings": None,
            },
            "agent_info": {"implementation": "llm_agent", "llm": "gpt-4.1", "llm_args": {}},
            "environment_info": {"domain_name": "airline", "policy": "...", "tool_defs": None},
            "seed": 300,
            "text_streaming_config": None,
        },
        "tasks": [{"id": "0", "user_scenario": {"instructions": "x"}, "annotations": None}],
        "simulations": [
            {
                "id": "s1",
                "task_id": "0",
                "trial": 0,
                "seed": 300,
                "timestamp": "t",
                "start_time": "a",
                "end_time": "b",
                "duration": 1.5,
                "termination_reason": "user_stop",
                "agent_cost": 0.1,
                "user_cost": 0.0,
                "reward_info": {
                    "reward": 1.0,
                    "db_check": {"db_match": True, "db_reward": 1.0},
                    "reward_basis": ["DB", "COMMUNICATE"],
                    "reward_breakdown": {"DB": 1.0, "COMMUNICATE": 1.0},
                    "info": {"env": None},
                },
                "messages": [
                    {
                        "role": "assistant",
                        "content": "Hi!",
                        "tool_calls": None,
                        "turn_idx": 0,
                        "timestamp": "t0",
                        "cost": 0.0,
                        "usage": None,
                        "raw_data": None,
                        "generation_time_seconds": 0.2,
                        "is_audio": False,
                    },
                    {
                        "role": "user",
                        "content": None,
                        "turn_idx": 1,
                        "timestamp": "t1",
                        "tool_calls": [
                            {"id": "c", "name": "toggle", "arguments": {"on": True}, "requestor": "user"}
                        ],
                    },
                    {
                        "role": "tool",
                        "id": "c",
                        "content": "{}",
                        "requestor": "user",
                        "error": False,
                        "turn_idx": 2,
                        "timestamp": "t2",
                    },
                ],
                "mode": "half_duplex",
                "review": None,
                "hallucination_check": {"flag": False},
            }
        ],
        "simulation_index": None,
    }


def test_tau2_file_round_trips_unknown_fields(tmp_path: Path) -> None:
    source = tmp_path / "tau2.json"
    source.write_text(json.dumps(_tau2_file()))
    loaded = read_results(source)
    assert loaded.simulations[0].messages[1].tool_calls[0].requestor == "user"  # type: ignore[index]
    written = json.loads(write_results(tmp_path / "again.json", loaded).read_text())
    simulation = written["simulations"][0]
    assert simulation["hallucination_check"] == {"flag": False}
    assert simulation["messages"][0]["generation_time_seconds"] == 0.2
    assert written["info"]["text_streaming_config"] is None and written["tasks"][0]["annotations"] is None
    assert read_results(tmp_path / "again.json") == loaded


def test_read_results_accepts_directory_format(tmp_path: Path) -> None:
    raw = _tau2_file()
    simulation = raw["simulations"][0]
    raw["simulations"] = []
    raw["simulation_index"] = [
        {
            "id": "s1",
            "task_id": "0",
            "trial": 0,
            "reward": 1.0,
            "termination_reason": "user_stop",
            "agent_cost": 0.1,
            "duration": 1.5,
        }
    ]
    (tmp_path / "simulations").mkdir()
    (tmp_path / "simulations" / "s1.json").write_text(json.dumps(simulation))
    (tmp_path / "results.json").write_text(json.dumps(raw))
    loaded = read_results(tmp_path)
    assert [s.id for s in loaded.simulations] == ["s1"]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "not valid JSON"),  # broken file
        ("[]", "expected a JSON object"),  # wrong top level
        ('{"info": {}, "simulations": []}', "info.environment_info: Field required"),  # missing field named
    ],
)
def test_read_results_errors_name_file_and_field(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "results.json"
    path.write_text(text)
    with pytest.raises(InputError, match=fragment) as err:
        read_results(path)
    assert str(path) in str(err.value)
