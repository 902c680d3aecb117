"""Issue 42 part 1: ``Tau2Words`` read from a checkout equal what upstream sent in every recorded request.

``../shared/conformance/tau2-episodes`` holds every model request upstream tau2-bench 8ebb749 made
in 130 scripted episodes. Compared here, per request: the agent's system message and tools (with
upstream's key order, from the recording's ``tools_as_sent``), the user's system message and its
task-filtered tools, and the judge's two messages (retail). Skipped with the reason when
``../shared`` lacks the recording, the upstream source or the data.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from uxlocal.tau2.conformance import CONFORMANCE_DOMAINS
from uxlocal.tau2.conformance.episodes import read_episodes
from uxlocal.tau2.registry import load_domain
from uxlocal.tau2.tasks import load_tasks
from uxlocal.tau2.upstream_words import Tau2Words

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
UPSTREAM = SHARED / "upstream" / "tau2-bench-8ebb749"
DATA = SHARED / "data" / "tau2"
EPISODES = SHARED / "conformance" / "tau2-episodes"
CALLS = {"mock": (26, 27, 0), "airline": (82, 57, 0), "retail": (192, 57, 7), "telecom": (88, 155, 0),
         "banking_knowledge": (95, 134, 0)}
"""Agent, user and judge requests per domain, as the recording's README counts them."""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    for path in (UPSTREAM / "src" / "tau2", DATA / "domains", EPISODES / "mock.json.gz"):
        if not path.exists():
            pytest.skip(f"{path} is absent (upstream source, tau2 data and the episode recording are needed)")
    root = tmp_path / "tau2-bench"
    (root / "data").mkdir(parents=True)
    (root / "src").symlink_to(UPSTREAM / "src")
    (root / "data" / "tau2").symlink_to(DATA)
    return root


def _request_equalities(checkout: Path, domain: str) -> Counter[str]:
    recording = read_episodes(EPISODES / f"{domain}.json.gz")
    words = Tau2Words.load(checkout, domain)
    policy = load_domain(checkout, domain).policy_text()
    tasks = {task.id: task for task in load_tasks(checkout, domain, split=None)}
    seen: Counter[str] = Counter()
    for episode in recording["episodes"]:
        task = tasks[episode["task_id"]]
        for call in episode["calls"]:
            seat, request = call["seat"], call["request"]
            seen[seat] += 1
            if seat == "judge":
                assertions = task.evaluation_criteria.nl_assertions or []  # type: ignore[union-attr]
                expected = words.judge_messages(episode["result"]["messages"], assertions)
                seen["judge equal"] += request["messages"] == expected and request["tools"] is None
                continue
            tools = words.tool_schemas("assistant" if seat == "agent" else "user",
                                       task.user_tools if seat == "user" else None)
            system = (words.agent_system_prompt(policy) if seat == "agent" else
                      words.user_system_prompt(task.user_scenario, has_tools=tools is not None))
            seen[f"{seat} system equal"] += request["messages"][0] == {"role": "system", "content": system}
            in_order = tools is None or recording["tools_as_sent"][call["tools_as_sent"]] == json.dumps(tools)
            seen[f"{seat} tools equal"] += request["tools"] == tools and in_order
    return seen


@pytest.mark.parametrize("domain", CONFORMANCE_DOMAINS)
def test_every_recorded_request_has_the_checkouts_words(checkout: Path, domain: str) -> None:
    seen = _request_equalities(checkout, domain)
    agent, user, judge = CALLS[domain]
    assert (seen["agent"], seen["user"], seen["judge"]) == (agent, user, judge)
    assert seen["agent system equal"] == seen["agent tools equal"] == agent
    assert seen["user system equal"] == seen["user tools equal"] == user
    assert seen["judge equal"] == judge


def test_words_source_names_the_checkout_and_hashes_what_was_read(checkout: Path, tmp_path: Path) -> None:
    words = Tau2Words.load(checkout, "mock")
    assert words.comparable and words.source is not None and words.source.checkout == checkout
    assert words.source.sha256 == Tau2Words.load(checkout, "mock").source.sha256  # type: ignore[union-attr]
    banking = Tau2Words.load(checkout, "banking_knowledge")
    hidden = [len(banking.discoverable_schemas(seat)) for seat in ("assistant", "user")]
    assert hidden == [44, 4]
    assert not Tau2Words.load(DATA, "mock").comparable  # a data folder without src/
    assert not Tau2Words.load(checkout, "homenet").comparable  # our own domain
