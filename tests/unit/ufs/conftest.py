"""Fixtures for the UFS tests: real tau2 tasks, a store, a hand-written trajectory builder.

The tau2 tasks are read in place from ../shared/data/tau2 (or UXLOCAL_TAU2_DATA); tests that need
them skip when the data is missing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from uxlocal.store.db import load_views, migrate
from uxlocal.tau2 import Message, Task, ToolCall, load_tasks

DATA_DIR = Path(
    os.environ.get("UXLOCAL_TAU2_DATA")
    or Path(__file__).resolve().parents[3].parent / "shared" / "data" / "tau2"
)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (DATA_DIR / "domains").is_dir():
        pytest.skip(f"tau2 data not found at {DATA_DIR}")
    return DATA_DIR


@pytest.fixture(scope="session")
def tasks(data_dir: Path) -> Callable[[str], dict[str, Task]]:
    cache: dict[str, dict[str, Task]] = {}

    def get(domain: str) -> dict[str, Task]:
        if domain not in cache:
            cache[domain] = {t.id: t for t in load_tasks(data_dir, domain)}
        return cache[domain]

    return get


@pytest.fixture
def store() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect(":memory:")
    migrate(con)
    load_views(con)
    yield con
    con.close()


def convo(*turns: Any) -> list[Message]:
    """Build a trajectory: ("assistant"|"user", text) pairs, ("call", seat, name, args), ("result", text)."""
    messages: list[Message] = []
    for turn in turns:
        index = len(messages)
        if turn[0] == "call":
            _, seat, name, args = turn
            call = ToolCall(id=f"tc_{index}", name=name, arguments=args, requestor=seat)
            messages.append(Message(role=seat, tool_calls=[call], turn_idx=index))
        elif turn[0] == "result":
            previous = messages[-1].tool_calls[0]  # type: ignore[index]
            messages.append(
                Message(
                    role="tool",
                    id=previous.id,
                    content=turn[1],
                    requestor=previous.requestor,
                    error=turn[1].startswith("Error"),
                    turn_idx=index,
                )
            )
        else:
            messages.append(Message(role=turn[0], content=turn[1], turn_idx=index))
    return messages


@pytest.fixture(scope="session")
def make_convo() -> Callable[..., list[Message]]:
    return convo


def _ingest_trials(store: duckdb.DuckDBPyConnection, task: Task, convos: list[list[Message]], folder: Path,
                   *, proxy: str = "proxy-q") -> str:
    """Ingest one retail task's trajectories (trial k = ``convos[k]``, reward 1) as a tau2 results file."""
    from uxlocal.suites.userproxy.ufs.ingest import ingest_tau2
    from uxlocal.tau2 import (
        EnvironmentInfo,
        Results,
        RewardInfo,
        RunInfo,
        Simulation,
        UserInfo,
        write_results,
    )

    sims = [
        Simulation(
            task_id=task.id,
            trial=t,
            termination_reason="user_stop",
            reward_info=RewardInfo(reward=1.0),
            messages=messages,
        )
        for t, messages in enumerate(convos)
    ]
    results = Results(
        info=RunInfo(user_info=UserInfo(llm=proxy), environment_info=EnvironmentInfo(domain_name="retail")),
        tasks=[task],
        simulations=sims,
    )
    return ingest_tau2(store, write_results(folder / "results.json", results)).run_id


@pytest.fixture(scope="session")
def ingest_trials() -> Callable[..., str]:
    """``(store, task, convos, folder, proxy=...) -> run_id``: stored trajectories of one retail task."""
    return _ingest_trials
