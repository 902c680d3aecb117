"""Which request hashes the store may already hold: 8 bytes per generation instead of a key index.

The generations table has no key index (migration 003): DuckDB held its ART index of 64-character
hashes in memory, ~120 bytes per generation (120 MB at a million verdicts), and never used it for
the cache's lookups (a semi join scans the table). ``KnownHashes`` keeps the first 16 hex digits
of every stored hash as sorted 64-bit integers (plus a set of the ones added since the last merge).

It answers "may the store hold this hash?": False is certain (the hash is new, so the cache need
not ask the store and the writer may append without a duplicate check); True may be a prefix
collision (one in ~2^64/n) and is checked with SQL. Hashes that are not lowercase hex (the tests'
made-up ones) always answer True.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import numpy as np

PREFIX_DIGITS = 16
_HEX = re.compile(r"[0-9a-f]+")

MERGE_EVERY = 65_536
"""Hashes kept in the Python set before they are merged into the sorted array."""

STORE_PREFIXES_SQL = (
    f"SELECT CAST(('0x' || left(request_hash, {PREFIX_DIGITS})) AS UBIGINT) FROM generations "
    f"WHERE regexp_full_match(left(request_hash, {PREFIX_DIGITS}), '[0-9a-f]+')")
"""The prefixes of the stored hashes, computed the way ``prefix`` computes them in Python."""


def prefix(request_hash: str | None) -> int | None:
    """Return the hash's first 16 hex digits as an integer.

    None when they are not lowercase hex (or there is no hash).
    """
    if not isinstance(request_hash, str):
        return None
    head = request_hash[:PREFIX_DIGITS]
    return int(head, 16) if _HEX.fullmatch(head) else None


class KnownHashes:
    """A compact, exact-negative filter of the hashes in a store's generations table."""

    def __init__(self, prefixes: np.ndarray | None = None) -> None:
        self._sorted = np.sort(np.asarray(prefixes if prefixes is not None else [], dtype=np.uint64))
        self._recent: set[int] = set()

    @classmethod
    def of_store(cls, con: Any) -> "KnownHashes":
        """Return the filter of every generation in the store behind ``con`` (read in Arrow batches)."""
        reader = con.sql(STORE_PREFIXES_SQL).to_arrow_reader(1_000_000)
        parts = [batch.column(0).to_numpy(zero_copy_only=False) for batch in reader if batch.num_rows]
        return cls(np.concatenate(parts) if parts else None)

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent)

    def may_contain(self, request_hash: str) -> bool:
        """Return False only when no stored (or added) hash shares this one's prefix."""
        key = prefix(request_hash)
        if key is None:
            return True
        if key in self._recent:
            return True
        at = int(np.searchsorted(self._sorted, np.uint64(key)))
        return at < len(self._sorted) and int(self._sorted[at]) == key

    def add(self, hashes: Iterable[str | None]) -> None:
        """Record hashes that are (or are about to be) in the store (non-hex ones need no record)."""
        for request_hash in hashes:
            key = prefix(request_hash)
            if key is not None:
                self._recent.add(key)
        if len(self._recent) >= MERGE_EVERY:
            recent = np.fromiter(self._recent, dtype=np.uint64, count=len(self._recent))
            merged = np.concatenate([self._sorted, recent])
            merged.sort()
            self._sorted = merged
            self._recent = set()
