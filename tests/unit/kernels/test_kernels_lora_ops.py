"""Our grouped LoRA ops equal the row-by-row reference on random shapes, dtypes and index patterns."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import torch
from _lora_cases import Case, assert_close, cases
from hypothesis import given, settings
from uxlocal_kernels import lora_ops as fast
from uxlocal_kernels import reference as ref

FAST = settings(max_examples=40, deadline=None)


def _segments(case: Case) -> tuple[torch.Tensor, ...]:
    """Return the sgmv metadata for the case's runs: start, length, index per run (vLLM's argument order)."""
    lengths = torch.tensor(case.lengths, dtype=torch.long)
    starts = torch.cumsum(lengths, 0) - lengths
    return starts, lengths, torch.tensor(case.slots, dtype=torch.long)


@contextlib.contextmanager
def _threshold(name: str, elements: int) -> Iterator[None]:
    """Run with ``fast.<name>`` set to ``elements`` (which GEMM dtype a shrink or an added expand uses)."""
    saved = getattr(fast, name)
    setattr(fast, name, elements)
    try:
        yield
    finally:
        setattr(fast, name, saved)


def _small_expand(elements: int) -> contextlib.AbstractContextManager[None]:
    return _threshold("SMALL_EXPAND", elements)


def _untouched(before: torch.Tensor, after: torch.Tensor, indices: torch.Tensor) -> None:
    """Rows whose index is -1 keep their exact previous contents."""
    base = (indices[: after.shape[0]] < 0).nonzero().flatten()
    assert torch.equal(before[base], after[base])


@FAST
@given(cases())
def test_shrink_matches_the_reference_and_leaves_base_rows_alone(case: Case) -> None:
    x = case.randn(case.rows, case.width_in, salt=1)
    a = case.randn(case.n_slots, 1, case.rank, case.width_in, salt=2)
    out_dtype = torch.float32 if case.seed % 2 else case.dtype
    start = case.randn(case.rows, case.rank + 2, dtype=out_dtype, salt=3)
    starts, lengths, slots = _segments(case)
    for large in (fast.LARGE_SHRINK, 0):  # 0: every 16-bit input takes its own dtype's GEMM (prefill path)
        expected, got_b, got_s = start.clone(), start.clone(), start.clone()
        ref.bgmv_shrink(x, a, expected, case.indices, 0.5)
        with _threshold("LARGE_SHRINK", large):
            fast.bgmv_shrink(x, a, got_b, case.indices, 0.5)
            fast.sgmv_shrink(x, a, got_s, starts, lengths, slots, len(slots), max(lengths), case.rows, 0.5)
        assert_close(got_b, expected, rounds_through=case.dtype)
        assert_close(got_s, expected, rounds_through=case.dtype)
        _untouched(start, got_s, case.indices)


@FAST
@given(cases())
def test_expand_matches_the_reference_and_leaves_base_rows_alone(case: Case) -> None:
    x = case.randn(case.rows, case.rank, dtype=torch.float32, salt=1)
    b = case.randn(case.n_slots, 1, case.width_out, case.rank, salt=2)
    out_cols = case.width_out + (case.seed % 5) - 2  # narrower or wider than the adapter's output
    start = case.randn(case.rows, max(1, out_cols), salt=3)
    starts, lengths, slots = _segments(case)
    for add, small in ((True, fast.SMALL_EXPAND), (True, 0), (False, fast.SMALL_EXPAND)):
        expected, got_b, got_s = start.clone(), start.clone(), start.clone()
        ref.bgmv_expand(x, b, expected, case.indices, add)
        with _small_expand(small):  # 0: every add takes the output-dtype GEMM path
            fast.bgmv_expand(x, b, got_b, case.indices, add)
            fast.sgmv_expand(x, b, got_s, starts, lengths, slots, len(slots), max(lengths), case.rows, add)
        assert_close(got_b, expected)
        assert_close(got_s, expected)
        _untouched(start, got_s, case.indices)


@FAST
@given(cases())
def test_expand_slice_matches_the_reference_and_leaves_base_rows_alone(case: Case) -> None:
    x = case.randn(case.rows, case.rank, dtype=torch.float32, salt=1)
    b = case.randn(case.n_slots, 1, case.width_out, case.rank, salt=2)
    offset = case.seed % 7
    start = case.randn(case.rows, offset + case.width_out + 3, salt=3)
    starts, lengths, slots = _segments(case)
    for add, small in ((True, fast.SMALL_EXPAND), (True, 0), (False, fast.SMALL_EXPAND)):
        expected, got_b, got_s = start.clone(), start.clone(), start.clone()
        ref.bgmv_expand_slice(x, b, expected, case.indices, offset, case.width_out, add)
        with _small_expand(small):
            fast.bgmv_expand_slice(x, b, got_b, case.indices, offset, case.width_out, add)
            fast.sgmv_expand_slice(x, b, got_s, starts, lengths, slots, len(slots), max(lengths), case.rows,
                                   offset, case.width_out, add)
        assert_close(got_b, expected)
        assert_close(got_s, expected)
        _untouched(start, got_s, case.indices)


def test_all_base_rows_leave_the_output_bit_identical() -> None:
    x, a = torch.randn(6, 8), torch.randn(2, 1, 4, 8)
    out = torch.randn(6, 4)
    before = out.clone()
    fast.bgmv_shrink(x, a, out, torch.full((6,), -1), 1.0)
    fast.bgmv_expand(torch.randn(6, 4), torch.randn(2, 1, 3, 4), out, torch.full((6,), -1), True)
    assert torch.equal(out, before)


def test_one_input_row_broadcasts_to_every_output_row_like_vllm() -> None:
    x, b = torch.randn(1, 4), torch.randn(3, 1, 5, 4)
    expected, got = torch.zeros(3, 5), torch.zeros(3, 5)
    ref.bgmv_expand(x, b, expected, torch.tensor([2]), True)
    fast.bgmv_expand(x, b, got, torch.tensor([2]), True)
    assert_close(got, expected)
    assert torch.equal(got[0], got[2]) and got.abs().sum() > 0


def test_extra_input_rows_beyond_the_output_are_ignored() -> None:
    x, b = torch.randn(7, 4), torch.randn(2, 1, 5, 4)
    indices = torch.tensor([1, 0, 1, 0, 1, 1, 0])
    expected, got = torch.zeros(4, 5), torch.zeros(4, 5)
    ref.bgmv_expand(x, b, expected, indices, True)
    fast.bgmv_expand(x, b, got, indices, True)
    assert_close(got, expected)


def test_plans_group_rows_by_slot_and_reuse_one_plan_per_layout() -> None:
    plan = fast.plan_runs((1, -1, 0, 1, 1), (2, 3, 1, 2, 1))
    assert [slot for slot, _ in plan.groups] == [0, 1]
    assert plan.groups[0][1] == slice(5, 6)
    assert plan.groups[1][1].tolist() == [0, 1, 6, 7, 8]
    assert plan.rows.tolist() == [5, 0, 1, 6, 7, 8] and plan.position.tolist() == [0, 1, 1, 1, 1, 1]
    assert plan.single_run is None
    assert fast.plan_runs((1, -1, 0, 1, 1), (2, 3, 1, 2, 1)) is plan
    assert fast.plan_rows(torch.tensor([3, 3, 3])).single_run == (3, slice(0, 3))
    assert fast.plan_rows(torch.tensor([], dtype=torch.long)).groups == ()


def test_a_slice_width_that_disagrees_with_the_adapter_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="slice_size"):
        fast.bgmv_expand_slice(torch.randn(2, 4), torch.randn(1, 1, 5, 4), torch.zeros(2, 9),
                               torch.tensor([0, 0]), 0, 6, True)


def _linear(
    x: torch.Tensor, a: torch.Tensor, b: torch.Tensor, indices: torch.Tensor, ops: object
) -> torch.Tensor:
    """Return what vLLM's LoRA linear layer does with the ops.

    An fp32 shrink buffer, then an add into a bf16 output.
    """
    mid = torch.zeros(x.shape[0], a.shape[-2])
    out = torch.zeros(x.shape[0], b.shape[-2] + 3, dtype=torch.bfloat16)
    ops.bgmv_shrink(x, a, mid, indices, 1.0)  # type: ignore[attr-defined]
    ops.bgmv_expand_slice(mid, b, out, indices, 1, b.shape[-2], True)  # type: ignore[attr-defined]
    return out


def test_cached_stacked_weights_follow_in_place_slot_loads_like_vllms() -> None:
    """Slots written in place (vLLM's set_lora/reset_lora) reach the next call: it uses the new weights."""
    torch.manual_seed(0)
    a = torch.randn(3, 1, 4, 16, dtype=torch.bfloat16)
    b = torch.randn(3, 1, 24, 4, dtype=torch.bfloat16)
    x = torch.randn(6, 16, dtype=torch.bfloat16)
    indices = torch.tensor([0, 2, -1, 2, 0, 1])
    assert_close(_linear(x, a, b, indices, fast), _linear(x, a, b, indices, ref))
    hits = fast._stacked.hits
    assert_close(_linear(x, a, b, indices, fast), _linear(x, a, b, indices, ref))
    assert fast._stacked.hits >= hits + 2  # the second call reused both stacks
    a[2, 0, :, :8].copy_(torch.randn(4, 8))  # set_lora: a view's copy_
    b[0] = 0  # reset_lora: indexed assignment
    b[1, 0, :5] = torch.randn(5, 4, dtype=torch.bfloat16)
    assert_close(_linear(x, a, b, indices, fast), _linear(x, a, b, indices, ref))


def test_weights_made_in_inference_mode_are_stacked_per_call_and_stay_correct() -> None:
    with torch.inference_mode():
        a, b = torch.randn(2, 1, 4, 8), torch.randn(2, 1, 5, 4)
        x, indices = torch.randn(4, 8), torch.tensor([1, 0, 1, -1])
        uncached = fast._stacked.uncached
        first = _linear(x, a, b, indices, fast)
        assert fast._stacked.uncached > uncached
        a.mul_(2)
        assert_close(_linear(x, a, b, indices, fast), _linear(x, a, b, indices, ref))
        assert not torch.equal(first, _linear(x, a, b, indices, fast))


def test_an_index_buffer_rewritten_in_place_gets_a_new_plan() -> None:
    """Each step, vLLM copies the indices into one buffer and passes a fresh view of it."""
    buffer = torch.tensor([0, 0, 1, 1, -1, -1])
    first = fast.plan_rows(buffer[:4])
    assert fast.plan_rows(buffer[:4]) is first  # unchanged: reused without looking at the values
    buffer[:4].copy_(torch.tensor([1, -1, 0, 0]))
    assert [slot for slot, _ in fast.plan_rows(buffer[:4]).groups] == [0, 1]
    assert fast.plan_rows(buffer[:4]).rows.tolist() == [2, 3, 0]
    assert fast.plan_rows(buffer[:3]).rows.tolist() == [2, 0]


def test_the_stacked_weight_cache_stays_within_its_byte_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast, "CACHE_BYTES", 3000)
    fast._stacked.clear()
    for _ in range(5):
        a = torch.randn(2, 1, 4, 64)  # one stack of both slots: 2 * 4 * 64 * 4 = 2048 bytes
        fast.bgmv_shrink(torch.randn(3, 64), a, torch.zeros(3, 4), torch.tensor([0, 1, 0]), 1.0)
        assert fast._stacked.bytes <= 3000
    assert fast._stacked.stats()["entries"] == 1
    del a
    assert fast._stacked.stats()["entries"] == 0  # freed weights take their entry along
    fast._stacked.clear()
