"""The OpenAI-compatible transport: endpoints, least-loaded dispatch, retries, the loop thread, the key.

Everything here is the same for every server dialect (``http_dialects.py`` holds what differs):
a model is one or more endpoints serving the same weights; each POST goes to the least-loaded
healthy one and is retried under the shared ``RetryPolicy`` (``retry.py``); the client lives on
an event loop of its own thread (``LoopThread``) so connections outlive a scheduler tick. The API
key is read from the environment, lives only in the request headers, and is scrubbed from any
server text before it can become a stored error (stores get shared).
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
import urllib.request
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

import msgspec

from uxlocal import settings
from uxlocal.engine.base import GenResult, ResultSink
from uxlocal.engine.http_wire import WireClient, WireError
from uxlocal.engine.retry import RetryPolicy
from uxlocal.errors import UxlocalError

log = logging.getLogger(__name__)
T = TypeVar("T")
Finished = list[tuple[int, GenResult]]
"""Results handed from the event loop to the calling thread at once: (index in the batch, result)."""

CONFIG_STATUSES = frozenset({401, 403, 404})
"""Answers that no retry or other request can fix: wrong key, wrong model name, wrong URL."""
DEFAULT_API_KEY_ENV = "UXLOCAL_API_KEY"
KEY_REDACTED = "[API key]"


def bearer_headers(api_key_env: str = DEFAULT_API_KEY_ENV) -> dict[str, str]:
    """Return ``authorization`` for a server that requires a key; empty when ``$api_key_env`` is unset."""
    key = settings.secret(api_key_env)
    return {"authorization": f"Bearer {key}"} if key else {}


class EndpointError(UxlocalError):
    """Endpoints that stay unreachable (or keep failing) after every retry; the run can resume later."""


class FinalError(Exception):
    """A 4xx answer that retrying cannot change."""

    def __init__(self, status: int, message: str, url: str) -> None:
        super().__init__(f"HTTP {status} from {url}: {message}")
        self.status = status
        self.message = message


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


@dataclass
class Served:
    """What an endpoint's ``/models`` says about our model."""

    owned_by: str | None = None
    max_model_len: int | None = None
    names: list[str] = field(default_factory=list)


class Dispatcher:
    """Least-loaded choice among healthy endpoints, with a per-endpoint concurrency limit.

    Used from one event loop. A request waits when every healthy endpoint is full, or while every
    endpoint is benched. A failed attempt benches its endpoint for the policy's delay, but only
    the first failure after a bench counts: requests that were already in flight when the server
    died must not each double the delay.

    A released slot wakes one waiter, which passes the wake-up on while room is left: waking every
    waiter at each release cost O(waiters) per request, thousands of times a tick with a window of
    lone chat requests. A change of bench wakes them all.
    """

    def __init__(self, endpoints: list[Endpoint], policy: RetryPolicy) -> None:
        self.endpoints = endpoints
        self.policy = policy
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
            if unreachable:
                self._bench(endpoint, started)
                self._cond.notify_all()
                return
            endpoint.failures_in_a_row = 0
            self._cond.notify(1)

    def _bench(self, endpoint: Endpoint, started: float) -> None:
        now = time.monotonic()
        endpoint.failed += 1
        if started >= endpoint.marked_at:
            endpoint.failures_in_a_row += 1
            endpoint.marked_at = now
            endpoint.down_until = now + self.policy.delay(endpoint.failures_in_a_row)


class LoopThread:
    """An event loop on a daemon thread, and the HTTP client that lives on it.

    Keeps connections alive across scheduler ticks and works when the caller's thread already runs
    a loop (notebooks). Closed by ``HttpEngine.close`` (the runner closes its pools) or, failing
    that, when the engine is garbage-collected.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.client: Any = None
        self.thread = threading.Thread(target=self.loop.run_forever, name="uxlocal-http", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for its value (a failure or Ctrl-C cancels it)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # Ctrl-C or a failure: stop what is still in flight
            raise

    def run_streaming(self, coro: Coroutine[Any, Any, T], finished: "queue.SimpleQueue[Finished | None]",
                      sink: ResultSink, beat_s: float = 0.5,
                      handed: Callable[[int], None] | None = None) -> T:
        """Like ``run``, handing what the coroutine puts in ``finished`` to ``sink`` on this thread.

        Results come a list at a time: a group's prompts cross threads in one handover; after
        each, ``handed`` hears how many (a following call asks the sink for more there).

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
                if handed is not None:
                    handed(len(ready))
            return future.result()
        except BaseException:
            future.cancel()  # Ctrl-C, a failed request or a failed sink: stop what is still in flight
            raise

    def close(self) -> None:
        """Close the client's connections and stop the thread."""
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


@dataclass(frozen=True)
class TransportOptions:
    """What the transport needs of ``HttpOptions`` (same names, same meanings)."""

    max_concurrency: int
    timeout_s: float
    connect_timeout_s: float
    api_key_env: str
    policy: RetryPolicy


class OpenAITransport:
    """POSTs and ``/models`` probes for one model's endpoints, on the loop thread's client."""

    def __init__(self, model_name: str, urls: list[str], options: TransportOptions) -> None:
        self.model_name = model_name
        self.options = options
        self.endpoints = [Endpoint(url, options.max_concurrency) for url in urls]
        self.headers = {"content-type": "application/json", **bearer_headers(options.api_key_env)}
        self._key = settings.secret(options.api_key_env)
        self.client: Any = None
        self.errors: tuple[type[Exception], ...] = (WireError,)
        """What the client raises when the exchange fails below HTTP (retried)."""
        self.dispatch: Dispatcher | None = None

    def start(self, loop: LoopThread) -> None:
        """Create the client once (``http_wire``; httpx behind a proxy); the loop thread closes it."""
        if self.client is not None:
            return
        if any(urllib.request.getproxies().get(scheme) for scheme in ("http", "https", "all")):
            self.client, self.errors = _proxied_client(self.options, self.endpoints)
        else:
            self.client = WireClient(timeout_s=self.options.timeout_s,
                                     connect_timeout_s=self.options.connect_timeout_s)
        loop.client = self.client
        self.dispatch = Dispatcher(self.endpoints, self.options.policy)

    def forget(self) -> None:
        """Drop the client (its loop thread was closed): the next ``start`` makes a new one."""
        self.client, self.dispatch = None, None

    def scrub(self, text: str) -> str:
        """Server text with our key taken out (a proxy may echo the headers it rejected)."""
        return text.replace(self._key, KEY_REDACTED) if self._key else text

    async def probe(self, endpoint: Endpoint, served_model: str) -> Served | None:
        """Return what ``endpoint``'s ``/models`` says of ``served_model``; None when it does not answer."""
        try:
            response = await self.client.get(f"{endpoint.url}/models", headers=self.headers,
                                             timeout=self.options.connect_timeout_s)
            body = response.json()
        except Exception as exc:  # unreachable now: the requests' retries decide what happens
            log.info("%s/models did not answer (%s); requests will retry", endpoint.url, exc)
            return None
        if response.status_code in CONFIG_STATUSES:
            raise UxlocalError(f"{endpoint.url}/models answered HTTP {response.status_code}: "
                               f"{self.scrub(error_message(body))} (check the URL and "
                               f"{self.options.api_key_env})")
        entries = body.get("data", []) if isinstance(body, dict) else []
        names = [str(m.get("id")) for m in entries if isinstance(m, dict)]
        mine = next((m for m in entries if isinstance(m, dict) and m.get("id") == served_model), None)
        if mine is None:
            return Served(names=names)
        length = mine.get("max_model_len")
        return Served(mine.get("owned_by"), int(length) if isinstance(length, int) else None, names)

    async def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """POST to the least-loaded endpoint, retrying what can succeed later (``retry.py``).

        Raises ``FinalError`` for a 4xx that is not retried, ``EndpointError`` when retries run out.
        """
        assert self.dispatch is not None
        policy, content, last = self.options.policy, msgspec.json.encode(payload), ""
        for attempt in range(policy.attempts):
            endpoint = await self.dispatch.acquire()
            started = time.monotonic()
            try:
                response = await self.client.post(endpoint.url + path, content=content, headers=self.headers)
            except self.errors as exc:  # refused, reset, timed out, died mid-answer
                await self.dispatch.release(endpoint, started=started, unreachable=True)
                last = f"{type(exc).__name__}: {str(exc) or 'no detail'} ({endpoint.url})"
                continue
            await self.dispatch.release(endpoint, started=started)
            body, last = self._answer(endpoint, response.status_code, response)
            if body is not None:
                return body
            endpoint.failed += 1
            wait_s = policy.wait_after(attempt)
            if wait_s is not None:
                await asyncio.sleep(wait_s)
        raise EndpointError(
            f"model {self.model_name}: a request failed {policy.attempts} times on "
            f"{len(self.endpoints)} endpoint(s); last error: {last}. Finished episodes are saved in the "
            "store: when the server is back, run the same command again to resume.")

    def _answer(self, endpoint: Endpoint, status: int, response: Any) -> tuple[dict[str, Any] | None, str]:
        """Return the decoded body of a good answer, or why this attempt failed (a final 4xx raises)."""
        if status < 400:
            try:
                return dict(msgspec.json.decode(response.content)), ""
            except (ValueError, TypeError, msgspec.DecodeError):
                return None, f"HTTP {status} with a body that is not JSON ({endpoint.url})"
        message = self.scrub(error_message(_json_or_text(response)))
        if not self.options.policy.retries_status(status):
            raise FinalError(status, message, endpoint.url)
        return None, f"HTTP {status}: {message[:200]} ({endpoint.url})"


def _proxied_client(options: TransportOptions,
                    endpoints: list[Endpoint]) -> tuple[Any, tuple[type[Exception], ...]]:
    """Return an httpx client (it honours ``HTTP(S)_PROXY``) and the errors it raises below HTTP."""
    import httpx

    total = sum(e.limit for e in endpoints)
    client = httpx.AsyncClient(
        timeout=httpx.Timeout(options.timeout_s, connect=options.connect_timeout_s),
        limits=httpx.Limits(max_connections=total + len(endpoints), max_keepalive_connections=total))
    return client, (httpx.TransportError,)


def _json_or_text(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return response.text


def error_message(body: Any) -> str:
    """Return the human part of an error body: OpenAI ``{"error": {"message"}}``, FastAPI ``detail``, text."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        for key in ("message", "detail", "error"):
            if body.get(key):
                return str(body[key])
    return str(body)[:500]
