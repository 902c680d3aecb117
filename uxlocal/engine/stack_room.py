"""Run a call with room on CPython's frame stack, so a hot loop never thrashes stack chunks.

Why: CPython (3.11+) keeps Python frames on a per-thread stack made of chunks (16 KiB first).
When a call needs more room than the current chunk has, a new chunk is mmapped, and it is
munmapped as soon as that call returns. A loop whose frames sit right at a chunk's end pays an
mmap, a munmap, a page fault and a TLB-shootdown interrupt to the other cores on EVERY call that
crosses it. vLLM's compiled CPU forward lands there depending on the caller's depth alone:
stepping the engine at batch 32 from one call site made ~3,400 mmap/munmap pairs a second and ran
at ~900 tok/s, the same loop from another call site at ~1,200 (perf showed the munmaps' TLB
shootdown interrupts and the OpenMP barrier waiting on them; ``benchmarks/stack_room.py`` sweeps
caller depths with and without the room).

``call_with_stack_room`` calls ``fn`` from a trampoline whose code object asks for a very large
value stack: CPython then gives that frame a fresh chunk rounded up to a power of two, and
everything ``fn`` calls is pushed into the half of that chunk the trampoline leaves free, far from
any boundary. The large chunk is one mmap per call (not per step), so wrap a whole loop, not each
iteration. Pure Python: no effect on results, only on where frames live.

Layer contract: no imports beyond the standard library, no side effects.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

ROOM_SLOTS = 1 << 16
"""Extra value-stack slots of the trampoline frame (8 bytes each: 512 KiB). Its chunk is rounded up
to 1 MiB, leaving ~512 KiB for the frames of everything it calls; an engine step uses < 100 KiB."""


def _trampoline(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return fn(*args, **kwargs)


_ROOMY = types.FunctionType(
    _trampoline.__code__.replace(co_stacksize=_trampoline.__code__.co_stacksize + ROOM_SLOTS),
    _trampoline.__globals__, "_roomy_trampoline")


def call_with_stack_room(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``, run in a frame-stack chunk with ~512 KiB free after the caller."""
    return _ROOMY(fn, args, kwargs)  # type: ignore[no-any-return]
