"""Mock tools (spec §B.4.6): the four agent tools and the two user tools, happy and refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from uxlocal.tau2 import Domain, Environment

Content = Callable[..., Any]


@pytest.fixture
def env(mock: Domain) -> Environment:
    return Environment(mock)


REFUSALS: list[tuple[str, str, dict[str, Any], str]] = [
    ("assistant", "create_task", {"user_id": "user_9", "title": "X"}, "User user_9 not found"),
    ("assistant", "get_users", {"user_id": "user_1"},
     "MockTools.get_users() got an unexpected keyword argument 'user_id'"),
    # a wrong type is not refused up front (tau2 validates nothing); the lookup then fails
    ("assistant", "update_task_status", {"task_id": ["task_1"], "status": "done"}, "unhashable type: 'list'"),
    (
        "assistant",
        "update_task_status",
        {"task_id": "task_9", "status": "completed"},
        "Task task_9 not found",
    ),
    ("assistant", "transfer_to_human_agents", {},
     "MockTools.transfer_to_human_agents() missing 1 required positional argument: 'summary'"),
    ("user", "check_notifications", {"unread_only": True},
     "MockUserTools.check_notifications() got an unexpected keyword argument 'unread_only'"),
    ("user", "dismiss_notification", {"notification_id": "notif_9"}, "Notification notif_9 not found"),
]


@pytest.mark.parametrize(
    ("side", "name", "arguments", "fragment"), REFUSALS, ids=[f"{r[1]}-{i}" for i, r in enumerate(REFUSALS)]
)
def test_mock_tool_refuses_bad_request(
    env: Environment, side: str, name: str, arguments: dict[str, Any], fragment: str
) -> None:
    before = (env.db_hash(), env.user_db_hash())
    result = env.call(name, arguments, side)  # type: ignore[arg-type]
    assert not result.ok and not result.internal and fragment in (result.error or ""), result
    assert (env.db_hash(), env.user_db_hash()) == before


def test_every_mock_tool_has_a_refusal_case(env: Environment) -> None:
    offered = {s["function"]["name"] for s in env.tool_schemas("assistant") + env.tool_schemas("user")}
    assert offered == {r[1] for r in REFUSALS}


def test_create_task_numbers_ids_and_links_user(content: Content, env: Environment) -> None:
    task = content(env, "create_task", {"user_id": "user_1", "title": "Review", "description": "Q4"})
    assert task == {"task_id": "task_2", "title": "Review", "description": "Q4", "status": "pending"}
    assert content(env, "get_users", {})[0]["tasks"] == ["task_1", "task_2"]
    assert content(env, "create_task", {"user_id": "user_1", "title": "Next"})["task_id"] == "task_3"


def test_update_task_status_sets_status(content: Content, env: Environment) -> None:
    assert (
        content(env, "update_task_status", {"task_id": "task_1", "status": "completed"})["status"]
        == "completed"
    )
    assert env.invoke(
        "assistant", "assert_task_status", {"task_id": "task_1", "expected_status": "completed"}
    )
    assert env.invoke("assistant", "assert_number_of_tasks", {"user_id": "user_1", "expected_number": 1})


def test_update_task_status_stores_any_status_as_tau2_does(content: Content, env: Environment) -> None:
    assert content(env, "update_task_status", {"task_id": "task_1", "status": "done"})["status"] == "done"
    assert not env.invoke(
        "assistant", "assert_task_status", {"task_id": "task_1", "expected_status": "completed"}
    )


def test_get_users_lists_users(content: Content, env: Environment) -> None:
    assert content(env, "get_users", {}) == [{"user_id": "user_1", "name": "Test User", "tasks": ["task_1"]}]


def test_transfer_to_human_agents_changes_nothing(env: Environment) -> None:
    before = env.db_hash()
    assert (
        env.call("transfer_to_human_agents", {"summary": "wants tasks deleted"}).content
        == "Transfer successful"
    )
    assert env.db_hash() == before


def test_user_tools_read_and_dismiss_notifications_on_user_db_only(
    content: Content, env: Environment
) -> None:
    agent_hash, user_hash = env.db_hash(), env.user_db_hash()
    inbox = content(env, "check_notifications", {}, "user")
    assert [n["status"] for n in inbox] == ["unread"]
    dismissed = env.call("dismiss_notification", {"notification_id": "notif_1"}, "user")
    assert dismissed.ok and dismissed.content == "Notification notif_1 dismissed"
    assert env.db_hash() == agent_hash and env.user_db_hash() != user_hash
    assert env.invoke(
        "user", "assert_notification_status", {"notification_id": "notif_1", "expected_status": "read"}
    )
