"""The vLLM engine splits mixed base/adapter batches on CPU builds only while our kernels are off."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from uxlocal.engine import vllm as engine_module


def _engine(**kwargs: object) -> engine_module.VllmEngine:
    model = SimpleNamespace(identity="m", max_model_len=64, lora={})
    return engine_module.VllmEngine(model, renderer=None, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("cpu", "kernels", "split"), [(True, True, False), (True, False, True), (False, False, False)]
)
def test_split_default_follows_the_build_and_the_kernels(
    monkeypatch: pytest.MonkeyPatch, cpu: bool, kernels: bool, split: bool
) -> None:
    monkeypatch.setattr(engine_module, "is_cpu_build", lambda: cpu)
    monkeypatch.setattr(engine_module, "lora_kernels_active", lambda: kernels)
    assert _engine().split_mixed_lora is split


def test_an_explicit_choice_wins_and_the_default_is_decided_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "is_cpu_build", lambda: True)
    monkeypatch.setattr(engine_module, "lora_kernels_active", lambda: pytest.fail("not consulted"))
    engine = _engine(split_mixed_lora=True)
    assert engine.split_mixed_lora is True
    engine.split_mixed_lora = False
    assert engine.split_mixed_lora is False
    _engine()  # building an engine does not ask (that would import vLLM on fully cached runs)
