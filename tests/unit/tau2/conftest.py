"""Fixtures for the tau2 runtime tests.

Two data sources: tau2's real task data, read in place from ../shared/data/tau2 (tests that need it
skip with a reason when it is missing), and our bundled sample domain ``homenet``, always present,
on which the runtime's machinery is tested in every clone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from uxlocal.tau2 import (
    Domain,
    Environment,
    Message,
    Task,
    ToolCall,
    load_domain,
    load_tasks,
)
from uxlocal.tau2.layout import SAMPLE_DATA

DATA_DIR = Path(
    os.environ.get("UXLOCAL_TAU2_DATA")
    or Path(__file__).resolve().parents[3].parent / "shared" / "data" / "tau2"
)
"""``../shared/data/tau2`` next to the checkout (or ``UXLOCAL_TAU2_DATA``); read in place, never copied."""


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UXLOCAL_HOME", str(tmp_path / "home"))


def _tau2_data() -> Path:
    if not (DATA_DIR / "domains").is_dir():
        pytest.skip(f"tau2 data not found at {DATA_DIR}")
    return DATA_DIR


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return _tau2_data()


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    """Return the bundled sample data (our homenet domain): present in every clone and installed wheel."""
    return SAMPLE_DATA


@pytest.fixture(scope="session")
def homenet(sample_dir: Path) -> Domain:
    return load_domain(sample_dir, "homenet")


@pytest.fixture(scope="session")
def mock(data_dir: Path) -> Domain:
    return load_domain(data_dir, "mock")


@pytest.fixture(scope="session")
def retail(data_dir: Path) -> Domain:
    return load_domain(data_dir, "retail")


@pytest.fixture(scope="session")
def airline(data_dir: Path) -> Domain:
    return load_domain(data_dir, "airline")


def _content(env: Environment, name: str, arguments: dict[str, Any], requestor: str = "assistant") -> Any:
    """Call a tool that must succeed and return its parsed JSON (or text)."""
    result = env.call(name, arguments, requestor)  # type: ignore[arg-type]
    assert result.ok, result.error
    try:
        return json.loads(result.content)
    except json.JSONDecodeError:
        return result.content


def _gold_trajectory(task: Task, env: Environment) -> list[Message]:
    """Play the task's history plus its gold actions through ``env`` as tool-call turns."""
    history = list(task.initial_state.message_history or []) if task.initial_state else []
    messages = list(history)
    for action in (task.evaluation_criteria.actions or []) if task.evaluation_criteria else []:
        call = ToolCall(
            id=action.action_id, name=action.name, arguments=action.arguments, requestor=action.requestor
        )
        result = env.call_tool(call)
        messages.append(Message.calls(action.requestor, [call]))
        messages.append(Message.tool_result(call, result.content, error=not result.ok))
    return messages


@pytest.fixture(scope="session")
def tasks_of() -> Callable[[str], list[Task]]:
    """``tasks_of(domain)``: a domain's base split; tau2's domains need its data (else the test skips)."""
    cache: dict[str, list[Task]] = {}

    def get(domain: str) -> list[Task]:
        if domain not in cache:
            root = SAMPLE_DATA if domain == "homenet" else _tau2_data()
            cache[domain] = load_tasks(root, domain)
        return cache[domain]

    return get


@pytest.fixture(scope="session")
def content() -> Callable[..., Any]:
    """``content(env, name, arguments, requestor="assistant")``: a call that must succeed, parsed."""
    return _content


@pytest.fixture(scope="session")
def gold_trajectory() -> Callable[[Task, Environment], list[Message]]:
    """``gold_trajectory(task, env)``: history + gold actions played through ``env`` as tool turns."""
    return _gold_trajectory
