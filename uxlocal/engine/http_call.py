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
import time
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
        self._unfinished = 0
        self._failed: BaseException | None = None
        self._room: asyncio.Semaphore | None = None
        self._over: asyncio.Event | None = None
        """Set when a task failed, or when the call is closed and every task has ended."""

    async def run(self) -> list[GenResult]:
        """Send everything given until the call is closed and answered; the batch's results in order.

        The first task to fail cancels the others and its exception ends the call. Tasks report
        their end themselves (``_ended``): a call of thousands of requests never rescans them.
        """
        groups = self.group(self.batch)
        # when label prompts go in groups, every task (a group, or a request sent alone) takes
        # ``places`` places of the window; otherwise each request takes one
        per_task = self.places if len(groups) < len(self.batch) else 1
        self._room = asyncio.Semaphore(max(1, self.window // per_task) if self.window else UNLIMITED)
        self._over = asyncio.Event()
        self._launch(0, groups)
        try:
            await self._over.wait()
        except asyncio.CancelledError:  # the caller stopped (Ctrl-C, a failed sink): so do the requests
            await self._cancel()
            raise
        if self._failed is not None:
            await self._cancel()
            raise self._failed
        results: list[GenResult] = [GenResult("", "error")] * self.given
        for task in self.tasks:
            for index, result in task.result():
                if index < self.given:
                    results[index] = result
        return results

    def add(self, requests: list[PreparedRequest]) -> None:
        """Send follow-ups (on the loop): their indices count on from the call's last request."""
        first = len(self.batch)
        self.batch.extend(requests)
        self._launch(first, self.group(requests))

    def close(self) -> None:
        """Say nothing more comes (on the loop): the call ends once its tasks have."""
        self.closed = True
        self._check_over()

    def _launch(self, first: int, groups: list[list[int]]) -> None:
        for group in groups:
            members = [(first + i, self.batch[first + i]) for i in group]
            task = asyncio.ensure_future(self._in_window(members))
            self.tasks.append(task)
            self._unfinished += 1
            task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Future[list[tuple[int, GenResult]]]) -> None:
        self._unfinished -= 1
        if self._failed is None and not task.cancelled() and task.exception() is not None:
            self._failed = task.exception()
        self._check_over()

    def _check_over(self) -> None:
        if self._over is not None and (self._failed is not None or (self.closed and not self._unfinished)):
            self._over.set()

    async def _in_window(self, members: list[tuple[int, PreparedRequest]]) -> list[tuple[int, GenResult]]:
        assert self._room is not None
        async with self._room:
            return await self.send(members)

    async def _cancel(self) -> None:
        pending = [t for t in self.tasks if not t.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


ASK_EVERY_S = 0.002
"""While many requests are out, the sink is asked for follow-ups at most this often."""
FEW_SHARE = 8
"""'Few out': at most 1/FEW_SHARE of the window (at least one). Then the sink is asked at every handover."""


class Followed:
    """The calling thread's half of a following call: hand over, ask for more, or close.

    ``schedule`` runs a function on the event loop (``loop.call_soon_threadsafe``). Asking the
    sink admits episodes and prepares their requests, and each handover to the loop wakes it
    through a socket (~30 us of system call and thread switch): a judge run against a fast server
    hands results over one at a time, and asking at each of them (17k wake-ups for 20k verdicts)
    made it 17 % slower. So while many requests are out (more than 1/``FEW_SHARE`` of the
    window) the sink is asked at most every ``ASK_EVERY_S``, and what it gives goes over in one
    handover; with few out (an episode behind a slow reply) it is asked at every handover.
    """

    def __init__(self, call: HttpCall, sink: ResultSink, schedule: Callable[..., object]) -> None:
        self.call = call
        self.sink = sink
        self.schedule = schedule
        self.sent = len(call.batch)
        self.answered = 0
        self.few = max(1, (call.window or 0) // FEW_SHARE)
        self.asked_at = 0.0
        self.closing = False

    def handed(self, count: int) -> None:
        """After ``count`` results reached the sink: send what episodes asked since, or end the call."""
        self.answered += count
        out = self.sent - self.answered
        now = time.perf_counter()
        if self.closing or (out > self.few and now - self.asked_at < ASK_EVERY_S):
            return
        self.asked_at = now
        added = self.sink.more()
        if added:
            self.sent += len(added)
            self.schedule(self.call.add, list(added))
        elif out <= 0:
            self.closing = True
            self.schedule(self.call.close)


__all__ = ["Followed", "HttpCall", "OnDone"]
