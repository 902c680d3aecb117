"""Mock domain tools (spec §B.4.6): 4 agent tools, 2 user tools, and their setup/assertion helpers.

The mock domain is the smallest one with a user-side DB, so it is where the user-tool path is
exercised until telecom and banking arrive.
"""

from __future__ import annotations

from typing import Annotated, Literal

from ...registry import DomainSpec
from ...toolkit import ToolError, Toolkit, arg
from ...tools_common import register_common
from .db import MockDB, MockTask, MockUser, MockUserDB, Notification, TaskStatus

AGENT = Toolkit("mock", qualifier="MockTools")
USER = Toolkit("mock-user", qualifier="MockUserTools")

UserId = Annotated[str, arg("The user's id, e.g. 'user_1'.")]
TaskId = Annotated[str, arg("The task's id, e.g. 'task_1'.")]
NotificationId = Annotated[str, arg("The notification's id, e.g. 'notif_1'.")]


def _task(db: MockDB, task_id: str) -> MockTask:
    task = db.tasks.get(task_id)
    if task is None:
        raise ToolError(f"Task {task_id} not found")
    return task


@AGENT.tool("write", "Create a new pending task for an existing user and return it.")
def create_task(
    db: MockDB,
    user_id: UserId,
    title: Annotated[str, arg("A short title for the task.")],
    description: Annotated[str | None, arg("Optional longer description.")] = None,
) -> MockTask:
    """Give new tasks the id ``task_<count+1>``, so replays of the same calls give the same ids."""
    if user_id not in db.users:
        raise ToolError(f"User {user_id} not found")
    number = len(db.tasks) + 1
    while f"task_{number}" in db.tasks:
        number += 1
    task = MockTask(task_id=f"task_{number}", title=title, description=description, status="pending")
    db.tasks.add(task.task_id, task)
    db.users.edit(user_id).tasks.append(task.task_id)
    return task


@AGENT.tool("read", "List every user with the ids of their tasks.")
def get_users(db: MockDB) -> list[MockUser]:
    """All users, in file order."""
    return list(db.users.values())


@AGENT.tool("write", "Set a task's status to 'pending' or 'completed' and return the task.")
def update_task_status(
    db: MockDB,
    task_id: TaskId,
    status: Annotated[TaskStatus, arg("The new status.")],
) -> MockTask:
    """The schema offers the two statuses; like tau2, any other string is stored as given."""
    task = _task(db, task_id).model_copy(update={"status": status})
    db.tasks.put(task_id, task)
    return task


register_common(AGENT, with_calculate=False)


@AGENT.helper("Whether a user owns exactly the expected number of tasks.")
def assert_number_of_tasks(db: MockDB, user_id: str, expected_number: int) -> bool:
    """Env assertion; an unknown user has no tasks."""
    user = db.users.get(user_id)
    return (len(user.tasks) if user else 0) == expected_number


@AGENT.helper("Whether a task exists and has the expected status.")
def assert_task_status(db: MockDB, task_id: str, expected_status: TaskStatus) -> bool:
    """Env assertion; a missing task fails it rather than erroring."""
    task = db.tasks.get(task_id)
    return task is not None and task.status == expected_status


@USER.tool("read", "Show the notifications on your device, read and unread.")
def check_notifications(db: MockUserDB) -> list[Notification]:
    """Return the whole inbox, in arrival order."""
    return list(db.notifications.values())


@USER.tool("write", "Dismiss one notification, marking it as read.")
def dismiss_notification(db: MockUserDB, notification_id: NotificationId) -> str:
    """Dismissing twice is allowed and changes nothing the second time; answers as tau2 does."""
    if notification_id not in db.notifications:
        raise ToolError(f"Notification {notification_id} not found")
    db.notifications.edit(notification_id).status = "read"
    return f"Notification {notification_id} dismissed"


@USER.helper("Put an unread notification in the user's inbox (setup only).")
def add_notification(
    db: MockUserDB, notification_id: str, message: str, task_id: str | None = None
) -> Notification:
    """Replace an entry with the same id: tasks re-add the notification the file already holds."""
    note = Notification(notification_id=notification_id, message=message, status="unread", task_id=task_id)
    db.notifications.put(notification_id, note)
    return note


@USER.helper("Whether a notification exists and has the expected status.")
def assert_notification_status(
    db: MockUserDB, notification_id: str, expected_status: Literal["unread", "read"]
) -> bool:
    """Env assertion on the user side."""
    note = db.notifications.get(notification_id)
    return note is not None and note.status == expected_status


DOMAIN = DomainSpec(
    name="mock",
    agent_db=MockDB,
    agent_tools=AGENT,
    user_db=MockUserDB,
    user_tools=USER,
    user_db_file="user_db.json",
)
