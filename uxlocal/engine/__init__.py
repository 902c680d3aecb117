"""Engines: one instance per distinct model; batched, constrained generation with a cache in front."""

from uxlocal.engine.base import Engine, GenRequest, GenResult, PreparedRequest, Sampling

__all__ = ["Engine", "GenRequest", "GenResult", "PreparedRequest", "Sampling"]
