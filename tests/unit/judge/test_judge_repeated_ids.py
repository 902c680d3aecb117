"""Repeated ids in a streamed input: the same errors and quarantine whatever the chunk size."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from uxlocal.errors import InputError
from uxlocal.suites.judge import seen_ids
from uxlocal.suites.judge.inputs import Columns, DistinctIds, iter_loaded
from uxlocal.suites.judge.seen_ids import SeenIds, digests

from .conftest import chat


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def _row(item_id: str) -> str:
    return json.dumps({"id": item_id, "conversation": chat(1)})


def _read(
    path: Path, chunk_rows: int, skip: bool = True
) -> tuple[list[tuple[str, int]], list[tuple[int, str, str]]]:
    items, quarantine = [], []
    for chunk in iter_loaded(str(path), Columns(), skip_bad_rows=skip, chunk_rows=chunk_rows):
        items += [(i.item_id, i.source_line) for i in chunk.items]
        quarantine += [(q.line, q.reason, q.raw) for q in chunk.quarantine]
    return items, quarantine


def _reference(lines: list[str]) -> tuple[list[tuple[str, int]], list[tuple[int, str, str]]]:
    """Return what a whole-file read with a dict of every id gives.

    Ids here are valid; bad rows are '{bad'.
    """
    first: dict[str, int] = {}
    items, quarantine = [], []
    for n, raw in enumerate(lines, start=1):
        if raw == "{bad":
            quarantine.append((n, "invalid JSON", raw))
            continue
        item_id = json.loads(raw)["id"]
        if item_id in first:
            quarantine.append((n, f"id: id {item_id!r} already used at line {first[item_id]}", raw))
        else:
            first[item_id] = n
            items.append((item_id, n))
    return items, quarantine


def test_quarantine_matches_whole_file_read_for_every_chunk_size(tmp_path: Path) -> None:
    rng = random.Random(7)
    lines = ["{bad" if rng.random() < 0.1 else _row(f"id{rng.randrange(25)}") for _ in range(120)]
    path = _write(tmp_path / "r.jsonl", lines)
    expected_items, expected_quarantine = _reference(lines)
    assert len(expected_items) == 25 and len(expected_quarantine) > 80  # many repeats across chunks
    for chunk_rows in (1, 2, 3, 7, 30, 1000):
        items, quarantine = _read(path, chunk_rows)
        assert items == expected_items, chunk_rows
        # the reader's JSON message is longer; compare its start
        assert [(n, raw) for n, _, raw in quarantine] == [(n, raw) for n, _, raw in expected_quarantine], (
            chunk_rows
        )
        assert all(
            got.startswith(want)
            for (_, got, _), (_, want, _) in zip(quarantine, expected_quarantine, strict=True)
        )


def test_repeat_of_an_earlier_chunk_names_both_lines(tmp_path: Path) -> None:
    path = _write(tmp_path / "a.jsonl", [_row("a"), _row("b"), _row("c"), _row("a")])
    with pytest.raises(InputError) as err:
        _read(path, chunk_rows=2, skip=False)
    assert err.value.format_message().startswith(f"{path}:4: id: id 'a' already used at line 1")


def test_first_error_in_file_order_wins_across_the_chunk_check(tmp_path: Path) -> None:
    # line 3 repeats line 1 (an earlier chunk); line 4 is bad JSON; line 5 repeats line 3 within its chunk
    path = _write(tmp_path / "a.jsonl", [_row("a"), _row("b"), _row("a"), "{bad", _row("a")])
    with pytest.raises(InputError) as err:
        _read(path, chunk_rows=2, skip=False)
    assert err.value.format_message().startswith(f"{path}:3: id: id 'a' already used at line 1")
    path = _write(tmp_path / "b.jsonl", [_row("a"), _row("b"), _row("c"), _row("c"), _row("a")])
    with pytest.raises(InputError) as err:
        _read(path, chunk_rows=3, skip=False)
    assert err.value.format_message().startswith(f"{path}:4: id: id 'c' already used at line 3")


@pytest.mark.parametrize("max_level", [1 << 18, 1_000])
def test_seen_ids_finds_first_lines_across_merged_levels(
    monkeypatch: pytest.MonkeyPatch, max_level: int
) -> None:
    monkeypatch.setattr(seen_ids, "MAX_LEVEL", max_level)
    seen = SeenIds()
    for start in range(0, 5_000, 100):  # 50 chunks: levels merge as they grow
        ids = [f"row-{i}" for i in range(start, start + 100)]
        assert (seen.first_lines(digests(ids)) == -1).all()
        seen.add(digests(ids), list(range(start + 1, start + 101)))
    assert len(seen) == 5_000
    sizes = [len(level) for level in seen._levels]
    assert len(sizes) < 10 and max(sizes) <= max_level
    probe = ["row-0", "row-4999", "row-2500", "new", "row-5000"]
    assert seen.first_lines(digests(probe)).tolist() == [1, 5_000, 2_501, -1, -1]


def test_seen_ids_needs_both_halves_of_the_digest_to_match() -> None:
    seen = SeenIds()
    known = np.array([[5, 1], [5, 2], [9, 3]], dtype=np.uint64)  # two ids share a search key
    seen.add(known, [10, 20, 30])
    probe = np.array([[5, 2], [5, 3], [9, 3], [9, 4], [4, 1]], dtype=np.uint64)
    assert seen.first_lines(probe).tolist() == [20, -1, 30, -1, -1]


def test_digests_differ_for_ids_that_differ() -> None:
    ids = ["a", "b", "é", "\ud800", "a" * 1000]
    d = digests(ids)
    assert d.shape == (5, 2) and d.dtype == np.uint64
    assert len({tuple(row) for row in d.tolist()}) == 5
    assert (digests(["a"]) == d[:1]).all()


def _read_with(path: Path, distinct: DistinctIds, chunk_rows: int = 3,
               skip: bool = True) -> tuple[list[tuple[str, int]], list[tuple[int, str, str]]]:
    items, quarantine = [], []
    for chunk in iter_loaded(
        str(path), Columns(), skip_bad_rows=skip, chunk_rows=chunk_rows, distinct=distinct
    ):
        items += [(i.item_id, i.source_line) for i in chunk.items]
        quarantine += [(q.line, q.reason, q.raw) for q in chunk.quarantine]
    return items, quarantine


def _counting_seen_ids(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many SeenIds each read builds (a list to append to)."""
    built: list[int] = []
    real_init = SeenIds.__init__

    def init(self: SeenIds) -> None:
        built.append(1)
        real_init(self)

    monkeypatch.setattr(SeenIds, "__init__", init)
    return built


def test_a_second_read_of_an_unchanged_file_with_distinct_ids_skips_the_check_across_chunks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [_row(f"id{n}") for n in range(10)] + ["{bad", _row("id3x")]
    path = _write(tmp_path / "d.jsonl", lines)
    built, distinct = _counting_seen_ids(monkeypatch), DistinctIds()
    first = _read_with(path, distinct)
    assert distinct.stamp is not None and len(built) == 1
    assert _read_with(path, distinct) == first  # same items and quarantine
    assert first[0] == _reference(lines)[0] and [q[0] for q in first[1]] == [11]
    assert len(built) == 1  # the second read held no SeenIds
    unread = DistinctIds()
    partial = iter_loaded(str(path), Columns(), skip_bad_rows=True, chunk_rows=3, distinct=unread)
    next(partial)
    partial.close()
    assert unread.stamp is None  # a read that stops early records nothing


def test_a_changed_file_or_repeats_across_chunks_keep_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = _counting_seen_ids(monkeypatch)
    path = _write(tmp_path / "d.jsonl", [_row(f"id{n}") for n in range(10)])
    distinct = DistinctIds()
    _read_with(path, distinct)
    lines = [_row(f"id{n}") for n in range(10)] + [_row("id1")]  # now repeats an earlier chunk's id
    _write(path, lines)
    assert _read_with(path, distinct) == _reference(lines)  # the size changed: checked again, and caught
    assert len(built) == 2 and distinct.stamp is None  # and a read that found a repeat records nothing
    assert _read_with(path, distinct) == _reference(lines) and len(built) == 3
    with pytest.raises(InputError, match="already used at line 2"):  # without --skip-bad-rows: still an error
        _read_with(path, distinct, skip=False)
