"""The ``tau2`` suite around the episodes (issue 4): options, identity, views, export, CLI, demo, protocol."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from uxlocal.cli import cli
from uxlocal.config import RunConfig
from uxlocal.engine.base import GenResult
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.runner import run_suite
from uxlocal.store.db import connect
from uxlocal.suites.base import get_suite
from uxlocal.suites.tau2.suite import Tau2Config, Tau2Suite
from uxlocal.tau2 import Environment, Message, ToolCall, load_tasks, read_results
from uxlocal.tau2 import data as tau2_data
from uxlocal.tau2.episode import TurnFormatError, parse_turn, turn_schema
from uxlocal.tau2.episode.views import seat_view


def say(text: str) -> str:
    return json.dumps({"message": text})


def call(tool: str, **arguments: Any) -> str:
    return json.dumps({"tool": tool, "arguments": arguments})


def _script(prepared: Any) -> str:
    """Agent: one lookup, then a message; user: one question, then stop; judge: met."""
    request = prepared.request
    chat = request.messages
    if request.role == "judge":
        return json.dumps({"justification": "seen", "met": True})
    if request.role == "user":
        text = "###STOP###" if len(chat) > 3 else "Can you help me?"
        return say(text) if request.constraint is not None else text
    if not any(m["content"].startswith("Tool result") for m in chat):
        has_calculate = "calculate" in chat[0]["content"]
        return call("calculate", expression="2 + 2") if has_calculate else call("get_users")
    return say("Here you go.")


def _priced_pool() -> ModelPool:
    """Fake engines whose models carry prices, so costs are not all zero."""
    pool = ModelPool.from_engines({role: FakeEngine(_script, identity=f"fake-{role}")
                                   for role in ("agent", "user", "judge")})
    for slot in pool.slots.values():
        slot.model = slot.model.model_copy(update={"price_input_per_mtok": 1.0, "price_output_per_mtok": 2.0})
    return pool


def _run(tmp_path: Path, data_dir: Path, **options: Any) -> Any:
    config = {"tau2_data": str(data_dir), **options}
    run = RunConfig(suite="tau2", suite_config=config, db=str(tmp_path / "s.duckdb"), limit=3, progress=False)
    return run_suite(run, pool=_priced_pool())


# --- export ---------------------------------------------------------------------------------------


def test_export_round_trips_every_message_from_the_store(tmp_path: Path, data_dir: Path) -> None:
    out = tmp_path / "export"
    result = _run(tmp_path, data_dir, domain="mock,retail", trials=2, export_tau2=str(out))
    assert any("results.json written" in note for note in result.notes)
    con = connect(tmp_path / "s.duckdb")
    for domain in ("mock", "retail"):
        results = read_results(out / domain / "results.json")
        assert results.info.environment_info.domain_name == domain and results.info.num_trials == 2
        assert results.info.agent_info.llm and results.info.user_info.global_simulation_guidelines
        assert [t.id for t in results.tasks] == [t.id for t in load_tasks(data_dir, domain, limit=3)]
        assert len(results.simulations) == 6
        for sim in results.simulations:
            episode_id = f"{domain}/{sim.task_id}/trial-{sim.trial}"
            rows = con.execute("SELECT meta FROM turns WHERE run_id = ? AND episode_id = ? ORDER BY idx",
                               [result.run_id, episode_id]).fetchall()
            stored = [Message.model_validate(json.loads(r[0])["message"]) for r in rows]
            assert [m.model_dump(exclude={"cost"}) for m in sim.messages] == [
                m.model_dump(exclude={"cost"}) for m in stored]
            assert [m.turn_idx for m in sim.messages] == list(range(len(sim.messages)))
            reward, termination = con.execute(
                "SELECT reward, termination FROM episodes WHERE run_id = ? AND episode_id = ?",
                [result.run_id, episode_id]).fetchone()
            assert sim.reward_info is not None and sim.reward_info.reward == reward
            assert sim.termination_reason == termination
            assert sim.agent_cost and sim.agent_cost > 0 and sim.user_cost and sim.user_cost > 0
            generated = [m for m in sim.messages if m.usage]
            assert generated and all(m.cost and m.cost > 0 for m in generated)
    # a second export of the same run is identical (ids are stable)
    first = (out / "retail" / "results.json").read_text()
    get_suite("tau2").after_run(Tau2Config(tau2_data=data_dir, domain="mock,retail", trials=2,
                                           export_tau2=out), con, result.run_id)
    again = json.loads((out / "retail" / "results.json").read_text())
    assert [s["id"] for s in again["simulations"]] == [s["id"] for s in json.loads(first)["simulations"]]


def test_export_of_one_domain_writes_the_given_file(tmp_path: Path, data_dir: Path) -> None:
    target = tmp_path / "one.json"
    _run(tmp_path, data_dir, domain="mock", export_tau2=str(target))
    assert len(read_results(target).simulations) == 3


# --- views ------------------------------------------------------------------------------------------


def _fake_run(con: Any, run_id: str, outcomes: dict[str, list[float]], *, failed: int = 0) -> None:
    con.execute("INSERT INTO runs (run_id, suite, config, config_sha256, status, started_at) "
                "VALUES (?, 'tau2', '{}', 'x', 'done', now())", [run_id])
    for task_id, rewards in outcomes.items():
        for trial, reward in enumerate(rewards):
            status = "failed" if trial < failed else "done"
            con.execute("INSERT INTO episodes (run_id, episode_id, item_id, task, trial, status, "
                        "termination, reward, info) VALUES (?, ?, ?, 'retail', ?, ?, 'user_stop', ?, '{}')",
                        [run_id, f"retail/{task_id}/trial-{trial}", f"retail/{task_id}", trial, status,
                         reward])


def test_pass_k_view_follows_the_spec_formula(tmp_path: Path) -> None:
    con = connect(tmp_path / "s.duckdb")
    outcomes = {"0": [1, 1, 1, 1], "1": [1, 0, 1, 0], "2": [0, 0, 0, 1], "3": [0, 0, 0, 0], "4": [1, 1, 1, 0]}
    _fake_run(con, "r", outcomes)
    got = dict(con.execute("SELECT k, pass_k FROM tau2_pass_k WHERE run_id = 'r'").fetchall())
    for k in range(1, 5):
        want = sum(math.comb(sum(r), k) / math.comb(4, k) for r in outcomes.values()) / len(outcomes)
        assert got[k] == pytest.approx(want, abs=1e-12)
    assert set(got) == {1, 2, 3, 4}
    assert con.execute("SELECT avg_reward, success_rate FROM tau2_summary WHERE run_id = 'r'").fetchone() == (
        pytest.approx(10 / 20), pytest.approx(10 / 20))


def test_failed_episodes_count_as_infrastructure_errors_outside_pass_k(tmp_path: Path) -> None:
    con = connect(tmp_path / "s.duckdb")
    _fake_run(con, "r", {"0": [0, 1, 1], "1": [0, 1, 0]}, failed=1)  # trial 0 of each task failed
    assert con.execute("SELECT k FROM tau2_pass_k WHERE run_id = 'r'").fetchall() == [(1,), (2,)]
    terminations = dict(con.execute("SELECT termination, episodes FROM tau2_terminations").fetchall())
    assert terminations == {"infrastructure_error": 2, "user_stop": 4}
    assert con.execute("SELECT scored_episodes, avg_reward FROM tau2_summary").fetchone() == (4, 0.75)


def test_report_tables_come_from_the_views(tmp_path: Path, data_dir: Path) -> None:
    result = _run(tmp_path, data_dir, domain="mock")
    titles = [t.title for t in result.tables]
    assert titles == ["tau2 reward", "tau2 pass^k", "tau2 terminations", "tau2 cost per episode"]
    cost = result.tables[3]
    rows = [dict(zip(cost.columns, r, strict=True)) for r in cost.rows]
    assert {r["role"] for r in rows} >= {"agent", "user"} and all(r["cost_per_episode_usd"] > 0 for r in rows)


# --- options and identity ----------------------------------------------------------------------------


def test_every_option_has_a_default_and_a_docstring() -> None:
    for name, field in Tau2Config.model_fields.items():
        assert not field.is_required(), name
        assert field.description, f"{name} lacks a docstring"
    assert set(Tau2Config.not_in_identity) <= set(Tau2Config.model_fields)


def test_data_path_and_export_path_are_not_the_run_identity(tmp_path: Path, data_dir: Path) -> None:
    first = _run(tmp_path, data_dir, domain="mock", export_tau2=str(tmp_path / "a.json"))
    again = _run(tmp_path, data_dir, domain="mock", export_tau2=str(tmp_path / "b.json"))
    assert again.run_id == first.run_id and again.resumed
    hashes = Tau2Suite().prompt_hashes(Tau2Config(tau2_data=data_dir, domain="mock"))
    assert "tau2-data/mock/tasks.json" in hashes and "tau2/agent.md" in hashes


def test_task_ids_apply_per_domain() -> None:
    config = Tau2Config(domain="retail,airline", tasks="1, retail/5,airline/7")
    assert config.task_ids("retail") == ["1", "5"] and config.task_ids("airline") == ["1", "7"]
    assert Tau2Config().task_ids("retail") is None


def test_plan_has_one_item_per_task_and_one_episode_per_trial(data_dir: Path) -> None:
    config = Tau2Config(tau2_data=data_dir, domain="airline", tasks="3,7", trials=3)
    plan = Tau2Suite().plan(config, RunConfig(suite="tau2"))
    assert [i["item_id"] for i in plan.items] == ["airline/3", "airline/7"]
    assert [e.episode_id for e in plan.episodes][:3] == [f"airline/3/trial-{k}" for k in range(3)]
    assert plan.items[0]["data"]["task"]["id"] == "3" and len(plan.episodes) == 6


# --- CLI and demo --------------------------------------------------------------------------------------


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_cli_lists_the_tau2_options() -> None:
    code, out = _invoke("run", "tau2", "-h")
    assert code == 0
    for option in ("--domain", "--tau2-data", "--trials", "--split", "--tasks", "--max-steps", "--max-errors",
                   "--export-tau2", "--model agent=embedded"):
        assert option in out, option


@pytest.mark.parametrize("args, message", [
    (["--domain", "no_such_domain"], "no tau2 environment for domain 'no_such_domain'"),  # unknown domain
    (["--tau2-data", "/nonexistent"], "no tau2 data here"),  # bad data folder
    (["--tasks", "no-such-task"], "task ids not in split 'base'"),  # typo in an id
])
def test_cli_reports_bad_tau2_options_with_exit_2(tmp_path: Path, data_dir: Path, args: list[str],
                                                   message: str) -> None:
    base = ["run", "tau2", "--model", "agent=fake", "--model", "user=fake", "--model", "judge=fake",
            "--db", str(tmp_path / "s.duckdb")]
    if "--tau2-data" not in args:
        base += ["--tau2-data", str(data_dir)]
    code, out = _invoke(*base, *args)
    assert code == 2 and message in out, out


def test_demo_plays_the_sample_domain_and_says_so_when_tau2_data_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(tau2_data.ENV_VAR, raising=False)
    monkeypatch.setattr(tau2_data, "_CHECKOUT_DATA", tmp_path / "nothing")
    spec = Tau2Suite().demo()
    assert spec.unavailable is None and spec.config["domain"] == "homenet" and spec.limit == 2
    assert spec.data and "bundled sample domain 'homenet'" in spec.data and "UXLOCAL_TAU2_DATA" in spec.data
    import uxlocal.demo as demo

    runs: list[Any] = []
    monkeypatch.setattr(demo, "run_suite", lambda run, pool: runs.append(run) or run)
    lines: list[str] = []
    demo.run_demo(db=tmp_path / "d.duckdb", suites=["tau2"], model="fake", echo=lines.append)
    assert lines[1:] == ["\n== tau2 ==", f"data: {spec.data}"]
    assert runs[0].suite_config["domain"] == "homenet" and runs[0].limit == 2


def test_demo_runs_the_mock_domain_when_data_is_there(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(tau2_data.ENV_VAR, str(data_dir))
    spec = Tau2Suite().demo()
    assert spec.unavailable is None and spec.config["domain"] == "mock" and spec.limit == 2
    assert set(spec.roles) == {"agent", "user", "judge"}


# --- the turn protocol and the seats' views -------------------------------------------------------------


def _result(text: str, *, valid: bool = True, parsed: Any = None, error: str | None = None) -> GenResult:
    return GenResult(text, "stop", valid=valid, parsed=parsed if parsed is not None else json.loads(text),
                     error=error)


def test_turn_schema_is_a_union_of_message_and_each_tool(retail: Any) -> None:
    tools = Environment(retail).tool_schemas("assistant")
    strict = turn_schema(tools)
    names = [alt["properties"]["tool"]["const"] for alt in strict["anyOf"][1:]]
    assert strict["anyOf"][0]["required"] == ["message"] and names == [t["function"]["name"] for t in tools]
    assert strict["anyOf"][1]["properties"]["arguments"] == tools[0]["function"]["parameters"]
    loose = turn_schema(tools, "loose")
    assert len(loose["anyOf"]) == 2 and loose["anyOf"][1]["properties"]["tool"]["enum"] == names
    assert turn_schema([])["required"] == ["message"]
    capped = turn_schema(tools, max_chars=100)
    assert capped["anyOf"][0]["properties"]["message"] == {"type": "string", "minLength": 1, "maxLength": 100}
    cancel = next(alt for alt in capped["anyOf"][1:]
                  if alt["properties"]["tool"]["const"] == "cancel_pending_order")
    assert cancel["properties"]["arguments"]["properties"]["order_id"]["maxLength"] == 100
    assert "maxLength" not in tools[1]["function"]["parameters"]["properties"]["order_id"]  # not mutated


def test_seat_constraints_cap_free_text_to_fit_the_token_budget(retail: Any) -> None:
    from uxlocal.engine.base import Sampling
    from uxlocal.tau2.episode import AgentSeat, JudgeSeat
    from uxlocal.tau2.episode.actions import text_cap

    seat = AgentSeat.build(policy="P", tool_schemas=Environment(retail).tool_schemas(),
                           sampling=Sampling(max_tokens=96))
    assert seat.constraint.schema["anyOf"][0]["properties"]["message"]["maxLength"] == text_cap(96) == 160
    judge = JudgeSeat(Sampling(max_tokens=64)).constraint.schema
    assert judge["properties"]["justification"]["maxLength"] == text_cap(64)


def test_agent_first_tool_holds_the_turn_after_a_user_message_to_that_call() -> None:
    """--agent-first-tool: answering a user message the agent must call the tool; otherwise it is free."""
    from uxlocal.engine.base import Sampling
    from uxlocal.tau2 import load_domain
    from uxlocal.tau2.episode import AgentSeat
    from uxlocal.tau2.layout import SAMPLE_DATA

    tools = Environment(load_domain(SAMPLE_DATA, "homenet")).tool_schemas()
    seat = AgentSeat.build(
        policy="P", tool_schemas=tools, sampling=Sampling(max_tokens=64), first_tool="check_outages"
    )
    call = ToolCall(id="c1", name="check_outages", arguments={"zip_code": "10001"}, requestor="assistant")
    after_user = seat.request([Message.text("assistant", "Hi"), Message.text("user", "My internet is down.")])
    after_tool = seat.request([Message.text("user", "Down."), Message.calls("assistant", [call]),
                               Message.tool_result(call, "[]", error=False)])
    forced = after_user.constraint.schema  # type: ignore[union-attr]
    assert forced["properties"]["tool"] == {"const": "check_outages"} and "anyOf" not in forced
    assert after_tool.constraint == seat.constraint  # after the search the agent may answer
    assert seat.constraint.schema["anyOf"][0]["required"] == ["message"]
    unchanged = AgentSeat.build(policy="P", tool_schemas=tools, sampling=Sampling(max_tokens=64),
                                first_tool="KB_search")  # a domain without the tool is unchanged
    assert unchanged.first_constraint is None


@pytest.mark.parametrize("text, kind", [
    ('{"message": "Hello"}', "message"),
    ('{"tool": "get_users", "arguments": {}}', "tool"),
    ('{"tool": "get_users"}', "tool"),  # missing arguments: a call with none
    ('{"tool": "get_users", "arguments": "{\\"a\\": 1}"}', "tool"),  # double-encoded arguments
])
def test_parse_turn_reads_messages_and_calls(text: str, kind: str) -> None:
    assert parse_turn(_result(text)).kind == kind


@pytest.mark.parametrize("text", [
    '{"message": "   "}',  # empty message
    '{"tool": 5, "arguments": {}}',  # tool name not text
    '{"tool": "x", "arguments": [1]}',  # arguments not an object
    '{"other": 1}',  # neither key
    "[1, 2]",  # not an object
])
def test_parse_turn_rejects_unusable_output(text: str) -> None:
    with pytest.raises(TurnFormatError):
        parse_turn(_result(text))


def test_parse_turn_rejects_invalid_generation() -> None:
    with pytest.raises(TurnFormatError, match="truncated"):
        parse_turn(GenResult('{"mess', "length", valid=False, error="truncated at max_tokens"))


def test_views_flip_roles_and_hide_the_other_seats_tools() -> None:
    agent_call = ToolCall(id="a1", name="get_users", arguments={}, requestor="assistant")
    user_call = ToolCall(id="u1", name="check_notifications", arguments={}, requestor="user")
    messages = [
        Message.text("assistant", "Hi! How can I help you today?"),
        Message.calls("user", [user_call]),
        Message.tool_result(user_call, "[]", error=False),
        Message.text("user", "Please list users."),
        Message.calls("assistant", [agent_call]),
        Message.tool_result(agent_call, "[{}]", error=False),
        Message.text("assistant", "Found one user."),
    ]
    agent = seat_view("assistant", "SYS", messages)
    assert [m["role"] for m in agent] == ["system", "assistant", "user", "assistant", "user", "assistant"]
    assert "check_notifications" not in json.dumps(agent)
    assert agent[4]["content"].startswith("Tool result (get_users)")
    user = seat_view("user", "SYS", messages)
    assert [m["role"] for m in user] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "get_users" not in json.dumps(user)
    assert user[3]["content"].startswith("Tool result (check_notifications)")
    plain = seat_view("user", "SYS", [messages[0], messages[3], messages[6]], json_turns=False)
    assert plain[2] == {"role": "assistant", "content": "Please list users."}


# --- the whole suite on the bundled sample domain (runs in every clone; issue 14) -----------------------


def _homenet_script(prepared: Any) -> str:
    """Agent: list the plans, then answer; user: check the router once if it has tools, then stop."""
    request = prepared.request
    chat = request.messages
    if request.role == "judge":
        return json.dumps({"justification": "seen", "met": True})
    seen_tool = any(m["content"].startswith("Tool result") for m in chat)
    if request.role == "user":
        if request.constraint is None:
            return "###STOP###" if len(chat) > 3 else "Which plans do you have?"
        return call("check_router") if not seen_tool else say("###STOP###" if len(chat) > 4 else "It is red.")
    return say("Fiber 1000 costs 69.00 a month.") if seen_tool else call("list_plans")


def test_suite_plays_the_sample_domain_with_user_tools_and_exports_it(tmp_path: Path) -> None:
    from uxlocal.tau2.layout import SAMPLE_DATA

    pool = ModelPool.from_engines({role: FakeEngine(_homenet_script, identity=f"fake-{role}")
                                   for role in ("agent", "user", "judge")})
    config = {"tau2_data": str(SAMPLE_DATA), "domain": "homenet", "tasks": "restart_router,compare_plans",
              "export_tau2": str(tmp_path / "homenet.json")}
    run = RunConfig(suite="tau2", suite_config=config, db=str(tmp_path / "s.duckdb"), progress=False)
    result = run_suite(run, pool=pool)
    sims = {s.task_id: s for s in read_results(tmp_path / "homenet.json").simulations}
    assert set(sims) == {"restart_router", "compare_plans"}
    router = sims["restart_router"].messages
    user_calls = [c.name for m in router if m.role == "user" for c in m.tool_calls or []]
    assert user_calls == ["check_router"]  # dual control: the user seat used its own tool
    answer = next(m for m in router if m.role == "tool" and m.requestor == "user")
    assert json.loads(answer.content or "")["status_light"] == "red"  # the task's setup froze the router
    assert not [c for m in sims["compare_plans"].messages if m.role == "user" for c in m.tool_calls or []]
    # the router was never restarted, so the DB check fails; the plan question is answered with 69.00
    assert sims["restart_router"].reward_info.reward == 0.0  # type: ignore[union-attr]
    assert sims["compare_plans"].reward_info.reward == 1.0  # type: ignore[union-attr]
    con = connect(tmp_path / "s.duckdb")
    rows = con.execute("SELECT episode_id, reward FROM episodes WHERE run_id = ?", [result.run_id]).fetchall()
    rewards = dict(rows)
    assert rewards == {"homenet/restart_router/trial-0": 0.0, "homenet/compare_plans/trial-0": 1.0}
