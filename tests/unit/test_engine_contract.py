"""The engine contract (issue 45): abilities are declarations the scheduler reads, backends and
tau2 domains load through entry points, and tool calls and log-probabilities survive the cache.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from uxlocal.engine.backends import Backend
from uxlocal.engine.base import Engine, GenRequest, GenResult, Sampling
from uxlocal.engine.fake import FakeEngine
from uxlocal.engine.pool import ModelPool, find_backend
from uxlocal.episode import EpisodeContext, EpisodeSpec, Outcome
from uxlocal.errors import InputError, UxlocalError
from uxlocal.rollout import Scheduler
from uxlocal.store.db import connect
from uxlocal.store.writer import StoreWriter

TOOL = {"type": "function", "function": {"name": "lookup", "description": "Find a thing.",
                                         "parameters": {"type": "object", "properties": {}}}}
CALL = {"id": "call_0", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}


def _asks(request: GenRequest, got: list[GenResult]) -> list[EpisodeSpec]:
    def program(ctx: EpisodeContext) -> Any:
        got.append((yield request))
        return Outcome("done")
    return [EpisodeSpec("e", program)]


class _NoTools(FakeEngine):
    tool_calls = False


def test_engine_without_tool_calls_stops_the_run_naming_the_model_and_the_ability() -> None:
    request = GenRequest("candidate", ({"role": "user", "content": "hi"},), tools=(TOOL,), tool_choice="auto")
    with pytest.raises(UxlocalError, match="cannot serve role 'candidate': it lacks native tool calls"):
        Scheduler(ModelPool.from_engines({"candidate": _NoTools(["x"])})).run(_asks(request, []))


def test_more_log_probabilities_than_the_engine_returns_are_refused() -> None:
    request = GenRequest("judge", ({"role": "user", "content": "hi"},), Sampling(logprobs=21))
    with pytest.raises(UxlocalError, match=r"lacks 21 top log-probabilities a token \(this engine returns at most 20\)"):
        Scheduler(ModelPool.from_engines({"judge": FakeEngine(["x"])})).run(_asks(request, []))


def test_pool_refuses_an_engine_that_does_not_subclass_the_contract() -> None:
    class Duck:
        identity, max_model_len, calls = "duck", 100, 0

        def generate(self, batch: list[Any], **kwargs: Any) -> list[Any]:
            return []

    with pytest.raises(TypeError, match="does not subclass uxlocal.engine.base.Engine"):
        ModelPool.from_engines({"judge": Duck()})  # type: ignore[dict-item]


def test_engine_defaults_declare_what_a_silent_engine_can_do() -> None:
    class Minimal(Engine):
        identity, max_model_len = "m", 10

        def generate(self, batch: list[Any], *, sink: Any = None, window: int | None = None) -> list[Any]:
            return []

    engine = Minimal()
    assert (engine.rolling, engine.tool_calls, engine.max_top_logprobs, engine.label_probs) == (False, False, 0, True)
    assert engine.unable(GenRequest("judge", ())) is None
    engine.close()  # optional: the default frees nothing


@pytest.mark.parametrize("name", ["fake", "hf", "openai-http", "vllm"])  # every built-in, by its entry point
def test_builtin_backends_load_from_their_entry_points_without_heavy_imports(name: str) -> None:
    backend = find_backend(name)
    assert isinstance(backend, Backend) and backend.name == name


def test_an_unknown_backend_is_an_input_error_listing_the_known_ones() -> None:
    with pytest.raises(InputError, match=r"backend 'nope' for role judge is unknown.*known: fake, hf, openai-http, vllm"):
        find_backend("nope", "judge")


def test_tau2_domains_load_from_their_entry_points() -> None:
    from uxlocal.tau2.registry import domain_spec

    assert domain_spec("homenet").name == "homenet"
    with pytest.raises(KeyError, match="implemented: airline, banking_knowledge, homenet, mock, retail, telecom"):
        domain_spec("nowhere")


def test_tool_calls_and_top_logprobs_come_back_from_the_store_as_they_were_generated(tmp_path: Path) -> None:
    request = GenRequest("candidate", ({"role": "user", "content": "find it"},), Sampling(logprobs=2),
                         tools=(TOOL,), tool_choice="auto")
    top = [[("好", -0.1), ("差", -2.5)], [("<eos>", -0.01), ("。", -5.0)]]
    first = FakeEngine([{"text": "", "tool_calls": [CALL], "top_logprobs": top}])
    con = connect(tmp_path / "s.duckdb")
    fresh: list[GenResult] = []
    Scheduler(ModelPool.from_engines({"candidate": first}), writer=StoreWriter(con), flush_every_s=0).run(
        _asks(request, fresh))
    replayed: list[GenResult] = []
    silent = FakeEngine([])  # raises if asked: the answer must come from the store
    stats = Scheduler(ModelPool.from_engines({"candidate": silent}), run_id="again", writer=StoreWriter(con)).run(
        _asks(request, replayed))
    assert stats.cache_hits == 1 and silent.calls == 0
    assert replayed[0].tool_calls == fresh[0].tool_calls == [CALL]
    assert replayed[0].top_logprobs == fresh[0].top_logprobs == top
    stored = con.execute("SELECT tools, tool_calls FROM generations").fetchall()
    assert len(stored) == 1 and '"lookup"' in stored[0][0] and '"call_0"' in stored[0][1]
    assert "tools: lookup" in first.requests[0].prompt  # the renderer was shown the tools
