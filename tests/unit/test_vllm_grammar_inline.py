"""Issue 44: vLLM's grammars compile when a request is added, so its step batches never wait on a thread."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from uxlocal.engine.vllm_load import compile_grammars_inline


def _llm(manager: object) -> SimpleNamespace:
    """Mimic an in-process ``vllm.LLM``: llm_engine.engine_core.engine_core.scheduler."""
    scheduler = SimpleNamespace(structured_output_manager=manager)
    return SimpleNamespace(llm_engine=SimpleNamespace(engine_core=SimpleNamespace(
        engine_core=SimpleNamespace(scheduler=scheduler))))


def test_compile_grammars_inline_turns_off_async_compiles_of_an_in_process_engine() -> None:
    manager = SimpleNamespace(_use_async_grammar_compilation=True)
    assert compile_grammars_inline(_llm(manager)) is True
    assert manager._use_async_grammar_compilation is False


def test_compile_grammars_inline_warns_when_the_engine_core_runs_elsewhere(
        caplog: pytest.LogCaptureFixture) -> None:
    multiprocess = SimpleNamespace(llm_engine=SimpleNamespace(engine_core=SimpleNamespace()))  # a client only
    with caplog.at_level(logging.WARNING, logger="uxlocal.engine.vllm_load"):
        assert compile_grammars_inline(multiprocess) is False
    assert "asynchronously" in caplog.text


def test_compile_grammars_inline_leaves_a_vllm_without_the_switch_alone() -> None:
    manager = SimpleNamespace()  # a vLLM whose manager has no such attribute: nothing set, nothing raised
    assert compile_grammars_inline(_llm(manager)) is False
    assert not hasattr(manager, "_use_async_grammar_compilation")
