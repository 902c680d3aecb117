"""Mock domain DBs: a tiny task tracker (agent side) and a notification inbox (user side).

Field sets follow ``domains/mock/db.json`` and ``user_db.json``; unknown keys are errors so a
changed upstream file is noticed at load time rather than hashed half-read.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ...db import Database, Record, Table

TaskStatus = Literal["pending", "completed"]


class MockTask(Record):
    """A to-do item owned by one user (titled ``Task``, as tau2's validation errors name it)."""

    model_config = ConfigDict(title="Task")

    task_id: str
    title: str
    description: str | None = None
    status: TaskStatus


class MockUser(Record):
    """A user and the ids of their tasks, in creation order."""

    user_id: str
    name: str
    tasks: list[str]


class MockData(BaseModel):
    """The whole agent-side file."""

    tasks: dict[str, MockTask]
    users: dict[str, MockUser]


class MockDB(Database):
    """Agent-side DB of the mock domain."""

    ROOT = MockData
    tasks: Table[MockTask]
    users: Table[MockUser]


class Notification(Record):
    """One inbox entry on the user's side; dismissing marks it ``read``."""

    notification_id: str
    message: str
    status: Literal["unread", "read"]
    task_id: str | None = None


class MockUserData(BaseModel):
    """The whole user-side file."""

    notifications: dict[str, Notification]


class MockUserDB(Database):
    """User-side DB of the mock domain (what the simulated user's phone would hold)."""

    ROOT = MockUserData
    notifications: Table[Notification]
