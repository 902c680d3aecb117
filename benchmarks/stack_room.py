"""uxlocal's generate with and without stack room, called from many Python call depths, in one run.

    UXLOCAL_CPU_COMPILE=1 .venv/bin/python -m benchmarks.stack_room [--depths 0:200:10] [--requests 32]

``VllmEngine.generate`` runs the engine inside ``call_with_stack_room`` (uxlocal/engine/stack_room.py)
because the compiled CPU forward's speed depended on the caller's depth on CPython's frame stack:
at some depths the hot frames straddle a stack chunk's end and every call maps and unmaps a chunk.
This script calls ``generate`` on the same engine through ``d`` extra Python frames for every
``d`` of ``--depths``, once as shipped (``room``) and once with the trampoline replaced by a plain
call (``bare``), alternating; each call is a fresh batch of ``--requests`` chats (greedy,
``--max-tokens`` each, so prefill is included). Printed per depth: tok/s of both arms, room/bare,
and the minor page faults of each call (a chunk mapped per call shows as thousands); last the
median tok/s of each arm, their ratio and at how many depths room was faster. Run it with the
settings you want to judge (``UXLOCAL_CPU_COMPILE=1`` compiled: the case that needs the room;
eager decode showed no depth effect) from the CLI's environment (the tcmalloc/iomp preload:
``LD_PRELOAD`` as ``uxlocal doctor`` shows it).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks._common import cli_parser, report, wait_quiet
from uxlocal.engine.base import GenRequest, PreparedRequest, Sampling
from uxlocal.engine.resolve import resolve


def _batch(renderer: Any, tag: str, n: int, max_tokens: int) -> list[PreparedRequest]:
    out = []
    for i in range(n):
        text = f"Request {tag}-{i}: a short story about the number {i * 7919 % 1000}."
        messages = [{"role": "user", "content": text}]
        request = GenRequest("agent", messages, Sampling(max_tokens=max_tokens))
        prompt, ids = renderer.render(messages)
        out.append(PreparedRequest(request, prompt, ids, f"{tag}-{i}"))
    return out


def _down(depth: int, fn: Callable[[], Any]) -> Any:
    """``fn()`` called ``depth`` Python frames below here."""
    return fn() if depth == 0 else _down(depth - 1, fn)


def _plain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    return fn(*args, **kwargs)


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``)."""
    p.add_argument("--depths", default="0:200:10",
                   help="start:stop:step of extra caller frames (default 0:200:10)")
    p.add_argument("--requests", type=int, default=32, help="chats per generate call (default 32)")
    p.add_argument("--max-tokens", type=int, default=24, help="tokens per chat (default 24)")


def main(args: argparse.Namespace) -> None:
    """Sweep the depths, both arms per depth, then print the medians and the ratio."""
    import uxlocal.engine.vllm as vllm_engine
    from uxlocal.engine.render import make_renderer

    start, stop, step = (int(x) for x in args.depths.split(":"))
    model = resolve(args.model)
    renderer = make_renderer(model.path)
    engine = vllm_engine.VllmEngine(model, renderer)
    shipped = vllm_engine.call_with_stack_room
    engine.generate(_batch(renderer, "warm", 8, 4))
    load = wait_quiet()
    rows: list[tuple[int, dict[str, tuple[float, int]]]] = []
    try:
        for depth in range(start, stop, step):
            arms: dict[str, tuple[float, int]] = {}
            for name, trampoline in (("bare", _plain), ("room", shipped)):
                vllm_engine.call_with_stack_room = trampoline  # type: ignore[assignment]
                batch = _batch(renderer, f"{name}{depth}", args.requests, args.max_tokens)
                faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                started = time.perf_counter()
                results = _down(depth, lambda b=batch: engine.generate(b))
                seconds = time.perf_counter() - started
                faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
                arms[name] = (sum(r.completion_tokens for r in results) / seconds, faults)
            rows.append((depth, arms))
            print(f"  depth {depth:>4}: bare {arms['bare'][0]:7.0f} tok/s ({arms['bare'][1]:>5} faults)   "
                  f"room {arms['room'][0]:7.0f} tok/s ({arms['room'][1]:>5} faults)   "
                  f"x{arms['room'][0] / arms['bare'][0]:.2f}", flush=True)
    finally:
        vllm_engine.call_with_stack_room = shipped
        engine.close()
    bare = statistics.median(a["bare"][0] for _, a in rows)
    room = statistics.median(a["room"][0] for _, a in rows)
    wins = sum(a["room"][0] > a["bare"][0] for _, a in rows)
    compiled = os.environ.get("UXLOCAL_CPU_COMPILE", "0")
    config = {"model": args.model, "compiled (UXLOCAL_CPU_COMPILE)": compiled,
              "depths": args.depths, "requests x max tokens": f"{args.requests} x {args.max_tokens}",
              "load at start": f"{load:.2f}"}
    report("generate with vs without stack room, across caller depths", config, [
        ("bare: median tok/s over depths", bare), ("room: median tok/s over depths", room),
        ("room / bare (x)", room / bare), ("depths where room was faster", f"{wins} of {len(rows)}"),
    ], args.json_out)


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
