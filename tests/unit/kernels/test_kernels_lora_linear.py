"""A LoRA'd linear layer with every slice in two GEMMs equals vLLM's slice-by-slice composition."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
import torch
from _lora_cases import Case, assert_close, cases
from hypothesis import given, settings
from hypothesis import strategies as st
from uxlocal_kernels import lora_ops as fast
from uxlocal_kernels import reference as ref
from uxlocal_kernels.lora_linear import add_lora_linear, lora_linear


@contextlib.contextmanager
def _thresholds(large: int, small: int) -> Iterator[None]:
    """Run with ``LARGE_SHRINK``/``SMALL_EXPAND`` set (0 sends every call down the 16-bit GEMM paths)."""
    saved = fast.LARGE_SHRINK, fast.SMALL_EXPAND
    fast.LARGE_SHRINK, fast.SMALL_EXPAND = large, small
    try:
        yield
    finally:
        fast.LARGE_SHRINK, fast.SMALL_EXPAND = saved


def _layer(
    case: Case, widths: list[int]
) -> tuple[torch.Tensor, tuple[torch.Tensor, ...], tuple[torch.Tensor, ...]]:
    x = case.randn(case.rows, case.width_in, salt=1)
    a = tuple(case.randn(case.n_slots, 1, case.rank, case.width_in, salt=10 + i) for i in range(len(widths)))
    b = tuple(case.randn(case.n_slots, 1, w, case.rank, salt=20 + i) for i, w in enumerate(widths))
    return x, a, b


def _segments(case: Case) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.tensor(case.lengths, dtype=torch.long), torch.tensor(case.slots, dtype=torch.long)


@settings(max_examples=60, deadline=None)
@given(cases(), st.lists(st.integers(1, 24), min_size=1, max_size=3), st.sampled_from([1.0, 0.5]))
def test_two_gemms_equal_the_slice_by_slice_reference_and_leave_base_rows_alone(
    case: Case, widths: list[int], scale: float
) -> None:
    x, a, b = _layer(case, widths)
    start = case.randn(case.rows, sum(widths) + case.seed % 3, salt=3)
    expected = start.clone()
    ref.lora_linear(expected, x, a, b, scale, tuple(widths), case.indices)
    lengths, slots = _segments(case)
    for large, small in ((fast.LARGE_SHRINK, fast.SMALL_EXPAND), (0, 0)):
        for plan in (fast.plan_rows(case.indices), fast.plan_segments(lengths, slots)):
            got = start.clone()
            with _thresholds(large, small):
                lora_linear(got, x, a, b, scale, tuple(widths), plan)
            assert_close(got, expected, rounds_through=case.dtype)
            base = (case.indices < 0).nonzero().flatten()
            assert torch.equal(got[base], start[base])
            assert torch.equal(got[:, sum(widths):], start[:, sum(widths):])  # columns past the slices


def test_a_slice_width_that_disagrees_with_its_adapter_is_a_clear_error() -> None:
    x, a, b = torch.randn(2, 8), (torch.randn(2, 1, 4, 8),), (torch.randn(2, 1, 6, 4),)
    with pytest.raises(ValueError, match="adapter output width 6 != slice width 5"):
        lora_linear(torch.zeros(2, 6), x, a, b, 1.0, (5,), fast.plan_rows(torch.tensor([0, 1])))


def test_the_stacked_weights_of_a_layer_are_reused_until_a_slice_is_rewritten() -> None:
    x, a, b = (
        torch.randn(4, 8),
        (torch.randn(3, 1, 4, 8), torch.randn(3, 1, 4, 8)),
        (torch.randn(3, 1, 5, 4), torch.randn(3, 1, 2, 4)),
    )
    plan = fast.plan_rows(torch.tensor([0, -1, 2, 0]))
    y = torch.zeros(4, 7)
    lora_linear(y, x, a, b, 1.0, (5, 2), plan)
    hits = fast._stacked.hits
    lora_linear(y, x, a, b, 1.0, (5, 2), plan)
    assert fast._stacked.hits == hits + 2  # one stacked A and one block-diagonal B for both slices
    b[1][2].mul_(3.0)  # vLLM loads a slot in place: the layer's B stack must be rebuilt
    expected, got = torch.zeros(4, 7), torch.zeros(4, 7)
    ref.lora_linear(expected, x, a, b, 1.0, (5, 2), plan_indices := torch.tensor([0, -1, 2, 0]))
    lora_linear(got, x, a, b, 1.0, (5, 2), fast.plan_rows(plan_indices))
    assert_close(got, expected)


def _wrapper(prefill: bool, indices: torch.Tensor, no_lora: bool = False) -> SimpleNamespace:
    """Return the attributes of vLLM's CPU punica wrapper that ``add_lora_linear`` reads."""
    slots, lengths = torch.unique_consecutive(indices, return_counts=True)
    starts = torch.cumsum(lengths, 0) - lengths
    meta = (starts, lengths, slots, len(slots), int(lengths.max()), int(lengths.sum()))
    return SimpleNamespace(
        is_prefill=prefill, no_lora=no_lora, prefill_metadata=meta, token_lora_indices=indices
    )


@pytest.mark.parametrize("prefill", [True, False])
def test_the_wrapper_method_plans_from_prefill_or_decode_metadata(prefill: bool) -> None:
    indices = torch.tensor([1, 1, -1, 0, 0, 0, -1, 2])
    x, a, b = (
        torch.randn(8, 16),
        (torch.randn(3, 1, 4, 16),) * 2,
        (torch.randn(3, 1, 6, 4), torch.randn(3, 1, 3, 4)),
    )
    y = torch.randn(8, 9)
    expected, got = y.clone(), y.clone()
    ref.lora_linear(expected, x, a, b, 1.0, (6, 3), indices)
    add_lora_linear(_wrapper(prefill, indices), got, x, a, b, 1.0, (6, 3), buffer=None)
    assert_close(got, expected)
    untouched = y.clone()
    add_lora_linear(_wrapper(True, indices, no_lora=True), untouched, x, a, b, 1.0, (6, 3))
    assert torch.equal(untouched, y)  # vLLM's "no adapter in this batch" flag skips the layer


def test_ours_equal_vllms_wrapper_method_when_every_row_has_an_adapter() -> None:
    punica_cpu = pytest.importorskip(
        "vllm.lora.punica_wrapper.punica_cpu", reason="vLLM's CPU wrapper not importable"
    )
    from uxlocal_kernels import plugin

    stock = plugin._originals.get((punica_cpu.PunicaWrapperCPU, "add_lora_linear"),
                                  punica_cpu.PunicaWrapperCPU.add_lora_linear)
    assert stock is not add_lora_linear
    indices = torch.tensor([0, 0, 1, 1, 1, 2])
    torch.manual_seed(5)
    x = torch.randn(6, 16)
    a = tuple(torch.randn(3, 1, 4, 16) for _ in range(3))
    b = tuple(torch.randn(3, 1, w, 4) for w in (8, 2, 2))
    y = torch.randn(6, 12)
    for prefill in (True, False):
        stock_self = object.__new__(punica_cpu.PunicaWrapperCPU)
        starts, lengths, slots, batches, longest, tokens = _wrapper(prefill, indices).prefill_metadata
        stock_self.__dict__.update(
            is_prefill=prefill, no_lora=False, _seq_start_locs=starts, _seq_lengths=lengths,
            _lora_indices_per_batch=slots, batch_size=batches, max_length=longest, token_nums=tokens,
            _token_lora_indices=indices, indices_len=[len(indices)] * 4,
        )
        expected, got = y.clone(), y.clone()
        stock(stock_self, expected, x, a, b, 0.5, (8, 2, 2))
        add_lora_linear(stock_self, got, x, a, b, 0.5, (8, 2, 2))
        assert_close(got, expected)
