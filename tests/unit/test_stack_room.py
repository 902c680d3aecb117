"""call_with_stack_room: same results, and a big frame called in a loop no longer maps a chunk per call."""

from __future__ import annotations

import resource
import sys
import types

import pytest

from uxlocal.engine.stack_room import ROOM_SLOTS, call_with_stack_room


def _pair(a: int, b: int = 0) -> tuple[int, int]:
    return a, b


def test_passes_arguments_and_returns_the_result() -> None:
    assert call_with_stack_room(_pair, 3, b=4) == (3, 4)
    assert call_with_stack_room(sorted, [3, 1, 2]) == [1, 2, 3]


def test_exceptions_pass_through() -> None:
    with pytest.raises(ZeroDivisionError):
        call_with_stack_room(lambda: 1 / 0)


def _big_frame() -> int:
    return 1


# 4,096 value-stack slots (32 KiB): larger than CPython's 16 KiB first stack chunk, so every call
# needs a chunk of its own unless its caller's chunk has room
BIG = types.FunctionType(_big_frame.__code__.replace(co_stacksize=4096), globals(), "big")


def _loop(n: int) -> int:
    return sum(BIG() for _ in range(n))


def _minor_faults(fn: object, *args: object) -> int:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    fn(*args)  # type: ignore[operator]
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.skipif(not sys.platform.startswith("linux") or sys.version_info < (3, 11),
                    reason="frame-stack chunks are CPython >= 3.11; page-fault counts are read on Linux")
def test_room_stops_a_chunk_being_mapped_per_call() -> None:
    n = 2000
    bare = _minor_faults(_loop, n)
    roomy = _minor_faults(call_with_stack_room, _loop, n)
    assert bare >= n  # each call mapped (and faulted in) a fresh chunk, then unmapped it
    assert roomy < n / 10  # inside the room the big frame fits the trampoline's chunk
    assert ROOM_SLOTS * 8 >= 4 * 4096 * 8
