"""openai-http backend: chat completions against running OpenAI-compatible servers.

The scale-out path. A model is one or more endpoints (vLLM ``serve``, SGLang, llama.cpp server)
that all serve the same weights; ``generate`` fans a scheduler batch out as concurrent requests,
each to the least-loaded endpoint (fewest in flight for its capacity), and returns results in
order. The server does the batching; our concurrency limit per endpoint is its batch from us.

Decisions (and why):

- **Cache key = the chat messages**, not a locally rendered prompt: the server applies its own
  chat template, so what we send (canonical JSON of the messages) is what determines the output.
  ``MessagesRenderer`` returns that JSON as the "prompt", so ``request_hash`` covers messages,
  model identity, sampling and constraint exactly as for the in-process backends, and the
  ``generations.prompt`` column shows what was sent. The model identity (``models.py``) is the
  served name plus a fingerprint, never the endpoints.
- **Constraints**: vLLM's ``structured_outputs`` (``choice`` / ``json`` / ``regex``) when the server
  is vLLM (``/models`` says ``owned_by: vllm``) or ``structured = "vllm"``; otherwise
  ``response_format`` with a JSON schema (a Choice becomes a string enum, unquoted before
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
- **Failures**: connection errors, timeouts and 5xx are retried with exponential backoff (an
  unreachable endpoint is benched for the backoff so its requests move to the other endpoints).
  A 4xx is never retried unless the preset opts in with ``retry_statuses`` (e.g. ``[429]`` behind
  a rate-limiting gateway; vLLM itself queues instead of answering 429): 400/422 become an invalid result for that request (a
  context overflow becomes ``context_window``), 401/403/404 stop the run (configuration). When a
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
import random
import re
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

import msgspec
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from uxlocal import settings
from uxlocal.engine.base import Engine, GenResult, Message, PreparedRequest, Renderer, ResultSink, ToolSchema
from uxlocal.engine.labelprobs import (
    TrieNode,
    content_of_completion,
    dist_of_token_ids,
    max_label_tokens,
    walk_alternatives,
)
from uxlocal.errors import InputError, UxlocalError, format_validation_error
from uxlocal.grammar import Choice, JsonSchema, parse_output
from uxlocal.models import ResolvedModel

log = logging.getLogger(__name__)
T = TypeVar("T")
Finished = list[tuple[int, GenResult]]
"""Results handed from the event loop to the calling thread at once: (index in the batch, result)."""

CONFIG_STATUSES = frozenset({401, 403, 404})
"""Answers that no retry or other request can fix: wrong key, wrong model name, wrong URL."""
_CONTEXT_ERROR = re.compile(r"context (length|size|window)|maximum context|too long", re.IGNORECASE)


DEFAULT_API_KEY_ENV = "UXLOCAL_API_KEY"
KEY_REDACTED = "[API key]"


def bearer_headers(api_key_env: str = DEFAULT_API_KEY_ENV) -> dict[str, str]:
    """``authorization`` for a server that requires a key; empty when ``$api_key_env`` is unset."""
    key = settings.secret(api_key_env)
    return {"authorization": f"Bearer {key}"} if key else {}


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

    @classmethod
    def from_engine_args(cls, name: str, engine_args: dict[str, Any]) -> "HttpOptions":
        """The backend's options from a preset's ``engine_args`` (other backends' keys are ignored)."""
        known = {k: v for k, v in engine_args.items() if k in cls.model_fields}
        ignored = sorted(set(engine_args) - set(known))
        if ignored:
            log.warning("model %s: engine_args %s do not apply to openai-http; ignored", name, ignored)
        try:
            return cls(**known)
        except ValidationError as exc:
            raise InputError(None, None, f"model {name}: bad openai-http engine_args: "
                             f"{format_validation_error(exc)}") from exc


class EndpointError(UxlocalError):
    """Endpoints that stay unreachable (or keep failing) after every retry; the run can resume later."""


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
        """Whether the scheduler should take only the key text (``render_key``) and leave token ids
        to ``HttpEngine``, which tokenizes a whole group at once (``token_ids``) on a worker thread
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
        """``render`` without the token ids (an empty list): the key text, once the chat template has
        accepted the chat, so a template that refuses it fails this request's episode here, as
        ``render`` would, and never a whole engine batch later.
        """
        if self._local is not None:
            self._local.template_text(list(messages), tools)
        return _messages_json(messages), []

    def token_ids(self, chats: Sequence[Sequence[Message]]) -> list[list[int]]:
        """The token ids ``render`` gives each chat, computed together (one ``encode_batch``, which
        holds no GIL); without a local tokenizer, none (as ``render``).
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


@dataclass
class Endpoint:
    """One server and its load; ``down_until`` benches it after a connection failure."""

    url: str
    limit: int
    in_flight: int = 0
    sent: int = 0
    failed: int = 0
    failures_in_a_row: int = 0
    down_until: float = 0.0
    marked_at: float = -1.0


class Dispatcher:
    """Least-loaded choice among healthy endpoints, with a per-endpoint concurrency limit.

    Used from one event loop. A request waits when every healthy endpoint is full, or while every
    endpoint is benched. A failed attempt benches its endpoint for an exponential delay, but only
    the first failure after a bench counts: requests that were already in flight when the server
    died must not each double the delay.

    A released slot wakes one waiter, which passes the wake-up on while room is left: waking every
    waiter at each release cost O(waiters) per request, thousands of times a tick with a window of
    lone chat requests. A change of bench wakes them all.
    """

    def __init__(self, endpoints: list[Endpoint], *, backoff_s: float, backoff_max_s: float) -> None:
        self.endpoints = endpoints
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self._cond = asyncio.Condition()

    def _pick(self, now: float) -> Endpoint | None:
        ready = [e for e in self.endpoints if e.in_flight < e.limit and e.down_until <= now]
        if not ready:
            return None
        return min(ready, key=lambda e: (e.in_flight / e.limit, e.sent))

    async def acquire(self) -> Endpoint:
        """Wait for a slot on the least-loaded healthy endpoint and take it."""
        async with self._cond:
            while True:
                now = time.monotonic()
                chosen = self._pick(now)
                if chosen is not None:
                    chosen.in_flight += 1
                    chosen.sent += 1
                    if self._pick(now) is not None:
                        self._cond.notify(1)
                    return chosen
                benched = [e.down_until for e in self.endpoints if e.down_until > now]
                if not benched:
                    await self._cond.wait()
                    continue
                try:
                    await asyncio.wait_for(self._cond.wait(), timeout=min(benched) - now)
                except TimeoutError:
                    pass

    async def release(self, endpoint: Endpoint, *, started: float, unreachable: bool = False) -> None:
        """Give the slot back; ``unreachable`` benches the endpoint (see the class docstring)."""
        async with self._cond:
            endpoint.in_flight -= 1
            now = time.monotonic()
            if unreachable:
                endpoint.failed += 1
                if started >= endpoint.marked_at:
                    endpoint.failures_in_a_row += 1
                    endpoint.marked_at = now
                    endpoint.down_until = now + backoff_delay(endpoint.failures_in_a_row, self.backoff_s,
                                                              self.backoff_max_s)
                self._cond.notify_all()
                return
            endpoint.failures_in_a_row = 0
            self._cond.notify(1)


def backoff_delay(failures: int, base_s: float, max_s: float) -> float:
    """Exponential delay with +-20 % jitter, so retries from many clients do not arrive together."""
    return float(min(max_s, base_s * 2 ** max(0, failures - 1)) * random.uniform(0.8, 1.2))


class _LoopThread:
    """An event loop on a daemon thread, and the HTTP client that lives on it.

    Keeps connections alive across scheduler ticks and works when the caller's thread already runs
    a loop (notebooks). Closed by ``HttpEngine.close`` or, failing that, when the engine is
    garbage-collected (``run_suite`` does not close the pools it builds).
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.client: Any = None
        self.thread = threading.Thread(target=self.loop.run_forever, name="uxlocal-http", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # Ctrl-C or a failure: stop what is still in flight
            raise

    def run_streaming(self, coro: Coroutine[Any, Any, T], finished: "queue.SimpleQueue[Finished | None]",
                      sink: ResultSink, beat_s: float = 0.5) -> T:
        """Like ``run``, handing what the coroutine puts in ``finished`` to ``sink`` on this thread
        (results come a list at a time: a group's prompts cross threads in one handover).

        The coroutine's end puts ``None`` behind its results, so the call returns as soon as the
        last one is handed over, not at the next beat (up to half a second per engine call).
        """
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        future.add_done_callback(lambda _: finished.put(None))
        try:
            while True:
                try:
                    ready = finished.get(timeout=beat_s)
                except queue.Empty:
                    sink.busy()
                    continue
                if ready is None:
                    break
                for index, result in ready:
                    sink.done(index, result)
            return future.result()
        except BaseException:
            future.cancel()  # Ctrl-C, a failed request or a failed sink: stop what is still in flight
            raise

    def close(self) -> None:
        if not self.thread.is_alive():
            return
        if self.client is not None:
            try:
                self.run(self.client.aclose())
            except Exception as exc:  # closing must not hide the error that ended the run
                log.debug("closing the http client failed: %s", exc)
            self.client = None
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if not self.loop.is_running():
            self.loop.close()


class _FinalError(Exception):
    """A 4xx answer that retrying cannot change."""

    def __init__(self, status: int, message: str, url: str) -> None:
        super().__init__(f"HTTP {status} from {url}: {message}")
        self.status = status
        self.message = message


@dataclass
class _Served:
    """What an endpoint's ``/models`` says about our model."""

    owned_by: str | None = None
    max_model_len: int | None = None
    names: list[str] = field(default_factory=list)


class HttpEngine(Engine):
    """A model behind one or more OpenAI-compatible endpoints (see the module docstring)."""

    rolling = True
    max_top_logprobs = 20
    """OpenAI's limit for ``top_logprobs``."""
    tool_calls = True
    """The server parses them (``vllm serve --enable-auto-tool-choice --tool-call-parser ...``)."""

    def __init__(self, model: ResolvedModel, renderer: MessagesRenderer,
                 options: HttpOptions | None = None) -> None:
        if not model.endpoints:
            raise InputError(None, None, f"model {model.name} has no endpoints")
        self.model = model
        self.identity = model.identity
        self.max_model_len = model.max_model_len
        self.renderer = renderer
        self.options = options or HttpOptions.from_engine_args(model.name, dict(model.engine_args))
        self.calls = 0
        self.busy_s = 0.0
        self.endpoints = [Endpoint(url, self.options.max_concurrency) for url in model.endpoints]
        self.dialect: Literal["vllm", "response_format"] | None = (
            None if self.options.structured == "auto" else self.options.structured)
        self._loop: _LoopThread | None = None
        self._client: Any = None
        self._dispatch: Dispatcher | None = None
        self._probed = False
        self._tokenize: ThreadPoolExecutor | None = None
        self._headers = {"content-type": "application/json", **bearer_headers(self.options.api_key_env)}
        self._key = settings.secret(self.options.api_key_env)

    @property
    def mode(self) -> Literal["vllm", "response_format"]:
        """How constraints are sent: the configured or detected dialect; vLLM's until a server answers."""
        return self.dialect or "vllm"

    # ---- Engine protocol --------------------------------------------------------------------
    def generate(self, batch: list[PreparedRequest], *, sink: ResultSink | None = None,
                 window: int | None = None) -> list[GenResult]:
        """Send the batch concurrently; results in order, each also to ``sink`` as it comes back.

        With ``window`` at most that many requests (a group of label prompts counts as
        ``batch_prompts``) are being tokenized or on the network at once, each that ends letting the
        next in: the scheduler then hands over a whole tick in one call (a rolling engine) instead
        of ``max_batch`` chunks that each wait for their slowest request.
        Raises ``EndpointError`` when retries run out (after the finished ones reached ``sink``).
        """
        if not batch:
            return []
        self.calls += 1
        started = time.perf_counter()
        if self._loop is None:
            self._loop = _LoopThread()
            weakref.finalize(self, self._loop.close)
        try:
            if sink is None:
                return self._loop.run(self._batch(batch, window=window))
            finished: queue.SimpleQueue[Finished | None] = queue.SimpleQueue()
            return self._loop.run_streaming(self._batch(batch, finished.put, window=window), finished, sink)
        finally:
            self.busy_s += time.perf_counter() - started

    def close(self) -> None:
        """Close connections and stop the event-loop thread."""
        if self._loop is not None:
            self._loop.close()
        if self._tokenize is not None:
            self._tokenize.shutdown(wait=False)
        self._loop, self._client, self._dispatch, self._probed = None, None, None, False
        self._tokenize = None

    def endpoint_stats(self) -> list[dict[str, Any]]:
        """Requests sent and failed per endpoint (for logs and benchmarks)."""
        return [{"url": e.url, "sent": e.sent, "failed": e.failed, "in_flight": e.in_flight}
                for e in self.endpoints]

    # ---- batch ------------------------------------------------------------------------------
    async def _batch(self, batch: list[PreparedRequest],
                     on_done: Callable[[Finished], None] | None = None, *,
                     window: int | None = None) -> list[GenResult]:
        await self._start()
        groups = self._groups(batch)
        # when label prompts go in groups, every task (a group, or a request sent alone) takes
        # batch_prompts places of the window; otherwise each request takes one
        per_task = self.options.batch_prompts if len(groups) < len(batch) else 1
        room = asyncio.Semaphore(max(1, window // per_task) if window else len(groups))

        async def in_window(g: list[int]) -> GenResult | list[tuple[int, GenResult]]:
            async with room:
                if len(g) > 1:
                    return await self._group([(i, batch[i]) for i in g], on_done)
                return await self._one(batch[g[0]], g[0], on_done)

        tasks = [asyncio.ensure_future(in_window(g)) for g in groups]
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        failed = [t for t in done if t.exception() is not None]
        if failed:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            raise failed[0].exception()  # type: ignore[misc]
        results: list[GenResult] = [GenResult("", "error")] * len(batch)
        for group, task in zip(groups, tasks, strict=True):
            answer = task.result()
            for index, result in (answer if isinstance(answer, list) else [(group[0], answer)]):
                results[index] = result
        return results

    def _groups(self, batch: list[PreparedRequest]) -> list[list[int]]:
        """Indices sent together: label requests with the same model, labels and sampling, up to
        ``batch_prompts`` a group, when they can go as token ids to vLLM; every other request alone.
        """
        size = self.options.batch_prompts
        if size <= 1 or self.mode != "vllm" or not self.renderer.has_tokenizer:
            return [[i] for i in range(len(batch))]
        groups: list[list[int]] = []
        open_groups: dict[tuple[Any, ...], list[int]] = {}
        for i, prepared in enumerate(batch):
            key = _batch_key(prepared)
            if key is None:
                groups.append([i])
                continue
            group = open_groups.get(key)
            if group is None or len(group) >= size:
                group = open_groups[key] = []
                groups.append(group)
            group.append(i)
        return groups

    async def _group(self, members: list[tuple[int, PreparedRequest]],
                     on_done: Callable[[Finished], None] | None) -> list[tuple[int, GenResult]]:
        """Label requests as one ``/completions`` request; their results to ``on_done`` together.

        vLLM refuses the whole list for one bad prompt (too long, say): then each is asked alone,
        so the bad one gets its own invalid result and the others their answers.
        """
        started = time.perf_counter()
        first = members[0][1]
        await self._ensure_ids([p for _, p in members])
        try:
            body = await self._post("/completions", self._group_payload([p for _, p in members]))
        except _FinalError as exc:
            log.info("a batch of %d label requests was refused (%s); asking each alone", len(members), exc)
            return await self._each_alone(members, on_done)
        choices = {c.get("index"): c for c in body.get("choices") or [] if isinstance(c, dict)}
        if set(choices) != set(range(len(members))):
            log.warning("%s answered %d choices for %d prompts; asking each alone", self.model.name,
                        len(choices), len(members))
            return await self._each_alone(members, on_done)
        labels = first.request.constraint.labels  # type: ignore[union-attr]
        out = []
        for k, (index, prepared) in enumerate(members):
            choice = choices[k]
            content = content_of_completion(choice.get("logprobs") or {})
            result = self._parsed(prepared, str(choice.get("text") or ""), choice.get("finish_reason"),
                                  len(prepared.prompt_ids), len(content))
            result.label_probs = await self._label_probs(prepared, labels, content)
            result.latency_ms = (time.perf_counter() - started) * 1000
            out.append((index, result))
        if on_done is not None:
            on_done(out)
        return out

    async def _each_alone(self, members: list[tuple[int, PreparedRequest]],
                          on_done: Callable[[Finished], None] | None) -> list[tuple[int, GenResult]]:
        results = await asyncio.gather(*(self._one(p, i, on_done) for i, p in members))
        return [(i, r) for (i, _), r in zip(members, results, strict=True)]

    def _group_payload(self, group: list[PreparedRequest]) -> dict[str, Any]:
        request, sampling = group[0].request, group[0].sampling
        labels = request.constraint.labels  # type: ignore[union-attr]
        body: dict[str, Any] = {
            "model": request.lora or self.model.served_model, "prompt": [list(p.prompt_ids) for p in group],
            "max_tokens": max(1, min(sampling.max_tokens, max_label_tokens(labels))),
            "temperature": sampling.temperature, "top_p": sampling.top_p, "logprobs": self.options.top_logprobs,
            "return_tokens_as_token_ids": True, "structured_outputs": {"choice": list(labels)}}
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        return body

    async def _start(self) -> None:
        """Create the client once; ask each endpoint what it serves until one answers."""
        if self._client is None:
            import httpx

            total = sum(e.limit for e in self.endpoints)
            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.options.timeout_s, connect=self.options.connect_timeout_s),
                limits=httpx.Limits(max_connections=total + len(self.endpoints),
                                    max_keepalive_connections=total))
            assert self._loop is not None
            self._loop.client = self._client
            self._dispatch = Dispatcher(self.endpoints, backoff_s=self.options.backoff_s,
                                        backoff_max_s=self.options.backoff_max_s)
        if not self._probed:
            served = await asyncio.gather(*(self._probe(e) for e in self.endpoints))
            self._check_served(served)

    async def _probe(self, endpoint: Endpoint) -> _Served | None:
        try:
            response = await self._client.get(f"{endpoint.url}/models", headers=self._headers,
                                              timeout=self.options.connect_timeout_s)
            body = response.json()
        except Exception as exc:  # unreachable now: the requests' retries decide what happens
            log.info("%s/models did not answer (%s); requests will retry", endpoint.url, exc)
            return None
        if response.status_code in CONFIG_STATUSES:
            raise UxlocalError(f"{endpoint.url}/models answered HTTP {response.status_code}: "
                               f"{self._scrub(_error_message(body))} (check the URL and "
                               f"{self.options.api_key_env})")
        entries = body.get("data", []) if isinstance(body, dict) else []
        names = [str(m.get("id")) for m in entries if isinstance(m, dict)]
        served = self.model.served_model
        mine = next((m for m in entries if isinstance(m, dict) and m.get("id") == served), None)
        if mine is None:
            return _Served(names=names)
        length = mine.get("max_model_len")
        return _Served(mine.get("owned_by"), int(length) if isinstance(length, int) else None, names)

    def _check_served(self, served: list[_Served | None]) -> None:
        answered = [(e, s) for e, s in zip(self.endpoints, served, strict=True) if s is not None]
        for endpoint, info in answered:
            if self.model.served_model not in info.names:
                raise UxlocalError(f"{endpoint.url} serves {info.names}, not {self.model.served_model!r} "
                                   "(fix the name after # in --model, or the preset's served_model)")
        if not answered:
            return
        self._probed = True
        first = answered[0][1]
        if self.dialect is None:
            self.dialect = "vllm" if (first.owned_by or "").lower() == "vllm" else "response_format"
        windows = [s.max_model_len for _, s in answered if s.max_model_len]
        if windows and not self.max_model_len:
            self.max_model_len = min(windows)
        log.info("model %s: %d endpoint(s), constraints via %s", self.model.name, len(self.endpoints),
                 self.dialect)

    async def _ensure_ids(self, group: list[PreparedRequest]) -> None:
        """Token ids for the group's requests that came without them (``MessagesRenderer.ids_in_engine``).

        One ``token_ids`` call per group on a worker thread: the event loop keeps serving other
        groups' answers meanwhile, and the Rust tokenizer holds no GIL, so it overlaps the
        scheduler's Python work too. The ids are those ``render`` gives (a test checks).
        """
        if not self.renderer.has_tokenizer:
            return
        missing = [p for p in group if not p.prompt_ids]
        if not missing:
            return
        if self._tokenize is None:
            self._tokenize = ThreadPoolExecutor(max_workers=2, thread_name_prefix="uxlocal-tokenize")
        chats = [list(p.request.messages) for p in missing]
        ids = await asyncio.get_running_loop().run_in_executor(self._tokenize, self.renderer.token_ids, chats)
        for prepared, prompt_ids in zip(missing, ids, strict=True):
            prepared.prompt_ids = prompt_ids

    # ---- one request ------------------------------------------------------------------------
    async def _one(self, prepared: PreparedRequest, index: int = 0,
                   on_done: Callable[[Finished], None] | None = None) -> GenResult:
        """One request to its final result (label walk included); ``on_done`` hears of it at once."""
        result = await self._request(prepared)
        if on_done is not None:
            on_done([(index, result)])
        return result

    async def _request(self, prepared: PreparedRequest) -> GenResult:
        started = time.perf_counter()
        await self._ensure_ids([prepared])
        payload = self._payload(prepared)
        try:
            body = await self._post("/chat/completions", payload)
        except _FinalError as exc:
            return self._final_error(prepared, exc)
        result = self._result(prepared, body)
        constraint = prepared.request.constraint
        if isinstance(constraint, Choice):
            content = ((body.get("choices") or [{}])[0].get("logprobs") or {}).get("content") or []
            result.label_probs = await self._label_probs(prepared, constraint.labels, content)
        result.latency_ms = (time.perf_counter() - started) * 1000
        return result

    def _payload(self, prepared: PreparedRequest) -> dict[str, Any]:
        request, sampling = prepared.request, prepared.sampling
        body: dict[str, Any] = {
            "model": request.lora or self.model.served_model,
            "messages": [dict(m) for m in request.messages],
            "max_tokens": sampling.max_tokens, "temperature": sampling.temperature, "top_p": sampling.top_p,
        }
        if sampling.temperature > 0 and prepared.seed is not None:
            body["seed"] = prepared.seed
        if sampling.stop:
            body["stop"] = list(sampling.stop)
        if request.tools:
            body["tools"] = [dict(tool) for tool in request.tools]
        if request.tool_choice is not None:
            body["tool_choice"] = request.tool_choice
        if sampling.logprobs:
            body.update(logprobs=True, top_logprobs=sampling.logprobs)
        constraint = request.constraint
        if constraint is None:
            return body
        if isinstance(constraint, Choice):
            quote = 0 if self.mode == "vllm" else 2
            body["max_tokens"] = max(1, min(sampling.max_tokens, max_label_tokens(constraint.labels) + quote))
            body.update(logprobs=True, top_logprobs=self.options.top_logprobs)
            if self.mode == "vllm" and self.renderer.has_tokenizer:
                body["return_tokens_as_token_ids"] = True
        body.update(self._constraint_fields(constraint))
        return body

    def _constraint_fields(self, constraint: Any) -> dict[str, Any]:
        if self.mode == "vllm":
            if isinstance(constraint, Choice):
                return {"structured_outputs": {"choice": list(constraint.labels)}}
            if isinstance(constraint, JsonSchema):
                return {"structured_outputs": {"json": constraint.schema}}
            return {"structured_outputs": {"regex": constraint.pattern}}
        if isinstance(constraint, Choice):
            schema: dict[str, Any] = {"type": "string", "enum": list(constraint.labels)}
        elif isinstance(constraint, JsonSchema):
            schema = constraint.schema
        else:
            return {}  # no portable regex constraint: generate freely, the parser judges
        return {"response_format": {"type": "json_schema",
                                    "json_schema": {"name": "output", "schema": schema}}}

    def _result(self, prepared: PreparedRequest, body: dict[str, Any]) -> GenResult:
        choices = body.get("choices") or []
        choice = choices[0] if choices and isinstance(choices[0], dict) else {}
        text = str((choice.get("message") or {}).get("content") or "")
        if isinstance(prepared.request.constraint, Choice) and self.mode == "response_format":
            text = _unquote(text)
        usage = body.get("usage") or {}
        result = self._parsed(prepared, text, choice.get("finish_reason"),
                              int(usage.get("prompt_tokens") or len(prepared.prompt_ids)),
                              int(usage.get("completion_tokens") or 0))
        calls = (choice.get("message") or {}).get("tool_calls")
        if calls:
            result.tool_calls = [_tool_call(call) for call in calls]
        if prepared.sampling.logprobs:
            content = (choice.get("logprobs") or {}).get("content") or []
            result.top_logprobs = [[(str(alt.get("token", "")), float(alt.get("logprob", float("-inf"))))
                                    for alt in position.get("top_logprobs") or []] for position in content]
        return result

    @staticmethod
    def _parsed(prepared: PreparedRequest, text: str, finish_reason: Any, prompt_tokens: int,
                completion_tokens: int) -> GenResult:
        """The result of one answer's text (chat or completions), parsed against its constraint."""
        finish = {"stop": "stop", "length": "length", "tool_calls": "stop", None: "stop"}.get(finish_reason, "error")
        parsed = parse_output(prepared.request.constraint, text, finish)
        return GenResult(text, finish, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                         valid=parsed.valid, parsed=parsed.value, error=parsed.error)

    def _final_error(self, prepared: PreparedRequest, exc: _FinalError) -> GenResult:
        if exc.status in CONFIG_STATUSES:
            raise UxlocalError(f"model {self.model.name}: {exc} (check the served model name "
                               f"{self.model.served_model!r}, the URL and "
                               f"{self.options.api_key_env})") from None
        if _CONTEXT_ERROR.search(exc.message):
            return GenResult("", "context_window", prompt_tokens=len(prepared.prompt_ids), valid=False,
                             error=f"prompt exceeds the server's context window: {exc.message[:300]}")
        return GenResult("", "error", prompt_tokens=len(prepared.prompt_ids), valid=False,
                         error=str(exc)[:500])

    def _scrub(self, text: str) -> str:
        """Server text with our key taken out (a proxy may echo the headers it rejected)."""
        return text.replace(self._key, KEY_REDACTED) if self._key else text

    # ---- transport --------------------------------------------------------------------------
    async def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST to the least-loaded endpoint, retrying what can succeed later (see module docstring)."""
        import httpx

        assert self._dispatch is not None
        last = ""
        for attempt in range(self.options.max_retries + 1):
            endpoint = await self._dispatch.acquire()
            started = time.monotonic()
            try:
                response = await self._client.post(endpoint.url + path, content=msgspec.json.encode(payload),
                                                   headers=self._headers)
            except httpx.TransportError as exc:  # refused, reset, timed out, died mid-answer
                await self._dispatch.release(endpoint, started=started, unreachable=True)
                last = f"{type(exc).__name__}: {str(exc) or 'no detail'} ({endpoint.url})"
                continue
            await self._dispatch.release(endpoint, started=started)
            status = response.status_code
            if status < 400:
                try:
                    return dict(msgspec.json.decode(response.content))
                except (ValueError, TypeError, msgspec.DecodeError):
                    last = f"HTTP {status} with a body that is not JSON ({endpoint.url})"
            else:
                message = self._scrub(_error_message(_json_or_text(response)))
                if status < 500 and status not in self.options.retry_statuses:
                    raise _FinalError(status, message, endpoint.url)
                last = f"HTTP {status}: {message[:200]} ({endpoint.url})"
            endpoint.failed += 1
            if attempt < self.options.max_retries:
                await asyncio.sleep(backoff_delay(attempt + 1, self.options.backoff_s,
                                                  self.options.backoff_max_s))
        raise EndpointError(
            f"model {self.model.name}: a request failed {self.options.max_retries + 1} times on "
            f"{len(self.endpoints)} endpoint(s); last error: {last}. Finished episodes are saved in the "
            "store: when the server is back, run the same command again to resume.")

    # ---- label probabilities ----------------------------------------------------------------
    async def _label_probs(self, prepared: PreparedRequest, labels: tuple[str, ...],
                           content: list[dict[str, Any]]) -> dict[str, float] | None:
        """Label distribution from the per-position alternatives (``labelprobs.walk_alternatives``)."""
        quote = '"' if self.mode == "response_format" else ""

        async def read_next(node: TrieNode) -> dict[int, float] | None:
            return await self._next_token(prepared, node)

        probs = await walk_alternatives(tuple(quote + label for label in labels), content, self.renderer,
                                        masked=self.mode == "vllm",  # vLLM's logprobs come after the grammar mask
                                        read_next=read_next)
        return None if probs is None else {label: probs[quote + label] for label in labels}

    async def _next_token(self, prepared: PreparedRequest, node: TrieNode) -> dict[int, float] | None:
        """Unconstrained next-token alternatives after the prompt plus ``node``'s tokens (vLLM only)."""
        if self.mode != "vllm" or not prepared.prompt_ids:
            return None
        payload = {"model": prepared.request.lora or self.model.served_model, "max_tokens": 1,
                   "temperature": 0.0,
                   "prompt": list(prepared.prompt_ids) + list(node.prefix_ids),
                   "logprobs": self.options.top_logprobs, "return_tokens_as_token_ids": True}
        try:
            body = await self._post("/completions", payload)
        except _FinalError as exc:
            log.info("off-path label expansion refused (%s); using the proportional estimate", exc)
            return None
        logprobs = (body.get("choices") or [{}])[0].get("logprobs") or {}
        return dist_of_token_ids((logprobs.get("top_logprobs") or [None])[0] or {})


def _tool_call(call: dict[str, Any]) -> dict[str, Any]:
    """Return a server's tool call in our shape (``GenResult.tool_calls``): id, type, name, arguments text."""
    function = call.get("function") or {}
    return {"id": str(call.get("id") or ""), "type": "function",
            "function": {"name": str(function.get("name") or ""), "arguments": str(function.get("arguments") or "")}}


def _batch_key(prepared: PreparedRequest) -> tuple[Any, ...] | None:
    """What label requests must share to go in one ``/completions`` request; None: send it alone
    (not a label request, or a sampled one with its own seed). Token ids come later
    (``HttpEngine._ensure_ids``); ``_groups`` asks only when the renderer has a tokenizer.
    """
    request, sampling = prepared.request, prepared.sampling
    if not isinstance(request.constraint, Choice):
        return None
    if sampling.temperature > 0 and prepared.seed is not None:
        return None
    return (request.lora, request.constraint.labels, sampling.max_tokens, sampling.temperature, sampling.top_p,
            tuple(sampling.stop or ()))


def _unquote(text: str) -> str:
    """A JSON string (``"good"``) as its value; anything else unchanged."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if isinstance(value, str) else text


def _json_or_text(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def _error_message(body: Any) -> str:
    """The human part of an error body: OpenAI ``{"error": {"message"}}``, FastAPI ``detail``, text."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        for key in ("message", "detail", "error"):
            if body.get(key):
                return str(body[key])
    return str(body)[:500]
