"""Roles -> models -> engines: one engine per distinct model, built only when a request misses the cache.

Backends are plugins (``uxlocal.backends`` entry points, the built-ins in ``engine/backends.py``);
``register_backend`` adds one at run time (tests, notebooks). Nothing here branches on a backend's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from uxlocal.engine.backends import Backend, EngineFactory, RendererFactory
from uxlocal.engine.base import Engine, Renderer
from uxlocal.engine.render import PlainRenderer
from uxlocal.errors import InputError
from uxlocal.models import ResolvedModel

_BACKENDS: dict[str, Backend] = {}
"""Backends registered at run time; they shadow an entry point of the same name."""


def register_backend(backend: Backend) -> None:
    """Make a backend available to ``--model ROLE=NAME@backend`` and presets for this process."""
    _BACKENDS[backend.name] = backend


def find_backend(name: str, role: str = "") -> Backend:
    """Return the backend called ``name``: registered in this process, else its entry point."""
    from uxlocal.plugins import BACKENDS_GROUP, group_entry_points, load_named

    if name in _BACKENDS:
        return _BACKENDS[name]
    found = load_named(BACKENDS_GROUP, name)
    if isinstance(found, Backend):
        return found
    known = sorted(set(_BACKENDS) | {ep.name for ep in group_entry_points(BACKENDS_GROUP)})
    what = "is not a uxlocal.engine.backends.Backend" if found is not None else "is unknown"
    raise InputError(None, None, f"backend {name!r}{f' for role {role}' if role else ''} {what}",
                     f"known: {', '.join(known)}")


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
                backend = find_backend(model.backend, role)
                pool.slots[model.identity] = ModelSlot(model, backend.make_renderer, backend.make_engine,
                                                       dict(options))
            pool.roles[role] = model.identity
        return pool

    @classmethod
    def from_engines(cls, engines: dict[str, Engine], renderer: Renderer | None = None) -> "ModelPool":
        """Wrap ready engines (tests, benchmarks); the same engine object may serve several roles."""
        pool = cls()
        for role, engine in engines.items():
            if not isinstance(engine, Engine):
                raise TypeError(f"{type(engine).__name__} for role {role} does not subclass "
                                "uxlocal.engine.base.Engine (the engine contract: docs/write-a-backend.md)")
            if engine.identity not in pool.slots:
                model = ResolvedModel(name=engine.name or engine.identity[:12], path="",
                                      backend="fake", dtype="none", max_model_len=engine.max_model_len,
                                      identity=engine.identity)
                chosen = renderer or PlainRenderer()
                pool.slots[engine.identity] = ModelSlot(model, lambda m, r=chosen: r,
                                                        lambda *a, e=engine: e, engine_=engine, renderer_=chosen)
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
