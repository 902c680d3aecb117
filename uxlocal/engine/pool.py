"""Roles -> models -> engines: one engine per distinct model, built only when a request misses the cache.

Backends register by name with ``register_backend`` (the built-ins use the same call a plugin
would), so nothing here branches on a backend's name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from uxlocal.engine.base import Engine, Renderer
from uxlocal.engine.render import PlainRenderer
from uxlocal.errors import InputError
from uxlocal.models import ResolvedModel

EngineFactory = Callable[[ResolvedModel, Any, dict[str, Any]], Engine]
RendererFactory = Callable[[ResolvedModel], Renderer]
_BACKENDS: dict[str, tuple[RendererFactory, EngineFactory]] = {}


def register_backend(name: str, renderer: RendererFactory, engine: EngineFactory) -> None:
    """Make a backend available to ``--model ROLE=NAME@backend`` and presets."""
    _BACKENDS[name] = (renderer, engine)


def _hf_renderer(model: ResolvedModel) -> Renderer:
    from uxlocal.engine.render import make_renderer

    return make_renderer(model.path)


def _vllm_engine(model: ResolvedModel, renderer: Any, options: dict[str, Any]) -> Engine:
    from uxlocal.engine.vllm import VllmEngine

    return VllmEngine(model, renderer, grammar=options.get("grammar", "xgrammar"))


def _hf_engine(model: ResolvedModel, renderer: Any, options: dict[str, Any]) -> Engine:
    from uxlocal.engine.hf import HfEngine

    return HfEngine(model, renderer, grammar=options.get("grammar", "xgrammar"))


def _fake_engine(model: ResolvedModel, renderer: Any, options: dict[str, Any]) -> Engine:
    from uxlocal.engine.fake import FakeEngine

    return FakeEngine(options.get("fake_script"), identity=model.identity)


def _http_renderer(model: ResolvedModel) -> Renderer:
    from uxlocal.engine.http import MessagesRenderer

    return MessagesRenderer(model.path or None)


def _http_engine(model: ResolvedModel, renderer: Any, options: dict[str, Any]) -> Engine:
    from uxlocal.engine.http import HttpEngine

    return HttpEngine(model, renderer)


register_backend("vllm", _hf_renderer, _vllm_engine)
register_backend("hf", _hf_renderer, _hf_engine)
register_backend("fake", lambda m: PlainRenderer(), _fake_engine)
register_backend("openai-http", _http_renderer, _http_engine)


@dataclass
class ModelSlot:
    """One distinct model: its renderer (cheap) and engine (heavy), both built on first use."""

    model: ResolvedModel
    renderer_factory: RendererFactory
    factory: EngineFactory
    options: dict[str, Any] = field(default_factory=dict)
    engine_: Engine | None = None
    renderer_: Renderer | None = None

    @property
    def renderer(self) -> Renderer:
        """The chat renderer (a finished run that is re-reported never needs it)."""
        if self.renderer_ is None:
            self.renderer_ = self.renderer_factory(self.model)
        return self.renderer_

    @property
    def engine(self) -> Engine:
        """The engine, built on first use."""
        if self.engine_ is None:
            self.engine_ = self.factory(self.model, self.renderer, self.options)
        return self.engine_

    @property
    def loaded(self) -> bool:
        """Whether the engine has been built."""
        return self.engine_ is not None


class ModelPool:
    """Role -> slot mapping; roles bound to the same model share one slot and one batch."""

    def __init__(self) -> None:
        self.slots: dict[str, ModelSlot] = {}
        self.roles: dict[str, str] = {}

    @classmethod
    def from_models(cls, models: dict[str, ResolvedModel], **options: Any) -> "ModelPool":
        """Build slots for resolved models, one per distinct identity."""
        pool = cls()
        for role, model in models.items():
            if model.identity not in pool.slots:
                if model.backend not in _BACKENDS:
                    raise InputError(None, None, f"unknown backend {model.backend!r} for role {role}",
                                     f"known: {', '.join(sorted(_BACKENDS))}")
                renderer_factory, engine_factory = _BACKENDS[model.backend]
                pool.slots[model.identity] = ModelSlot(model, renderer_factory, engine_factory, dict(options))
            pool.roles[role] = model.identity
        return pool

    @classmethod
    def from_engines(cls, engines: dict[str, Engine], renderer: Renderer | None = None) -> "ModelPool":
        """Wrap ready engines (tests, benchmarks); the same engine object may serve several roles."""
        pool = cls()
        for role, engine in engines.items():
            if engine.identity not in pool.slots:
                model = ResolvedModel(name=getattr(engine, "name", engine.identity[:12]), path="",
                                      backend="fake", dtype="none", max_model_len=engine.max_model_len,
                                      identity=engine.identity)
                chosen = renderer or PlainRenderer()
                pool.slots[engine.identity] = ModelSlot(model, lambda m, r=chosen: r, lambda *a: engine,
                                                        engine_=engine, renderer_=chosen)
            pool.roles[role] = engine.identity
        return pool

    def slot(self, role: str) -> ModelSlot:
        """The slot serving ``role``; a clear error for a role the run did not bind."""
        if role not in self.roles:
            raise InputError(None, None, f"no model bound to role {role!r}",
                             f"pass --model {role}=PRESET_OR_PATH")
        return self.slots[self.roles[role]]

    def model(self, role: str) -> ResolvedModel:
        """The model bound to ``role``."""
        return self.slot(role).model

    def engine_calls(self) -> int:
        """Engine calls across loaded engines."""
        return sum(s.engine_.calls for s in self.slots.values() if s.engine_ is not None)

    def close(self) -> None:
        """Free every loaded engine."""
        for slot in self.slots.values():
            if slot.engine_ is not None:
                slot.engine_.close()
