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

Send = Callable[[list[tuple[int, PreparedRequest]]], Awaitable[list[tuple[int, GenResult]]]]
"""Send one task's requests (index in the call, request): a group of label prompts, or one alone."""
Group = Callable[[list[PreparedRequest]], list[list[int]]]
"""Split requests into the tasks they go in (indices into the list given)."""
Task = asyncio.Future[list[tuple[int, GenResult]]]
UNLIMITED = 1 << 30
"""The window of a call given none: every request at once."""


class HttpCall:
    """The loop-side state of one call: the batch's tasks, the tasks still out, whether more may come.

    Follow-ups are sent and forgotten: their results reach the caller through the send function's
    ``on_done``, so the call keeps neither their requests nor their results (a call of thousands
    of requests stays flat), only the batch's, which ``run`` returns.
    """

    def __init__(self, batch: list[PreparedRequest], send: Send, group: Group, *, places: int,
                 window: int | None, open_: bool) -> None:
        self.batch = list(batch)
        self.sent = len(batch)
        """Requests sent so far: the next follow-up's index."""
        self.send = send
        self.group = group
        """Read when the call runs (the dialect that groups may be learned just before)."""
        self.places = places
        self.window = window
        self.closed = not open_
        self.batch_tasks: list[Task] = []
        self.out: set[Task] = set()
        self._failed: BaseException | None = None
        self._room: asyncio.Semaphore | None = None
        self._over: asyncio.Event | None = None
        """Set when a task failed, or when the call is closed and no task is out."""

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
        self.batch_tasks = self._launch(self.batch, 0, groups)
        try:
            await self._over.wait()
        except asyncio.CancelledError:  # the caller stopped (Ctrl-C, a failed sink): so do the requests
            await self._cancel()
            raise
        if self._failed is not None:
            await self._cancel()
            raise self._failed
        results: list[GenResult] = [GenResult("", "error")] * len(self.batch)
        for task in self.batch_tasks:
            for index, result in task.result():
                results[index] = result
        return results

    def add(self, requests: list[PreparedRequest]) -> None:
        """Send follow-ups (on the loop): their indices count on from the call's last request."""
        first, self.sent = self.sent, self.sent + len(requests)
        self._launch(requests, first, self.group(requests))

    def close(self) -> None:
        """Say nothing more comes (on the loop): the call ends once its tasks have."""
        self.closed = True
        self._check_over()

    def _launch(self, requests: list[PreparedRequest], first: int, groups: list[list[int]]) -> list[Task]:
        """Start one task per group of ``requests``, whose indices in the call start at ``first``."""
        tasks = [asyncio.ensure_future(self._in_window([(first + i, requests[i]) for i in group]))
                 for group in groups]
        for task in tasks:
            self.out.add(task)
            task.add_done_callback(self._ended)
        return tasks

    def _ended(self, task: Task) -> None:
        self.out.discard(task)
        if self._failed is None and not task.cancelled() and task.exception() is not None:
            self._failed = task.exception()
        self._check_over()

    def _check_over(self) -> None:
        if self._over is not None and (self._failed is not None or (self.closed and not self.out)):
            self._over.set()

    async def _in_window(self, members: list[tuple[int, PreparedRequest]]) -> list[tuple[int, GenResult]]:
        assert self._room is not None
        async with self._room:
            return await self.send(members)

    async def _cancel(self) -> None:
        pending = list(self.out)
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
        self.sent = call.sent
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
            self.schedule(self.call.add, added)
        elif out <= 0:
            self.closing = True
            self.schedule(self.call.close)


__all__ = ["Followed", "Group", "HttpCall", "Send"]
