"""The engine contract: ``GenRequest`` in, ``GenResult`` out, in batches.

An episode asks for a generation by *role*; the scheduler maps the role to a model, renders the
chat into the model's prompt (``Renderer``), hashes it (cache key) and hands uncached requests to
that model's engine in one batch. Engines never see roles' meaning and never touch the store.

An engine call can last minutes (hundreds of requests), so engines also hand each result to a
``ResultSink`` the moment it is final: the scheduler stores it while the rest of the batch is
still running, and a crash loses only what finished in the last ``flush_every_s`` seconds.

A backend is written from this module alone: ``Engine`` and ``Renderer`` are base classes whose
every ability the scheduler uses is a declared attribute or method with a default (a rolling
batch, engine-side token ids, top-token log-probabilities, native tool calls), so the scheduler
reads declarations and never inspects a signature. ``docs/write-a-backend.md`` walks through one.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, get_args, runtime_checkable

from uxlocal.grammar import Constraint, constraint_key

Role = Literal["candidate", "user", "judge"]
ROLES: tuple[Role, ...] = get_args(Role)
"""The project's role names, in seat order (STYLE rule 20: never synonyms)."""
FinishReason = Literal["stop", "length", "context_window", "error", "cached"]
Message = Mapping[str, Any]
"""One chat message in OpenAI's shape: ``role``, ``content`` and, for tool use, ``tool_calls``
(assistant) or ``tool_call_id`` (tool)."""
ToolSchema = Mapping[str, Any]
"""One tool as OpenAI's ``tools=`` lists it: ``{"type": "function", "function": {name, description,
parameters}}``."""


@dataclass(frozen=True)
class Sampling:
    """Decoding settings. ``seed`` matters only when ``temperature > 0``."""

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 256
    """Upper bound on completion tokens; also clipped to the model's window minus the prompt."""
    seed: int | None = None
    stop: tuple[str, ...] = ()
    logprobs: int = 0
    """Top alternatives per generated token to return in ``GenResult.top_logprobs`` (0: none);
    an engine serves at most its ``Engine.max_top_logprobs``."""

    def key(self) -> dict[str, Any]:
        """Return the canonical form for the cache key; the seed is dropped for greedy decoding.

        ``logprobs`` enters only when asked for, so the keys of stores written before it existed
        still match.
        """
        greedy = self.temperature == 0.0
        key: dict[str, Any] = {"temperature": self.temperature, "top_p": 1.0 if greedy else self.top_p,
                               "max_tokens": self.max_tokens, "seed": None if greedy else self.seed,
                               "stop": list(self.stop)}
        if self.logprobs:
            key["logprobs"] = self.logprobs
        return key


@dataclass(frozen=True)
class GenRequest:
    """What an episode asks for: a chat for one role, with sampling and an optional constraint."""

    role: str
    messages: Sequence[Message]
    sampling: Sampling = Sampling()
    constraint: Constraint | None = None
    lora: str | None = None
    """Name of a LoRA adapter of the role's model (from its preset or registered at run time)."""
    tag: str = ""
    """Free label for logs and the store (e.g. ``judge:t1``); not part of the cache key."""
    tools: tuple[ToolSchema, ...] | None = None
    """Tools the model may call, in the order it is shown them (native function calling: the
    model's chat template renders them, the engine parses its calls into ``GenResult.tool_calls``).
    Needs an engine with ``Engine.tool_calls``."""
    tool_choice: str | None = None
    """``"auto"`` (the model decides), ``"required"`` or ``"none"``; ``None`` sends none."""


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
    tool_calls: list[dict[str, Any]] | None = None
    """Native tool calls parsed from the output, OpenAI's shape: ``{"id", "type": "function",
    "function": {"name", "arguments": <JSON text as generated>}}``; ``text`` keeps what is left."""
    top_logprobs: list[list[tuple[str, float]]] | None = None
    """Per generated position, the top ``Sampling.logprobs`` (token text, natural-log probability)
    pairs in the engine's order; ``None`` when not asked for."""

    def to_json(self) -> dict[str, Any]:
        """Return a plain dict for storage."""
        return {"text": self.text, "finish_reason": self.finish_reason,
                "prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens,
                "latency_ms": self.latency_ms, "valid": self.valid, "parsed": self.parsed,
                "error": self.error, "label_probs": self.label_probs, "tool_calls": self.tool_calls,
                "top_logprobs": self.top_logprobs}


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
                 lora: str | None, lora_identity: str | None = None, *,
                 tools: Sequence[ToolSchema] | None = None, tool_choice: str | None = None) -> str:
    """Return the sha256 of everything that determines the output: model, prompt, sampling, constraint.

    Tools enter only when given (a template usually renders them into the prompt, but a server's
    key is the messages alone), so the keys of stores written before tool calls still match.
    """
    payload: dict[str, Any] = {"model": model_identity, "prompt": prompt, "sampling": sampling.key(),
                               "constraint": constraint_key(constraint), "lora": lora,
                               "lora_identity": lora_identity}
    if tools:
        payload["tools"] = list(tools)
        payload["tool_choice"] = tool_choice
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class Renderer(ABC):
    """Turns chat messages (and tools) into the exact prompt a model sees: its chat template."""

    identity: str
    """Names the template and tokenizer (part of a model's identity)."""
    ids_in_engine: bool = False
    """The engine computes prompt token ids itself, a group at a time (openai-http with a local
    tokenizer): the scheduler then takes ``render_key`` and leaves ``prompt_ids`` empty."""

    @abstractmethod
    def render(self, messages: Sequence[Message],
               tools: Sequence[ToolSchema] | None = None) -> tuple[str, list[int]]:
        """Return the prompt text and token ids, with the generation prompt appended."""

    def render_key(self, messages: Sequence[Message],
                   tools: Sequence[ToolSchema] | None = None) -> tuple[str, list[int]]:
        """Return what the scheduler keys and sends: prompt text and, unless ``ids_in_engine``, its ids."""
        return self.render(messages, tools)

    def token_ids(self, chats: Sequence[Sequence[Message]]) -> list[list[int]]:
        """Return the prompt token ids of several chats (engines with ``ids_in_engine`` call this)."""
        return [self.render(chat)[1] for chat in chats]

    @abstractmethod
    def token_bytes(self) -> list[bytes]:
        """Return the byte string of every token id (for label-path probabilities)."""


def window_exceeded(prepared: PreparedRequest) -> GenResult:
    """Return the result of a request whose prompt leaves no room in the model's context window."""
    return GenResult("", "context_window", prompt_tokens=len(prepared.prompt_ids), valid=False,
                     error="prompt exceeds the model's context window")


@runtime_checkable
class ResultSink(Protocol):
    """Receives an engine's results while its ``generate`` call is still running.

    Its methods are called on the thread that called ``generate`` (so the receiver needs no
    locks), and must be cheap: they run between the engine's steps.
    """

    def done(self, index: int, result: GenResult) -> None:
        """Request ``batch[index]`` is final; ``result`` is the object ``generate`` will return for it."""
        ...

    def busy(self) -> None:
        """Signal that the engine is still working.

        Called at least about once a second while nothing finishes.
        """
        ...

    def more(self) -> list[PreparedRequest]:
        """Return requests to add to the running call (engines declaring ``follow_ups`` only).

        An engine that follows up calls this between its steps and runs what it gets as part of
        the same call; their results go to ``done`` with indices counting on from the batch's end,
        in the order they were handed out (``generate`` returns the first batch's only).
        """
        ...


class Engine(ABC):
    """One loaded model. ``generate`` takes a whole batch and returns its results in order.

    Subclass it and set or override what your backend can do; every default is what the
    scheduler assumes of an engine that says nothing.
    """

    identity: str
    """The model's identity (weights and settings): part of every cache key."""
    name: str = ""
    """A short name for logs and the store; empty: the identity's first 12 characters."""
    max_model_len: int
    """Context window in tokens (prompt plus completion)."""
    calls: int = 0
    """Number of ``generate`` calls that reached the model (cache hits never do)."""
    rolling: ClassVar[bool] = False
    """The engine refills its batch as requests end: the scheduler hands it a whole tick in one
    call with ``window`` (= ``max_batch``) as the most requests to hold at a time. Otherwise it gets
    ``max_batch`` chunks, one call each, and ``window`` is None."""
    label_probs: ClassVar[bool] = True
    """Results of a ``Choice`` request carry ``label_probs`` (probability of each whole label)."""
    max_top_logprobs: ClassVar[int] = 0
    """Most ``Sampling.logprobs`` alternatives per position the engine returns (0: none)."""
    tool_calls: ClassVar[bool] = False
    """The engine parses native tool calls from its output (requests with ``tools``)."""
    follow_ups: bool = False
    """A rolling engine that also takes requests into a running call (``ResultSink.more``): an
    episode whose request ended asks its next one while its batch mates still generate, so one long
    generation no longer holds every other episode until the call ends."""

    @abstractmethod
    def generate(self, batch: list[PreparedRequest], *, sink: ResultSink | None = None,
                 window: int | None = None) -> list[GenResult]:
        """Run every request; never raise for one bad request (return it as invalid).

        Hand each result to ``sink`` as soon as it is final, in any order, on the caller's thread
        (an engine that cannot stream may skip this: the caller saves what ``generate`` returns),
        and call ``sink.busy()`` about once a second while nothing finishes.
        """

    def close(self) -> None:  # noqa: B027 - optional: most engines hold something to free, not all
        """Free the model's memory."""

    def unable(self, request: GenRequest) -> str | None:
        """Return why this engine cannot serve ``request``, or None when it can (the abilities above)."""
        if request.tools and not self.tool_calls:
            return "native tool calls (the request lists tools)"
        if request.sampling.logprobs > self.max_top_logprobs:
            return (f"{request.sampling.logprobs} top log-probabilities a token "
                    f"(this engine returns at most {self.max_top_logprobs})")
        return None
