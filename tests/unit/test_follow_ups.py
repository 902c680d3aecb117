"""Follow-ups: an engine that takes requests into a running call (``Engine.follow_ups``).

With an engine that follows up, an episode whose answer came in asks its next request at once and
the engine runs it in the same call, so one slow generation no longer holds every other episode
until the call ends. These tests pin the bookkeeping on a scripted engine: who gets which answer,
what is generated once, what waits for the next tick, and how episodes are admitted meanwhile.
"""

from __future__ import annotations

from typing import Any

from uxlocal.engine.base import GenRequest, Sampling
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome
from uxlocal.rollout import Scheduler
from uxlocal.store.db import connect
from uxlocal.store.writer import StoreWriter


def echo(prepared: Any) -> str:
    return "echo:" + prepared.request.messages[-1]["content"]


def talk(ctx: EpisodeContext, name: str, roles: list[str], seen: dict[str, list[str]]) -> Any:
    for step, role in enumerate(roles):
        result = yield GenRequest(role, ({"role": "user", "content": f"{name}-{step}"},), Sampling())
        seen.setdefault(name, []).append(result.text)
        ctx.turn("assistant", result.text, model_role=role, result=result)
    return Outcome("done", reward=1.0)


def episodes(n: int, roles: list[str], seen: dict[str, list[str]]) -> list[EpisodeSpec]:
    return [EpisodeSpec(f"ep{i}", lambda ctx, i=i: talk(ctx, f"ep{i}", roles, seen), item_id=f"i{i}")
            for i in range(n)]


def test_a_following_engine_runs_every_step_of_every_episode_in_one_call() -> None:
    engine, seen = FakeEngine(echo, follow_ups=True), {}
    stats = Scheduler(ModelPool.from_engines({"candidate": engine})).run(episodes(6, ["candidate"] * 3, seen))
    assert engine.calls == 1 and stats.engine_calls == 1 and len(engine.batches[0]) == 18
    assert stats.episodes_done == 6 and stats.requests == 18 and stats.completion_tokens == 18
    assert seen == {f"ep{i}": [f"echo:ep{i}-{k}" for k in range(3)] for i in range(6)}


def test_an_engine_that_does_not_follow_gets_one_call_per_step() -> None:
    engine, seen = FakeEngine(echo), {}
    Scheduler(ModelPool.from_engines({"candidate": engine})).run(episodes(6, ["candidate"] * 3, seen))
    assert engine.calls == 3 and [len(b) for b in engine.batches] == [6, 6, 6]
    assert seen == {f"ep{i}": [f"echo:ep{i}-{k}" for k in range(3)] for i in range(6)}


def test_episodes_are_admitted_while_the_call_runs() -> None:
    engine, seen = FakeEngine(echo, follow_ups=True), {}
    stats = Scheduler(ModelPool.from_engines({"candidate": engine}), max_live=2).run(
        episodes(7, ["candidate"] * 2, seen))
    assert engine.calls == 1 and len(engine.batches[0]) == 14 and stats.episodes_done == 7
    first = [p.request.messages[-1]["content"] for p in engine.batches[0][:4]]
    assert first == ["ep0-0", "ep1-0", "ep0-1", "ep1-1"]  # at most two live: ep2 waits for ep0 to end


def test_the_same_request_in_flight_is_generated_once_and_answers_both() -> None:
    def twin(ctx: EpisodeContext, seen: dict[str, list[str]]) -> Any:
        first = yield GenRequest("candidate", ({"role": "user", "content": f"own-{ctx.episode_id}"},))
        again = yield GenRequest("candidate", ({"role": "user", "content": "shared"},))
        seen[ctx.episode_id] = [first.text, again.text]

    engine, seen = FakeEngine(echo, follow_ups=True), {}
    stats = Scheduler(ModelPool.from_engines({"candidate": engine})).run(
        [EpisodeSpec(f"t{i}", lambda ctx: twin(ctx, seen)) for i in range(3)])
    texts = [p.request.messages[-1]["content"] for p in engine.batches[0]]
    assert texts.count("shared") == 1 and len(texts) == 4 and stats.requests == 6
    # prompt tokens and generations count what the engine ran: the shared request once
    assert stats.generations == 4
    assert stats.prompt_tokens == sum(len(p.prompt_ids) for p in engine.batches[0]) > 0
    assert seen == {f"t{i}": [f"echo:own-t{i}", "echo:shared"] for i in range(3)}


def test_another_models_request_waits_for_the_next_tick() -> None:
    agent, user = FakeEngine(echo, identity="agent", follow_ups=True), FakeEngine(echo, identity="user")
    seen: dict[str, list[str]] = {}
    pool = ModelPool.from_engines({"agent": agent, "user": user})
    stats = Scheduler(pool).run(episodes(3, ["agent", "agent", "user", "agent"], seen))
    assert [len(b) for b in agent.batches] == [6, 3] and [len(b) for b in user.batches] == [3]
    assert stats.engine_calls == 3 and stats.requests == 12
    assert seen == {f"ep{i}": [f"echo:ep{i}-{k}" for k in range(4)] for i in range(3)}


def test_a_follow_up_found_in_the_store_never_reaches_the_engine(tmp_path: Any) -> None:
    db = tmp_path / "s.duckdb"
    con = connect(db)
    first = FakeEngine(echo, follow_ups=True)
    Scheduler(ModelPool.from_engines({"candidate": first}), writer=StoreWriter(con), flush_every_s=0).run(
        episodes(2, ["candidate"] * 2, {}))
    again, seen = FakeEngine(echo, follow_ups=True), {}
    stats = Scheduler(ModelPool.from_engines({"candidate": again}), writer=StoreWriter(con)).run(
        episodes(3, ["candidate"] * 2, seen))
    assert [p.request.messages[-1]["content"] for b in again.batches for p in b] == ["ep2-0", "ep2-1"]
    assert stats.cache_hits == 4 and stats.requests == 6 and seen["ep0"] == ["echo:ep0-0", "echo:ep0-1"]


def test_a_call_takes_at_most_its_budget_then_the_next_tick_goes_on(monkeypatch: Any) -> None:
    from uxlocal.rollout import batcher

    monkeypatch.setattr(batcher, "FOLLOW_UPS_PER_CALL", 8)
    engine, seen = FakeEngine(echo, follow_ups=True), {}
    stats = Scheduler(ModelPool.from_engines({"candidate": engine})).run(episodes(6, ["candidate"] * 3, seen))
    assert [len(b) for b in engine.batches] == [8, 8, 2] and stats.engine_calls == 3
    assert seen == {f"ep{i}": [f"echo:ep{i}-{k}" for k in range(3)] for i in range(6)}
