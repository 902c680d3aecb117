"""Issue 42 part 2: whole episodes run by our upstream-protocol program equal tau2-bench's.

``../shared/conformance/tau2-episodes`` recorded upstream tau2-bench 8ebb749 playing scripted
episodes (every mock task, the first 25 of the four benchmark domains, and per domain text with a
tool call, an unknown tool, malformed arguments and a transfer). Each episode runs here through
``upstream_episode`` under the real scheduler, a ``FakeEngine`` answering every seat from the
episode's script; every request must equal the recorded one (messages, tools in upstream's key
order, tool_choice, temperature, seed) and every episode must end as upstream's did (termination,
reward, reward-info parts). The checkout is linked together in a temporary folder from
``../shared/upstream/tau2-bench-8ebb749`` and ``../shared/data/tau2``. Skipped with the reason when
``../shared`` lacks any of them.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from uxlocal.cli import cli
from uxlocal.config import RunConfig
from uxlocal.engine.base import Engine, GenRequest, PreparedRequest
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome
from uxlocal.rollout import Scheduler
from uxlocal.runner import RunResult, run_suite
from uxlocal.store.db import connect
from uxlocal.suites.userproxy.section import tables as ufs_section_tables
from uxlocal.tau2 import load_domain, load_tasks
from uxlocal.tau2.conformance import CONFORMANCE_DOMAINS
from uxlocal.tau2.conformance.episode_check import (
    EpisodeReport,
    assemble_checkout,
    check_domain,
    episodes_table,
)
from uxlocal.tau2.conformance.episodes import read_episodes
from uxlocal.tau2.episode import NOT_COMPARABLE
from uxlocal.tau2.episode.state import Limits
from uxlocal.tau2.episode.upstream import UpstreamSeats, UpstreamSetup, trial_seed, upstream_episode
from uxlocal.tau2.upstream_words import Tau2Words

SHARED = Path(__file__).resolve().parents[2].parent / "shared"
UPSTREAM = SHARED / "upstream" / "tau2-bench-8ebb749"
DATA = SHARED / "data" / "tau2"
EPISODES = SHARED / "conformance" / "tau2-episodes"
COUNTS = {"mock": (53, 14), "airline": (139, 29), "retail": (256, 29), "telecom": (243, 29),
          "banking_knowledge": (229, 29)}
"""Requests (agent + user + judge) and episodes per domain, as the recording's README counts them."""
_REPORTS: dict[str, EpisodeReport] = {}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for path in (UPSTREAM / "src" / "tau2", DATA / "domains", EPISODES / "mock.json.gz"):
        if not path.exists():
            pytest.skip(f"{path} is absent (upstream source, tau2 data and the episode recording are needed)")
    return assemble_checkout(UPSTREAM, DATA, tmp_path_factory.mktemp("checkout"))


def _schedule(engines: Mapping[str, Engine], episodes: list[EpisodeSpec]) -> None:
    Scheduler(ModelPool.from_engines(dict(engines))).run(episodes)


def _report(checkout: Path, domain: str) -> EpisodeReport:
    if domain not in _REPORTS:
        _REPORTS[domain] = check_domain(EPISODES / f"{domain}.json.gz", checkout, _schedule)
    return _REPORTS[domain]


@pytest.mark.parametrize("domain", CONFORMANCE_DOMAINS)
def test_every_request_and_every_episode_equal_upstreams(checkout: Path, domain: str) -> None:
    report = _report(checkout, domain)
    print("\n" + episodes_table([report]))
    why = "\n".join(report.mismatches)
    assert (report.calls, report.episodes) == COUNTS[domain]
    assert report.calls_equal == report.calls, why
    assert report.episodes_equal == report.episodes, why
    assert report.infrastructure_equal == report.infrastructure == 1, why  # the malformed-arguments episode


def test_the_table_totals_every_domain(checkout: Path) -> None:
    reports = [_report(checkout, domain) for domain in CONFORMANCE_DOMAINS]
    table = episodes_table(reports)
    print("\n" + table)
    assert table.splitlines()[-1].startswith("| total | 920/920 | 130/130 | 5/5 |")


def _rewrite(source: Path, target: Path, change: Any) -> Path:
    """Write a resolved copy of a recording with ``change(data)`` applied (no string table)."""
    data = read_episodes(source)
    change(data)
    with gzip.open(target, "wt", encoding="utf-8") as handle:
        json.dump({**data, "strings": []}, handle)
    return target


def test_a_request_or_ending_that_differs_is_counted_and_named(checkout: Path, tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        episodes = data["episodes"]
        episodes[0]["calls"][0]["request"]["seed"] = 1
        episodes[1]["calls"][0]["request"]["messages"][-1]["content"] += " (edited)"
        episodes[2]["result"]["reward"] = 1.0 - episodes[2]["result"]["reward"]

    report = check_domain(_rewrite(EPISODES / "mock.json.gz", tmp_path / "mock.json.gz", change), checkout,
                          _schedule)
    calls, episodes = COUNTS["mock"]
    assert (report.calls_equal, report.episodes_equal) == (calls - 2, episodes - 1)
    text = "\n".join(report.mismatches)
    assert "seed 626729 instead of 1" in text and "message 1 differs" in text and "reward" in text


def test_command_prints_the_table_for_a_recording_folder(checkout: Path, tmp_path: Path) -> None:
    folder = tmp_path / "recording"
    folder.mkdir()
    (folder / "mock.json.gz").symlink_to(EPISODES / "mock.json.gz")
    args = ["tau2", "conformance", "--episodes", str(folder), "--tau2-data", str(DATA)]
    result = CliRunner().invoke(cli, [*args, "--upstream", str(UPSTREAM)])
    assert result.exit_code == 0, result.output
    assert "| mock | 53/53 | 14/14 | 1/1 |" in result.output
    bare = CliRunner().invoke(cli, args)  # a bare data folder and no --upstream: no words to check
    assert bare.exit_code == 2 and "not inside a tau2-bench checkout" in bare.output


# --- what the recording does not reach: limits, ties, output upstream cannot parse ---------------


def _say(text: str) -> dict[str, Any]:
    return {"text": text}


def _call(name: str, arguments: str, call_id: str) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"id": call_id, "type": "function",
                                        "function": {"name": name, "arguments": arguments}}]}


def _play(checkout: Path, replies: dict[str, list[dict[str, Any]]], limits: Limits | None = None,
          trial: int = 0) -> tuple[Outcome, list[GenRequest]]:
    """Play mock's create_task_1 with scripted replies per role; returns the outcome and the requests."""
    domain = load_domain(checkout, "mock")
    task = next(t for t in load_tasks(checkout, "mock", split=None) if t.id == "create_task_1")
    seats = UpstreamSeats.build(Tau2Words.load(checkout, "mock"), domain, limits)
    queues: dict[str, Iterator[dict[str, Any]]] = {role: iter(items) for role, items in replies.items()}
    engine = FakeEngine(lambda prepared: next(queues[prepared.request.role]), identity="scripted")
    outcomes: list[Outcome] = []

    def program(ctx: EpisodeContext) -> Any:
        outcomes.append((yield from upstream_episode(ctx, UpstreamSetup(domain, task, trial, seats))))
        return outcomes[-1]

    _schedule(dict.fromkeys(("agent", "user", "judge"), engine), [EpisodeSpec("e", program)])
    return outcomes[0], [p.request for p in engine.requests]


def test_trials_take_upstreams_seeds_and_no_output_cap(checkout: Path) -> None:
    assert [trial_seed(k) for k in range(3)] == [626729, 373753, 361454]  # random.Random(300).randint
    outcome, requests = _play(checkout, {"user": [_say("Bye ###STOP###")]}, trial=1)
    assert outcome.termination == "user_stop" and requests[0].sampling.seed == 373753
    assert requests[0].sampling.max_tokens >= 1 << 20 and requests[0].tool_choice == "auto"


def test_a_stop_on_the_last_allowed_step_ends_as_max_steps_as_upstreams_checks_run_after_it(
        checkout: Path) -> None:
    replies = {"user": [_say("Hello"), _say("Thanks ###STOP###")], "agent": [_say("How can I help?")]}
    assert _play(checkout, replies, Limits(max_steps=3))[0].termination == "max_steps"
    assert _play(checkout, replies, Limits(max_steps=4))[0].termination == "user_stop"


def test_tool_errors_end_as_too_many_errors_after_the_environment_answers(checkout: Path) -> None:
    two_unknown = {"text": "", "tool_calls": [
        {"id": f"c{k}", "type": "function", "function": {"name": "nope", "arguments": "{}"}} for k in (1, 2)]}
    replies = {"user": [_say("Hello")], "agent": [two_unknown]}
    outcome, requests = _play(checkout, replies, Limits(max_errors=2))
    assert outcome.termination == "too_many_errors" and outcome.info["errors"] == 2
    assert len(requests) == 2  # user, agent: the episode ends before the agent is asked again


@pytest.mark.parametrize("reply", [
    _call("create_task", '{"user_id": "user_1", "title": ', "c1"),  # arguments cut: not JSON
    _call("create_task", '["user_1"]', "c1"),  # JSON, but not an object
    _say("   "),  # neither content nor tool calls
    {"text": "", "finish_reason": "context_window"},  # the prompt no longer fits
    {"text": "", "finish_reason": "error"},  # the engine failed
])
def test_output_upstream_cannot_take_is_an_infrastructure_error_without_reward(
        checkout: Path, reply: dict[str, Any]) -> None:
    outcome, _ = _play(checkout, {"user": [_say("Hello")], "agent": [reply]})
    assert outcome.termination == "infrastructure_error" and outcome.reward is None
    assert outcome.info["reward_info"] is None and outcome.info["termination_detail"]


# --- the suites: a checkout plays the upstream protocol, anything else says it is not comparable ---


def _run_tau2(tmp_path: Path, data: Path, script: Any, name: str) -> tuple[RunResult, FakeEngine, Any]:
    engine = FakeEngine(script, identity="scripted")
    config = {"tau2_data": str(data), "domain": "mock", "tasks": "create_task_1",
              "export_tau2": str(tmp_path / f"{name}.json")}
    run = RunConfig(suite="tau2", suite_config=config, db=str(tmp_path / f"{name}.duckdb"), progress=False)
    result = run_suite(run, pool=ModelPool.from_engines(dict.fromkeys(("agent", "user", "judge"), engine)))
    return result, engine, connect(tmp_path / f"{name}.duckdb")


def test_tau2_run_on_a_checkout_sends_upstreams_requests_and_counts_infrastructure_errors(
        checkout: Path, tmp_path: Path) -> None:
    replies = {"user": iter([_say("Hello")]),
               "agent": iter([_call("create_task", '{"user_id": "user_1", "title": ', "c1")])}
    result, engine, con = _run_tau2(tmp_path, checkout / "data" / "tau2",
                                    lambda prepared: next(replies[prepared.request.role]), "upstream")
    user = engine.requests[0].request
    assert user.tools and user.sampling.seed == 626729 and user.constraint is None
    assert any("upstream protocol, comparable with tau2-bench" in note for note in result.notes)
    row = con.execute("SELECT episodes, scored_episodes, infrastructure_errors, comparable FROM tau2_summary "
                      "WHERE run_id = ?", [result.run_id]).fetchone()
    assert row == (1, 0, 1, True)
    exported = json.loads((tmp_path / "upstream.json").read_text(encoding="utf-8"))
    assert [sim["termination_reason"] for sim in exported["simulations"]] == ["infrastructure_error"]
    guidelines = (checkout / "data" / "tau2" / "user_simulator" / "simulation_guidelines.md").read_text()
    assert exported["info"]["user_info"]["global_simulation_guidelines"] == guidelines  # as upstream records


def test_tau2_run_on_a_bare_data_folder_plays_ours_and_says_not_comparable(tmp_path: Path) -> None:
    if not (DATA / "domains" / "mock").is_dir():
        pytest.skip(f"{DATA} is absent")
    stop = json.dumps({"message": "Bye ###STOP###"})
    result, engine, con = _run_tau2(tmp_path, DATA, lambda prepared: stop, "ours")
    assert engine.requests[0].request.tools is None  # our JSON-turn protocol: tools as text, a grammar
    assert any(NOT_COMPARABLE in note for note in result.notes)
    row = con.execute("SELECT infrastructure_errors, comparable FROM tau2_summary WHERE run_id = ?",
                      [result.run_id]).fetchone()
    assert row == (0, False)


def test_userproxy_run_on_a_checkout_seats_each_proxy_in_upstreams_user_request(
        checkout: Path, tmp_path: Path) -> None:
    def proxy(prepared: PreparedRequest) -> dict[str, Any]:
        return _say("Bye ###STOP###" if len(prepared.request.messages) > 2 else "Hello")

    grade = json.dumps({"rationale": "fine", "evidence_turns": [], "applicable": False, "passed": True})
    engines = {"agent": FakeEngine(lambda prepared: _say("How can I help?"), identity="a"),
               "judge": FakeEngine(lambda prepared: grade, identity="j"),
               "user:P1": FakeEngine(proxy, identity="p1"), "user:P2": FakeEngine(proxy, identity="p2")}
    config = {"tau2_data": str(checkout / "data" / "tau2"), "domains": "mock", "tasks": "create_task_1",
              "proxies": "P1,P2", "criteria_template": True}
    run = RunConfig(suite="userproxy", suite_config=config, db=str(tmp_path / "u.duckdb"), progress=False)
    result = run_suite(run, pool=ModelPool.from_engines(dict(engines)))
    for name in ("p1", "p2"):
        first = next(e for e in engines.values() if e.identity == name).requests[0].request
        assert first.role == f"user:P{name[1]}" and first.sampling.seed == 626729 and first.tools
        assert first.messages[0]["content"].endswith("</scenario>")  # upstream's user system prompt
    assert any("upstream protocol, comparable with tau2-bench" in note for note in result.notes)
    con = connect(tmp_path / "u.duckdb")
    rows = con.execute("SELECT proxy, episodes, infrastructure_errors, comparable FROM ufs_protocol "
                       "ORDER BY proxy").fetchall()
    assert rows == [("P1", 1, 0, True), ("P2", 1, 0, True)]
    shown = ufs_section_tables(con, [result.run_id])[-1].tables[0]  # what `uxlocal report` prints
    assert shown.title == "Episodes left out and comparability" and len(shown.rows) == 2


def test_a_judge_reply_upstreams_parser_cannot_read_ends_as_an_infrastructure_error(
        checkout: Path, tmp_path: Path) -> None:
    def change(data: dict[str, Any]) -> None:
        judged = next(e for e in data["episodes"] if e["script"]["judge"])
        fenced = "```json\n{\"results\": []}\n```"  # upstream's json.loads reads no code fence
        judged["script"]["judge"][0]["content"] = fenced
        data["episodes"] = [judged]

    recording = _rewrite(EPISODES / "retail.json.gz", tmp_path / "retail.json.gz", change)
    report = check_domain(recording, checkout, _schedule)
    assert report.calls_equal == report.calls  # the requests are unchanged
    assert report.episodes_equal == 0 and "termination infrastructure_error" in report.mismatches[0]
