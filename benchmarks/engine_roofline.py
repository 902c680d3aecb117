"""The CPU engine against the machine's roof: decode and prefill tokens/s per settings arm, in one run.

    .venv/bin/python benchmarks/engine_roofline.py [--repeat 1] [--arms before,uxlocal,...] [--decode-tokens 24]

Measures the embedded model through uxlocal's own vLLM engine settings (``VllmEngine``):
decode tokens/s at batch 1, 8, 32 and 64 (``--context`` random prompt tokens each, then
``--decode-tokens`` greedy tokens; the prefill step is timed apart) and prefill tokens/s for
512- and 2k-token prompts. Each settings arm runs in its OWN subprocess, because LD_PRELOAD and
the OpenMP variables only act on a fresh process; arms run in rounds (``--repeat N``, order
rotated each round) so a noisy minute on a shared machine hits every arm, and each figure is the
median of its rounds with the range.

The roof is measured in the same run, once per round: memory bandwidth from a large tensor copy
(bytes read + written / s) and the bf16 GEMM peak from a large matmul. Each decode figure is
shown as a fraction of its bandwidth bound (weights + KV cache read per step / bandwidth; the
weights fit this VM's large L3, so a fraction above 1 means the cache, not DRAM, fed it) and
each prefill figure as a fraction of FLOPs / peak. Arms (``--arms``, ``+`` combines changes):

    before     the settings uxlocal used before issue 19 (eager, nobind, 1 GiB KV, no preload)
    uxlocal    uxlocal's current CPU defaults (what the CLI runs: uxlocal/cpu_tuning.py)
    tcmalloc   LD_PRELOAD libtcmalloc_minimal        iomp      LD_PRELOAD Intel OpenMP (libiomp5)
    bind       OpenMP threads pinned to the cores vLLM sees (one per core)
    compile    vLLM's CPU torch.compile instead of enforce_eager (costs a compile at load)
    kv4        VLLM_CPU_KVCACHE_SPACE=4 (GiB)         tokens16k max_num_batched_tokens=16384

Printed: every arm's figures, the roof, the fractions, and each arm's ratio over ``before``,
last the best arm's decode@32 ratio (goal >= 1.5x). The summary is also stored for
``uxlocal doctor`` (``--no-store`` skips that).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import parser, wait_quiet  # noqa: E402

from uxlocal import cpu_tuning  # noqa: E402

DEFAULT_ARMS = "before,uxlocal,tcmalloc,iomp,tcmalloc+iomp,bind,compile,kv4,tokens16k"
GOAL_BATCH = 32
"""Decode batch the goal is stated at (>= 1.5x ``before``)."""


# ---------------------------------------------------------------- the worker (one arm, own process)

def _random_prompts(n: int, length: int, vocab: int, seed: int) -> list[list[int]]:
    """Distinct random token prompts, so the prefix cache never serves one from another."""
    import random

    rng = random.Random(seed)
    return [[rng.randrange(100, vocab - 100) for _ in range(length)] for _ in range(n)]


def _decode(llm: Any, batch: int, context: int, tokens: int, seed: int, vocab: int) -> float:
    """Decode tok/s at one batch size: the first step (prefill + first token) is left out of the timing."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    prompts = [TokensPrompt(prompt_token_ids=p) for p in _random_prompts(batch, context, vocab, seed)]
    params = SamplingParams(temperature=0.0, max_tokens=tokens + 1, ignore_eos=True)
    llm.enqueue(prompts, params, use_tqdm=False)
    engine = llm.llm_engine
    outputs = list(engine.step())
    started = time.perf_counter()
    while engine.has_unfinished_requests():
        outputs.extend(engine.step())
    elapsed = time.perf_counter() - started
    done = [o for o in outputs if o.finished]
    if len(done) != batch or any(len(o.outputs[0].token_ids) != tokens + 1 for o in done):
        raise RuntimeError(f"decode batch {batch}: expected {batch} requests of {tokens + 1} tokens")
    return batch * tokens / elapsed


def _prefill(llm: Any, length: int, prompts: int, seed: int, vocab: int) -> float:
    """Prefill tok/s: ``prompts`` prompts of ``length`` tokens in one engine step, one token out each."""
    from vllm import SamplingParams
    from vllm.inputs import TokensPrompt

    batch = [TokensPrompt(prompt_token_ids=p) for p in _random_prompts(prompts, length, vocab, seed)]
    started = time.perf_counter()
    llm.generate(batch, SamplingParams(temperature=0.0, max_tokens=1), use_tqdm=False)
    return prompts * length / (time.perf_counter() - started)


def run_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """Load the engine with the arm's engine args, warm up, measure; the caller set the environment."""
    from uxlocal.engine.vllm import VllmEngine
    from uxlocal.models import resolve

    model = resolve(spec["model"])
    model = model.model_copy(update={"engine_args": {**model.engine_args, **spec["engine_args"]}})
    started = time.perf_counter()
    engine = VllmEngine(model, None)  # type: ignore[arg-type]  # no renderer: token ids go in directly
    llm = engine.llm
    load_s = time.perf_counter() - started
    vocab = llm.llm_engine.model_config.get_vocab_size()
    seed = spec["seed"]
    _decode(llm, 8, spec["context"], 4, seed + 999, vocab)  # warm-up (first-call allocations)
    _prefill(llm, 256, 2, seed + 998, vocab)
    decode = {str(b): _decode(llm, b, spec["context"], spec["decode_tokens"], seed + b, vocab)
              for b in spec["batches"]}
    prefill = {str(n): _prefill(llm, n, spec["prefill_prompts"], seed + 7 * n, vocab) for n in spec["prefill_lengths"]}
    return {"load_s": load_s, "decode": decode, "prefill": prefill,
            "preloaded": cpu_tuning.preloaded_libraries(), "pid": os.getpid()}


# ---------------------------------------------------------------- the roof (parent process)

def measure_roof(copy_mib: int, gemm_n: int) -> dict[str, float]:
    """Memory bandwidth (copy: read + write bytes / s, best of 5) and bf16 GEMM peak (FLOP/s, best of 3)."""
    import torch

    src = torch.ones(copy_mib * 2**20, dtype=torch.uint8)
    dst = torch.empty_like(src)
    dst.copy_(src)
    copy_s = min(_time(lambda: dst.copy_(src)) for _ in range(5))
    a = torch.randn(gemm_n, gemm_n, dtype=torch.bfloat16)
    b = torch.randn(gemm_n, gemm_n, dtype=torch.bfloat16)
    torch.matmul(a, b)
    gemm_s = min(_time(lambda: torch.matmul(a, b)) for _ in range(3))
    del src, dst
    return {"bandwidth_gbs": 2 * copy_mib * 2**20 / copy_s / 1e9, "gemm_tflops": 2 * gemm_n**3 / gemm_s / 1e12}


def _time(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def model_shape(model_name: str) -> dict[str, float]:
    """Parameter count, per-token KV bytes and FLOP terms of the model, from its config.json (bf16)."""
    from uxlocal.models import resolve

    cfg = json.loads((Path(resolve(model_name).path) / "config.json").read_text())
    hidden, layers, inter = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"]
    heads, kv_heads = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    head_dim = cfg.get("head_dim", hidden // heads)
    per_layer = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2 + 3 * hidden * inter
    embed = cfg["vocab_size"] * hidden
    params = layers * per_layer + embed * (1 if cfg.get("tie_word_embeddings") else 2)
    return {"params": params, "linear_params": layers * per_layer, "layers": layers,
            "attn_dim": heads * head_dim, "kv_bytes_per_token": 2 * layers * kv_heads * head_dim * 2,
            "weight_bytes": 2 * params, "lm_head_params": embed}


def decode_bound(shape: dict[str, float], roof: dict[str, float], batch: int, context: int, tokens: int) -> float:
    """tok/s if every step only had to read the weights and the batch's KV cache once at full bandwidth."""
    kv = batch * (context + tokens / 2) * shape["kv_bytes_per_token"]
    return batch * roof["bandwidth_gbs"] * 1e9 / (shape["weight_bytes"] + kv)


def prefill_bound(shape: dict[str, float], roof: dict[str, float], length: int) -> float:
    """tok/s if a prompt's FLOPs (linear layers, causal attention, one lm_head row) ran at the GEMM peak."""
    flops = 2 * shape["linear_params"] * length + 2 * shape["layers"] * shape["attn_dim"] * length**2 \
        + 2 * shape["lm_head_params"]
    return length * roof["gemm_tflops"] * 1e12 / flops


# ---------------------------------------------------------------- rounds, summary, printing

def run_arm(arm: str, spec: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One arm in a fresh interpreter with the arm's environment; its JSON result from the last stdout line."""
    env, engine_args = cpu_tuning.arm_settings(arm)
    child_env = {**os.environ, **env}
    for key in cpu_tuning.UNSET_FOR_ARMS:
        if key not in env:
            child_env.pop(key, None)
    payload = json.dumps({**spec, "engine_args": engine_args})
    done = subprocess.run([sys.executable, __file__, "--worker", payload], env=child_env, capture_output=True,
                          text=True, timeout=timeout_s)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout)[-1500:]
        raise RuntimeError(f"arm {arm} failed (exit {done.returncode}):\n{tail}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def median_range(values: list[float]) -> tuple[float, float, float]:
    """(median, min, max)."""
    return statistics.median(values), min(values), max(values)


def summarize(results: dict[str, list[dict[str, Any]]], roofs: list[dict[str, float]], shape: dict[str, float],
              spec: dict[str, Any]) -> dict[str, Any]:
    """Medians and ranges per arm and metric, the roof, fractions of the bounds and ratios over ``before``."""
    roof = {k: median_range([r[k] for r in roofs]) for k in roofs[0]}
    roof_median = {k: v[0] for k, v in roof.items()}
    arms: dict[str, Any] = {}
    for arm, runs in results.items():
        metrics: dict[str, Any] = {"load_s": median_range([r["load_s"] for r in runs])}
        for b in spec["batches"]:
            m = median_range([r["decode"][str(b)] for r in runs])
            bound = decode_bound(shape, roof_median, b, spec["context"], spec["decode_tokens"])
            metrics[f"decode@{b}"] = {"tok_s": m, "fraction": m[0] / bound}
        for n in spec["prefill_lengths"]:
            m = median_range([r["prefill"][str(n)] for r in runs])
            metrics[f"prefill@{n}"] = {"tok_s": m, "fraction": m[0] / prefill_bound(shape, roof_median, n)}
        arms[arm] = metrics
    base = arms.get("before") or next(iter(arms.values()))
    for metrics in arms.values():
        for key, value in metrics.items():
            if key != "load_s":
                value["ratio"] = value["tok_s"][0] / base[key]["tok_s"][0]
    goal = f"decode@{GOAL_BATCH}" if f"decode@{GOAL_BATCH}" in base else f"decode@{spec['batches'][-1]}"
    best = max(arms, key=lambda a: arms[a][goal]["tok_s"][0])
    return {"roof": roof, "arms": arms, "goal_metric": goal, "best_arm": best,
            "best_ratio": arms[best][goal]["ratio"], "best_fraction": arms[best][goal]["fraction"]}


def _fmt(m: tuple[float, float, float]) -> str:
    return f"{m[0]:,.0f} ({m[1]:,.0f}-{m[2]:,.0f})" if m[1] != m[2] else f"{m[0]:,.0f}"


def print_report(summary: dict[str, Any], config: dict[str, Any]) -> None:
    """Config, roof, one block per arm (tok/s median (range), fraction of bound, ratio over before), best last."""
    print("=" * 78)
    print(" engine roofline: decode / prefill tokens/s per settings arm vs the machine's roof")
    print("-" * 78)
    for key, value in config.items():
        print(f" {key:<34} {value}")
    print("-" * 78)
    bw, peak = summary["roof"]["bandwidth_gbs"], summary["roof"]["gemm_tflops"]
    print(f" {'roof: copy bandwidth (GB/s)':<46} {bw[0]:>10.1f}  ({bw[1]:.1f}-{bw[2]:.1f})")
    print(f" {'roof: bf16 GEMM peak (TFLOP/s)':<46} {peak[0]:>10.3f}  ({peak[1]:.3f}-{peak[2]:.3f})")
    for arm, metrics in summary["arms"].items():
        print("-" * 78)
        print(f" arm {arm:<22} load {metrics['load_s'][0]:.1f} s    tok/s median (range)  of bound  x before")
        for key, value in metrics.items():
            if key == "load_s":
                continue
            label = f"{key.split('@')[0]} tok/s @ {key.split('@')[1]}"
            label += " (batch)" if key.startswith("decode") else " (prompt tokens)"
            print(f"   {label:<30} {_fmt(value['tok_s']):>24}  {value['fraction']:>8.3f}  {value['ratio']:>7.2f}")
    print("-" * 78)
    print(f" best arm on {summary['goal_metric']}: {summary['best_arm']}   fraction of bandwidth bound "
          f"{summary['best_fraction']:.3f}")
    print(f" {'best/before ' + summary['goal_metric'] + ' tok/s (x)':<46} {summary['best_ratio']:>10.2f}")
    print("=" * 78)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        print(json.dumps(run_worker(json.loads(sys.argv[2]))))
        return
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--arms", default=DEFAULT_ARMS, help=f"comma-separated arms, '+' combines (default: {DEFAULT_ARMS})")
    p.add_argument("--repeat", type=int, default=1, help="rounds over all arms; figures are medians (default 1)")
    p.add_argument("--batches", default="1,8,32,64", help="decode batch sizes (default 1,8,32,64)")
    p.add_argument("--context", type=int, default=96, help="prompt tokens before decoding (default 96)")
    p.add_argument("--decode-tokens", type=int, default=24, help="timed decode tokens per request (default 24)")
    p.add_argument("--prefill-lengths", default="512,2000", help="prefill prompt lengths (default 512,2000)")
    p.add_argument("--prefill-prompts", type=int, default=2, help="prompts per prefill measurement (default 2)")
    p.add_argument("--copy-mib", type=int, default=1024, help="copy size for the bandwidth roof (default 1024 MiB)")
    p.add_argument("--gemm-n", type=int, default=4096, help="square bf16 GEMM size for the peak (default 4096)")
    p.add_argument("--arm-timeout-s", type=float, default=600.0, help="kill an arm after this long (default 600)")
    p.add_argument("--no-store", action="store_true", help="do not store the summary for `uxlocal doctor`")
    args = p.parse_args()
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    for arm in arms:
        cpu_tuning.arm_settings(arm)  # unknown names fail before any time is spent
    spec = {"model": args.model, "batches": [int(b) for b in args.batches.split(",")], "context": args.context,
            "decode_tokens": args.decode_tokens, "prefill_lengths": [int(n) for n in args.prefill_lengths.split(",")],
            "prefill_prompts": args.prefill_prompts}
    load = wait_quiet()
    results: dict[str, list[dict[str, Any]]] = {arm: [] for arm in arms}
    roofs, loads = [], [load]
    started = time.perf_counter()
    for rnd in range(args.repeat):
        roofs.append(measure_roof(args.copy_mib, args.gemm_n))
        for arm in arms[rnd % len(arms):] + arms[:rnd % len(arms)]:  # rotate: no arm always runs first
            results[arm].append(run_arm(arm, {**spec, "seed": 1000 * rnd}, args.arm_timeout_s))
            loads.append(os.getloadavg()[0])
            print(f"  round {rnd + 1}/{args.repeat} arm {arm}: decode@{spec['batches'][-1]} "
                  f"{results[arm][-1]['decode'][str(spec['batches'][-1])]:.0f} tok/s, load {loads[-1]:.2f}",
                  file=sys.stderr, flush=True)
    summary = summarize(results, roofs, model_shape(args.model), spec)
    config = {"model": args.model, "rounds (median, range)": args.repeat, "arms": ", ".join(arms),
              "decode batches / context / tokens": f"{args.batches} / {args.context} / {args.decode_tokens}",
              "prefill prompts x lengths": f"{args.prefill_prompts} x {args.prefill_lengths}",
              "load before / max during": f"{load:.2f} / {max(loads):.2f}",
              "wall (s)": f"{time.perf_counter() - started:.0f}"}
    print_report(summary, config)
    record = {"config": config, "spec": spec, "summary": summary, "raw": results, "roofs": roofs}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(record, indent=2))
    if not args.no_store:
        print(f" stored for `uxlocal doctor`: {cpu_tuning.store_benchmark(summary, config)}")


if __name__ == "__main__":
    main()
