"""A backend written from ``uxlocal.engine.base`` alone: it answers without a model.

A request constrained to labels gets the first label (with all the probability on it); any other
request gets the last message's text back. It declares what it can do by leaving the defaults:
no rolling batch, no native tool calls, no top log-probabilities.
"""

from __future__ import annotations

from typing import Any

from uxlocal.engine.backends import Backend
from uxlocal.engine.base import Engine, GenResult, PreparedRequest, ResultSink
from uxlocal.engine.render import PlainRenderer
from uxlocal.grammar import Choice, parse_output
from uxlocal.models import ResolvedModel


class EchoEngine(Engine):
    """Echo the last message, or pick the first label."""

    def __init__(self, model: ResolvedModel) -> None:
        self.identity = model.identity
        self.name = model.name
        self.max_model_len = model.max_model_len

    def generate(self, batch: list[PreparedRequest], *, sink: ResultSink | None = None,
                 window: int | None = None) -> list[GenResult]:
        """Answer each request at once, handing each result to ``sink``."""
        self.calls += 1
        results = []
        for index, prepared in enumerate(batch):
            results.append(self._answer(prepared))
            if sink is not None:
                sink.done(index, results[-1])
        return results

    @staticmethod
    def _answer(prepared: PreparedRequest) -> GenResult:
        constraint = prepared.request.constraint
        labels = constraint.labels if isinstance(constraint, Choice) else None
        text = labels[0] if labels else str(prepared.request.messages[-1].get("content") or "")
        parsed = parse_output(constraint, text, "stop")
        probs = {label: float(label == text) for label in labels} if labels else None
        return GenResult(text, "stop", prompt_tokens=len(prepared.prompt_ids), completion_tokens=1,
                         valid=parsed.valid, parsed=parsed.value, error=parsed.error, label_probs=probs)


def _engine(model: ResolvedModel, renderer: Any, options: dict[str, Any]) -> Engine:
    return EchoEngine(model)


ECHO = Backend("echo", lambda model: PlainRenderer(), _engine)
