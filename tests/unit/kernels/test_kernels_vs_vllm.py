"""Contract with vLLM's own CPU ops.

Equal results wherever every row has an adapter, and the bug (-1 picks the last slot) that ours fix.
Skips when vLLM's torch ops are not importable.
"""

from __future__ import annotations

import pytest
import torch
from _lora_cases import Case, assert_close, cases
from hypothesis import given, settings
from uxlocal_kernels import lora_ops as ours

stock = pytest.importorskip("vllm.lora.ops.torch_ops.lora_ops", reason="vLLM's CPU torch ops not importable")
_STOCK = {name: getattr(stock, name) for name in ours.OPS}
"""Captured at import, before any test could install our plugin over them."""


def _no_base_rows(case: Case) -> Case:
    case.slots = [max(slot, 0) for slot in case.slots]
    return case


@settings(max_examples=40, deadline=None)
@given(cases().map(_no_base_rows))
def test_ours_equal_vllms_ops_when_every_row_has_an_adapter(case: Case) -> None:
    x = case.randn(case.rows, case.width_in, salt=1)
    a = case.randn(case.n_slots, 1, case.rank, case.width_in, salt=2)
    b = case.randn(case.n_slots, 1, case.width_out, case.rank, salt=3)
    mid_ours, mid_stock = torch.zeros(case.rows, case.rank), torch.zeros(case.rows, case.rank)
    ours.bgmv_shrink(x, a, mid_ours, case.indices, 0.25)
    _STOCK["bgmv_shrink"](x, a, mid_stock, case.indices, 0.25)
    assert_close(mid_ours, mid_stock)
    y = case.randn(case.rows, case.width_out + 4, salt=4)
    y_ours, y_stock = y.clone(), y.clone()
    ours.bgmv_expand_slice(mid_ours, b, y_ours, case.indices, 2, case.width_out, True)
    _STOCK["bgmv_expand_slice"](mid_stock, b, y_stock, case.indices, 2, case.width_out, True)
    assert_close(y_ours, y_stock)


def test_stock_ops_give_base_rows_the_last_slot_and_ours_do_not() -> None:
    x, a = torch.randn(3, 8), torch.randn(2, 1, 4, 8)
    indices = torch.tensor([0, -1, 1])
    got_stock, got_ours = torch.zeros(3, 4), torch.zeros(3, 4)
    _STOCK["bgmv_shrink"](x, a, got_stock, indices, 1.0)
    ours.bgmv_shrink(x, a, got_ours, indices, 1.0)
    assert_close(got_stock[1], x[1] @ a[1, 0].T)  # the base row got adapter slot 1 (the last)
    assert torch.equal(got_ours[1], torch.zeros(4))
    assert_close(got_ours[[0, 2]], got_stock[[0, 2]])
