"""The tau2 episode program (issue 4) with scripted fake engines: tools, errors, stops, limits, reward.

Each test runs the real suite (``run_suite``) on the real task data with one ``FakeEngine`` per
role, then reads the store back: the store, not the program's internals, is what users see.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from uxlocal.config import RunConfig
from uxlocal.engine.base import PreparedRequest
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.runner import RunResult, run_suite
from uxlocal.store.db import connect
from uxlocal.tau2 import Domain, Environment, Task, render_scenario

Script = Iterable[Any] | Callable[[PreparedRequest], Any]


def say(text: str) -> str:
    """Write a message turn in the JSON protocol."""
    return json.dumps({"message": text})


def call(tool: str, **arguments: Any) -> str:
    """Write a tool-call turn in the JSON protocol."""
    return json.dumps({"tool": tool, "arguments": arguments})


def verdict(met: bool) -> str:
    return json.dumps({"justification": "checked", "met": met})


class Run:
    """A finished tau2 run: the result, the engines and an open store."""

    def __init__(self, result: RunResult, engines: dict[str, FakeEngine], db: Path) -> None:
        self.result = result
        self.engines = engines
        self.con = connect(db)

    def rows(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return self.con.execute(sql, list(params)).fetchall()

    def episode(self, episode_id: str | None = None) -> dict[str, Any]:
        where, params = ("WHERE episode_id = ?", [episode_id]) if episode_id else ("", [])
        row = self.con.execute(f"SELECT termination, reward, info FROM episodes {where} ORDER BY episode_id",
                               params).fetchone()
        assert row is not None
        return {"termination": row[0], "reward": row[1], "info": json.loads(row[2])}

    def turns(self, episode_id: str | None = None) -> list[tuple[str, str]]:
        where, params = ("WHERE episode_id = ?", [episode_id]) if episode_id else ("", [])
        return [(r[0], r[1]) for r in self.con.execute(
            f"SELECT role, content FROM turns {where} ORDER BY episode_id, idx", params).fetchall()]


def run_tau2(tmp_path: Path, data_dir: Path, *, agent: Script, user: Script, judge: Script = (),
             limit: int | None = 1, fresh: bool = False, **options: Any) -> Run:
    engines = {role: FakeEngine(script, identity=f"fake-{role}")
               for role, script in (("agent", agent), ("user", user), ("judge", judge))}
    pool = ModelPool.from_engines(dict(engines))
    db = tmp_path / "s.duckdb"
    config = {"tau2_data": str(data_dir), **options}
    run = RunConfig(suite="tau2", suite_config=config, db=str(db), limit=limit, progress=False, fresh=fresh)
    return Run(run_suite(run, pool=pool), engines, db)


# --- the happy path -------------------------------------------------------------------------------


def test_agent_tool_call_is_executed_stored_and_rewarded(tmp_path: Path, data_dir: Path) -> None:
    run = run_tau2(
        tmp_path, data_dir, domain="mock", tasks="create_task_1",
        user=[say("Please add a task 'Important Meeting' for user_1."), say("Thanks! ###STOP###")],
        agent=[call("create_task", user_id="user_1", title="Important Meeting"),
               say("Created task_2 for you.")],
    )
    roles = [role for role, _ in run.turns()]
    assert roles == ["assistant", "user", "assistant", "tool", "assistant", "user"]
    name, arguments, ok, result, turn_idx, requestor = run.rows(
        "SELECT name, arguments, ok, result, turn_idx, requestor FROM tool_calls")[0]
    assert (name, json.loads(arguments), ok, requestor) == (
        "create_task", {"user_id": "user_1", "title": "Important Meeting"}, True, "assistant")
    assert json.loads(result)["task_id"] == "task_2" and turn_idx == 2
    episode = run.episode()
    assert episode["termination"] == "user_stop" and episode["reward"] == 1.0
    assert episode["info"]["reward_info"]["db_check"]["db_match"] is True
    # the tool result went back to the agent, not to the user
    agent_last = run.engines["agent"].requests[-1].request.messages
    user_last = run.engines["user"].requests[-1].request.messages
    assert any("Tool result (create_task)" in m["content"] for m in agent_last)
    assert not any("task_2" in m["content"] and "Tool result" in m["content"] for m in user_last)


def test_first_message_is_the_fixed_greeting_and_history_is_replayed(tmp_path: Path, data_dir: Path) -> None:
    run = run_tau2(tmp_path, data_dir, domain="mock", tasks="update_task_with_message_history",
                   user=[say("###STOP###")], agent=[])
    roles = [role for role, _ in run.turns()]
    # the task's four history messages come first; the history ends with an agent message, so the
    # user speaks next and there is no greeting
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    assert run.engines["agent"].calls == 0
    fresh = run_tau2(tmp_path / "g", data_dir, domain="mock", tasks="create_task_1", user=[say("###STOP###")],
                     agent=[])
    assert fresh.turns()[0] == ("assistant", "Hi! How can I help you today?")


# --- errors -----------------------------------------------------------------------------------------

BAD_CALLS = [
    call("delete_everything"),  # unknown tool
    call("get_order_details", order_id=123),  # wrong type: runs raw, as in tau2, and finds nothing
    call("get_order_details"),  # missing argument
    call("get_order_details", order_id="#W0000000"),  # unknown id
    call("find_user_id_by_email", email="nobody@example.com"),  # unknown user
]


def test_invalid_tool_calls_return_error_results_and_end_as_too_many_errors(
    tmp_path: Path, data_dir: Path
) -> None:
    run = run_tau2(tmp_path, data_dir, domain="retail", max_errors=5,
                   user=["I need help with an order."], agent=BAD_CALLS)
    rows = run.rows("SELECT name, ok, error, result FROM tool_calls ORDER BY turn_idx")
    assert len(rows) == 5 and not any(ok for _, ok, _, _ in rows)
    assert all(result.startswith("Error: ") for *_, result in rows)
    errors = [error for _, _, error, _ in rows]
    assert "Tool 'delete_everything' not found." in errors[0]
    assert errors[1] == "Order not found" and "argument: 'order_id'" in errors[2]
    assert errors[3] == "Order not found" and errors[4] == "User not found"
    tool_messages = run.rows("SELECT meta->>'$.message.error' FROM turns WHERE role = 'tool'")
    assert [r[0] for r in tool_messages] == ["true"] * 5
    episode = run.episode()
    assert episode["termination"] == "too_many_errors" and episode["reward"] == 0.0
    assert episode["info"]["errors"] == 5


def test_unusable_output_counts_as_error_and_is_asked_again_with_a_note(
    tmp_path: Path, data_dir: Path
) -> None:
    agent = [
        {"text": '{"message": "I will look into th', "finish_reason": "length"},  # cut off by max_tokens
        json.dumps({"neither": 1}),  # valid JSON, not a turn
        say("Could you give me your email address?"),
    ]
    run = run_tau2(tmp_path, data_dir, domain="retail", user=["Hi, I need help.", "###STOP###"], agent=agent)
    requests = [p.request.messages for p in run.engines["agent"].requests]
    assert len(requests) == 3
    assert "could not be used" in requests[1][-1]["content"] and "truncated" in requests[1][-1]["content"]
    assert requests[2][-1]["content"].endswith("(attempt 2)")  # every retry prompt is new
    # rejected outputs never reach the trajectory
    assert [c for _, c in run.turns()][2] == "Could you give me your email address?"
    info = run.episode()["info"]
    assert info["errors"] == 2 and [e["seat"] for e in info["format_errors"]] == ["agent", "agent"]


def test_repeated_unusable_output_ends_as_too_many_errors(tmp_path: Path, data_dir: Path) -> None:
    run = run_tau2(tmp_path, data_dir, domain="retail", max_errors=3, user=["Hello"],
                   agent=lambda p: {"text": "{", "finish_reason": "length"})
    assert run.episode()["termination"] == "too_many_errors"
    assert len(run.engines["agent"].requests) == 3


def test_empty_user_message_is_an_error_not_a_turn(tmp_path: Path, data_dir: Path) -> None:
    run = run_tau2(tmp_path, data_dir, domain="retail", user=["   ", "###STOP###"], agent=[])
    assert run.episode()["termination"] == "user_stop"
    assert run.turns()[1] == ("user", "###STOP###") and run.episode()["info"]["errors"] == 1


# --- endings ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("stop", [
    "Thanks, that is all. ###STOP###",  # text before the token is kept, the agent never answers
    "###TRANSFER###",  # transferred: also user_stop in tau2
    "###OUT-OF-SCOPE###",  # the scenario ran out
])
def test_user_stop_tokens_end_the_episode_as_user_stop(tmp_path: Path, data_dir: Path, stop: str) -> None:
    run = run_tau2(tmp_path, data_dir, domain="retail", user=["I want to return an item.", stop],
                   agent=[say("Sure, what is your email?")], judge=lambda p: verdict(True))
    episode = run.episode()
    assert episode["termination"] == "user_stop" and run.turns()[-1] == ("user", stop)
    assert run.engines["agent"].calls == 1


def test_max_steps_cuts_the_conversation_and_scores_zero(tmp_path: Path, data_dir: Path) -> None:
    run = run_tau2(tmp_path, data_dir, domain="airline", tasks="0", max_steps=5,
                   user=lambda p: "Can you check my reservation?",
                   agent=lambda p: say("Let me see.") if len(p.request.messages) % 2
                   else call("list_all_airports"))
    episode = run.episode()
    assert episode["termination"] == "max_steps" and episode["reward"] == 0.0
    assert len(run.turns()) == 1 + 5  # the greeting is not a step
    assert episode["info"]["reward_info"]["info"]["note"].startswith("not scored")


def test_max_steps_waits_for_the_pending_tool_result(tmp_path: Path, data_dir: Path) -> None:
    run = run_tau2(tmp_path, data_dir, domain="airline", tasks="0", max_steps=2, user=["Hi"],
                   agent=[call("list_all_airports")])
    assert [role for role, _ in run.turns()] == ["assistant", "user", "assistant", "tool"]
    assert run.episode()["termination"] == "max_steps"


@pytest.mark.parametrize("seat", ["agent", "user"])
def test_context_window_ends_the_episode_normally(tmp_path: Path, data_dir: Path, seat: str) -> None:
    full = {"text": "", "finish_reason": "context_window"}
    scripts = {"agent": [full], "user": ["Hello"]} if seat == "agent" else {"agent": [], "user": [full]}
    run = run_tau2(tmp_path, data_dir, domain="retail", **scripts)  # type: ignore[arg-type]
    episode = run.episode()
    assert episode["termination"] == "context_window_exceeded" and episode["reward"] == 0.0
    assert seat in episode["info"]["termination_detail"]
    assert run.result.stats.episodes_failed == 0 and run.engines["judge"].calls == 0


def test_engine_failure_is_an_infrastructure_error_left_out_of_the_reward(
    tmp_path: Path, data_dir: Path
) -> None:
    run = run_tau2(tmp_path, data_dir, domain="retail", limit=2, user=["Hello", "Hi there"],
                   agent=[{"text": "", "finish_reason": "error"}, say("How can I help?")],
                   max_steps=2)
    terminations = sorted(r[0] for r in run.rows("SELECT termination FROM episodes"))
    assert terminations == ["infrastructure_error", "max_steps"]
    scored = run.rows("SELECT episodes, scored_episodes FROM tau2_summary")
    assert scored == [(2, 1)]


# --- user tools -------------------------------------------------------------------------------------


def test_user_tool_calls_run_on_the_user_side_and_stay_hidden_from_the_agent(
    tmp_path: Path, data_dir: Path
) -> None:
    run = run_tau2(
        tmp_path, data_dir, domain="mock", tasks="update_task_with_user_tools",
        user=[call("check_notifications"), say("I got a notification, please complete task_1."),
              say("###STOP###")],
        agent=[call("update_task_status", task_id="task_1", status="completed"), say("Done.")],
    )
    rows = run.rows("SELECT requestor, name, ok FROM tool_calls ORDER BY turn_idx")
    assert rows == [("user", "check_notifications", True), ("assistant", "update_task_status", True)]
    user_requests = run.engines["user"].requests
    assert user_requests[0].request.constraint is not None  # the mock user has tools: JSON turns
    assert any("Tool result (check_notifications)" in m["content"] for m in user_requests[1].request.messages)
    for prepared in run.engines["agent"].requests:
        assert not any("check_notifications" in m["content"] for m in prepared.request.messages[1:])


# --- reward with the judge ----------------------------------------------------------------------------


def test_nl_assertions_are_judged_stored_and_gate_the_reward(
    tmp_path: Path, data_dir: Path, tasks_of: Callable[[str], list[Task]]
) -> None:
    task = next(t for t in tasks_of("retail") if t.id == "62")  # no write; two NL assertions gate
    assertions = task.evaluation_criteria.nl_assertions if task.evaluation_criteria else None
    assert assertions
    cut_off = {"text": '{"justif', "finish_reason": "length"}
    judge_outputs = [verdict(True)] * (len(assertions) - 1) + [cut_off]
    run = run_tau2(tmp_path, data_dir, domain="retail", tasks="62", limit=None,
                   user=["###STOP###"], agent=[], judge=judge_outputs)
    rows = run.rows("SELECT name, label, score, valid, rationale FROM verdicts ORDER BY name")
    assert [r[0] for r in rows] == [f"nl_assertion:{k}" for k in range(len(assertions))]
    assert rows[-1][1:4] == ("not_met", 0.0, False) and "judge output unusable" in rows[-1][4]
    info = run.episode()["info"]["reward_info"]
    assert info["reward_breakdown"]["NL_ASSERTION"] == 0.0 and run.episode()["reward"] == 0.0
    assert info["db_check"]["db_match"] is True


def test_judge_is_not_called_when_nl_assertions_do_not_gate(tmp_path: Path, data_dir: Path) -> None:
    run = run_tau2(tmp_path, data_dir, domain="airline", tasks="0", user=["###STOP###"], agent=[])
    assert run.engines["judge"].calls == 0 and run.rows("SELECT count(*) FROM verdicts") == [(0,)]
    again = run_tau2(tmp_path / "always", data_dir, domain="airline", tasks="0", judge_nl="always",
                     user=["###STOP###"], agent=[], judge=lambda p: verdict(False))
    assert again.engines["judge"].calls == 1
    assert again.episode()["reward"] == 1.0  # judged as a diagnostic only (basis DB, COMMUNICATE)


# --- the orchestrator path on every task --------------------------------------------------------------


def _no_write_ids(domain: Domain, tasks: list[Task]) -> set[str]:
    probe = Environment(domain)
    return {t.id for t in tasks
            if not any(probe.tool_kind(a.name, a.requestor) == "write"
                       for a in ((t.evaluation_criteria.actions or []) if t.evaluation_criteria else []))}


NOOP_WRITE_TASKS = {"retail": {"105"}, "airline": set()}
"""Write tasks whose gold write is refused by the tools, so the gold DB is the initial DB
(retail 105: the gift card cannot cover the exchange; see test_tau2_reward.py)."""


@pytest.mark.parametrize("name", ["retail", "airline"])
def test_do_nothing_agent_through_the_orchestrator_matches_db_exactly_on_no_write_tasks(
    request: pytest.FixtureRequest, tmp_path: Path, data_dir: Path, tasks_of: Callable[[str], list[Task]],
    name: str,
) -> None:
    domain: Domain = request.getfixturevalue(name)
    run = run_tau2(tmp_path, data_dir, domain=name, limit=None, user=lambda p: "###STOP###", agent=[],
                   judge=lambda p: verdict(True))
    matched = {r[0].split("/")[1] for r in run.rows(
        "SELECT episode_id FROM episodes WHERE (info->>'$.reward_info.db_check.db_match')::BOOLEAN")}
    assert matched == _no_write_ids(domain, tasks_of(name)) | NOOP_WRITE_TASKS[name]
    assert run.engines["agent"].calls == 0


def _gold_player(domain: Domain, tasks: dict[str, Task]) -> Callable[[PreparedRequest], str]:
    """Script an agent that plays a task's gold actions, one per turn, then says it is done.

    The user's first message names the task, so the script knows which gold list to play.
    """
    def play(prepared: PreparedRequest) -> str:
        messages = prepared.request.messages
        task_id = next(m["content"] for m in messages if m["role"] == "user").split()[-1]
        criteria = tasks[task_id].evaluation_criteria
        actions = [a for a in (criteria.actions or []) if a.requestor == "assistant"] if criteria else []
        done = sum(1 for m in messages if m["role"] == "assistant" and m["content"].startswith('{"tool"'))
        if done < len(actions):
            return call(actions[done].name, **actions[done].arguments)
        return say("All done.")
    return play


@pytest.mark.parametrize("name", ["retail", "airline"])
def test_gold_actions_played_by_the_agent_score_db_one_on_every_task(
    request: pytest.FixtureRequest, tmp_path: Path, data_dir: Path, tasks_of: Callable[[str], list[Task]],
    name: str,
) -> None:
    domain: Domain = request.getfixturevalue(name)
    tasks = {t.id: t for t in tasks_of(name)}

    by_scenario = {render_scenario(t.user_scenario): t.id for t in tasks.values()}

    def opening_user(prepared: PreparedRequest) -> str:
        chat = prepared.request.messages
        if len(chat) == 2:  # system prompt + greeting: say which task this is
            scenario = chat[0]["content"].split("<scenario>\n", 1)[1].rsplit("\n</scenario>", 1)[0]
            return f"I am calling about task {by_scenario[scenario]}"
        return "###STOP###"

    run = run_tau2(tmp_path, data_dir, domain=name, limit=None, user=opening_user,
                   agent=_gold_player(domain, tasks), judge=lambda p: verdict(True))
    rows = run.rows("SELECT episode_id, (info->>'$.reward_info.db_check.db_match')::BOOLEAN, "
                    "(info->>'$.reward_info.info.env.replay_mismatches')::INTEGER FROM episodes")
    assert len(rows) == len(tasks)
    assert [r[0] for r in rows if not r[1]] == [] and {r[2] for r in rows} == {0}
    terminations = {r[0] for r in run.rows("SELECT DISTINCT termination FROM episodes")}
    assert terminations == {"user_stop"}


# --- batching -------------------------------------------------------------------------------------


def test_many_episodes_of_different_lengths_are_batched_per_model(tmp_path: Path, data_dir: Path) -> None:
    def user(prepared: PreparedRequest) -> str:
        chat = prepared.request.messages
        scenario_len = len(chat[0]["content"])
        turns = sum(1 for m in chat if m["role"] == "assistant")
        return "###STOP###" if turns >= 1 + scenario_len % 4 else f"Question {turns} on case {scenario_len}"

    run = run_tau2(tmp_path, data_dir, domain="retail", limit=12, trials=2, user=user,
                   agent=lambda p: say(f"Answer {len(p.request.messages)}"), judge=lambda p: verdict(True))
    stats = run.result.stats
    assert stats.episodes_done == 24 and stats.episodes_failed == 0
    lengths = {r[0] for r in run.rows("SELECT n_turns FROM episodes")}
    assert len(lengths) > 1  # episodes really differ in length
    engine_calls = sum(e.calls for e in run.engines.values())
    assert engine_calls < stats.requests
    # trials of one task ask identical prompts (greedy), which the scheduler generates once
    assert max(len(b) for b in run.engines["agent"].batches) >= 10


def test_rerun_replays_from_the_cache_with_no_engine_calls(tmp_path: Path, data_dir: Path) -> None:
    def script(prepared: PreparedRequest) -> str:
        role = prepared.request.role
        if role == "user":
            return "###STOP###" if len(prepared.request.messages) > 3 else "Where is my order?"
        if role == "agent":
            return say("Please share your email.")
        return verdict(True)

    first = run_tau2(tmp_path, data_dir, domain="retail", limit=3, user=script, agent=script, judge=script)
    assert sum(e.calls for e in first.engines.values()) > 0
    rewards = first.rows("SELECT episode_id, termination, reward FROM episodes ORDER BY 1")
    first.con.close()
    # a new run id (fresh) on the same store: every generation comes back from the cache
    again = run_tau2(tmp_path, data_dir, domain="retail", limit=3, user=script, agent=script, judge=script,
                     fresh=True)
    assert sum(e.calls for e in again.engines.values()) == 0
    run_id = again.result.run_id
    assert again.rows("SELECT episode_id, termination, reward FROM episodes WHERE run_id = ? ORDER BY 1",
                      run_id) == rewards
