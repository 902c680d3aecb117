"""Ingest tau2 results.json and tau-bench v1 files into the store (issue 5, item 7)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from uxlocal.cli import cli
from uxlocal.errors import InputError
from uxlocal.store.db import connect
from uxlocal.suites.userproxy.ufs.episodes import load_trajectories, run_store_prechecks
from uxlocal.suites.userproxy.ufs.ingest import ingest_tau2, ingest_taubench_v1, rebuild_results
from uxlocal.tau2 import (
    AgentInfo,
    Environment,
    EnvironmentInfo,
    Message,
    Results,
    RewardInfo,
    RunInfo,
    Simulation,
    Task,
    UserInfo,
    read_results,
    write_results,
)

Convo = Callable[..., list[Message]]


def _results(tasks: dict[str, Task], make_convo: Convo) -> Results:
    first = make_convo(
        ("assistant", "Hi! How can I help you today?"),
        ("user", "Hi, I'm Yusuf Rossi from 19122, I want to exchange items."),
        (
            "call",
            "assistant",
            "find_user_id_by_name_zip",
            {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"},
        ),
        ("result", '"yusuf_rossi_9620"'),
        ("assistant", "Found you. Which items?"),
        ("user", "The keyboard. ###STOP###"),
    )
    first[1] = first[1].model_copy(
        update={
            "cost": 0.002,
            "usage": {"prompt_tokens": 1200, "completion_tokens": 30},
            "generation_time_seconds": 0.5,
        }
    )
    first[5] = first[5].model_copy(
        update={
            "cost": 0.003,
            "usage": {"prompt_tokens": 1500, "completion_tokens": 10},
            "generation_time_seconds": 0.25,
        }
    )
    second = make_convo(
        ("assistant", "Hi! How can I help you today?"),
        ("user", "Hello"),
        ("assistant", "What do you need?"),
        ("user", "Never mind ###STOP###"),
    )
    sims = [
        Simulation(
            id="s-1",
            task_id="0",
            trial=0,
            termination_reason="user_stop",
            user_cost=0.005,
            agent_cost=0.01,
            reward_info=RewardInfo(reward=1.0, reward_basis=["DB"], reward_breakdown={"DB": 1.0}),
            messages=first,
            review={"summary": "a newer tau2 field we keep"},
        ),
        Simulation(
            id="s-2",
            task_id="1",
            trial=0,
            termination_reason="user_stop",
            user_cost=0.001,
            reward_info=RewardInfo(reward=0.0),
            messages=second,
        ),
        Simulation(id="s-3", task_id="0", trial=1, termination_reason="infrastructure_error", messages=[]),
    ]
    info = RunInfo(
        user_info=UserInfo(llm="gemma-26b", global_simulation_guidelines="Wait to be asked."),
        agent_info=AgentInfo(llm="gpt-5.5"),
        environment_info=EnvironmentInfo(domain_name="retail"),
        num_trials=2,
    )
    return Results(info=info, tasks=[tasks["0"], tasks["1"]], simulations=sims, leaderboard_note="kept too")


@pytest.fixture
def results_file(tmp_path: Path, tasks: Callable[[str], dict[str, Task]], make_convo: Convo) -> Path:
    return write_results(tmp_path / "results.json", _results(tasks("retail"), make_convo))


def test_tau2_results_round_trip_through_the_store(
    store: duckdb.DuckDBPyConnection, results_file: Path
) -> None:
    report = ingest_tau2(store, results_file)
    assert (report.domain, report.tasks, report.episodes, report.proxy, report.agent) == (
        "retail",
        2,
        3,
        "gemma-26b",
        "gpt-5.5",
    )
    assert report.run_id.startswith("tau2-ingest-")
    original = read_results(results_file).model_dump(mode="json")
    assert rebuild_results(store, report.run_id).model_dump(mode="json") == original


def test_ingest_writes_the_rows_a_tau2_run_writes(
    store: duckdb.DuckDBPyConnection, results_file: Path
) -> None:
    run_id = ingest_tau2(store, results_file).run_id
    episodes = store.execute(
        "SELECT episode_id, item_id, task, status, termination, reward FROM episodes "
        "WHERE run_id = ? ORDER BY episode_id",
        [run_id],
    ).fetchall()
    assert episodes == [
        ("retail/0/trial-0", "retail/0", "retail", "done", "user_stop", 1.0),
        ("retail/0/trial-1", "retail/0", "retail", "done", "infrastructure_error", None),
        ("retail/1/trial-0", "retail/1", "retail", "done", "user_stop", 0.0),
    ]
    call = store.execute(
        "SELECT turn_idx, call_idx, requestor, name, ok, result FROM tool_calls WHERE run_id = ?", [run_id]
    ).fetchall()
    assert call == [(2, 0, "assistant", "find_user_id_by_name_zip", True, '"yusuf_rossi_9620"')]
    turn = store.execute(
        "SELECT role, content, model_role FROM turns WHERE run_id = ? AND idx = 2 "
        "AND episode_id = 'retail/0/trial-0'",
        [run_id],
    ).fetchone()
    assert turn[0] == "assistant" and turn[2] == "agent"
    assert json.loads(turn[1]) == {
        "tool": "find_user_id_by_name_zip",
        "arguments": {"first_name": "Yusuf", "last_name": "Rossi", "zip": "19122"},
    }
    summary = store.execute(
        "SELECT episodes, scored_episodes, avg_reward FROM tau2_summary WHERE run_id = ?", [run_id]
    ).fetchone()
    assert summary == (3, 2, 0.5)  # tau2's own views leave the infrastructure error out


def test_ingested_user_cost_and_tokens_reach_the_ufs_views(
    store: duckdb.DuckDBPyConnection, results_file: Path
) -> None:
    run_id = ingest_tau2(store, results_file).run_id
    row = store.execute(
        "SELECT proxy, agent, user_prompt_tokens, user_completion_tokens, user_cost_usd, "
        "user_engine_s, agent_tool_calls, agent_questions FROM ufs_trajectories "
        "WHERE run_id = ? AND episode_id = 'retail/0/trial-0'",
        [run_id],
    ).fetchone()
    assert row == ("gemma-26b", "gpt-5.5", 2700, 40, pytest.approx(0.005), pytest.approx(0.75), 1, 1)
    assert store.execute("SELECT count(*) FROM ufs_trajectories WHERE run_id = ?", [run_id]).fetchone() == (
        2,
    )


def test_ingesting_the_same_file_twice_adds_nothing(
    store: duckdb.DuckDBPyConnection, results_file: Path
) -> None:
    first = ingest_tau2(store, results_file)
    again = ingest_tau2(store, results_file)
    assert again.already and again.run_id == first.run_id and again.episodes == 3
    assert store.execute("SELECT count(*) FROM episodes").fetchone() == (3,)


def test_directory_form_is_read_too(
    store: duckdb.DuckDBPyConnection, results_file: Path, tmp_path: Path
) -> None:
    raw = json.loads(results_file.read_text())
    folder = tmp_path / "dir-run"
    (folder / "simulations").mkdir(parents=True)
    for sim in raw["simulations"]:
        (folder / "simulations" / f"{sim['id']}.json").write_text(json.dumps(sim))
    raw["simulation_index"] = [{"id": s["id"], "task_id": s["task_id"]} for s in raw.pop("simulations")]
    (folder / "results.json").write_text(json.dumps(raw))
    report = ingest_tau2(store, folder)
    assert report.episodes == 3
    assert len(rebuild_results(store, report.run_id).simulations) == 3


def test_simulation_for_a_missing_task_is_an_input_error(
    store: duckdb.DuckDBPyConnection, tmp_path: Path, results_file: Path
) -> None:
    raw = json.loads(results_file.read_text())
    raw["tasks"] = raw["tasks"][:1]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    with pytest.raises(InputError, match="missing from its 'tasks': 1"):
        ingest_tau2(store, bad)
    assert store.execute("SELECT count(*) FROM runs").fetchone() == (0,)


def test_prechecks_run_on_ingested_trajectories(store: duckdb.DuckDBPyConnection, results_file: Path) -> None:
    run_id = ingest_tau2(store, results_file).run_id
    assert len(load_trajectories(store, run_id=run_id)) == 3
    assert run_store_prechecks(store, run_id=run_id) == (3, 1)
    assert run_store_prechecks(store, run_id=run_id) == (3, 1)  # idempotent
    flagged = store.execute(
        "SELECT episode_id, kind, family, turns FROM ufs_prechecks WHERE flagged"
    ).fetchall()
    assert flagged == [("retail/0/trial-0", "opening_disclosure", "premature_disclosure", "[1]")]


# --- the tau2 runtime's own export --------------------------------------------------------------------


def _script(prepared: Any) -> str:
    request = prepared.request
    chat = request.messages
    if request.role == "judge":
        return json.dumps({"justification": "seen", "met": True})
    if request.role == "user":
        text = "###STOP###" if len(chat) > 3 else "Can you help me?"
        return json.dumps({"message": text}) if request.constraint is not None else text
    if not any(m["content"].startswith("Tool result") for m in chat):
        return json.dumps({"tool": "get_users", "arguments": {}})
    return json.dumps({"message": "Here you go. Anything else?"})


def test_a_results_file_exported_by_the_tau2_runtime_round_trips(tmp_path: Path, data_dir: Path) -> None:
    pytest.importorskip("uxlocal.suites.tau2.suite")
    from uxlocal.config import RunConfig
    from uxlocal.engine.fake import FakeEngine
    from uxlocal.engine.pool import ModelPool
    from uxlocal.runner import run_suite

    pool = ModelPool.from_engines(
        {role: FakeEngine(_script, identity=f"fake-{role}") for role in ("agent", "user", "judge")}
    )
    for slot in pool.slots.values():
        slot.model = slot.model.model_copy(update={"price_input_per_mtok": 1.0, "price_output_per_mtok": 2.0})
    exported = tmp_path / "mock.json"
    run = RunConfig(
        suite="tau2",
        suite_config={"tau2_data": str(data_dir), "domain": "mock", "export_tau2": str(exported)},
        db=str(tmp_path / "run.duckdb"),
        limit=2,
        progress=False,
    )
    source_run = run_suite(run, pool=pool).run_id

    con = connect(tmp_path / "ingest.duckdb")
    report = ingest_tau2(con, exported)
    assert rebuild_results(con, report.run_id).model_dump(mode="json") == read_results(exported).model_dump(
        mode="json"
    )
    original = connect(tmp_path / "run.duckdb")
    want = {
        (t.episode_id, tuple(m.model_dump_json(exclude={"cost"}) for m in t.messages))
        for t in load_trajectories(original, run_id=source_run)
    }
    got = {
        (t.episode_id, tuple(m.model_dump_json(exclude={"cost"}) for m in t.messages))
        for t in load_trajectories(con, run_id=report.run_id)
    }
    assert got == want
    costs = ("SELECT episode_id, round(user_cost_usd, 12), user_prompt_tokens, agent_tool_calls "
             "FROM ufs_trajectories")
    assert sorted(con.execute(costs).fetchall()) == sorted(original.execute(costs).fetchall())


# --- tau-bench v1 ---------------------------------------------------------------------------------------


def _v1_record(task_id: int, trial: int, *, stop: bool = True, reward: float = 1.0) -> dict[str, Any]:
    traj = [
        {"role": "system", "content": "# Airline Agent Policy\n..."},
        {"role": "user", "content": "Hi, I want to cancel a trip. My user id is emma_kim_9957."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_user_details", "arguments": '{"user_id": "emma_kim_9957"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "name": "get_user_details", "content": '{"name": "Emma"}'},
        {"role": "assistant", "content": "Which reservation would you like to cancel?"},
        {"role": "user", "content": "EHGLP3. ###STOP###" if stop else "EHGLP3."},
    ]
    task = {
        "user_id": "emma_kim_9957",
        "instruction": "You are Emma Kim (emma_kim_9957). Cancel EHGLP3.",
        "actions": [{"name": "cancel_reservation", "kwargs": {"reservation_id": "EHGLP3"}}],
        "outputs": [],
    }
    return {
        "task_id": task_id,
        "reward": reward,
        "trial": trial,
        "traj": traj,
        "info": {"task": task, "source": "user", "user_cost": 0.004, "reward_info": {"reward": reward}},
    }


def test_taubench_v1_file_becomes_tau2_shaped_rows(store: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    path = tmp_path / "tool-calling-gpt-4o-0.0_range_0--1_user-gpt-4o-llm_0101120000.json"
    path.write_text(
        json.dumps([_v1_record(3, 0), _v1_record(3, 1, stop=False, reward=0.0), _v1_record(1, 0)])
    )
    report = ingest_taubench_v1(store, path)
    assert (report.domain, report.tasks, report.episodes, report.proxy, report.agent) == (
        "airline",
        2,
        3,
        "gpt-4o",
        "gpt-4o",
    )
    trajectories = {t.episode_id: t for t in load_trajectories(store, run_id=report.run_id)}
    first = trajectories["airline/3/trial-0"]
    assert [m.role for m in first.messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert first.messages[1].tool_calls[0].arguments == {"user_id": "emma_kim_9957"}  # type: ignore[index]
    assert first.termination == "user_stop" and first.reward == 1.0
    assert trajectories["airline/3/trial-1"].termination == "max_steps"
    assert trajectories["airline/1/trial-0"].termination == "user_stop"
    assert first.task.user_scenario.instructions == "You are Emma Kim (emma_kim_9957). Cancel EHGLP3."
    assert first.task.evaluation_criteria.actions[0].name == "cancel_reservation"  # type: ignore[union-attr,index]
    rebuilt = rebuild_results(store, report.run_id)
    assert [t.id for t in rebuilt.tasks] == ["1", "3"]
    row = store.execute(
        "SELECT user_cost_usd, agent_tool_calls FROM ufs_trajectories WHERE episode_id = 'airline/3/trial-0'"
    ).fetchone()
    assert row == (pytest.approx(0.004), 1)


def test_taubench_v1_domain_needs_a_hint_when_tools_do_not_tell(
    store: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    record = _v1_record(0, 0)
    record["traj"] = [m for m in record["traj"] if m["role"] in ("user", "system")]
    record["info"]["task"]["actions"] = []
    path = tmp_path / "v1.json"
    path.write_text(json.dumps([record]))
    with pytest.raises(InputError, match="pass --domain"):
        ingest_taubench_v1(store, path)
    assert ingest_taubench_v1(store, path, domain="airline", proxy="my-proxy").proxy == "my-proxy"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{}", "expected a JSON list of tau-bench results"),  # tau2 results are not v1 files
        ('[{"task_id": 1}]', "result 0: missing reward, info, traj"),
        ("[", "not valid JSON"),
    ],
)
def test_taubench_v1_bad_files_are_input_errors(
    store: duckdb.DuckDBPyConnection, tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "v1.json"
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        ingest_taubench_v1(store, path, domain="retail")


# --- CLI --------------------------------------------------------------------------------------------------


def test_cli_ingest_tau2_and_its_rerun(tmp_path: Path, results_file: Path) -> None:
    db = tmp_path / "s.duckdb"
    runner = CliRunner()
    first = runner.invoke(cli, ["ingest", "tau2", str(results_file), "--db", str(db)])
    assert first.exit_code == 0, first.output
    assert "3 episodes of retail" in first.output and "proxy gemma-26b" in first.output
    again = runner.invoke(cli, ["ingest", "tau2", str(results_file), "--db", str(db)])
    assert again.exit_code == 0 and "already ingested" in again.output


def test_cli_ingest_reports_a_bad_file_with_its_path(tmp_path: Path) -> None:
    bad = tmp_path / "nope.json"
    bad.write_text("[1, 2")
    result = CliRunner().invoke(
        cli, ["ingest", "taubench-v1", str(bad), "--db", str(tmp_path / "s.duckdb"), "--domain", "retail"]
    )
    assert result.exit_code == 2
    assert f"{bad}:1: not valid JSON" in result.output


def test_taubench_v1_transfer_ends_as_agent_stop(store: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    record = _v1_record(5, 0, stop=False)
    record["traj"] += [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "transfer_to_human_agents", "arguments": '{"summary": "x"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_9", "content": "Transfer successful"},
    ]
    path = tmp_path / "v1.json"
    path.write_text(json.dumps([record]))
    run_id = ingest_taubench_v1(store, path, domain="airline").run_id
    assert store.execute("SELECT termination FROM episodes WHERE run_id = ?", [run_id]).fetchone() == (
        "agent_stop",
    )


def test_telecom_results_with_user_tool_calls_round_trip_and_keep_the_seat(
    store: duckdb.DuckDBPyConnection, tmp_path: Path, data_dir: Path
) -> None:
    """Issue 15: a telecom file's user tool calls come in as user-seat tool calls and go back out."""
    from uxlocal.tau2 import USER_STOP, load_domain, load_tasks, score_episode
    from uxlocal.tau2.replay import scripted_trajectory

    domain = load_domain(data_dir, "telecom")
    task = load_tasks(data_dir, "telecom")[0]
    messages = [Message.text("assistant", "Hi! How can I help you today?"),
                *scripted_trajectory(Environment.for_task(domain, task), task, "gold"),
                Message.text("user", "It works now. ###STOP###")]
    reward = score_episode(domain, task, messages, USER_STOP).finish()
    assert reward.reward == 1.0
    sim = Simulation(
        id="t-1", task_id=task.id, termination_reason=USER_STOP, reward_info=reward, messages=messages
    )
    info = RunInfo(user_info=UserInfo(llm="proxy"), agent_info=AgentInfo(llm="agent"),
                   environment_info=EnvironmentInfo(domain_name="telecom"))
    path = write_results(tmp_path / "telecom.json", Results(info=info, tasks=[task], simulations=[sim]))
    run_id = ingest_tau2(store, path).run_id
    calls = store.execute("SELECT requestor, name, ok FROM tool_calls WHERE run_id = ? ORDER BY turn_idx",
                          [run_id]).fetchall()
    assert calls == [("user", "toggle_data", True), ("assistant", "refuel_data", True)]
    assert rebuild_results(store, run_id).model_dump(mode="json") == read_results(path).model_dump(
        mode="json"
    )
