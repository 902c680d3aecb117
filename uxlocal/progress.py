"""Progress of a run: a live bar on a terminal, one plain line every N seconds anywhere else.

A million-row job runs under nohup, in CI or as a cluster job, where a redrawn bar is either lost
or fills the log with carriage returns. Off a terminal the same figures (done/total, rate, time
left) go out as one line every ``UXLOCAL_PROGRESS_EVERY_S`` seconds (default 30) and once at the end.
"""

from __future__ import annotations

import sys
import time
from typing import Any, TextIO

from uxlocal import settings

EVERY_S = 30.0
"""Seconds between two log lines when the output is not a terminal."""


def progress_line(description: str, done: int, total: int | None, elapsed_s: float, requests: int = 0) -> str:
    """``judge: 1,200/10,000 (12.0%)  400.0/s  22s left  1,200 requests`` — what a log line says."""
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    if total:
        share = f"{done:,}/{total:,} ({100 * done / total:.1f}%)"
        left = f"{(total - done) / rate:,.0f}s left" if rate > 0 else "time left unknown"
    else:
        share, left = f"{done:,} done", "total unknown"
    return f"{description}: {share}  {rate:,.1f}/s  {left}  {requests:,} requests  {elapsed_s:,.0f}s elapsed"


def _stream() -> TextIO:
    from uxlocal.quiet import terminal

    return terminal() or sys.stderr


class Progress:
    """A rich bar (done / total, rates, ETA) on a terminal, log lines elsewhere, or nothing when disabled."""

    def __init__(self, enabled: bool, total: int | None, description: str, *, stream: TextIO | None = None,
                 every_s: float | None = None) -> None:
        self.enabled = enabled
        self.total = total
        self.description = description
        self.stream = stream
        self.every_s = _every_s() if every_s is None else every_s
        self._progress: Any = None
        self._task: Any = None
        self._lines = False
        self._last_line = 0.0
        self._figures = (0, 0, 0.0)

    def __enter__(self) -> "Progress":
        if not self.enabled:
            return self
        stream = self.stream or _stream()
        self.stream = stream
        if not stream.isatty():
            self._lines = True
            self._last_line = time.perf_counter()
            return self
        self._start_bar(stream)
        return self

    def _start_bar(self, screen: TextIO) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as Bar

        # draw on the real terminal and leave sys.stdout/sys.stderr alone, so library prints keep
        # going to the log file while libraries are quieted (uxlocal.quiet)
        self._progress = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                             TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("ETA"),
                             TimeRemainingColumn(), transient=False, console=Console(file=screen),
                             redirect_stdout=False, redirect_stderr=False)
        self._progress.start()
        self._task = self._progress.add_task(self.description, total=self.total, rate="")

    def update(self, done: int, requests: int, tokens: int, elapsed: float) -> None:
        """Refresh from the counters: episodes done (or failed), requests and completion tokens so far."""
        self._figures = (done, requests, elapsed)
        if self._lines:
            now = time.perf_counter()
            if now - self._last_line >= self.every_s:
                self._last_line = now
                self._write_line()
            return
        if self._progress is None:
            return
        rate = tokens / elapsed if elapsed > 0 else 0.0
        per_s = requests / elapsed if elapsed > 0 else 0.0  # = verdicts/s on judge runs
        self._progress.update(self._task, completed=done, rate=f"{rate:,.0f} tok/s, {per_s:,.1f} req/s")

    def _write_line(self) -> None:
        done, requests, elapsed = self._figures
        assert self.stream is not None
        self.stream.write(progress_line(self.description, done, self.total, elapsed, requests) + "\n")
        self.stream.flush()

    def __exit__(self, *exc: Any) -> None:
        if self._lines:
            self._write_line()
        if self._progress is not None:
            self._progress.stop()


def _every_s() -> float:
    """Seconds between progress lines off a terminal: ``UXLOCAL_PROGRESS_EVERY_S``, else ``EVERY_S``."""
    asked = settings.current().progress_every_s
    return EVERY_S if asked is None else asked
