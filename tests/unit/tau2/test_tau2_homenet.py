"""The bundled sample domain (homenet): its data, its tools, dual control, and the reward on every task.

These run in every clone (the data ships in the package), so the runtime's machinery is covered
without tau2's own data.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from uxlocal.errors import InputError
from uxlocal.tau2 import (
    USER_STOP,
    Domain,
    Environment,
    Message,
    Task,
    ToolCall,
    compute_reward,
    load_domain,
    load_tasks,
)
from uxlocal.tau2 import data as tau2_data
from uxlocal.tau2.db import hash_of_dump
from uxlocal.tau2.layout import SAMPLE_DATA, domain_dir, sample_domains

Content = Callable[..., Any]
Gold = Callable[[Task, Environment], list[Message]]
TASK_IDS = [t.id for t in load_tasks(SAMPLE_DATA, "homenet")]


def _judge_all_met(assertions: list[str], trajectory: Any) -> list[tuple[bool, str]]:
    return [(True, "scripted")] * len(assertions)


def _task(tasks_of: Callable[[str], list[Task]], task_id: str) -> Task:
    return next(t for t in tasks_of("homenet") if t.id == task_id)


def _writes(domain: Domain, task: Task) -> set[str]:
    """Which sides the task's gold actions write to."""
    env = Environment(domain)
    actions = (task.evaluation_criteria.actions or []) if task.evaluation_criteria else []
    return {a.requestor for a in actions if env.tool_kind(a.name, a.requestor) == "write"}


# --- the data ----------------------------------------------------------------------------------


def test_homenet_is_the_bundled_sample_domain_with_six_to_ten_tasks() -> None:
    assert sample_domains() == ["homenet"]
    assert 6 <= len(TASK_IDS) <= 10 and len(set(TASK_IDS)) == len(TASK_IDS)
    assert (SAMPLE_DATA / "domains" / "homenet" / "README.md").read_text().count("CC0") >= 1


def test_homenet_tasks_cover_every_kind_of_check_and_setup(homenet: Domain, tasks_of: Any) -> None:
    tasks = tasks_of("homenet")
    writes = {t.id: _writes(homenet, t) for t in tasks}
    assert {"assistant"} in writes.values() and {"user"} in writes.values() and set() in writes.values()
    assert {"assistant", "user"} in writes.values()  # a task where both sides write
    bases = {b for t in tasks for b in t.evaluation_criteria.reward_basis}  # type: ignore[union-attr]
    assert bases == {"DB", "ENV_ASSERTION", "COMMUNICATE", "NL_ASSERTION", "ACTION"}
    states = [t.initial_state for t in tasks if t.initial_state]
    assert any(s.initialization_data for s in states) and any(s.initialization_actions for s in states)
    assert any(s.message_history for s in states)
    assert {t.user_tools is None for t in tasks} == {True, False}  # some tasks withhold the router tools


def test_homenet_db_toml_hash_is_the_reference_hash_and_snapshot_stays_untouched(
    homenet: Domain, content: Content
) -> None:
    env = Environment(homenet)
    assert env.db_hash() == homenet.agent_snapshot.fingerprint() == hash_of_dump(env.agent_db.dump())
    content(env, "change_plan", {"customer_id": "cust_101", "plan_id": "fiber_1000"})
    assert env.db_hash() == hash_of_dump(env.agent_db.dump()) != homenet.agent_snapshot.fingerprint()
    fresh = Environment(homenet)
    assert fresh.db_hash() == homenet.agent_snapshot.fingerprint()  # the write stayed in its episode


# --- the reward on every task ------------------------------------------------------------------


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_homenet_gold_replay_scores_one(
    homenet: Domain, tasks_of: Any, gold_trajectory: Gold, task_id: str
) -> None:
    task = _task(tasks_of, task_id)
    messages = gold_trajectory(task, Environment.for_task(homenet, task))
    said = " and ".join(task.evaluation_criteria.communicate_info or ["Done."])  # type: ignore[union-attr]
    messages.append(Message.text("assistant", f"All set: {said}"))
    info = compute_reward(homenet, task, messages, USER_STOP, nl_judge=_judge_all_met)
    assert info.reward == 1.0, info.reward_breakdown
    assert info.info == {"env": {"gold_call_errors": [], "replay_mismatches": 0}}


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_homenet_empty_trajectory_scores_zero(homenet: Domain, tasks_of: Any, task_id: str) -> None:
    task = _task(tasks_of, task_id)
    info = compute_reward(homenet, task, [], USER_STOP, nl_judge=_judge_all_met)
    assert info.reward == 0.0 and info.reward_breakdown and 0.0 in info.reward_breakdown.values()


def test_homenet_user_restart_during_outage_fails_db(homenet: Domain, tasks_of: Any) -> None:
    # dual control: the customer's own write, which the policy says not to ask for, changes the user DB
    task = _task(tasks_of, "ongoing_outage")
    restart = ToolCall(id="u1", name="restart_router", arguments={})
    info = compute_reward(homenet, task, [Message.calls("user", [restart]),
                                          Message.text("assistant", "It should be back by 18:00.")],
                          USER_STOP, nl_judge=_judge_all_met)
    assert info.reward_breakdown == {"DB": 0.0, "COMMUNICATE": 1.0, "NL_ASSERTION": 1.0}


def test_homenet_history_write_counts_once(homenet: Domain, tasks_of: Any) -> None:
    task = _task(tasks_of, "undo_plan_change")
    fix = ToolCall(id="a1", name="change_plan", arguments={"customer_id": "cust_101", "plan_id": "fiber_300"})
    tail = [Message.calls("assistant", [fix])]
    history = task.initial_state.message_history  # type: ignore[union-attr]
    assert compute_reward(homenet, task, tail, USER_STOP).reward == 1.0
    assert compute_reward(homenet, task, [*history, *tail], USER_STOP).reward == 1.0  # type: ignore[misc]
    env = Environment.for_task(homenet, task)
    assert env.invoke(
        "assistant", "assert_plan", {"customer_id": "cust_101", "expected_plan_id": "fiber_1000"}
    )


# --- the tools ---------------------------------------------------------------------------------


REFUSALS: list[tuple[str, str, dict[str, Any], str]] = [
    ("assistant", "find_customer", {"email": "nobody@example.com"}, "no account with email"),
    (
        "assistant",
        "list_plans",
        {"postcode": "40121"},
        "list_plans() got an unexpected keyword argument 'postcode'",
    ),
    ("assistant", "change_plan", {"customer_id": "cust_101", "plan_id": "basic_100"}, "already on basic_100"),
    ("assistant", "change_plan", {"customer_id": "cust_101", "plan_id": "fiber_9"}, "plan fiber_9 not found"),
    ("assistant", "check_outages", {}, "check_outages() missing 1 required positional argument: 'postcode'"),
    # out_9 is still ongoing; out_7 is in another postcode; amounts must be positive
    (
        "assistant",
        "apply_outage_credit",
        {"customer_id": "cust_105", "outage_id": "out_9", "amount": 5},
        "still ongoing",
    ),
    (
        "assistant",
        "apply_outage_credit",
        {"customer_id": "cust_105", "outage_id": "out_7", "amount": 5},
        "not found in postcode 40555",
    ),
    (
        "assistant",
        "apply_outage_credit",
        {"customer_id": "cust_102", "outage_id": "out_7", "amount": 0},
        "above 0",
    ),
    ("assistant", "run_line_test", {"customer_id": "cust_999"}, "customer cust_999 not found"),
    ("assistant", "book_technician", {"customer_id": "cust_104", "date": "12 March"}, "YYYY-MM-DD"),
    (
        "assistant",
        "transfer_to_human_agents",
        {},
        "transfer_to_human_agents() missing 1 required positional argument: 'summary'",
    ),
    (
        "user",
        "check_router",
        {"router_id": "home_router"},
        "check_router() got an unexpected keyword argument 'router_id'",
    ),
    ("user", "restart_router", {"hard": True}, "restart_router() got an unexpected keyword argument 'hard'"),
]


@pytest.mark.parametrize(("side", "name", "arguments", "fragment"), REFUSALS,
                         ids=[f"{r[1]}-{i}" for i, r in enumerate(REFUSALS)])
def test_homenet_tool_refuses_bad_request(
    homenet: Domain, side: str, name: str, arguments: dict[str, Any], fragment: str
) -> None:
    env = Environment(homenet)
    before = (env.db_hash(), env.user_db_hash())
    result = env.call(name, arguments, side)  # type: ignore[arg-type]
    assert not result.ok and not result.internal and fragment in (result.error or ""), result
    assert (env.db_hash(), env.user_db_hash()) == before


def test_every_homenet_tool_has_a_refusal_case(homenet: Domain) -> None:
    env = Environment(homenet)
    offered = {s["function"]["name"] for s in env.tool_schemas("assistant") + env.tool_schemas("user")}
    assert offered == {r[1] for r in REFUSALS}


def test_homenet_credit_lowers_the_patched_balance_once(
    homenet: Domain, tasks_of: Any, content: Content
) -> None:
    task = _task(tasks_of, "outage_credit")  # the task patches a 49.00 bill in
    env = Environment.for_task(homenet, task)
    assert content(env, "find_customer", {"email": "Tomas.Okafor@example.net "})["balance_due"] == 49.0
    after = content(
        env, "apply_outage_credit", {"customer_id": "cust_102", "outage_id": "out_7", "amount": 15}
    )
    assert after["balance_due"] == 34.0 and after["credits"] == [{"outage_id": "out_7", "amount": 15.0}]
    again = env.call("apply_outage_credit", {"customer_id": "cust_102", "outage_id": "out_7", "amount": 15})
    assert not again.ok and "already credited" in (again.error or "")


def test_homenet_booking_numbers_visits_and_allows_one_per_customer(
    homenet: Domain, content: Content
) -> None:
    env = Environment(homenet)
    visit = content(env, "book_technician", {"customer_id": "cust_104", "date": "2026-03-12"})
    assert visit == {
        "visit_id": "visit_1",
        "customer_id": "cust_104",
        "date": "2026-03-12",
        "status": "booked",
    }
    assert "already has" in (
        env.call("book_technician", {"customer_id": "cust_104", "date": "2026-03-13"}).error or ""
    )
    assert (
        content(env, "book_technician", {"customer_id": "cust_101", "date": "2026-03-13"})["visit_id"]
        == "visit_2"
    )


@pytest.mark.parametrize(("fault", "light_after"), [
    ("frozen", "green"),  # a restart clears a frozen router
    ("no_signal", "red"),  # a line fault outside the home survives a restart
])
def test_homenet_restart_clears_only_a_frozen_router(
    homenet: Domain, content: Content, fault: str, light_after: str
) -> None:
    env = Environment(homenet)
    env.invoke("user", "set_router_fault", {"fault": fault})
    assert content(env, "check_router", {}, "user")["status_light"] == "red"
    shown = content(env, "restart_router", {}, "user")
    assert shown == {"status_light": light_after, "meaning": shown["meaning"], "restarts_today": 1}
    assert "fault" not in content(env, "check_router", {}, "user")  # the cause stays hidden from the seats
    assert env.invoke("user", "assert_router_light", {"expected_light": light_after})


def test_homenet_user_tools_follow_the_task_and_stay_on_the_user_side(homenet: Domain, tasks_of: Any) -> None:
    with_tools = Environment.for_task(homenet, _task(tasks_of, "restart_router"))
    assert [s["function"]["name"] for s in with_tools.tool_schemas("user")] == [
        "check_router",
        "restart_router",
    ]
    assert Environment.for_task(homenet, _task(tasks_of, "compare_plans")).tool_schemas("user") == []
    agent_try = with_tools.call("restart_router", {}, "assistant")
    assert not agent_try.ok and "Tool 'restart_router' not found." in (agent_try.error or "")


# --- where the sample data is found ----------------------------------------------------------------


def test_sample_domain_is_found_beside_any_data_dir(tmp_path: Path) -> None:
    (tmp_path / "domains" / "other").mkdir(parents=True)
    assert domain_dir(tmp_path, "homenet") == SAMPLE_DATA / "domains" / "homenet"
    assert load_domain(tmp_path, "homenet").folder == (SAMPLE_DATA / "domains" / "homenet").resolve()
    with pytest.raises(InputError, match="available: homenet, other"):
        domain_dir(tmp_path, "retail")


def test_without_tau2_data_runs_fall_back_to_the_sample_and_say_how_to_get_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(tau2_data.ENV_VAR, raising=False)
    monkeypatch.setattr(tau2_data, "_CHECKOUT_DATA", tmp_path / "nothing")
    assert tau2_data.default_data_dir() is None and tau2_data.resolve_data_dir(None) == SAMPLE_DATA
    with pytest.raises(InputError, match="no tau2 domain 'retail'.*UXLOCAL_TAU2_DATA"):
        load_tasks(tau2_data.resolve_data_dir(None), "retail")
    demo = tau2_data.demo_data()
    assert (demo.root, demo.domain) == (SAMPLE_DATA, "homenet") and "bundled sample" in demo.description
