"""Which ids an input file has used so far, and on which line: 24 bytes per id instead of a dict.

A judge input of a million rows is streamed a chunk at a time, and an id may not repeat anywhere in
it. A dict of every id and its line cost ~100 bytes per row (~100 MB at a million, the largest thing
a million-row job held). ``SeenIds`` keeps each id as a 128-bit BLAKE2b digest — the first half
sorted as the search key, the second half to confirm a match — with the line it was first used on,
in sorted levels merged as they grow (like an LSM tree) up to ``MAX_LEVEL`` ids, and looks up a
whole chunk at once.

Two different ids would have to share all 128 bits to be taken for a repeat (about one chance in
10^27 for a million ids), so the answer is treated as exact.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

MERGE_RATIO = 4
"""A level is merged into the one before it once that one is at most this many times its size."""

MAX_LEVEL = 1 << 18
"""Ids in the largest level: a merge copies at most this many (6 MB), however long the input."""


def digests(ids: Sequence[str]) -> np.ndarray:
    """Each id's 128-bit BLAKE2b digest as two uint64 columns (search key, check)."""
    joined = b"".join(
        hashlib.blake2b(i.encode("utf-8", "surrogatepass"), digest_size=16).digest() for i in ids
    )
    return np.frombuffer(joined, dtype=np.uint64).reshape(-1, 2)


class _Level:
    """Digests and lines sorted by search key."""

    def __init__(self, keys: np.ndarray, checks: np.ndarray, lines: np.ndarray) -> None:
        order = np.argsort(keys, kind="stable")
        self.keys, self.checks, self.lines = keys[order], checks[order], lines[order]

    def __len__(self) -> int:
        return len(self.keys)

    def first_lines(self, keys: np.ndarray, checks: np.ndarray, found: np.ndarray) -> None:
        """Fill ``found`` (-1 where unknown) with the line of each digest held in this level."""
        at = np.searchsorted(self.keys, keys)
        inside = at < len(self.keys)
        hit = np.zeros(len(keys), dtype=bool)
        hit[inside] = self.keys[at[inside]] == keys[inside]
        for i in np.flatnonzero(hit & (found < 0)):  # only repeats (and 64-bit key collisions) get here
            j = int(at[i])
            while j < len(self.keys) and self.keys[j] == keys[i]:
                if self.checks[j] == checks[i]:
                    found[i] = self.lines[j]
                    break
                j += 1


class SeenIds:
    """The ids of the rows read so far, each with the line it was first used on."""

    def __init__(self) -> None:
        self._levels: list[_Level] = []

    def __len__(self) -> int:
        return sum(len(level) for level in self._levels)

    def first_lines(self, digested: np.ndarray) -> np.ndarray:
        """Return the line each digest (from ``digests``) was added with, -1 for one not seen."""
        found = np.full(len(digested), -1, dtype=np.int64)
        keys, checks = digested[:, 0], digested[:, 1]
        for level in reversed(self._levels):  # the first line an id was used on is all any level holds
            level.first_lines(keys, checks, found)
        return found

    def add(self, digested: np.ndarray, lines: Sequence[int] | np.ndarray) -> None:
        """Record ids (as digests, all new) first used on ``lines``."""
        if not len(digested):
            return
        self._levels.append(
            _Level(digested[:, 0].copy(), digested[:, 1].copy(), np.asarray(lines, dtype=np.int64))
        )
        while (len(self._levels) > 1 and len(self._levels[-2]) <= MERGE_RATIO * len(self._levels[-1])
               and len(self._levels[-2]) + len(self._levels[-1]) <= MAX_LEVEL):
            newer, older = self._levels.pop(), self._levels.pop()
            self._levels.append(_Level(np.concatenate([older.keys, newer.keys]),
                                       np.concatenate([older.checks, newer.checks]),
                                       np.concatenate([older.lines, newer.lines])))
