"""One rolling openai-http ``generate`` call: the batch, then the follow-ups, under one window.

``HttpCall`` lives on the engine's event loop. It sends the batch's requests (or groups of label
prompts) as tasks that each take places in the window (an ``asyncio.Semaphore``), and a request
that ends lets the next one in. A call that follows up (``HttpEngine.follow_ups``) stays open
after its batch: the calling thread hands it what the scheduler's episodes asked meanwhile
(``add``, from ``ResultSink.more``) and ends it (``close``) once every request it sent is answered
and nothing more is asked. Without that, an episode whose reply was back waited until the call's
slowest request ended before it could ask its next one (a tick in lockstep).

``Followed`` is the calling thread's half: it counts what went in and what came back, asks the
sink for more after each handover, and schedules ``add``/``close`` on the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from uxlocal.engine.base import GenResult, PreparedRequest, ResultSink
from uxlocal.engine.http_dialects import OnDone

Send = Callable[[list[tuple[int, PreparedRequest]]], Awaitable[list[tuple[int, GenResult]]]]
"""Send one task's requests (index in the call, request): a group of label prompts, or one alone."""
UNLIMITED = 1 << 30
"""The window of a call given none: every request at once."""
Group = Callable[[list[PreparedRequest]], list[list[int]]]
"""Split requests into the tasks they go in (indices into the list given)."""


class HttpCall:
    """The loop-side state of one call: every request sent, its tasks, whether more may come."""

    def __init__(self, batch: list[PreparedRequest], send: Send, group: Group, *, places: int,
                 window: int | None, open_: bool) -> None:
        self.batch = list(batch)
        """The call's requests by index: the batch, then each follow-up in the order it came."""
        self.given = len(batch)
        self.send = send
        self.group = group
        """Read when the call runs (the dialect that groups may be learned just before)."""
        self.places = places
        self.window = window
        self.closed = not open_
        self.tasks: list[asyncio.Future[list[tuple[int, GenResult]]]] = []
        self._room: asyncio.Semaphore | None = None
        self._changed: asyncio.Event | None = None

    async def run(self) -> list[GenResult]:
        """Send everything given until the call is closed and answered; the batch's results in order.

        The first task to fail cancels the others and its exception ends the call.
        """
        groups = self.group(self.batch)
        # when label prompts go in groups, every task (a group, or a request sent alone) takes
        # ``places`` places of the window; otherwise each request takes one
        per_task = self.places if len(groups) < len(self.batch) else 1
        self._room = asyncio.Semaphore(max(1, self.window // per_task) if self.window else UNLIMITED)
        self._changed = asyncio.Event()
        self._launch(0, groups)
        while True:
            failed = next((t for t in self.tasks if t.done() and not t.cancelled() and t.exception()), None)
            if failed is not None:
                await self._cancel()
                raise failed.exception()  # type: ignore[misc]
            unfinished = [t for t in self.tasks if not t.done()]
            if not unfinished and self.closed:
                break
            self._changed.clear()
            changed = asyncio.ensure_future(self._changed.wait())
            await asyncio.wait([*unfinished, changed], return_when=asyncio.FIRST_COMPLETED)
            changed.cancel()
        results: list[GenResult] = [GenResult("", "error")] * len(self.batch)
        for task in self.tasks:
            for index, result in task.result():
                results[index] = result
        return results[:self.given]

    def add(self, requests: list[PreparedRequest]) -> None:
        """Send follow-ups (on the loop): their indices count on from the call's last request."""
        first = len(self.batch)
        self.batch.extend(requests)
        self._launch(first, self.group(requests))

    def close(self) -> None:
        """Say nothing more comes (on the loop): the call ends once its tasks have."""
        self.closed = True
        if self._changed is not None:
            self._changed.set()

    def _launch(self, first: int, groups: list[list[int]]) -> None:
        for group in groups:
            members = [(first + i, self.batch[first + i]) for i in group]
            self.tasks.append(asyncio.ensure_future(self._in_window(members)))
        if self._changed is not None:
            self._changed.set()

    async def _in_window(self, members: list[tuple[int, PreparedRequest]]) -> list[tuple[int, GenResult]]:
        assert self._room is not None
        async with self._room:
            return await self.send(members)

    async def _cancel(self) -> None:
        pending = [t for t in self.tasks if not t.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


class Followed:
    """The calling thread's half of a following call: hand over, ask for more, or close.

    ``schedule`` runs a function on the event loop (``loop.call_soon_threadsafe``).
    """

    def __init__(self, call: HttpCall, sink: ResultSink, schedule: Callable[..., object]) -> None:
        self.call = call
        self.sink = sink
        self.schedule = schedule
        self.sent = len(call.batch)
        self.answered = 0
        self.closing = False

    def handed(self, count: int) -> None:
        """After ``count`` results reached the sink: send what episodes asked since, or end the call."""
        self.answered += count
        if self.closing:
            return
        added = self.sink.more()
        if added:
            self.sent += len(added)
            self.schedule(self.call.add, list(added))
        elif self.answered >= self.sent:
            self.closing = True
            self.schedule(self.call.close)


__all__ = ["Followed", "HttpCall", "OnDone"]
