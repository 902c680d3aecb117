"""The openai-http backend against a fake OpenAI-compatible server.

Constraints, label probabilities, retries (5xx yes, 4xx no), timeouts, least-loaded dispatch, and a
killed server then a resumed run.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchmarks._openai_fake import FakeOpenAI
from uxlocal.engine.base import GenRequest, GenResult, PreparedRequest, Sampling
from uxlocal.engine.http import EndpointError, HttpEngine, HttpOptions, MessagesRenderer
from uxlocal.engine.labelprobs import TokenTable, settle_in_proportion, start_walk
from uxlocal.engine.resolve import resolve
from uxlocal.errors import InputError, UxlocalError
from uxlocal.grammar import Choice, JsonSchema, Regex

FAST = HttpOptions(max_retries=2, backoff_s=0.01, backoff_max_s=0.05, connect_timeout_s=1.0, timeout_s=5.0)


@pytest.fixture
def server() -> Any:
    fake = FakeOpenAI().start()
    yield fake
    fake.stop()


def _engine(*servers: FakeOpenAI, options: HttpOptions = FAST, served: str = "fake-model") -> HttpEngine:
    model = resolve(",".join(s.url for s in servers) + f"#{served}")
    return HttpEngine(model, MessagesRenderer(None), options)


def _prepared(engine: HttpEngine, request: GenRequest, seed: int | None = None) -> PreparedRequest:
    from uxlocal.engine.base import request_hash

    prompt, ids = engine.renderer.render(list(request.messages))
    key = request_hash(engine.identity, prompt, request.sampling, request.constraint, request.lora)
    return PreparedRequest(request, prompt, ids, key, seed=seed)


def _ask(text: str, constraint: Any = None, **sampling: Any) -> GenRequest:
    return GenRequest("judge", ({"role": "user", "content": text},), Sampling(**sampling), constraint)


def _generate(engine: HttpEngine, *requests: GenRequest) -> list[GenResult]:
    try:
        return engine.generate([_prepared(engine, r) for r in requests])
    finally:
        engine.close()


def test_http_choice_json_and_text_results_parse_with_label_probs(server: FakeOpenAI) -> None:
    class Verdict(__import__("pydantic").BaseModel):
        helpful: bool
        score: int

    engine = _engine(server)
    choice, verdict, text = _generate(engine, _ask("good?", Choice(("good", "bad")), max_tokens=8),
                                      _ask("json", JsonSchema.from_model(Verdict), max_tokens=40),
                                      _ask("hello there", max_tokens=16))
    assert choice.valid and choice.parsed == "good" and choice.finish_reason == "stop"
    assert choice.label_probs == pytest.approx({"good": 0.7, "bad": 0.3})
    assert verdict.valid and verdict.parsed == {"helpful": True, "score": 1}
    assert text.text == "reply to hello there" and text.completion_tokens == 4 and text.prompt_tokens == 7
    assert engine.calls == 1 and engine.dialect == "vllm"


def test_http_maps_constraints_to_vllm_structured_outputs(server: FakeOpenAI) -> None:
    engine = _engine(server)
    _generate(
        engine,
        _ask("a", Choice(("yes", "no")), max_tokens=50),
        _ask("b", JsonSchema({"type": "object"})),
        _ask("c", Regex(r"\d+"), temperature=0.5, seed=None),
    )
    by_text = {body["messages"][0]["content"]: body for body in server.chats}
    assert by_text["a"]["structured_outputs"] == {"choice": ["yes", "no"]}
    assert by_text["a"]["max_tokens"] == 4 and by_text["a"]["logprobs"] is True  # label bytes + end token
    assert by_text["a"]["top_logprobs"] == 20 and "return_tokens_as_token_ids" not in by_text["a"]
    assert by_text["b"]["structured_outputs"] == {"json": {"type": "object"}}
    assert by_text["c"]["structured_outputs"] == {"regex": r"\d+"} and by_text["c"]["temperature"] == 0.5
    assert all(body["model"] == "fake-model" for body in server.chats)


def test_http_uses_response_format_for_servers_other_than_vllm() -> None:
    fake = FakeOpenAI(owned_by="llamacpp").start()

    def quoted(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        schema = body["response_format"]["json_schema"]["schema"]
        assert "structured_outputs" not in body and schema == {"type": "string", "enum": ["good", "bad"]}
        alts = [{"token": "bad", "logprob": -0.5108, "bytes": list(b"bad")},
                {"token": "good", "logprob": -0.9163, "bytes": list(b"good")}]
        content = [{"token": '"', "logprob": 0.0, "bytes": [34], "top_logprobs": [
                       {"token": '"', "logprob": 0.0, "bytes": [34]}]},
                   {"token": "bad", "logprob": -0.5108, "bytes": list(b"bad"), "top_logprobs": alts}]
        return 200, {"choices": [{"message": {"content": '"bad"'}, "finish_reason": "stop",
                                  "logprobs": {"content": content}}], "usage": {}}

    fake.hook = quoted
    try:
        engine = _engine(fake)
        (result,) = _generate(engine, _ask("q", Choice(("good", "bad"))))
    finally:
        fake.stop()
    assert engine.dialect == "response_format"
    assert result.valid and result.parsed == "bad" and result.text == "bad"
    assert result.label_probs == pytest.approx({"good": 0.4, "bad": 0.6}, abs=1e-3)


def test_http_retries_5xx_and_dropped_connections_then_succeeds(server: FakeOpenAI) -> None:
    server.fail_next(1, 503)
    server.fail_next(1, 0)  # connection closed without an answer
    (result,) = _generate(_engine(server), _ask("hi"))
    assert result.valid and result.text == "reply to hi"
    assert len(server.chats) == 3


@pytest.mark.parametrize("status", [
    400,  # bad request: the same request would fail again
    422,  # validation error
    429,  # too many requests: final too unless the preset opts in (next test)
])
def test_http_never_retries_4xx_and_returns_an_invalid_result(server: FakeOpenAI, status: int) -> None:
    server.fail_next(1, status)
    (result,) = _generate(_engine(server), _ask("hi"))
    assert not result.valid and result.finish_reason == "error" and f"HTTP {status}" in (result.error or "")
    assert len(server.chats) == 1


def test_http_retries_a_4xx_only_when_the_preset_opts_in(server: FakeOpenAI) -> None:
    server.fail_next(2, 429)
    (result,) = _generate(
        _engine(server, options=FAST.model_copy(update={"retry_statuses": [429]})), _ask("hi")
    )
    assert result.valid and len(server.chats) == 3


def test_http_context_overflow_is_context_window_without_retry(server: FakeOpenAI) -> None:
    server.hook = lambda path, body: (
        400,
        {
            "error": {
                "message": "This model's maximum context length is 2048 "
                "tokens. However, your prompt contains 4000"
            }
        },
    )
    (result,) = _generate(_engine(server), _ask("long"))
    assert result.finish_reason == "context_window" and not result.valid and len(server.chats) == 1


def test_http_wrong_model_name_is_a_clear_error(server: FakeOpenAI) -> None:
    with pytest.raises(UxlocalError, match=r"serves \['fake-model'\], not 'other'"):
        _generate(_engine(server, served="other"), _ask("hi"))


def test_http_404_for_a_request_stops_the_run(server: FakeOpenAI) -> None:
    server.hook = lambda path, body: (404, {"error": {"message": "The model `x` does not exist."}})
    with pytest.raises(UxlocalError, match="HTTP 404.*does not exist"):
        _generate(_engine(server), _ask("hi"))
    assert len(server.chats) == 1


def test_http_timeout_is_retried(server: FakeOpenAI) -> None:
    calls = []

    def slow_first(path: str, body: dict[str, Any]) -> None:
        calls.append(path)
        if len(calls) == 1:
            time.sleep(0.8)

    server.hook = slow_first  # type: ignore[assignment]
    options = FAST.model_copy(update={"timeout_s": 0.3})
    (result,) = _generate(_engine(server, options=options), _ask("hi"))
    assert result.valid and len(calls) == 2


def test_http_dead_server_fails_after_retries_with_a_resume_hint(server: FakeOpenAI) -> None:
    engine = _engine(server)
    server.stop()
    started = time.perf_counter()
    with pytest.raises(EndpointError, match=r"failed 3 times on 1 endpoint.*run the same command again"):
        _generate(engine, _ask("a"), _ask("b"))
    assert time.perf_counter() - started < 5


def test_http_spreads_a_batch_over_endpoints_within_each_limit() -> None:
    fakes = [FakeOpenAI(delay_s=0.05).start(), FakeOpenAI(delay_s=0.05).start()]
    try:
        engine = _engine(*fakes, options=FAST.model_copy(update={"max_concurrency": 2}))
        results = _generate(engine, *[_ask(f"question {k}") for k in range(16)])
    finally:
        for fake in fakes:
            fake.stop()
    assert [r.text for r in results] == [f"reply to question {k}" for k in range(16)]  # order kept
    assert [len(f.chats) for f in fakes] == [8, 8]
    assert all(f.max_in_flight <= 2 for f in fakes) and max(f.max_in_flight for f in fakes) == 2


def test_http_least_loaded_sends_more_to_the_faster_endpoint() -> None:
    fast, slow = FakeOpenAI(delay_s=0.01).start(), FakeOpenAI(delay_s=0.2).start()
    try:
        engine = _engine(fast, slow, options=FAST.model_copy(update={"max_concurrency": 2}))
        _generate(engine, *[_ask(f"q{k}") for k in range(20)])
    finally:
        fast.stop()
        slow.stop()
    assert len(fast.chats) > 2 * len(slow.chats) and len(fast.chats) + len(slow.chats) == 20


def test_http_moves_traffic_off_an_unreachable_endpoint() -> None:
    alive, dead = FakeOpenAI().start(), FakeOpenAI().start()
    engine = _engine(dead, alive)
    dead.stop()
    try:
        results = _generate(engine, *[_ask(f"q{k}") for k in range(6)])
    finally:
        alive.stop()
    assert all(r.valid for r in results) and len(alive.chats) == 6
    assert engine.endpoint_stats()[0]["failed"] >= 1


def test_http_identity_ignores_endpoints_and_prompt_is_the_messages(server: FakeOpenAI) -> None:
    one = resolve(f"{server.url}#fake-model")
    two = resolve(f"http://10.0.0.1:8000/v1,{server.url}#fake-model")
    assert one.identity == two.identity and two.endpoints == ("http://10.0.0.1:8000/v1", server.url)
    assert resolve(f"{server.url}#other-model").identity != one.identity
    prompt, ids = MessagesRenderer(None).render([{"role": "user", "content": "héllo"}])
    assert json.loads(prompt) == [{"role": "user", "content": "héllo"}] and ids == []


def test_http_url_without_name_asks_the_server(server: FakeOpenAI) -> None:
    model = resolve(server.url)
    assert model.served_model == "fake-model" and model.backend == "openai-http"
    with pytest.raises(InputError, match="cannot ask"):
        resolve("http://127.0.0.1:9/v1")


def test_model_layer_never_asks_a_server_and_says_how_to_name_the_model() -> None:
    # issue 31: served-name discovery lives in the engine; models.py alone cannot reach a server
    from uxlocal.models import resolve_spec

    with pytest.raises(InputError, match=r"#SERVED_NAME"):
        resolve_spec("http://127.0.0.1:9/v1")
    asked: list[str] = []
    model = resolve_spec("http://127.0.0.1:9/v1/", ask_served_name=lambda url: asked.append(url) or "m")
    assert asked == ["http://127.0.0.1:9/v1"] and model.served_model == "m"


def test_http_preset_needs_endpoints(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "judge-srv.toml").write_text('name = "judge-srv"\nbackend = "openai-http"\n')
    monkeypatch.setenv("UXLOCAL_PRESETS", str(tmp_path))
    with pytest.raises(InputError, match="no endpoints"):
        resolve("judge-srv")


def test_token_table_skips_tokens_that_split_a_character() -> None:
    table = TokenTable(None, set())
    dist = table.dist([{"token": "", "logprob": -0.1, "bytes": []},
                       {"token": "\ufffd", "logprob": -1.0, "bytes": [239, 191, 189]},
                       {"token": "ok", "logprob": -2.0, "bytes": [111, 107]},
                       {"token": "<|im_end|>", "logprob": -3.0, "bytes": list(b"<|im_end|>")}])
    assert len(dist) == 2 and table.token_bytes[0] == b"ok" and table.eos_ids == {1}


def test_settle_in_proportion_follows_existing_mass() -> None:
    walk, root = start_walk(("good", "great", "bad"))
    walk.assigned = {"good": 0.3, "great": 0.1, "bad": 0.2}
    from uxlocal.engine.labelprobs import TrieNode

    settle_in_proportion(walk, TrieNode((5,), b"g", 0.4, ("good", "great")))
    assert walk.assigned == pytest.approx({"good": 0.6, "great": 0.2, "bad": 0.2})
    settle_in_proportion(walk, TrieNode((6,), b"x", 0.2, ("nope", "none")))
    assert walk.assigned["nope"] == pytest.approx(0.1)


def _preset(folder: Path, server: FakeOpenAI) -> None:
    (folder / "srv.toml").write_text(
        f'name = "srv"\nbackend = "openai-http"\nendpoints = ["{server.url}"]\nserved_model = "fake-model"\n'
        "engine_args = { max_retries = 1, backoff_s = 0.01, backoff_max_s = 0.02, connect_timeout_s = 1.0 }\n"
    )


def test_killed_server_stops_the_run_with_a_clear_error_and_the_run_resumes(
        server: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from uxlocal.cli import cli

    _preset(tmp_path, server)
    monkeypatch.setenv("UXLOCAL_PRESETS", str(tmp_path))
    monkeypatch.setenv("UXLOCAL_FLUSH_EVERY_S", "0")
    db = tmp_path / "run.duckdb"
    args = ["run", "selftest", "--limit", "4", "--db", str(db), "--no-progress",
            "-m", "candidate=srv", "-m", "user=srv", "-m", "judge=srv"]
    answered = []

    def die_after_ten(path: str, body: dict[str, Any]) -> tuple[int, Any] | None:
        answered.append(path)
        if len(answered) > 10:  # the server "dies": it accepts no more work
            threading.Thread(target=server.stop).start()
            time.sleep(0.5)
            return 500, {"error": {"message": "shutting down"}}
        return None

    server.hook = die_after_ten
    first = CliRunner().invoke(cli, args)
    assert (
        first.exit_code == 1 and "failed 2 times" in first.output and "run the same command" in first.output
    )
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    stored = con.execute("SELECT count(*) FROM generations").fetchone()[0]
    status = con.execute("SELECT status FROM runs").fetchone()[0]
    con.close()
    assert stored >= 8 and status == "running"
    restarted = FakeOpenAI(port=server.port).start()  # the same address, as after a restart
    try:
        second = CliRunner().invoke(cli, args)
    finally:
        restarted.stop()
    assert second.exit_code == 0, second.output
    assert "(resumed)" in second.output and "4 episodes done" in second.output
    import re

    hits = int(re.search(r"(\d+) from cache", second.output).group(1))  # type: ignore[union-attr]
    assert hits >= stored  # every generation stored before the crash is replayed, not asked again
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*), count(DISTINCT episode_id) FROM episodes").fetchone() == (4, 4)
    assert con.execute("SELECT status FROM runs").fetchone()[0] == "done"
    con.close()
    assert len(restarted.chats) == 4 * 5 - hits  # selftest asks 5 generations per episode


class _TinyTokenizer(MessagesRenderer):
    """A local tokenizer stand-in: vocabulary a, b, c, ab and an end token (id 4)."""

    def __init__(self) -> None:
        self._local = None
        self.eos_ids = {4}

    @property
    def has_tokenizer(self) -> bool:
        return True

    def render(self, messages: list[dict[str, str]]) -> tuple[str, list[int]]:
        return json.dumps(messages), [7, 8, 9]

    def token_bytes(self) -> list[bytes]:
        return [b"a", b"b", b"c", b"ab", b""]


def test_http_exact_walk_uses_token_ids_and_asks_completions_off_the_generated_path(
    server: FakeOpenAI,
) -> None:
    import math

    def answer(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path.endswith("/v1/completions"):
            assert body["prompt"] == [7, 8, 9, 0] and body["return_tokens_as_token_ids"] is True
            tops = {"token_id:1": math.log(0.25), "token_id:2": math.log(0.75)}
            return 200, {"choices": [{"text": "c", "logprobs": {"top_logprobs": [tops]}}]}
        assert body["return_tokens_as_token_ids"] is True
        alts = [{"token": f"token_id:{i}", "logprob": math.log(p)} for i, p in ((3, 0.5), (0, 0.3), (1, 0.2))]
        content = [
            {"token": "token_id:3", "logprob": math.log(0.5), "top_logprobs": alts},
            {
                "token": "token_id:4",
                "logprob": 0.0,
                "top_logprobs": [{"token": "token_id:4", "logprob": 0.0}],
            },
        ]
        return 200, {"choices": [{"message": {"content": "ab"}, "finish_reason": "stop",
                                  "logprobs": {"content": content}}], "usage": {}}

    server.hook = answer
    model = resolve(f"{server.url}#fake-model")
    engine = HttpEngine(model, _TinyTokenizer(), FAST)
    (result,) = _generate(engine, _ask("q", Choice(("ab", "ac", "b"))))
    # "a" (0.3) is shared by ab/ac and off the generated path: one /completions read splits it 1:3
    assert result.parsed == "ab"
    assert result.label_probs == pytest.approx({"ab": 0.5 + 0.3 * 0.25, "ac": 0.3 * 0.75, "b": 0.2})


def test_models_list_shows_an_http_preset_as_ready(server: FakeOpenAI, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from uxlocal.cli import cli

    _preset(tmp_path, server)
    monkeypatch.setenv("UXLOCAL_PRESETS", str(tmp_path))
    result = CliRunner().invoke(cli, ["models", "list"])
    assert result.exit_code == 0, result.output
    line = next(row for row in result.output.splitlines() if "srv" in row and "openai-http" in row)
    assert "yes" in line
    model = resolve("srv")
    assert (
        model.endpoints == (server.url,)
        and model.served_model == "fake-model"
        and model.max_model_len == 4096
    )


class _IdsByText(_TinyTokenizer):
    """``_TinyTokenizer`` whose prompt ids end with the message's length (prompts differ)."""

    def render(self, messages: list[dict[str, str]]) -> tuple[str, list[int]]:
        return json.dumps(messages), [7, 8, 100 + len(messages[-1]["content"])]


def _p_first(ids: list[int]) -> float:
    return 0.1 + (ids[-1] % 8) / 10  # P("a") for a prompt


def _label_server(server: FakeOpenAI, *, refuse: int | None = None) -> None:
    """Answer chat and list-of-prompts completions with the same P(a) per prompt.

    ``refuse``: a prompt id the server rejects (400), alone or inside a list, as vLLM rejects the
    whole list.
    """
    import math

    def position(p: float) -> dict[str, Any]:
        return {"token_id:0": math.log(p), "token_id:1": math.log(1 - p)}

    def answer(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path.endswith("/v1/completions"):
            if any(refuse in ids for ids in body["prompt"]):
                return 400, {"error": {"message": "prompt too long"}}
            choices = [{"index": k, "text": "a", "finish_reason": "stop",
                        "logprobs": {"tokens": ["token_id:0"], "token_logprobs": [math.log(_p_first(ids))],
                                     "top_logprobs": [position(_p_first(ids))]}}
                       for k, ids in enumerate(body["prompt"])]
            return 200, {"choices": choices[::-1]}  # answered out of order: the index says whose
        ids = [7, 8, 100 + len(body["messages"][-1]["content"])]
        if refuse in ids:
            return 400, {"error": {"message": "prompt too long"}}
        alts = [{"token": t, "logprob": lp} for t, lp in position(_p_first(ids)).items()]
        content = [{"token": "token_id:0", "logprob": alts[0]["logprob"], "top_logprobs": alts}]
        return 200, {"choices": [{"message": {"content": "a"}, "finish_reason": "stop",
                                  "logprobs": {"content": content}}], "usage": {}}

    server.hook = answer


def _label_requests(n: int) -> list[GenRequest]:
    return [_ask("q" * (k + 1), Choice(("a", "b"))) for k in range(n)]


def test_http_batches_label_requests_into_completions_with_the_chat_path_probabilities(
    server: FakeOpenAI,
) -> None:
    _label_server(server)
    model = resolve(f"{server.url}#fake-model")
    batched = _generate(HttpEngine(model, _IdsByText(), FAST.model_copy(update={"batch_prompts": 3})),
                        *_label_requests(7), _ask("free text"))
    posts = [(path, body) for path, body in server.requests if path.endswith("completions")]
    assert [len(b["prompt"]) for p, b in posts if p.endswith("/v1/completions")] == [3, 3]
    assert sum(p.endswith("/chat/completions") for p, _ in posts) == 2  # the 7th label alone, the free text
    one_by_one = _generate(HttpEngine(model, _IdsByText(), FAST), *_label_requests(7))
    for k, (b, c) in enumerate(zip(batched, one_by_one, strict=False)):
        p = _p_first([7, 8, 100 + k + 1])
        assert b.parsed == c.parsed == "a" and b.valid
        assert b.label_probs == pytest.approx(c.label_probs)
        assert b.label_probs == pytest.approx({"a": p, "b": 1 - p})
    free = [b for p, b in posts if p.endswith("/chat/completions") and "structured_outputs" not in b]
    assert len(batched) == 8 and batched[-1].label_probs is None and len(free) == 1


def test_http_batch_with_a_refused_prompt_asks_each_alone_and_only_that_one_fails(server: FakeOpenAI) -> None:
    _label_server(server, refuse=100 + 2)  # the second request's prompt
    model = resolve(f"{server.url}#fake-model")
    results = _generate(HttpEngine(model, _IdsByText(), FAST.model_copy(update={"batch_prompts": 4})),
                        *_label_requests(4))
    assert [r.valid for r in results] == [True, False, True, True]
    assert results[1].finish_reason == "context_window" and "too long" in (results[1].error or "")
    assert results[2].label_probs == pytest.approx({"a": _p_first([103]), "b": 1 - _p_first([103])})
    assert sum(p.endswith("/chat/completions") for p, _ in server.requests) == 4


def test_http_batch_is_retried_after_a_5xx(server: FakeOpenAI) -> None:
    _label_server(server)
    server.fail_next(1, 503)
    model = resolve(f"{server.url}#fake-model")
    results = _generate(HttpEngine(model, _IdsByText(), FAST.model_copy(update={"batch_prompts": 4})),
                        *_label_requests(4))
    assert all(r.valid for r in results)
    assert [len(b["prompt"]) for p, b in server.requests if p.endswith("/v1/completions")] == [4, 4]


def test_fake_server_answers_a_list_of_prompts_with_one_choice_each() -> None:
    fake = FakeOpenAI(token_ids=lambda label: [ord(c) for c in label])
    body = fake.completions({"prompt": [[1, 2], [3]], "structured_outputs": {"choice": ["ab", "c"]},
                             "return_tokens_as_token_ids": True})
    assert [c["index"] for c in body["choices"]] == [0, 1]
    logprobs = body["choices"][1]["logprobs"]
    assert logprobs["tokens"] == ["token_id:97", "token_id:98"]
    assert logprobs["top_logprobs"][0] == pytest.approx(
        {"token_id:97": -0.35667494, "token_id:99": -1.2039728}
    )
    assert len(fake.completions({"prompt": [5, 6]})["choices"]) == 1  # one token-id prompt


def test_a_request_with_no_cap_sends_no_max_tokens_and_its_named_seed() -> None:
    # issue 42: tau2's upstream protocol asks for no output cap (a max_tokens at or beyond the window)
    # and names seed 626729 at temperature 0; a vLLM server refuses a max_tokens beyond its window
    from uxlocal.engine.base import GenRequest, PreparedRequest, Sampling
    from uxlocal.engine.http_dialects import OpenAIDialect

    dialect = OpenAIDialect(None, "m", top_logprobs=5, renderer=None,  # type: ignore[arg-type]
                            api_key_env="X", window=2048)
    chat = ({"role": "user", "content": "hi"},)
    no_cap = Sampling(max_tokens=1 << 20, seed=626729)
    uncapped = PreparedRequest(GenRequest("candidate", chat, no_cap), "p", [], "h", seed=626729)
    capped = PreparedRequest(GenRequest("candidate", chat, Sampling(max_tokens=64)), "p", [], "h")
    assert "max_tokens" not in dialect.payload(uncapped) and dialect.payload(uncapped)["seed"] == 626729
    assert dialect.payload(capped)["max_tokens"] == 64 and "seed" not in dialect.payload(capped)


def test_the_fake_server_says_nothing_when_a_client_resets_its_connection(
        capfd: pytest.CaptureFixture[str]) -> None:
    """A handler thread's traceback would call ast.parse on Python 3.11, racing the main thread's."""
    import socket
    import struct

    fake = FakeOpenAI().start()
    try:
        conn = socket.create_connection(("127.0.0.1", fake.port))
        conn.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
        assert conn.recv(12).startswith(b"HTTP/1")  # answered; the handler now waits on the kept-alive line
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()  # linger 0: a reset, as a client closing its pool does
        time.sleep(0.3)
    finally:
        fake.stop()
    assert "Traceback" not in capfd.readouterr().err
