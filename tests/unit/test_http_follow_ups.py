"""Follow-ups over openai-http: a call takes what episodes ask while it runs (``http_call``).

Behind ``vllm serve`` an episode whose reply is back asks its next request at once, in the same
engine call, instead of waiting for the call's slowest request: the in-process engine's
follow-ups (``tests/unit/test_follow_ups.py``) for the scale-out path.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from benchmarks._openai_fake import FakeOpenAI
from tests.unit.test_scheduler import dialogue
from uxlocal.engine.base import GenRequest, GenResult, PreparedRequest, Sampling
from uxlocal.engine.http import EndpointError, HttpEngine, HttpOptions, MessagesRenderer
from uxlocal.engine.pool import ModelPool
from uxlocal.engine.resolve import resolve
from uxlocal.episode import EpisodeSpec
from uxlocal.rollout import Scheduler


def _engine(fake: FakeOpenAI, *, follow: bool = True) -> HttpEngine:
    engine = HttpEngine(resolve(f"{fake.url}#fake-model"), MessagesRenderer(None),
                        HttpOptions(max_retries=0, connect_timeout_s=1.0, timeout_s=10.0))
    engine.follow_ups = follow
    return engine


@pytest.fixture
def fake() -> Any:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.mark.parametrize("follow", [True, False])
def test_every_step_of_every_episode_goes_in_one_call_when_the_engine_follows(fake: FakeOpenAI,
                                                                              follow: bool) -> None:
    engine, seen = _engine(fake, follow=follow), {}
    specs = [EpisodeSpec(f"ep{i}", lambda ctx, i=i: dialogue(ctx, f"ep{i}", 3, seen), item_id=f"i{i}")
             for i in range(6)]
    try:
        stats = Scheduler(ModelPool.from_engines({"candidate": engine})).run(specs)
    finally:
        engine.close()
    assert stats.episodes_done == 6 and stats.requests == 18 and len(fake.chats) == 18
    assert stats.engine_calls == (1 if follow else 3) and engine.calls == stats.engine_calls
    # the same answers either way: following changes when a request is sent, never what it gets
    assert seen == {f"ep{i}": [f"reply to ep{i}-{k}" for k in range(3)] for i in range(6)}


def test_a_slow_reply_does_not_hold_the_other_episodes(fake: FakeOpenAI) -> None:
    arrived: list[str] = []
    slow_answered = threading.Event()

    def hook(path: str, body: dict[str, Any]) -> None:
        text = body["messages"][-1]["content"]
        arrived.append(f"{text}{' (after the slow reply)' if slow_answered.is_set() else ''}")
        if text == "slow-0":
            time.sleep(1.5)
            slow_answered.set()

    fake.hook = hook
    engine, seen = _engine(fake), {}
    specs = [EpisodeSpec("slow", lambda ctx: dialogue(ctx, "slow", 1, seen), item_id="s"),
             EpisodeSpec("fast", lambda ctx: dialogue(ctx, "fast", 5, seen), item_id="f")]
    try:
        stats = Scheduler(ModelPool.from_engines({"candidate": engine})).run(specs)
    finally:
        engine.close()
    assert stats.engine_calls == 1 and stats.episodes_done == 2
    # all five of the fast episode's steps were asked while the slow reply was still out
    assert sorted(arrived) == sorted(["slow-0"] + [f"fast-{k}" for k in range(5)])
    assert seen["fast"] == [f"reply to fast-{k}" for k in range(5)]


class _Chain:
    """A sink that asks one follow-up per answer until ``length`` requests went in."""

    def __init__(self, length: int, before_more: Any = None) -> None:
        self.length, self.before_more = length, before_more
        self.done_calls: list[tuple[int, str]] = []
        self.asked = 1

    def done(self, index: int, result: GenResult) -> None:
        self.done_calls.append((index, result.text))

    def busy(self) -> None:
        pass

    def more(self) -> list[PreparedRequest]:
        if self.asked >= self.length or len(self.done_calls) < self.asked:
            return []
        if self.before_more is not None:
            self.before_more()
        self.asked += 1
        return [_prepared(f"next-{self.asked - 1}")]


def _prepared(text: str) -> PreparedRequest:
    request = GenRequest("candidate", ({"role": "user", "content": text},), Sampling())
    return PreparedRequest(request, *MessagesRenderer(None).render(list(request.messages)), f"h-{text}")


def test_follow_ups_count_on_from_the_batch_and_generate_returns_the_batch(fake: FakeOpenAI) -> None:
    engine, sink = _engine(fake), _Chain(4)
    try:
        results = engine.generate([_prepared("first")], sink=sink, window=8)
    finally:
        engine.close()
    assert [r.text for r in results] == ["reply to first"]
    assert sink.done_calls == [(0, "reply to first"), (1, "reply to next-1"), (2, "reply to next-2"),
                               (3, "reply to next-3")]
    assert engine.calls == 1 and [c["messages"][-1]["content"] for c in fake.chats] == \
        ["first", "next-1", "next-2", "next-3"]


def test_a_failed_follow_up_fails_the_call_after_handing_over_what_finished(fake: FakeOpenAI) -> None:
    engine, sink = _engine(fake), _Chain(3, before_more=lambda: fake.fail_next(1, 500))
    try:
        with pytest.raises(EndpointError):
            engine.generate([_prepared("first")], sink=sink, window=8)
    finally:
        engine.close()
    assert sink.done_calls == [(0, "reply to first")]


def test_a_call_without_a_sink_does_not_wait_for_follow_ups(fake: FakeOpenAI) -> None:
    engine = _engine(fake)
    try:
        results = engine.generate([_prepared(f"q{k}") for k in range(5)], window=2)
    finally:
        engine.close()
    assert [r.text for r in results] == [f"reply to q{k}" for k in range(5)]
    assert fake.max_in_flight <= 2
