"""``FakeEngine``: plays scripted outputs, records every request, raises when the script runs out.

For logic tests and the ``fake`` model spec. It parses outputs against constraints exactly like
the real backends, so episode logic sees real ``GenResult`` semantics (invalid, truncated, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from uxlocal.engine.base import Engine, GenResult, PreparedRequest, ResultSink
from uxlocal.errors import UxlocalError
from uxlocal.grammar import Choice, parse_output

Scripted = str | dict[str, Any]
Script = Iterable[Scripted] | Callable[[PreparedRequest], Scripted]


class ScriptExhausted(UxlocalError):
    """The fake engine was asked for more outputs than it was given."""


class FakeEngine(Engine):
    """A scripted engine.

    A script item is text or ``{text, finish_reason, label_probs, tool_calls, top_logprobs}``
    (``tool_calls`` in ``GenResult``'s shape; ``top_logprobs`` as lists of pairs).
    """

    max_model_len = 100_000
    max_top_logprobs = 20
    tool_calls = True

    def __init__(self, script: Script | None = None, *, identity: str = "fake-engine",
                 record: bool = True, follow_ups: bool = False) -> None:
        self.identity = identity
        self.record = record
        self.follow_ups = follow_ups
        """Take the sink's follow-ups into the running call (``rolling`` too, as the contract asks)."""
        if follow_ups:
            self.rolling = True  # type: ignore[misc]
        """Keep every batch (tests read ``requests``); off for long benchmarks, so memory stays flat."""
        self.calls = 0
        self.batches: list[list[PreparedRequest]] = []
        self.busy_s = 0.0
        self._fn: Callable[[PreparedRequest], Scripted] | None = None
        self._iter: Iterator[Scripted] | None = None
        if callable(script):
            self._fn = script
        else:
            self._iter = iter(script or [])

    @property
    def requests(self) -> list[PreparedRequest]:
        """Every request seen, in order."""
        return [p for batch in self.batches for p in batch]

    def _next(self, prepared: PreparedRequest) -> Scripted:
        if self._fn is not None:
            return self._fn(prepared)
        assert self._iter is not None
        try:
            return next(self._iter)
        except StopIteration:
            raise ScriptExhausted(f"FakeEngine script ran out at request {len(self.requests)}") from None

    def generate(self, batch: list[PreparedRequest], *, sink: ResultSink | None = None,
                 window: int | None = None) -> list[GenResult]:
        """Answer each request from the script, handing each result to ``sink`` as it is made.

        Following up, each follow-up the sink hands over after a result joins the same call (and the
        same recorded batch); only the first batch's results are returned.
        """
        self.calls += 1
        work = list(batch)
        if self.record:
            self.batches.append(work)
        results = []
        for i, prepared in enumerate(work):  # grows while following up
            results.append(self._one(prepared))
            if sink is not None:
                sink.done(i, results[-1])
                if self.follow_ups:
                    work.extend(sink.more())
        return results[:len(batch)]

    def _one(self, prepared: PreparedRequest) -> GenResult:
        item = self._next(prepared)
        spec = {"text": item} if isinstance(item, str) else dict(item)
        text = str(spec.get("text", ""))
        finish = str(spec.get("finish_reason", "stop"))
        constraint = prepared.request.constraint
        parsed = parse_output(constraint, text, finish)
        probs = spec.get("label_probs")
        if probs is None and isinstance(constraint, Choice) and parsed.valid:
            probs = {label: float(label == parsed.value) for label in constraint.labels}
        top = spec.get("top_logprobs")
        return GenResult(text, finish, prompt_tokens=len(prepared.prompt_ids),
                         completion_tokens=max(1, len(text.split())), latency_ms=1.0,
                         valid=parsed.valid, parsed=parsed.value, error=parsed.error, label_probs=probs,
                         tool_calls=spec.get("tool_calls"),
                         top_logprobs=None if top is None
                         else [[(str(t), float(lp)) for t, lp in pos] for pos in top])

    def close(self) -> None:
        """Nothing to free."""
