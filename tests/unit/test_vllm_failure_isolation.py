"""VllmEngine isolates a failing request, also one that fails before any request entered the engine.

A fake ``vllm.LLM`` (``enqueue``, ``llm_engine.step()``) and a fake request translator stand in
for vLLM: the step loop, the window and the failure isolation are ours and run for real.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest

from uxlocal.engine.base import GenRequest, GenResult, PreparedRequest, Sampling
from uxlocal.engine.vllm import VllmEngine


class _FakeLlm:
    """Finishes every enqueued request on the next step; records each ``enqueue`` call's prompts."""

    def __init__(self) -> None:
        self.llm_engine = self
        self.output_processor = SimpleNamespace(request_states={})
        self.calls: list[list[str]] = []
        self._queue: list[tuple[str, str]] = []
        self._count = 0

    def enqueue(self, prompts: list[str], params: Any, *, use_tqdm: bool, lora_request: Any) -> list[str]:
        self.calls.append(list(prompts))
        ids = [f"{self._count + j}-abcdefgh" for j in range(len(prompts))]  # vLLM's randomized ids
        self._count += len(prompts)
        self._queue += zip(ids, prompts, strict=True)
        return ids

    def has_unfinished_requests(self) -> bool:
        return bool(self._queue)

    def step(self) -> list[SimpleNamespace]:
        done, self._queue = self._queue, []
        return [SimpleNamespace(request_id=rid.split("-")[0], finished=True, prompt=prompt)
                for rid, prompt in done]


class _FakeRequests:
    """Translates a prompt to itself, except a prompt starting with "bad", which fails on its way in."""

    renderer = None

    def inputs(self, prepared: PreparedRequest) -> tuple[str, None, None]:
        if prepared.prompt.startswith("bad"):
            raise ValueError(f"cannot translate {prepared.prompt}")
        return prepared.prompt, None, None

    def result(self, prepared: PreparedRequest, out: Any) -> tuple[GenResult, None]:
        return GenResult(f"answer to {out.prompt}", "stop", prompt_tokens=len(prepared.prompt_ids)), None


def _engine() -> tuple[VllmEngine, _FakeLlm]:
    model = SimpleNamespace(identity="m", max_model_len=64, lora={}, name="m")
    engine = VllmEngine(model, renderer=None)  # type: ignore[arg-type]
    llm = _FakeLlm()
    engine._llm = llm
    engine.requests = _FakeRequests()  # type: ignore[assignment]
    return engine, llm


def _batch(*prompts: str) -> list[PreparedRequest]:
    chat = ({"role": "user", "content": "hi"},)
    return [PreparedRequest(GenRequest("candidate", chat, Sampling(max_tokens=4)), p, [1, 2, 3], f"h{k}")
            for k, p in enumerate(prompts)]


@pytest.mark.parametrize("window", [None, 2])
def test_a_request_failing_before_any_entered_fails_alone(window: int | None,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    engine, llm = _engine()
    with caplog.at_level(logging.WARNING, logger="uxlocal.engine.vllm"):
        got = engine.generate(_batch("a", "bad b", "c"), window=window)
    assert [r.finish_reason for r in got] == ["stop", "error", "stop"]
    assert got[0].text == "answer to a" and got[2].text == "answer to c"
    assert got[1].valid is False and "ValueError: cannot translate bad b" in str(got[1].error)
    assert llm.calls == [["a"], ["c"]]  # nothing entered as a batch; the good ones ran alone, once each
    assert "retrying 3 unfinished requests one by one" in caplog.text


def test_a_single_request_failing_on_its_way_in_gets_an_error_result() -> None:
    engine, llm = _engine()
    sunk: list[tuple[int, GenResult]] = []
    sink = SimpleNamespace(done=lambda i, result: sunk.append((i, result)), busy=lambda: None)
    got = engine.generate(_batch("bad"), sink=sink)  # type: ignore[arg-type]
    assert [(r.finish_reason, r.valid) for r in got] == [("error", False)]
    assert [i for i, _ in sunk] == [0] and llm.calls == []


def test_a_batch_that_runs_streams_every_result_in_one_engine_run() -> None:
    engine, llm = _engine()
    got = engine.generate(_batch("a", "b", "c", "d"), window=2)
    assert [r.text for r in got] == ["answer to a", "answer to b", "answer to c", "answer to d"]
    assert llm.calls == [["a", "b"], ["c", "d"]] and engine.calls == 1  # the window refilled as they ended
