"""Reward (spec §B.4.8) on the real tasks: gold replays, do-nothing agents, each component, two phases."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from uxlocal.tau2 import (
    AGENT_STOP,
    TERMINATION_REASONS,
    USER_STOP,
    Action,
    Domain,
    Environment,
    Message,
    NLVerdict,
    Task,
    ToolCall,
    compute_reward,
    judge_transcript,
    score_episode,
    user_stop_token,
)
from uxlocal.tau2.db import hash_of_dump
from uxlocal.tau2.reward import action_matches, communicate_checks, with_history

Tasks = Callable[[str], list[Task]]
Gold = Callable[[Task, Environment], list[Message]]

NO_WRITE_COUNTS = {"airline": 24, "retail": 10}
"""Spec §B.1.2: tasks whose gold actions contain no write call."""

NOOP_WRITE_TASKS = {
    "retail": {
        # gold exchange_delivered_order_items pays a $21.10 difference with gift_card_7245904, which
        # holds $17.00; the tool refuses it (spec §B.4.4), so the gold DB is the initial DB
        "105": "gold write refused: gift card balance 17.0 < price difference 21.1",
    },
}
"""Write tasks whose gold actions nonetheless leave the DB unchanged, with the reason."""


def _write_task_ids(domain: Domain, tasks: list[Task]) -> set[str]:
    env = Environment(domain)
    written = set()
    for task in tasks:
        actions = (task.evaluation_criteria.actions or []) if task.evaluation_criteria else []
        if any(env.tool_kind(a.name, a.requestor) == "write" for a in actions):
            written.add(task.id)
    return written


@pytest.mark.parametrize("name", ["mock", "retail", "airline"])
def test_gold_actions_replayed_through_tools_score_db_one(
    request: pytest.FixtureRequest, tasks_of: Tasks, gold_trajectory: Gold, name: str
) -> None:
    domain: Domain = request.getfixturevalue(name)
    failures = []
    for task in tasks_of(name):
        env = Environment.for_task(domain, task)
        draft = score_episode(domain, task, gold_trajectory(task, env), USER_STOP)
        assert draft.partial.db_check is not None
        if not draft.partial.db_check.db_match:
            failures.append(task.id)
        assert draft.partial.info is not None and draft.partial.info["env"]["replay_mismatches"] == 0
    assert failures == []
    # the shared snapshot is untouched after every episode: same hash as a fresh read of the file
    fresh = domain.spec.agent_db.ROOT.model_validate_json(domain.agent_snapshot.source.read_bytes())  # type: ignore[union-attr]
    assert domain.agent_snapshot.fingerprint() == hash_of_dump(fresh.model_dump())


@pytest.mark.parametrize("name", ["mock", "retail", "airline"])
def test_do_nothing_agent_matches_db_exactly_on_no_write_tasks(
    request: pytest.FixtureRequest, tasks_of: Tasks, name: str
) -> None:
    domain: Domain = request.getfixturevalue(name)
    tasks = tasks_of(name)
    no_write = {t.id for t in tasks} - _write_task_ids(domain, tasks)
    if name in NO_WRITE_COUNTS:
        assert len(no_write) == NO_WRITE_COUNTS[name]
    noop = set(NOOP_WRITE_TASKS.get(name, {}))
    assert noop <= _write_task_ids(domain, tasks)  # the exception list names real write tasks
    matched = set()
    for task in tasks:
        draft = score_episode(
            domain, task, [Message.text("assistant", "Hi! How can I help you today?")], USER_STOP
        )
        assert draft.partial.db_check is not None
        if draft.partial.db_check.db_match:
            matched.add(task.id)
    assert matched == no_write | noop


def test_no_write_task_ids_match_the_data(airline: Domain, retail: Domain, tasks_of: Tasks) -> None:
    airline_ids = {t.id for t in tasks_of("airline")} - _write_task_ids(airline, tasks_of("airline"))
    assert airline_ids == {
        "0",
        "1",
        "2",
        "3",
        "4",
        "5",
        "6",
        "9",
        "10",
        "13",
        "26",
        "27",
        "28",
        "31",
        "34",
        "36",
        "38",
        "41",
        "43",
        "45",
        "46",
        "47",
        "48",
        "49",
    }
    retail_ids = {t.id for t in tasks_of("retail")} - _write_task_ids(retail, tasks_of("retail"))
    assert retail_ids == {"10", "12", "24", "25", "50", "57", "62", "65", "67", "68"}


@pytest.mark.parametrize("reason", [r for r in TERMINATION_REASONS if r not in (USER_STOP, AGENT_STOP)])
def test_unscored_terminations_get_zero(airline: Domain, tasks_of: Tasks, reason: str) -> None:
    task = tasks_of("airline")[0]  # a no-write task a do-nothing agent would otherwise pass
    info = compute_reward(airline, task, [], reason)
    assert info.reward == 0.0 and reason in (info.info or {})["note"]
    assert compute_reward(airline, task, [], AGENT_STOP).reward == 1.0


def test_task_without_criteria_scores_one(mock: Domain, tasks_of: Tasks) -> None:
    task = tasks_of("mock")[0].model_copy(update={"evaluation_criteria": None})
    assert compute_reward(mock, task, [], USER_STOP).reward == 1.0


def test_communicate_ignores_case_commas_and_non_assistant_turns() -> None:
    trajectory = [
        Message.text("user", "it cost 1,628 dollars"),
        Message(role="tool", content="1628"),
        Message.text("assistant", "The refund is $1,628, and it goes to your MasterCard."),
    ]
    checks = communicate_checks(["1628", "mastercard", "1000"], trajectory)
    assert [c.met for c in checks] == [True, True, False]
    assert communicate_checks(["1628"], trajectory[:2])[0].met is False  # only the candidate's words count


def test_communicate_gates_airline_reward(airline: Domain, tasks_of: Tasks, gold_trajectory: Gold) -> None:
    task = next(
        t for t in tasks_of("airline") if t.evaluation_criteria and t.evaluation_criteria.communicate_info
    )
    assert task.evaluation_criteria is not None
    trajectory = gold_trajectory(task, Environment.for_task(airline, task))
    silent = compute_reward(airline, task, trajectory, USER_STOP)
    assert silent.reward_breakdown == {"DB": 1.0, "COMMUNICATE": 0.0} and silent.reward == 0.0
    said = "; ".join(task.evaluation_criteria.communicate_info or [])
    told = compute_reward(airline, task, [*trajectory, Message.text("assistant", said)], USER_STOP)
    assert told.reward == 1.0


@pytest.mark.parametrize(
    ("compare_args", "arguments", "requestor", "matches"),
    [
        (None, {"task_id": "task_1", "status": "completed"}, "assistant", True),  # all gold args compared
        (None, {"task_id": "task_1", "status": "pending"}, "assistant", False),  # one differs
        (["task_id"], {"task_id": "task_1", "status": "pending"}, "assistant", True),  # only task_id compared
        ([], {"task_id": "task_9"}, "assistant", True),  # [] means the name alone
        (None, {"task_id": "task_1", "status": "completed"}, "user", False),  # the other seat's call
    ],
)
def test_action_matching_follows_compare_args(
    compare_args: list[str] | None, arguments: dict[str, Any], requestor: str, matches: bool
) -> None:
    action = Action(
        action_id="a",
        name="update_task_status",
        arguments={"task_id": "task_1", "status": "completed"},
        compare_args=compare_args,
    )
    call = ToolCall(name="update_task_status", arguments=arguments, requestor=requestor)  # type: ignore[arg-type]
    assert action_matches(action, call) is matches


def test_action_reward_requires_transfer_on_impossible_task(mock: Domain, tasks_of: Tasks) -> None:
    task = next(t for t in tasks_of("mock") if t.id == "impossible_task_1")
    refused = compute_reward(mock, task, [Message.text("assistant", "I cannot delete tasks.")], USER_STOP)
    assert refused.reward_breakdown == {"DB": 1.0, "ACTION": 0.0}
    call = ToolCall(id="t", name="transfer_to_human_agents", arguments={"summary": "anything"})
    transferred = compute_reward(mock, task, [Message.calls("assistant", [call])], USER_STOP)
    assert transferred.reward == 1.0
    assert transferred.action_checks is not None and transferred.action_checks[0].tool_type == "generic"


def test_env_assertion_runs_on_final_environment(
    mock: Domain, tasks_of: Tasks, gold_trajectory: Gold
) -> None:
    task = next(t for t in tasks_of("mock") if t.id == "create_task_1_with_env_assertions")
    done = compute_reward(mock, task, gold_trajectory(task, Environment.for_task(mock, task)), USER_STOP)
    assert done.reward_breakdown == {"DB": 1.0, "ENV_ASSERTION": 1.0}
    idle = compute_reward(mock, task, [], USER_STOP)
    assert idle.reward_breakdown == {"DB": 0.0, "ENV_ASSERTION": 0.0}
    assert idle.env_assertions is not None and idle.env_assertions[0].met is False


def test_history_prefix_counts_once_whether_or_not_it_is_included(mock: Domain, tasks_of: Tasks) -> None:
    task = next(t for t in tasks_of("mock") if t.id == "update_task_with_message_history")
    history = task.initial_state.message_history if task.initial_state else None
    assert history
    call = ToolCall(id="u", name="update_task_status", arguments={"task_id": "task_2", "status": "completed"})
    tail = [Message.calls("assistant", [call])]
    assert with_history(task, tail)[: len(history)] == history
    assert with_history(task, [*history, *tail]) == [*history, *tail]
    assert compute_reward(mock, task, tail, USER_STOP).reward_breakdown == {"DB": 1.0, "COMMUNICATE": 1.0}
    assert compute_reward(mock, task, [*history, *tail], USER_STOP).reward == 1.0


def test_user_tool_task_fails_db_when_user_dismisses_as_instructed(mock: Domain, tasks_of: Tasks) -> None:
    # Data quirk, kept for parity: the gold actions of this task omit the user's dismiss_notification,
    # so a run that follows the scenario ends with a user DB that differs from the gold one.
    task = next(t for t in tasks_of("mock") if t.id == "update_task_with_user_tools")
    agent = ToolCall(
        id="a", name="update_task_status", arguments={"task_id": "task_1", "status": "completed"}
    )
    dismiss = ToolCall(id="u", name="dismiss_notification", arguments={"notification_id": "notif_1"})
    info = compute_reward(
        mock, task, [Message.calls("assistant", [agent]), Message.calls("user", [dismiss])], USER_STOP
    )
    assert info.reward_breakdown == {"DB": 0.0, "ACTION": 1.0, "ENV_ASSERTION": 1.0}
    agent_only = compute_reward(mock, task, [Message.calls("assistant", [agent])], USER_STOP)
    assert agent_only.reward_breakdown == {"DB": 1.0, "ACTION": 1.0, "ENV_ASSERTION": 0.0}


def _nl_task(tasks_of: Tasks) -> Task:
    return next(
        t
        for t in tasks_of("retail")
        if t.evaluation_criteria
        and t.evaluation_criteria.nl_assertions
        and "NL_ASSERTION" in t.evaluation_criteria.reward_basis
    )


def test_nl_assertions_are_judged_in_a_second_phase(
    retail: Domain, tasks_of: Tasks, gold_trajectory: Gold
) -> None:
    task = _nl_task(tasks_of)
    draft = score_episode(retail, task, gold_trajectory(task, Environment.for_task(retail, task)), USER_STOP)
    assert draft.needs_judge and draft.nl_assertions == task.evaluation_criteria.nl_assertions  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="pass the judge's verdicts"):
        draft.finish()
    with pytest.raises(ValueError, match="verdicts for"):
        draft.finish([NLVerdict(met=True)] * (len(draft.nl_assertions) + 1))
    passed = draft.finish([NLVerdict(met=True, justification="ok")] * len(draft.nl_assertions))
    assert passed.reward == 1.0 and passed.reward_breakdown == {"DB": 1.0, "NL_ASSERTION": 1.0}
    failed = draft.finish([(True, "ok")] * (len(draft.nl_assertions) - 1) + [(False, "missing")])
    assert failed.reward == 0.0 and failed.nl_assertions is not None and failed.nl_assertions[-1].met is False
    restored = type(draft).model_validate_json(draft.model_dump_json())  # storable between the phases
    assert restored.finish([(True, "")] * len(draft.nl_assertions)).reward == 1.0


def test_compute_reward_calls_injected_judge_only_when_nl_gates(
    retail: Domain, airline: Domain, tasks_of: Tasks, gold_trajectory: Gold
) -> None:
    seen: list[list[str]] = []

    def judge(assertions: list[str], trajectory: Any) -> list[tuple[bool, str]]:
        seen.append(assertions)
        return [(True, "fine")] * len(assertions)

    task = _nl_task(tasks_of)
    trajectory = gold_trajectory(task, Environment.for_task(retail, task))
    assert compute_reward(retail, task, trajectory, USER_STOP, nl_judge=judge).reward == 1.0
    assert seen == [task.evaluation_criteria.nl_assertions]  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="no nl_judge"):
        compute_reward(retail, task, trajectory, USER_STOP)
    airline_task = tasks_of("airline")[0]  # NL assertions present but basis is [DB, COMMUNICATE]
    compute_reward(airline, airline_task, [], USER_STOP, nl_judge=judge)
    assert len(seen) == 1


def test_empty_nl_assertions_gate_as_met(retail: Domain, tasks_of: Tasks) -> None:
    task = next(
        t
        for t in tasks_of("retail")
        if t.evaluation_criteria
        and not t.evaluation_criteria.nl_assertions
        and "NL_ASSERTION" in t.evaluation_criteria.reward_basis
    )
    draft = score_episode(retail, task, [], USER_STOP)
    assert not draft.needs_judge
    info = draft.finish()
    assert info.reward_breakdown is not None and info.reward_breakdown["NL_ASSERTION"] == 1.0
    assert info.reward == info.reward_breakdown["DB"]
    assert info.nl_assertions is None  # nobody judged anything


def test_gold_replay_is_cached_per_task(retail: Domain, tasks_of: Tasks) -> None:
    task = tasks_of("retail")[1]
    score_episode(retail, task, [], USER_STOP)
    cached = len(retail.gold_cache)
    score_episode(retail, task, [], USER_STOP)
    assert len(retail.gold_cache) == cached


def test_judge_transcript_shows_dialogue_and_optionally_tools() -> None:
    call = ToolCall(id="c", name="get_users", arguments={})
    trajectory = [
        Message.text("assistant", "Hi!"),
        Message.text("user", "List users"),
        Message.calls("assistant", [call]),
        Message.tool_result(call, "[]", error=False),
        Message.text("assistant", "There are none."),
    ]
    assert judge_transcript(trajectory) == "assistant: Hi!\nuser: List users\nassistant: There are none."
    full = judge_transcript(trajectory, include_tools=True)
    assert "assistant calls get_users({})" in full and "tool result: []" in full


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("Thanks, that's all. ###STOP###", "###STOP###"),  # text before the token is allowed
        ("###TRANSFER###", "###TRANSFER###"),
        ("I can't go on. ###OUT-OF-SCOPE###", "###OUT-OF-SCOPE###"),
        ("Please stop", None),  # the word alone is not a token
        (None, None),  # tool-call turns carry no text
    ],
)
def test_user_stop_token_detects_contained_tokens(text: str | None, token: str | None) -> None:
    assert user_stop_token(text) == token
