"""Issue 32, the openai-http arm: faster, never different.

Token ids computed in the engine a group at a time, and the engine taking the scheduler's window,
change how fast a run goes, never what it stores.
"""

from __future__ import annotations

import math
import queue
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from benchmarks._openai_fake import FakeOpenAI
from benchmarks.harness_ceiling import write_conversations, write_tokenizer
from uxlocal.engine.base import GenRequest, GenResult, PreparedRequest
from uxlocal.engine.http import HttpEngine, HttpOptions, MessagesRenderer, _LoopThread
from uxlocal.engine.render import TemplateRenderer
from uxlocal.engine.resolve import resolve

CHATS = [
    [{"role": "user", "content": "Question 3: my order 21 has not arrived, what can I do?"}],
    [{"role": "system", "content": "Be brief."},
     {"role": "user", "content": "héllo wörld 你好 <|im_end|> x"}],
    [{"role": "user", "content": ""}],
    [{"role": "user", "content": "a\n\n  b\tc " * 40}],
]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tokenizer(tmp_path_factory.mktemp("tok") / "tokenizer")


def test_batched_token_ids_equal_one_prompt_at_a_time(tokenizer: Path) -> None:
    renderer = TemplateRenderer(tokenizer)
    assert renderer.render_many(CHATS) == [renderer.render(chat) for chat in CHATS]
    messages = MessagesRenderer(tokenizer)
    assert messages.ids_in_engine and messages.token_ids(CHATS) == [messages.render(c)[1] for c in CHATS]
    for chat in CHATS:
        text, ids = messages.render(chat)
        assert messages.render_key(chat) == (text, []) and len(ids) > 2
    # without a tokenizer the scheduler renders as before and there are no ids to defer
    assert not MessagesRenderer(None).ids_in_engine and MessagesRenderer(None).token_ids(CHATS[:1]) == [[]]


def test_render_key_fails_like_render_when_the_template_refuses_the_chat(tmp_path: Path,
                                                                         tokenizer: Path) -> None:
    import json
    import shutil

    folder = tmp_path / "strict"
    shutil.copytree(tokenizer, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    config["chat_template"] = ("{% for m in messages %}{% if m['role'] == 'system' %}"
                               "{{ raise_exception('no system role') }}{% endif %}"
                               "{{ m['content'] }}{% endfor %}")
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    renderer = MessagesRenderer(folder)
    with pytest.raises(Exception, match="no system role"):
        renderer.render_key(CHATS[1])
    assert renderer.render_key(CHATS[0])[1] == []


def _windowed(fake: FakeOpenAI, renderer: MessagesRenderer, requests: list[GenRequest], window: int,
              batch_prompts: int = 1) -> list[Any]:
    """Send ``requests`` through one ``generate`` call with ``window``; the server stops afterwards."""
    options = HttpOptions(max_retries=0, connect_timeout_s=1.0, timeout_s=5.0, batch_prompts=batch_prompts)
    engine = HttpEngine(resolve(f"{fake.url}#fake-model"), renderer, options)
    batch = [PreparedRequest(r, *renderer.render(list(r.messages)), f"h{k}") for k, r in enumerate(requests)]
    try:
        return engine.generate(batch, window=window)
    finally:
        engine.close()
        fake.stop()


def test_http_window_bounds_requests_in_flight_and_keeps_the_order() -> None:
    fake = FakeOpenAI(delay_s=0.03).start()
    requests = [GenRequest("judge", ({"role": "user", "content": f"question {k}"},)) for k in range(10)]
    results = _windowed(fake, MessagesRenderer(None), requests, 3)
    assert [r.text for r in results] == [f"reply to question {k}" for k in range(10)]
    assert fake.max_in_flight == 3


def _varied_labels(fake: FakeOpenAI) -> None:
    """Answer token-id prompt lists with a first-label probability that depends on each prompt's ids.

    So a result handed to the wrong request changes the stored verdicts.
    """

    def answer(path: str, body: dict[str, Any]) -> tuple[int, Any] | None:
        prompts = body.get("prompt")
        if not path.endswith("/v1/completions") or not (prompts and isinstance(prompts[0], list)):
            return None
        out = fake.completions(body)
        for choice, ids in zip(out["choices"], prompts, strict=True):
            first = choice["logprobs"]["top_logprobs"][0]
            p = 0.15 + (sum(ids) % 7) / 10
            for k, token in enumerate(first):
                first[token] = math.log(p if k == 0 else (1 - p) / max(1, len(first) - 1))
            choice["logprobs"]["token_logprobs"][0] = first[choice["logprobs"]["tokens"][0]]
        return 200, out

    fake.hook = answer


def _judge(folder: Path, url: str, tokenizer: Path, monkeypatch: pytest.MonkeyPatch, *,
           lock_step: bool) -> Path:
    from uxlocal.config import RunConfig
    from uxlocal.runner import run_suite

    folder.mkdir()
    (folder / "srv.toml").write_text(f'name = "srv"\nbackend = "openai-http"\nendpoints = ["{url}"]\n'
                                     f'served_model = "fake-model"\npath = "{tokenizer}"\n'
                                     "[engine_args]\nbatch_prompts = 4\n", encoding="utf-8")
    monkeypatch.setenv("UXLOCAL_PRESETS", str(folder))
    write_conversations(folder / "chats.jsonl", 30)
    with monkeypatch.context() as patch:
        if lock_step:  # as before issue 32: ids rendered by the scheduler, max_batch chunks
            original = HttpEngine.generate
            patch.setattr(MessagesRenderer, "ids_in_engine", property(lambda self: False))
            patch.setattr(HttpEngine, "rolling", False)  # the scheduler then sends max_batch chunks
            patch.setattr(HttpEngine, "generate",
                          lambda self, batch, *, sink=None, window=None: original(self, batch, sink=sink))
        options = {"input": str(folder / "chats.jsonl"), "rubric": "ux-liked", "human_col": "thumb"}
        run_suite(RunConfig(suite="judge", suite_config=options,
                            models={"judge": "srv"}, db=str(folder / "judge.duckdb"), progress=False,
                            max_batch=6, max_live=10))
    return folder / "judge.duckdb"


def _rows(db: Path, table: str, drop: tuple[str, ...]) -> list[tuple[Any, ...]]:
    with duckdb.connect(str(db), read_only=True) as con:
        columns = [c for (c,) in con.execute("SELECT column_name FROM information_schema.columns WHERE "
                                             "table_name = ? ORDER BY ordinal_position", [table]).fetchall()
                   if c not in drop]
        return sorted(con.execute(f"SELECT {', '.join(columns)} FROM {table}").fetchall(), key=repr)


def test_http_pipelined_run_stores_the_same_rows_as_the_lock_step_one(
        tmp_path: Path, tokenizer: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tokenizers import Tokenizer

    vocab = Tokenizer.from_file(str(tokenizer / "tokenizer.json"))
    fake = FakeOpenAI(token_ids=lambda label: list(vocab.encode(label, add_special_tokens=False).ids)).start()
    _varied_labels(fake)
    try:
        pipelined = _judge(tmp_path / "new", fake.url, tokenizer, monkeypatch, lock_step=False)
        lock_step = _judge(tmp_path / "old", fake.url, tokenizer, monkeypatch, lock_step=True)
    finally:
        fake.stop()
    times = ("created_at", "started_at", "ended_at", "latency_ms")
    for table in ("generations", "run_generations", "verdicts", "episodes"):
        assert _rows(pipelined, table, times) == _rows(lock_step, table, times), table
    generations = _rows(pipelined, "generations", times)
    assert len(generations) == 30
    with duckdb.connect(str(pipelined), read_only=True) as con:
        probs = {p for (p,) in con.execute("SELECT label_probs::VARCHAR FROM generations").fetchall()}
        tokens = {n for (n,) in con.execute("SELECT prompt_tokens FROM generations").fetchall()}
    assert len(probs) > 3 and min(tokens) > 50  # verdicts differ per prompt; prompt_tokens are the local ids


class _ByteIds(MessagesRenderer):
    """A tokenizer of one id per byte: prompts are their messages' bytes."""

    @property
    def has_tokenizer(self) -> bool:
        return True

    def render(self, messages: list[dict[str, str]]) -> tuple[str, list[int]]:
        return super().render(messages)[0], list(messages[-1]["content"].encode())

    def token_bytes(self) -> list[bytes]:
        return [bytes([i]) for i in range(256)]


def test_http_window_counts_a_group_as_its_prompts() -> None:
    from uxlocal.grammar import Choice

    fake = FakeOpenAI(delay_s=0.03, token_ids=lambda label: list(label.encode())).start()
    requests = [GenRequest("judge", ({"role": "user", "content": f"q{k}"},), constraint=Choice(("a", "b")))
                for k in range(12)]
    results = _windowed(fake, _ByteIds(None), requests, 4, batch_prompts=2)
    assert [len(body["prompt"]) for _, body in fake.requests] == [2] * 6
    assert fake.max_in_flight == 2  # 4 places, 2 prompts a group
    assert all(r.parsed == "a" and r.label_probs == pytest.approx({"a": 0.7, "b": 0.3}) for r in results)


class _Sink:
    """A ResultSink that records what it was handed and how many heartbeats it got."""

    def __init__(self) -> None:
        self.done_calls: list[int] = []
        self.beats = 0

    def done(self, index: int, result: GenResult) -> None:
        self.done_calls.append(index)

    def busy(self) -> None:
        self.beats += 1


def test_a_streaming_engine_call_returns_when_its_work_ends_not_at_the_next_beat() -> None:
    finished: queue.SimpleQueue[Any] = queue.SimpleQueue()

    async def work() -> str:
        finished.put([(0, GenResult("a", "stop")), (1, GenResult("b", "stop"))])
        finished.put([(2, GenResult("c", "stop"))])
        return "over"

    loop, sink = _LoopThread(), _Sink()
    try:
        started = time.perf_counter()
        assert loop.run_streaming(work(), finished, sink, beat_s=20.0) == "over"
        # it used to wait out one whole beat after the last result
        assert time.perf_counter() - started < 10.0
    finally:
        loop.close()
    assert sink.done_calls == [0, 1, 2] and sink.beats == 0


def test_a_streaming_engine_call_that_fails_raises_after_handing_over_what_finished() -> None:
    finished: queue.SimpleQueue[Any] = queue.SimpleQueue()

    async def work() -> str:
        finished.put([(0, GenResult("a", "stop"))])
        raise RuntimeError("endpoint gone")

    loop, sink = _LoopThread(), _Sink()
    try:
        with pytest.raises(RuntimeError, match="endpoint gone"):
            loop.run_streaming(work(), finished, sink, beat_s=20.0)
    finally:
        loop.close()
    assert sink.done_calls == [0]
