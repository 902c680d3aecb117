"""tau2 end to end with the embedded model in every seat (issue 4), through vLLM and the scheduler.

SmolLM2-135M cannot solve a tau2 task; these tests check the machinery on a real engine: every
episode ends with a tau2 termination reason and a reward, requests are batched across episodes,
constrained turns parse or are counted as errors, and the export reads back message for message.
Budgets are small (6 steps, short turns) so the run takes about a minute on 2 CPU cores.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest

from uxlocal.config import RunConfig
from uxlocal.engine.pool import ModelPool
from uxlocal.runner import run_suite
from uxlocal.store.db import connect
from uxlocal.tau2 import TERMINATION_REASONS, Environment, Message, read_results

pytestmark = pytest.mark.integration

TAU2_DATA = Path(os.environ.get("UXLOCAL_TAU2_DATA")
                 or Path(__file__).resolve().parents[2].parent / "shared" / "data" / "tau2")
ROLES = ("agent", "user", "judge")
LONG_WINDOW = 8192
"""SmolLM2-135M's trained window; the preset's 2048 cannot hold a retail/airline agent prompt
(policy + 16 tool schemas is about 4,500 tokens)."""


@pytest.fixture(scope="module")
def data_dir() -> Path:
    if not (TAU2_DATA / "domains").is_dir():
        pytest.skip(f"tau2 data not found at {TAU2_DATA}")
    return TAU2_DATA


@pytest.fixture(scope="module")
def long_pool(embedded_model: Any, vllm_pool: ModelPool) -> Any:
    """Serve the embedded model with its full 8k window, one engine for all three seats."""
    identity = hashlib.sha256(f"{embedded_model.identity}:max_model_len={LONG_WINDOW}".encode()).hexdigest()
    model = embedded_model.model_copy(update={"max_model_len": LONG_WINDOW, "identity": identity})
    pool = ModelPool.from_models({role: model for role in ROLES})
    yield pool
    pool.close()


def test_retail_and_airline_episodes_run_batched_end_to_end(long_pool: ModelPool, data_dir: Path,
                                                             tmp_path: Path) -> None:
    out = tmp_path / "export"
    config = {"tau2_data": str(data_dir), "domain": "retail,airline", "max_steps": 6, "agent_max_tokens": 48,
              "user_max_tokens": 32, "judge_max_tokens": 48, "export_tau2": str(out)}
    run = RunConfig(suite="tau2", suite_config=config, db=str(tmp_path / "s.duckdb"), limit=5, progress=False)
    result = run_suite(run, pool=long_pool)
    stats = result.stats
    assert stats.episodes_done == 10 and stats.episodes_failed == 0
    assert 0 < stats.engine_calls < stats.requests  # several episodes' requests share each engine call

    con = connect(tmp_path / "s.duckdb")
    episodes = con.execute("SELECT episode_id, termination, reward FROM episodes WHERE run_id = ?",
                           [result.run_id]).fetchall()
    assert len(episodes) == 10
    assert all(term in TERMINATION_REASONS and reward is not None for _, term, reward in episodes)
    summary = con.execute("SELECT domain, episodes FROM tau2_summary WHERE run_id = ?",
                          [result.run_id]).fetchall()
    assert sorted(summary) == [("airline", 5), ("retail", 5)]
    # every generated turn came from a valid generation (unusable ones never enter the trajectory)
    invalid = con.execute("SELECT count(*) FROM turns t JOIN generations g USING (request_hash) "
                          "WHERE t.run_id = ? AND t.role = 'assistant' AND NOT g.valid",
                          [result.run_id]).fetchone()
    assert invalid == (0,)

    for domain in ("retail", "airline"):
        results = read_results(out / domain / "results.json")
        assert len(results.simulations) == 5
        for sim in results.simulations:
            rows = con.execute("SELECT meta FROM turns WHERE run_id = ? AND episode_id = ? ORDER BY idx",
                               [result.run_id, f"{domain}/{sim.task_id}/trial-{sim.trial}"]).fetchall()
            stored = [Message.model_validate(json.loads(r[0])["message"]) for r in rows]
            assert [m.model_dump(exclude={"cost"}) for m in sim.messages] == [
                m.model_dump(exclude={"cost"}) for m in stored]
            assert sim.reward_info is not None and sim.termination_reason in TERMINATION_REASONS


def test_agent_prompt_beyond_the_window_ends_as_context_window_exceeded(
    vllm_pool: ModelPool, data_dir: Path, tmp_path: Path
) -> None:
    slot = next(iter(vllm_pool.slots))  # the preset's 2048-token window
    pool = ModelPool()
    pool.slots = vllm_pool.slots
    pool.roles = {role: slot for role in ROLES}
    config = {"tau2_data": str(data_dir), "domain": "retail", "user_max_tokens": 24}
    run = RunConfig(suite="tau2", suite_config=config, db=str(tmp_path / "s.duckdb"), limit=1, progress=False)
    result = run_suite(run, pool=pool)
    con = connect(tmp_path / "s.duckdb")
    ended = con.execute("SELECT termination, reward FROM episodes").fetchall()
    assert ended == [("context_window_exceeded", 0.0)]
    assert result.stats.episodes_failed == 0


def test_tool_branch_of_the_turn_grammar_yields_executable_calls(
    long_pool: ModelPool, data_dir: Path
) -> None:
    """Only the tool alternatives of each domain's strict union: every output must be a real call."""
    from uxlocal.engine.base import GenRequest, Sampling
    from uxlocal.episode import EpisodeContext, EpisodeSpec
    from uxlocal.rollout import Scheduler
    from uxlocal.tau2 import load_domain
    from uxlocal.tau2.episode import parse_turn
    from uxlocal.tau2.episode.actions import calls_only_constraint

    envs = {name: Environment(load_domain(data_dir, name)) for name in ("mock", "retail", "airline")}
    results: dict[str, Any] = {}

    no_arguments = {"mock": "get_users", "retail": "list_all_product_types", "airline": "list_all_airports"}

    def program(ctx: EpisodeContext, name: str) -> Any:
        tools = envs[name].tool_schemas("assistant")
        calls_only = calls_only_constraint(tools, max_tokens=48)  # free strings capped at 64 characters
        example = json.dumps({"tool": no_arguments[name], "arguments": {}})
        chat = ({"role": "system", "content": f"Call one tool. Reply with exactly this JSON: {example}"},
                {"role": "user", "content": "Go ahead."})
        results[name] = yield GenRequest("agent", chat, Sampling(max_tokens=96), calls_only)

    episodes = [EpisodeSpec(name, (lambda n: lambda ctx: program(ctx, n))(name)) for name in envs]
    stats = Scheduler(long_pool).run(episodes)
    assert stats.episodes_done == 3 and stats.engine_calls == 1
    parsed = 0
    for name, result in results.items():
        if result.finish_reason == "length":  # the budget ran out mid-arguments: a format error, not a bug
            continue
        action = parse_turn(result)
        names = {t["function"]["name"] for t in envs[name].tool_schemas()}
        assert action.kind == "tool" and action.tool in names
        envs[name].call(action.tool, action.arguments)  # never raises, whatever the arguments
        parsed += 1
    assert parsed >= 1, {name: r.text for name, r in results.items()}


def test_telecom_episodes_give_the_user_its_phone_tools_end_to_end(long_pool: ModelPool, data_dir: Path,
                                                                    tmp_path: Path) -> None:
    """Dual control on a real engine: the user seat answers under the 30-tool union constraint."""
    from uxlocal.tau2 import load_domain

    config = {"tau2_data": str(data_dir), "domain": "telecom", "max_steps": 4, "agent_max_tokens": 32,
              "user_max_tokens": 40, "judge_max_tokens": 32}
    run = RunConfig(suite="tau2", suite_config=config, db=str(tmp_path / "s.duckdb"), limit=3, progress=False)
    result = run_suite(run, pool=long_pool)
    assert result.stats.episodes_done == 3 and result.stats.episodes_failed == 0
    con = connect(tmp_path / "s.duckdb")
    episodes = con.execute("SELECT termination, reward, info FROM episodes WHERE run_id = ?",
                           [result.run_id]).fetchall()
    assert len(episodes) == 3
    assert all(term in TERMINATION_REASONS and reward is not None for term, reward, _ in episodes)
    assert all(json.loads(info)["domain"] == "telecom" for *_, info in episodes)
    user_tools = {
        s["function"]["name"] for s in Environment(load_domain(data_dir, "telecom")).tool_schemas("user")
    }
    calls = con.execute(
        "SELECT requestor, name, ok FROM tool_calls WHERE run_id = ?", [result.run_id]
    ).fetchall()
    user_calls = [(name, ok) for requestor, name, ok in calls if requestor == "user"]
    # the strict union only admits real user tools, so every user call the model made names one
    assert all(name in user_tools for name, _ in user_calls), user_calls
    # every episode asked the user seat at least once; each answer parsed under the union grammar or
    # ran out of its 40-token budget mid-JSON (a format error the episode records, not a crash)
    asked = con.execute("SELECT rg.episode_id, g.valid, g.finish_reason, g.text FROM run_generations rg "
                        "JOIN generations g USING (request_hash) WHERE rg.run_id = ? AND rg.role = 'user'",
                        [result.run_id]).fetchall()
    assert len({episode for episode, *_ in asked}) == 3, asked
    assert all(valid or finish == "length" for _, valid, finish, _ in asked), asked
    stored = con.execute("SELECT count(*) FROM turns t JOIN generations g USING (request_hash) "
                         "WHERE t.run_id = ? AND t.role = 'user' AND g.valid", [result.run_id]).fetchone()
    assert stored is not None and stored[0] == sum(1 for _, valid, *_ in asked if valid)
    print(f"telecom user tool calls: {len(user_calls)}; agent calls: {len(calls) - len(user_calls)}")


def test_banking_episodes_search_the_kb_and_share_one_db_end_to_end(
    long_pool: ModelPool, data_dir: Path, tmp_path: Path
) -> None:
    """banking_knowledge on a real engine (issue 16).

    Retrieval calls in the store, each task's user tools, one DB, a reward each. The 135M agent
    never searches on its own, so the run holds its first move after each user message to
    ``KB_search`` (``--agent-first-tool``).
    """
    from uxlocal.tau2 import load_domain, load_tasks

    config = {"tau2_data": str(data_dir), "domain": "banking_knowledge", "max_steps": 6,
              "agent_max_tokens": 48, "user_max_tokens": 48, "judge_max_tokens": 32, "tau2_version": "1.0.1",
              "agent_first_tool": "KB_search"}
    run = RunConfig(suite="tau2", suite_config=config, db=str(tmp_path / "s.duckdb"), limit=3, progress=False)
    result = run_suite(run, pool=long_pool)
    assert result.stats.episodes_done == 3 and result.stats.episodes_failed == 0
    con = connect(tmp_path / "s.duckdb")
    episodes = con.execute("SELECT episode_id, termination, reward, info FROM episodes WHERE run_id = ?",
                           [result.run_id]).fetchall()
    assert len(episodes) == 3
    assert all(term in TERMINATION_REASONS and reward is not None for _, term, reward, _ in episodes)
    infos = [json.loads(info) for *_, info in episodes]
    assert all(i["tau2_version"] == "1.0.1" and i["retrieval_variant"] == "bm25" for i in infos)
    domain = load_domain(data_dir, "banking_knowledge")
    allowed = {f"banking_knowledge/{t.id}/trial-0": set(t.user_tools or []) for t in load_tasks(
        data_dir, "banking_knowledge", limit=3)}
    calls = con.execute("SELECT episode_id, requestor, name, ok, result FROM tool_calls WHERE run_id = ?",
                        [result.run_id]).fetchall()
    # the strict union offers each user only its task's tools, and the agent only its 14 (+ search)
    agent_tools = set(domain.spec.agent_tools.names())
    assert all(name in (allowed[ep] if who == "user" else agent_tools) for ep, who, name, *_ in calls), calls
    # every episode whose user spoke got a search, answered with hits from the 698 documents
    spoke = {
        ep
        for (ep,) in con.execute(
            "SELECT DISTINCT t.episode_id FROM turns t JOIN generations g "
            "USING (request_hash) WHERE t.run_id = ? AND t.role = 'user' AND g.valid "
            "AND t.content NOT LIKE '{%'",
            [result.run_id],
        ).fetchall()
    }
    searched = {ep for ep, who, name, ok, text in calls
                if who == "assistant" and name == "KB_search" and ok and "doc_" in text}
    assert spoke <= searched, (spoke, calls)
    print(
        f"banking: {len(spoke)} episodes where the user spoke, "
        f"searches in {len(searched)}; calls {len(calls)}"
    )
