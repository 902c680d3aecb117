"""Streaming results vs one ``LLM.generate`` call: the same batch on the same engine, alternating.

    .venv/bin/python benchmarks/streaming_overhead.py [--requests 32] [--max-tokens 32] [--rounds 4]

Arm A is ``VllmEngine.generate(batch, sink=...)``: our step loop over one ``LLM.enqueue``, every
result handed to a sink that commits a DuckDB store when ``flush_every_s`` has passed (as the
scheduler does). Arm B is vLLM's own ``LLM.generate`` on the same inputs (what the engine did
before streaming). The arms alternate for ``--rounds`` rounds with the prefix cache reset before
each, so load drift on a shared machine hits both; the ratio of their summed times is printed
last (goal: within 5 %).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, report, wait_quiet  # noqa: E402

from uxlocal.engine.base import GenRequest, GenResult, PreparedRequest, Sampling, request_hash  # noqa: E402
from uxlocal.engine.pool import ModelPool  # noqa: E402
from uxlocal.grammar import Choice  # noqa: E402
from uxlocal.models import resolve  # noqa: E402
from uxlocal.rollout import Scheduler  # noqa: E402
from uxlocal.store.db import connect  # noqa: E402
from uxlocal.store.writer import StoreWriter  # noqa: E402


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


def streamed(engine: Any, scheduler: Scheduler, prepared: list[PreparedRequest]) -> float:
    """Seconds for arm A; results go through the scheduler's own sink (cache + store + timed commit)."""
    from uxlocal.rollout import _SaveAsFinished

    scheduler._saved.clear()
    slot = scheduler.pool.slot("judge")
    started = time.perf_counter()
    results: list[GenResult] = engine.generate(prepared, sink=_SaveAsFinished(scheduler, slot, prepared))
    assert len(results) == len(prepared)
    return time.perf_counter() - started


def plain(engine: Any, prepared: list[PreparedRequest]) -> float:
    """Seconds for arm B: one ``LLM.generate`` of the same inputs."""
    inputs = [engine._vllm_inputs(p) for p in prepared]
    started = time.perf_counter()
    outputs = engine.llm.generate([i[0] for i in inputs], [i[1] for i in inputs], use_tqdm=False)
    assert len(outputs) == len(prepared)
    return time.perf_counter() - started


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=32)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args()
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
    for _ in range(args.rounds):
        engine.llm.reset_prefix_cache()
        a.append(streamed(engine, scheduler, prepared))
        engine.llm.reset_prefix_cache()
        b.append(plain(engine, prepared))
    scheduler.writer.close()  # type: ignore[union-attr]
    pool.close()
    report("streaming results (step loop + sink + store) vs one LLM.generate",
           {"model": args.model, "requests": args.requests, "max_tokens (free half)": args.max_tokens,
            "rounds (alternating)": args.rounds, "load before timing": f"{load:.2f}"},
           [("streamed total (s)", sum(a)), ("LLM.generate total (s)", sum(b)),
            ("streamed per round (s)", " ".join(f"{x:.2f}" for x in a)),
            ("LLM.generate per round (s)", " ".join(f"{x:.2f}" for x in b)),
            ("streamed / LLM.generate time", sum(a) / sum(b))], args.json_out)


if __name__ == "__main__":
    main()
