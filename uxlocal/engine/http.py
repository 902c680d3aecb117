"""openai-http backend: chat completions against running OpenAI-compatible servers.

The scale-out path. A model is one or more endpoints (vLLM ``serve``, SGLang, llama.cpp server)
that all serve the same weights; ``generate`` fans a scheduler batch out as concurrent requests,
each to the least-loaded endpoint (fewest in flight for its capacity), and returns results in
order. The server does the batching; our concurrency limit per endpoint is its batch from us.

Modules: ``http.py`` (this: options, the messages renderer, ``HttpEngine``), ``http_call.py`` (one
rolling call and its follow-ups), ``http_transport.py``
(endpoints, dispatch, retries, the loop thread, the API key), ``http_dialects.py`` (request
bodies and answers any OpenAI-compatible server understands), ``http_vllm.py`` (vLLM's extras),
``retry.py`` (the retry policy every retrying backend shares).

Decisions (and why):

- **Cache key = the chat messages**, not a locally rendered prompt: the server applies its own
  chat template, so what we send (canonical JSON of the messages) is what determines the output.
  ``MessagesRenderer`` returns that JSON as the "prompt", so ``request_hash`` covers messages,
  model identity, sampling and constraint exactly as for the in-process backends, and the
  ``generations.prompt`` column shows what was sent. The model identity (``models.py``) is the
  served name plus a fingerprint, never the endpoints.
- **Constraints** depend on the server's dialect, chosen once: vLLM's ``structured_outputs``
  (``choice`` / ``json`` / ``regex``) when the server is vLLM (``/models`` says ``owned_by: vllm``)
  or ``structured = "vllm"`` (``http_vllm.VllmDialect``); otherwise ``response_format`` with a
  JSON schema (``http_dialects.OpenAIDialect``: a Choice becomes a string enum, unquoted before
  parsing; a Regex has no portable form and is sent unconstrained, then parsed).
- **Label probabilities** come from the returned ``top_logprobs`` and the same trie walk as the
  in-process engine (``labelprobs.py``). With a local tokenizer folder (preset ``path``, or a
  served name that is a local folder) we ask vLLM for ``token_id:N`` tokens and use the exact
  token bytes; a shared-prefix node off the generated path is expanded with one extra
  ``/completions`` call on the locally rendered token ids (vLLM accepts token-id prompts). That
  is the in-process computation, so results agree within numerical noise. Without a tokenizer,
  token bytes come from the response (a token that splits a UTF-8 character arrives as "" or
  U+FFFD and is skipped), and an off-path node's mass is shared among its candidate labels in
  proportion to what they already have: an approximation, exact for labels whose first tokens
  differ (``good``/``bad``), approximate for labels sharing a prefix token.
- **Batched label requests** (``batch_prompts`` > 1, a vLLM server, a local tokenizer): label
  requests that share model, labels and sampling go as one ``/completions`` request with a list
  of token-id prompts; vLLM answers one choice per prompt (``index``), whose completions-shaped
  logprobs feed the same label walk. One HTTP request per verdict cost the client a few ms of
  CPU each (the harness ceiling). vLLM refuses the whole list for one bad prompt, so a refused
  list is asked again one request per prompt: only the bad one ends invalid.
- **Token ids are computed here, a group at a time** (``MessagesRenderer.ids_in_engine``): the
  scheduler takes only the key text (the chat template is still applied there, so a template that
  refuses a chat fails that episode as before), and each group's prompts are tokenized in one
  ``encode_batch`` call on a worker thread just before the group is sent. The Rust tokenizer holds
  no GIL, so tokenizing overlaps the network, the label walks and the scheduler's own work; one
  prompt at a time on the scheduler's thread it ran in series with all of them.
- **A rolling engine**: ``generate`` takes the scheduler's ``window`` (at most that many prompts
  tokenizing or on the network at once, each that ends letting the next in), so a tick is one
  call, not ``max_batch`` chunks that each wait for their slowest request. Bodies go through
  msgspec: a 64-prompt list of token ids took json ~6 ms on the event loop.
- **Follow-ups** (``Engine.follow_ups``, ``http_call.py``): a call with a ``ResultSink`` stays open
  after its batch; after each handover the calling thread asks the sink for what its episodes
  asked meanwhile and sends it in the same window, and the call ends once everything it sent is
  answered and nothing more is asked. An episode's next turn goes to the server the moment its
  reply is back, so a tau2 episode no longer waits for the slowest reply of its tick.
- **Failures** (``retry.RetryPolicy``): connection errors, timeouts and 5xx are retried with
  exponential backoff (an unreachable endpoint is benched for the backoff so its requests move to
  the other endpoints). A 4xx is never retried unless the preset opts in with ``retry_statuses``
  (e.g. ``[429]`` behind a rate-limiting gateway; vLLM itself queues instead of answering 429):
  400/422 become an invalid result for that request (a context overflow becomes
  ``context_window``), 401/403/404 stop the run (configuration). When a
  request runs out of retries the whole batch fails with ``EndpointError``: the requests that had
  finished were already handed to the scheduler (``ResultSink``) and are in the cache, finished
  episodes are in the store, and the same command resumes later.
- **The API key** (``--api-key`` of vLLM's server) is read from the environment variable named by
  ``api_key_env`` and lives only in the request headers: ``models.py`` refuses a key in a preset's
  ``engine_args`` or in an endpoint URL, and server error text is scrubbed of it before
  it can become a stored ``error``. Stores hold model specs and errors, and get shared.
- **Streaming**: each request's result goes to the caller's ``ResultSink`` as soon as it is back
  (label walk included), on the caller's thread: the event loop queues it, the calling thread
  takes it off the queue and otherwise beats ``sink.busy()`` twice a second.
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import time
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from uxlocal.engine.base import Engine, GenResult, Message, PreparedRequest, Renderer, ResultSink, ToolSchema
from uxlocal.engine.http_call import Followed, HttpCall, Send
from uxlocal.engine.http_dialects import OnDone, OpenAIDialect
from uxlocal.engine.http_transport import (
    CONFIG_STATUSES,
    DEFAULT_API_KEY_ENV,
    KEY_REDACTED,
    Dispatcher,
    Endpoint,
    EndpointError,
    FinalError,
    Finished,
    LoopThread,
    OpenAITransport,
    Served,
    TransportOptions,
    bearer_headers,
)
from uxlocal.engine.http_vllm import VllmDialect
from uxlocal.engine.retry import RetryPolicy, backoff_delay
from uxlocal.errors import InputError, UxlocalError, format_validation_error
from uxlocal.grammar import Choice
from uxlocal.models import ResolvedModel

__all__ = ["CONFIG_STATUSES", "DEFAULT_API_KEY_ENV", "KEY_REDACTED", "Dispatcher", "Endpoint",
           "EndpointError", "HttpEngine", "HttpOptions", "MessagesRenderer", "backoff_delay",
           "bearer_headers"]

log = logging.getLogger(__name__)
_LoopThread = LoopThread
"""The loop thread's former name (tests drive it directly)."""
DialectName = Literal["vllm", "response_format"]
DIALECTS: dict[str, type[OpenAIDialect]] = {"vllm": VllmDialect, "response_format": OpenAIDialect}
"""Each ``HttpOptions.structured`` dialect's class (``auto`` picks one of these at the first probe)."""


class HttpOptions(BaseModel):
    """Knobs of the openai-http backend (a preset's ``engine_args``)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    max_concurrency: int = Field(default=64, gt=0)
    """Requests in flight per endpoint. vLLM batches whatever is in flight, so this is the batch
    size we give each server; past its KV cache it queues them itself."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Seconds to wait for one response (a long completion on a busy server takes minutes)."""
    connect_timeout_s: float = Field(default=10.0, gt=0)
    """Seconds to wait for a TCP connection before counting the endpoint as unreachable."""
    max_retries: int = Field(default=4, ge=0)
    """Retries per request after a connection error, timeout or 5xx (never a 4xx, see ``retry_statuses``)."""
    retry_statuses: list[int] = Field(default_factory=list)
    """4xx codes to retry like a 5xx (opt-in, e.g. ``[429]`` behind a rate-limiting gateway)."""
    backoff_s: float = Field(default=0.5, gt=0)
    """First retry delay in seconds; it doubles per consecutive failure up to ``backoff_max_s``."""
    backoff_max_s: float = Field(default=8.0, gt=0)
    """Longest retry delay in seconds."""
    top_logprobs: int = Field(default=20, ge=1)
    """Alternatives per position for label probabilities. vLLM allows up to its
    ``--max-logprobs`` (20 by default); OpenAI's API caps it at 20."""
    structured: Literal["auto", "vllm", "response_format"] = "auto"
    """How constraints are sent: vLLM's ``structured_outputs``, or ``response_format`` JSON schema
    (SGLang, llama.cpp); ``auto`` asks the server's ``/models`` who owns the model."""
    api_key_env: str = DEFAULT_API_KEY_ENV
    """Environment variable holding the bearer token (vLLM ``--api-key``); unset = no header. The
    key itself never goes in a preset."""
    batch_prompts: int = Field(default=1, ge=1)
    """Label requests sent together in one ``/completions`` request (vLLM takes a list of token-id
    prompts and answers one choice per prompt). Needs a vLLM server and a local tokenizer (the
    preset's ``path``); 1 sends each as its own chat request. 32-64 take the client's few ms of
    CPU per request off each verdict (docs/performance.md, the harness ceiling)."""

    def transport(self) -> TransportOptions:
        """Return the transport's share of these options, with the retry policy they define."""
        policy = RetryPolicy(max_retries=self.max_retries, backoff_s=self.backoff_s,
                             backoff_max_s=self.backoff_max_s, retry_statuses=frozenset(self.retry_statuses))
        return TransportOptions(max_concurrency=self.max_concurrency, timeout_s=self.timeout_s,
                                connect_timeout_s=self.connect_timeout_s, api_key_env=self.api_key_env,
                                policy=policy)

    @classmethod
    def from_engine_args(cls, name: str, engine_args: dict[str, Any]) -> "HttpOptions":
        """Return the backend's options from a preset's ``engine_args`` (other backends' keys are ignored)."""
        known = {k: v for k, v in engine_args.items() if k in cls.model_fields}
        ignored = sorted(set(engine_args) - set(known))
        if ignored:
            log.warning("model %s: engine_args %s do not apply to openai-http; ignored", name, ignored)
        try:
            return cls(**known)
        except ValidationError as exc:
            raise InputError(f"model {name}: bad openai-http engine_args: "
                             f"{format_validation_error(exc)}") from exc


class MessagesRenderer(Renderer):
    """The "prompt" of an http request: canonical JSON of its chat messages (the cache key's text).

    With a local tokenizer folder it also renders token ids with the model's template; they are
    used for exact label walks (off-path expansions) only, never for the key.
    """

    identity = "openai-chat-messages-v1"

    def __init__(self, tokenizer_folder: str | Path | None = None) -> None:
        self._local: Any = None
        if tokenizer_folder:
            from uxlocal.engine.render import make_renderer

            self._local = make_renderer(tokenizer_folder)
        self.eos_ids: set[int] = set(self._local.eos_ids) if self._local is not None else set()

    @property
    def has_tokenizer(self) -> bool:
        """Whether token ids and token bytes are available."""
        return self._local is not None

    @property
    def ids_in_engine(self) -> bool:
        """Whether the scheduler should take only the key text (``render_key``), not token ids.

        ``HttpEngine`` then tokenizes a whole group at once (``token_ids``) on a worker thread
        while other requests are on the network. Tokenizing one prompt at a time on the scheduler's
        thread cost ~0.2-0.5 ms a verdict, in series with the network (the harness ceiling).
        """
        return self._local is not None

    def render(self, messages: Sequence[Message],
               tools: Sequence[ToolSchema] | None = None) -> tuple[str, list[int]]:
        """Return the canonical messages JSON, and the local token ids when a tokenizer is known.

        Tools are not in the text: ``request_hash`` keys them beside it, and the server renders them.
        """
        ids = self._local.render(list(messages), tools)[1] if self._local is not None else []
        return _messages_json(messages), ids

    def render_key(self, messages: Sequence[Message],
                   tools: Sequence[ToolSchema] | None = None) -> tuple[str, list[int]]:
        """Return ``render`` without the token ids (an empty list): the key text.

        It returns once the chat template has accepted the chat, so a template that refuses it
        fails this request's episode here, as ``render`` would, and never a whole engine batch later.
        """
        if self._local is not None:
            self._local.template_text(list(messages), tools)
        return _messages_json(messages), []

    def token_ids(self, chats: Sequence[Sequence[Message]]) -> list[list[int]]:
        """Return the token ids ``render`` gives each chat, computed together.

        One ``encode_batch``, which holds no GIL; without a local tokenizer, none (as ``render``).
        """
        if self._local is None:
            return [[] for _ in chats]
        return [ids for _, ids in self._local.render_many([list(chat) for chat in chats])]

    def token_bytes(self) -> list[bytes]:
        """Byte string of every token id (empty without a tokenizer)."""
        return self._local.token_bytes() if self._local is not None else []


def _messages_json(messages: Sequence[Message]) -> str:
    """Canonical JSON of chat messages: the cache key's text and the ``generations.prompt`` column."""
    return json.dumps([dict(m) for m in messages], ensure_ascii=False, sort_keys=True, separators=(",", ":"))


class PromptIds:
    """Token ids for requests that came without them (``MessagesRenderer.ids_in_engine``).

    One ``token_ids`` call per group on a worker thread: the event loop keeps serving other
    groups' answers meanwhile, and the Rust tokenizer holds no GIL, so it overlaps the
    scheduler's Python work too. The ids are those ``render`` gives (a test checks).
    """

    def __init__(self, renderer: MessagesRenderer) -> None:
        self.renderer = renderer
        self._pool: ThreadPoolExecutor | None = None

    async def ensure(self, group: list[PreparedRequest]) -> None:
        """Fill in the group's missing ``prompt_ids`` (nothing to do without a local tokenizer)."""
        if not self.renderer.has_tokenizer:
            return
        missing = [p for p in group if not p.prompt_ids]
        if not missing:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="uxlocal-tokenize")
        chats = [list(p.request.messages) for p in missing]
        ids = await asyncio.get_running_loop().run_in_executor(self._pool, self.renderer.token_ids, chats)
        for prepared, prompt_ids in zip(missing, ids, strict=True):
            prepared.prompt_ids = prompt_ids

    def close(self) -> None:
        """Stop the worker threads (a later ``ensure`` starts new ones)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        self._pool = None


class HttpEngine(Engine):
    """A model behind one or more OpenAI-compatible endpoints (see the module docstring).

    The transport is the same for every server; what the server understands is its dialect
    (``OpenAIDialect`` or ``VllmDialect``), fixed by the preset's ``structured`` or learned from
    the first ``/models`` that answers (vLLM's until then). No method asks which one it has.
    """

    # rolling; top_logprobs up to OpenAI's limit; tool calls parsed by the server (vllm serve
    # --enable-auto-tool-choice --tool-call-parser ...)
    rolling, max_top_logprobs, tool_calls = True, 20, True
    # a call takes the requests its episodes ask while it runs (http_call.Followed)
    follow_ups = True

    def __init__(self, model: ResolvedModel, renderer: MessagesRenderer,
                 options: HttpOptions | None = None) -> None:
        if not model.endpoints:
            raise InputError(f"model {model.name} has no endpoints")
        self.model = model
        self.identity = model.identity
        self.max_model_len = model.max_model_len
        self.renderer = renderer
        self.options = options or HttpOptions.from_engine_args(model.name, dict(model.engine_args))
        self.calls, self.busy_s = 0, 0.0
        self.transport = OpenAITransport(model.name, list(model.endpoints), self.options.transport())
        self.endpoints = self.transport.endpoints
        structured = self.options.structured
        self.dialect: DialectName | None = None if structured == "auto" else structured
        self.speaks = self._dialect(self.dialect or "vllm")
        self._loop: LoopThread | None = None
        self._probed, self._ids = False, PromptIds(renderer)

    def _dialect(self, name: DialectName) -> OpenAIDialect:
        return DIALECTS[name](self.transport, self.model.served_model, top_logprobs=self.options.top_logprobs,
                              renderer=self.renderer, api_key_env=self.options.api_key_env,
                              window=self.max_model_len)

    # ---- Engine protocol --------------------------------------------------------------------
    def generate(self, batch: list[PreparedRequest], *, sink: ResultSink | None = None,
                 window: int | None = None) -> list[GenResult]:
        """Send the batch concurrently; results in order, each also to ``sink`` as it comes back.

        With ``window`` at most that many requests (a label group counts ``batch_prompts``) are
        being tokenized or on the network at once, each that ends letting the next in (a rolling
        engine). With a ``sink`` the call also takes what the sink's episodes ask while it runs
        (``ResultSink.more``, ``http_call``) and ends when all of it is answered. Raises
        ``EndpointError`` when retries run out (after the finished reached ``sink``).
        """
        if not batch:
            return []
        self.calls += 1
        started = time.perf_counter()
        if self._loop is None:
            self._loop = LoopThread()
            weakref.finalize(self, self._loop.close)
        loop = self._loop
        try:
            if sink is None:
                return loop.run(self._run(self._call(batch, None, window, open_=False)))
            finished: queue.SimpleQueue[Finished | None] = queue.SimpleQueue()
            call = self._call(batch, finished.put, window, open_=self.follow_ups)
            handed = Followed(call, sink, loop.loop.call_soon_threadsafe).handed if self.follow_ups else None
            return loop.run_streaming(self._run(call), finished, sink, handed=handed)
        finally:
            self.busy_s += time.perf_counter() - started

    def close(self) -> None:
        """Close connections and stop the event-loop thread."""
        if self._loop is not None:
            self._loop.close()
        self._ids.close()
        self._loop, self._probed = None, False
        self.transport.forget()

    def endpoint_stats(self) -> list[dict[str, Any]]:
        """Return requests sent and failed per endpoint (for logs and benchmarks)."""
        return [{"url": e.url, "sent": e.sent, "failed": e.failed, "in_flight": e.in_flight}
                for e in self.endpoints]

    def _call(self, batch: list[PreparedRequest], on_done: OnDone, window: int | None, *,
              open_: bool) -> HttpCall:
        # label prompts go in groups of batch_prompts (on a vLLM server): the dialect decides,
        # read when the call runs (the first probe may change it)
        places = self.options.batch_prompts
        return HttpCall(batch, self._sender(on_done), lambda requests: self.speaks.groups(requests, places),
                        places=places, window=window, open_=open_)

    async def _run(self, call: HttpCall) -> list[GenResult]:
        await self._start()
        return await call.run()

    def _sender(self, on_done: OnDone) -> Send:
        """Return how a call sends one task: a group as one list request, a request alone."""

        async def send(members: list[tuple[int, PreparedRequest]]) -> list[tuple[int, GenResult]]:
            if len(members) > 1:
                await self._ids.ensure([p for _, p in members])
                return await self.speaks.group(members, on_done, self._one)
            index, prepared = members[0]
            return [(index, await self._one(prepared, index, on_done))]

        return send

    async def _start(self) -> None:
        """Create the client once; ask each endpoint what it serves until one answers."""
        assert self._loop is not None
        self.transport.start(self._loop)
        if not self._probed:
            served = await asyncio.gather(*(self.transport.probe(e, self.model.served_model)
                                            for e in self.endpoints))
            self._check_served(served)

    def _check_served(self, served: list[Served | None]) -> None:
        answered = [(e, s) for e, s in zip(self.endpoints, served, strict=True) if s is not None]
        for endpoint, info in answered:
            if self.model.served_model not in info.names:
                raise UxlocalError(f"{endpoint.url} serves {info.names}, not {self.model.served_model!r} "
                                   "(fix the name after # in --model, or the preset's served_model)")
        if not answered:
            return
        self._probed = True
        if self.dialect is None:  # learned once, from the first server that answered
            owner = (answered[0][1].owned_by or "").lower()
            self.dialect = "vllm" if owner == "vllm" else "response_format"
            self.speaks = self._dialect(self.dialect)
        windows = [s.max_model_len for _, s in answered if s.max_model_len]
        self.max_model_len = self.max_model_len or min(windows, default=self.max_model_len)
        log.info("model %s: %d endpoint(s), constraints via %s", self.model.name, len(self.endpoints),
                 self.speaks.name)

    # ---- one request ------------------------------------------------------------------------
    async def _one(self, prepared: PreparedRequest, index: int = 0, on_done: OnDone = None) -> GenResult:
        """One chat request to its final result (label walk included); ``on_done`` hears of it at once."""
        started = time.perf_counter()
        await self._ids.ensure([prepared])
        try:
            body = await self.transport.post("/chat/completions", self.speaks.payload(prepared))
        except FinalError as exc:
            result = self.speaks.final_error(self.model.name, prepared, exc)
        else:
            result = self.speaks.result(prepared, body)
            constraint = prepared.request.constraint
            if isinstance(constraint, Choice):
                content = ((body.get("choices") or [{}])[0].get("logprobs") or {}).get("content") or []
                result.label_probs = await self.speaks.label_probs(prepared, constraint.labels, content)
            result.latency_ms = (time.perf_counter() - started) * 1000
        if on_done is not None:
            on_done([(index, result)])
        return result
