"""The generation cache on the store's side: request hash -> result, and when rows are committed.

A result is found in this process's memory first, then in the store's ``generations`` table (one
query for the hashes the store may hold: ``KnownHashes`` says "certainly new" for the usual tick
of new requests, which then asks nothing). A fresh result is kept in memory and its generation
row handed to the writer once per hash. The commit policy lives here too: commit at least every
``flush_every_s`` and sooner when the writer is idle (a group commit), and past ``memory_results``
results commit them all and let the store answer for them.

The cache holds results as the scheduler gives them (``T``) and makes them from stored rows with
the ``decode`` it is given, so the store never imports the engine's types.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from uxlocal.store.db import json_value
from uxlocal.store.writer import JSON_COLUMNS, StoreWriter

T = TypeVar("T")

MEMORY_RESULTS = 50_000
"""Results kept in memory before they are committed and forgotten (the store answers for them
after that): a million-verdict job holds at most this many, not all of them."""

COMMIT_GAP_S = 0.25
"""Shortest gap between two early commits (made because the writer was idle): bounds commits to
four a second however fast generations finish."""

GENERATION_COLUMNS = ("request_hash", "text", "finish_reason", "prompt_tokens", "completion_tokens",
                      "latency_ms", "valid", "parsed", "error", "label_probs", "model_identity",
                      "tool_calls", "top_logprobs")
"""What a cached result is rebuilt from (``decode`` receives them by name, JSON decoded)."""


class GenerationCache(Generic[T]):
    """Request hash -> result: this process's results plus the store's ``generations`` table."""

    def __init__(self, writer: StoreWriter | None, decode: Callable[[dict[str, Any]], T], *,
                 flush_every_s: float = 2.0, memory_results: int | None = None) -> None:
        self.writer = writer
        self.decode = decode
        self.flush_every_s = flush_every_s
        """Commit buffered rows at least this often (seconds); 0 commits synchronously each time."""
        self.memory_results = memory_results
        """Results held before they are committed and forgotten; None: ``MEMORY_RESULTS`` as it is then."""
        self.memory: dict[str, T] = {}
        self._saved: set[str] = set()
        """Hashes whose generation row went to the writer (each goes once)."""
        self._last_flush = time.perf_counter()

    def lookup(self, hashes: list[str]) -> dict[str, T]:
        """Return the results we have for ``hashes``: memory first, then one store query."""
        found = {h: self.memory[h] for h in hashes if h in self.memory}
        if self.writer is None:  # no store: the memory is the whole cache
            return found
        missing = [h for h in dict.fromkeys(hashes) if h not in found and self.writer.known.may_contain(h)]
        if missing:
            rows = self.writer.con.execute(
                f"SELECT {', '.join(GENERATION_COLUMNS)} FROM generations "
                "WHERE request_hash IN (SELECT unnest(?)) ORDER BY request_hash", [missing]).fetchall()
            for row in rows:
                values = {name: json_value(value) if name in JSON_COLUMNS else value
                          for name, value in zip(GENERATION_COLUMNS, row, strict=True)}
                result = self.decode(values)
                self.memory[values["request_hash"]] = result
                found[values["request_hash"]] = result
        return found

    def keep(self, request_hash: str, result: T, row: Callable[[], dict[str, Any]]) -> bool:
        """Keep a fresh result and hand its generation row (made now) to the writer; False when kept before."""
        if request_hash in self._saved:
            return False
        self._saved.add(request_hash)
        self.memory[request_hash] = result
        self.add("generations", row())
        return True

    def add(self, table: str, row: dict[str, Any]) -> None:
        """Hand any run row to the writer (nothing without a store)."""
        if self.writer is not None:
            self.writer.add(table, row)

    def start(self) -> None:
        """Start the commit clock (a run begins)."""
        self._last_flush = time.perf_counter()

    def flush_if_due(self) -> None:
        """Commit buffered rows at least every ``flush_every_s``, and sooner when the writer is idle.

        The early commit (a group commit, at most every ``COMMIT_GAP_S``) means a crash usually
        loses well under ``flush_every_s``, while a busy writer still gets bigger, rarer batches.
        The caller never calls this between an episode's last rows and its episode row.
        """
        if self.writer is None:
            return
        waited = time.perf_counter() - self._last_flush
        if waited < self.flush_every_s and not (waited >= COMMIT_GAP_S and self.writer.pending
                                                and self.writer.idle):
            return
        self.writer.flush(wait=self.flush_every_s == 0)
        self._last_flush = time.perf_counter()

    def forget_committed(self) -> None:
        """Past ``memory_results`` results in memory: commit them all, then let the store answer for them.

        Only between ticks (no engine call is running, so no result is half handed over); without a
        store the memory is the only cache and is kept whole.
        """
        limit = MEMORY_RESULTS if self.memory_results is None else self.memory_results
        if self.writer is None or len(self.memory) < limit:
            return
        self.writer.flush(wait=True)
        self._last_flush = time.perf_counter()
        self.memory.clear()
        self._saved.clear()  # a committed hash cannot come back as a miss: the store's cache has it

    def flush(self) -> None:
        """Commit what is buffered (the run's end)."""
        if self.writer is not None:
            self.writer.flush()
