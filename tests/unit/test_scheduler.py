from __future__ import annotations

from typing import Any

import duckdb
import pytest

from uxlocal.engine.base import GenRequest, Sampling
from uxlocal.engine.fake import FakeEngine, ScriptExhausted
from uxlocal.engine.pool import ModelPool
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome
from uxlocal.grammar import Choice
from uxlocal.rollout import Scheduler
from uxlocal.store.db import connect
from uxlocal.store.writer import StoreWriter


def echo(prepared: Any) -> str:
    """Reply with the last line of the prompt, so each episode can check it got its own answer."""
    if isinstance(prepared.request.constraint, Choice):
        return prepared.request.constraint.labels[0]
    return "echo:" + prepared.request.messages[-1]["content"]


def dialogue(ctx: EpisodeContext, name: str, steps: int, seen: dict[str, list[str]]) -> Any:
    for step in range(steps):
        result = yield GenRequest("candidate", ({"role": "user", "content": f"{name}-{step}"},), Sampling())
        seen.setdefault(name, []).append(result.text)
        ctx.turn("assistant", result.text, model_role="candidate", result=result)
    return Outcome("done", reward=1.0)


def specs(n: int, steps: int, seen: dict[str, list[str]]) -> list[EpisodeSpec]:
    return [EpisodeSpec(f"ep{i}", (lambda i: lambda ctx: dialogue(ctx, f"ep{i}", steps, seen))(i), item_id=f"i{i}")
            for i in range(n)]


def test_scheduler_batches_one_engine_call_per_tick() -> None:
    engine = FakeEngine(echo)
    seen: dict[str, list[str]] = {}
    stats = Scheduler(ModelPool.from_engines({"candidate": engine})).run(specs(10, 3, seen))
    assert engine.calls == 3 and [len(b) for b in engine.batches] == [10, 10, 10]
    assert stats.episodes_done == 10 and stats.requests == 30


def test_scheduler_returns_each_result_to_the_episode_that_asked() -> None:
    seen: dict[str, list[str]] = {}
    Scheduler(ModelPool.from_engines({"candidate": FakeEngine(echo)})).run(specs(5, 2, seen))
    for name, texts in seen.items():
        assert texts == [f"echo:{name}-0", f"echo:{name}-1"]


def test_list_asks_are_answered_together_in_order() -> None:
    got: list[Any] = []

    def program(ctx: EpisodeContext) -> Any:
        results = yield [GenRequest("judge", ({"role": "user", "content": f"q{k}"},), constraint=None) for k in range(3)]
        got.extend(r.text for r in results)

    engine = FakeEngine(echo)
    Scheduler(ModelPool.from_engines({"judge": engine})).run([EpisodeSpec("e", program)])
    assert got == ["echo:q0", "echo:q1", "echo:q2"] and engine.calls == 1


def test_roles_on_one_model_share_a_batch() -> None:
    engine = FakeEngine(echo)

    def program(ctx: EpisodeContext) -> Any:
        yield [GenRequest("candidate", ({"role": "user", "content": "a"},)),
               GenRequest("judge", ({"role": "user", "content": "b"},))]

    Scheduler(ModelPool.from_engines({"candidate": engine, "judge": engine})).run([EpisodeSpec("e", program)])
    assert engine.calls == 1 and len(engine.batches[0]) == 2


def test_identical_requests_in_one_tick_are_generated_once() -> None:
    engine = FakeEngine(echo)
    seen: dict[str, list[str]] = {}

    def program(ctx: EpisodeContext) -> Any:
        yield GenRequest("candidate", ({"role": "user", "content": "same"},))

    Scheduler(ModelPool.from_engines({"candidate": engine})).run([EpisodeSpec(f"e{i}", program) for i in range(4)])
    assert len(engine.requests) == 1
    del seen


def test_failing_episode_is_recorded_and_others_finish() -> None:
    def broken(ctx: EpisodeContext) -> Any:
        yield GenRequest("candidate", ({"role": "user", "content": "x"},))
        raise RuntimeError("boom")

    seen: dict[str, list[str]] = {}
    episodes = specs(3, 1, seen) + [EpisodeSpec("bad", broken)]
    stats = Scheduler(ModelPool.from_engines({"candidate": FakeEngine(echo)})).run(episodes)
    assert stats.episodes_done == 3 and stats.episodes_failed == 1 and "boom" in stats.failures[0]


def test_unknown_role_fails_only_that_episode() -> None:
    def program(ctx: EpisodeContext) -> Any:
        yield GenRequest("judge", ({"role": "user", "content": "x"},))

    stats = Scheduler(ModelPool.from_engines({"candidate": FakeEngine(echo)})).run([EpisodeSpec("e", program)])
    assert stats.episodes_failed == 1 and "no model bound to role 'judge'" in stats.failures[0]


def test_sampled_requests_get_distinct_derived_seeds() -> None:
    engine = FakeEngine(echo)

    def program(ctx: EpisodeContext) -> Any:
        for _ in range(2):
            yield GenRequest("user", ({"role": "user", "content": "same"},), Sampling(temperature=0.8))

    Scheduler(ModelPool.from_engines({"user": engine}), seed=7).run([EpisodeSpec("e", program)])
    seeds = [p.seed for p in engine.requests]
    assert len(set(seeds)) == 2 and all(isinstance(s, int) for s in seeds)


def test_fake_engine_raises_when_script_runs_out() -> None:
    engine = FakeEngine(["one"])

    def program(ctx: EpisodeContext) -> Any:
        yield GenRequest("candidate", ({"role": "user", "content": "a"},))
        yield GenRequest("candidate", ({"role": "user", "content": "b"},))

    with pytest.raises(ScriptExhausted):
        Scheduler(ModelPool.from_engines({"candidate": engine})).run([EpisodeSpec("e", program)])


def test_rerun_with_store_makes_zero_engine_calls(tmp_path: Any) -> None:
    con = connect(tmp_path / "s.duckdb")
    seen: dict[str, list[str]] = {}
    first = FakeEngine(echo)
    Scheduler(ModelPool.from_engines({"candidate": first}), run_id="r1", writer=StoreWriter(con)).run(specs(4, 2, seen))
    second = FakeEngine(echo)
    stats = Scheduler(ModelPool.from_engines({"candidate": second}), run_id="r2",
                      writer=StoreWriter(con)).run(specs(4, 2, seen))
    assert first.calls == 2 and second.calls == 0 and stats.cache_hits == 8
    counts = dict(con.execute("SELECT run_id, count(*) FROM turns GROUP BY run_id").fetchall())
    assert counts == {"r1": 8, "r2": 8}
    assert con.execute("SELECT count(*) FROM generations").fetchone()[0] == 8


def test_store_rows_follow_the_episode(tmp_path: Any) -> None:
    con = connect(tmp_path / "s.duckdb")
    seen: dict[str, list[str]] = {}
    Scheduler(ModelPool.from_engines({"candidate": FakeEngine(echo)}), run_id="r",
              writer=StoreWriter(con)).run(specs(2, 3, seen))
    rows = con.execute("SELECT episode_id, list(idx ORDER BY idx) FROM turns GROUP BY 1 ORDER BY 1").fetchall()
    assert rows == [("ep0", [0, 1, 2]), ("ep1", [0, 1, 2])]
    assert con.execute("SELECT count(*), sum(reward) FROM episodes WHERE status='done'").fetchone() == (2, 2.0)
    assert isinstance(con, duckdb.DuckDBPyConnection)


# ---- issue 20: generations are saved while the engine still works ------------------------------
def _stored(con: Any) -> int:
    """Committed generations, read through a cursor of its own (what a crash would leave)."""
    return int(con.cursor().execute("SELECT count(*) FROM generations").fetchone()[0])


def test_scheduler_commits_each_generation_inside_one_engine_call_when_flush_every_s_is_0(tmp_path: Any) -> None:
    con = connect(tmp_path / "s.duckdb")
    seen_committed: list[int] = []

    def answer(prepared: Any) -> str:
        seen_committed.append(_stored(con))  # what is on disk when this request starts
        return echo(prepared)

    engine = FakeEngine(answer)
    Scheduler(ModelPool.from_engines({"candidate": engine}), writer=StoreWriter(con), max_batch=100,
              flush_every_s=0).run(specs(6, 1, {}))
    assert engine.calls == 1  # one tick, one engine call
    assert seen_committed == [0, 1, 2, 3, 4, 5]
    assert _stored(con) == 6


class _SlowTail(FakeEngine):
    """Finishes request 0 at once, then keeps working (beating) until the store holds it or 5 s pass."""

    def __init__(self, con: Any) -> None:
        super().__init__(echo)
        self.con = con
        self.waited_s = -1.0

    def generate(self, batch: list[Any], *, sink: Any = None, window: int | None = None) -> list[Any]:
        import time

        results = [self._one(p) for p in batch]
        sink.done(0, results[0])
        started = time.perf_counter()
        while _stored(self.con) == 0 and time.perf_counter() - started < 5:
            time.sleep(0.02)
            sink.busy()
        self.waited_s = time.perf_counter() - started
        for i in range(1, len(batch)):
            sink.done(i, results[i])
        return results


def test_scheduler_commits_a_finished_generation_on_heartbeats_while_the_rest_run(tmp_path: Any) -> None:
    con = connect(tmp_path / "s.duckdb")
    engine = _SlowTail(con)
    Scheduler(ModelPool.from_engines({"candidate": engine}), writer=StoreWriter(con), flush_every_s=0.3).run(
        specs(3, 1, {}))
    assert 0.0 < engine.waited_s < 2.0  # committed by a heartbeat within ~flush_every_s, inside the call
    assert _stored(con) == 3


def test_scheduler_commits_early_when_the_writer_is_idle(tmp_path: Any) -> None:
    """Group commit: with a 60 s interval, an idle writer still gets the result within ~COMMIT_GAP_S."""
    con = connect(tmp_path / "s.duckdb")
    engine = _SlowTail(con)
    Scheduler(ModelPool.from_engines({"candidate": engine}), writer=StoreWriter(con), flush_every_s=60).run(
        specs(3, 1, {}))
    assert 0.0 < engine.waited_s < 2.0  # not the 5 s the engine gives up after: committed early
    assert _stored(con) == 3


def test_writer_reports_pending_rows_and_idleness(tmp_path: Any) -> None:
    """``pending`` until flushed; ``idle`` once the background commit is done."""
    writer = StoreWriter(connect(tmp_path / "s.duckdb"))
    assert writer.idle and not writer.pending
    writer.execute_in_flush("SELECT 1")
    assert writer.pending
    writer.flush(wait=True)
    assert writer.idle and not writer.pending
    writer.close()


class _SilentEngine(FakeEngine):
    """An engine that never streams: it hands nothing to ``sink`` (the contract lets it)."""

    def generate(self, batch: list[Any], *, sink: Any = None, window: int | None = None) -> list[Any]:
        return super().generate(batch)


def test_scheduler_stores_results_of_an_engine_that_never_streams_once_when_the_call_returns(tmp_path: Any) -> None:
    con = connect(tmp_path / "s.duckdb")
    seen: dict[str, list[str]] = {}
    Scheduler(ModelPool.from_engines({"candidate": _SilentEngine(echo)}), writer=StoreWriter(con),
              flush_every_s=0).run(specs(4, 2, seen))
    assert _stored(con) == 8 and all(len(v) == 2 for v in seen.values())


class _WindowRecorder(FakeEngine):
    """A double that records the window of each call."""

    def __init__(self, script: Any) -> None:
        super().__init__(script)
        self.windows: list[int | None] = []

    def generate(self, batch: list[Any], *, sink: Any = None, window: int | None = None) -> list[Any]:
        self.windows.append(window)
        return super().generate(batch, sink=sink)


class _RollingEngine(_WindowRecorder):
    """A double that declares it refills its batch as requests end (like the vLLM engine)."""

    rolling = True


def test_rolling_engine_gets_the_whole_tick_in_one_call_with_max_batch_as_window() -> None:
    """An engine declaring ``rolling`` gets one call per tick; a plain one gets max_batch chunks, no window."""
    rolling, chunked = _RollingEngine(echo), _WindowRecorder(echo)
    for engine in (rolling, chunked):
        seen: dict[str, list[str]] = {}
        stats = Scheduler(ModelPool.from_engines({"candidate": engine}), max_batch=4).run(specs(10, 2, seen))
        assert stats.episodes_done == 10 and all(v == [f"echo:ep{i}-0", f"echo:ep{i}-1"] for i, v in
                                                 ((int(k[2:]), v) for k, v in seen.items()))
        assert stats.engine_calls == engine.calls
    assert [len(b) for b in rolling.batches] == [10, 10] and rolling.windows == [4, 4]
    assert [len(b) for b in chunked.batches] == [4, 4, 2, 4, 4, 2] and set(chunked.windows) == {None}
