"""The engine contract: ``GenRequest`` in, ``GenResult`` out, in batches.

An episode asks for a generation by *role*; the scheduler maps the role to a model, renders the
chat into the model's prompt (``Renderer``), hashes it (cache key) and hands uncached requests to
that model's engine in one batch. Engines never see roles' meaning and never touch the store.

An engine call can last minutes (hundreds of requests), so engines also hand each result to a
``ResultSink`` the moment it is final: the scheduler stores it while the rest of the batch is
still running, and a crash loses only what finished in the last ``flush_every_s`` seconds.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, get_args, runtime_checkable

from uxlocal.grammar import Constraint, constraint_key

Role = Literal["candidate", "user", "judge"]
ROLES: tuple[Role, ...] = get_args(Role)
"""The project's role names, in seat order (STYLE rule 20: never synonyms)."""
FinishReason = Literal["stop", "length", "context_window", "error", "cached"]


@dataclass(frozen=True)
class Sampling:
    """Decoding settings. ``seed`` matters only when ``temperature > 0``."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    """Upper bound on completion tokens; also clipped to the model's window minus the prompt."""
    seed: int | None = None
    stop: tuple[str, ...] = ()

    def key(self) -> dict[str, Any]:
        """Canonical form for the cache key; the seed is dropped for greedy decoding."""
        greedy = self.temperature == 0.0
        return {"temperature": self.temperature, "top_p": 1.0 if greedy else self.top_p,
                "max_tokens": self.max_tokens, "seed": None if greedy else self.seed,
                "stop": list(self.stop)}


@dataclass(frozen=True)
class GenRequest:
    """What an episode asks for: a chat for one role, with sampling and an optional constraint."""

    role: str
    messages: tuple[dict[str, str], ...] | list[dict[str, str]]
    sampling: Sampling = Sampling()
    constraint: Constraint | None = None
    lora: str | None = None
    """Name of a LoRA adapter of the role's model (from its preset or registered at run time)."""
    tag: str = ""
    """Free label for logs and the store (e.g. ``judge:t1``); not part of the cache key."""


@dataclass
class GenResult:
    """A finished generation. ``parsed`` is set only when ``valid``."""

    text: str
    finish_reason: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    valid: bool = True
    parsed: Any = None
    error: str | None = None
    label_probs: dict[str, float] | None = None
    request_hash: str = ""
    model_identity: str = ""
    cached: bool = False

    def to_json(self) -> dict[str, Any]:
        """Plain dict for storage."""
        return {"text": self.text, "finish_reason": self.finish_reason,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "latency_ms": self.latency_ms, "valid": self.valid, "parsed": self.parsed,
                "error": self.error, "label_probs": self.label_probs}


@dataclass
class PreparedRequest:
    """A request rendered for one model: prompt text, token ids and its cache key."""

    request: GenRequest
    prompt: str
    prompt_ids: list[int]
    request_hash: str
    seed: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def sampling(self) -> Sampling:
        """The request's sampling settings."""
        return self.request.sampling


def request_hash(model_identity: str, prompt: str, sampling: Sampling, constraint: Constraint | None,
                 lora: str | None, lora_identity: str | None = None) -> str:
    """sha256 of everything that determines the output: model, rendered prompt, sampling, constraint."""
    payload = {"model": model_identity, "prompt": prompt, "sampling": sampling.key(),
               "constraint": constraint_key(constraint), "lora": lora, "lora_identity": lora_identity}
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@runtime_checkable
class Renderer(Protocol):
    """Turns chat messages into the exact prompt a model sees (its chat template)."""

    identity: str

    def render(self, messages: list[dict[str, str]]) -> tuple[str, list[int]]:
        """Prompt text and token ids with the generation prompt appended."""
        ...

    def token_bytes(self) -> list[bytes]:
        """Byte string of every token id (for label-path probabilities)."""
        ...


@runtime_checkable
class ResultSink(Protocol):
    """Receives an engine's results while its ``generate`` call is still running.

    Both methods are called on the thread that called ``generate`` (so the receiver needs no
    locks), and must be cheap: they run between the engine's steps.
    """

    def done(self, index: int, result: GenResult) -> None:
        """Request ``batch[index]`` is final; ``result`` is the object ``generate`` will return for it."""
        ...

    def busy(self) -> None:
        """The engine is still working; called at least about once a second while nothing finishes."""
        ...


@runtime_checkable
class Engine(Protocol):
    """One loaded model. ``generate`` takes a whole batch and returns results in order.

    ``sink`` (optional for third-party engines: the scheduler checks the signature) receives each
    result as soon as it is final, in any order; ``generate`` still returns the whole list.
    """

    identity: str
    max_model_len: int
    calls: int
    """Number of ``generate`` calls that reached the model (cache hits never do)."""

    def generate(self, batch: list[PreparedRequest], *, sink: ResultSink | None = None) -> list[GenResult]:
        """Run every request; never raise for one bad request (return it as invalid)."""
        ...

    def close(self) -> None:
        """Free the model's memory."""
        ...
