"""Hypothesis strategies for multi-LoRA op cases: shapes, dtypes and adapter index patterns."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from hypothesis import strategies as st

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
PATTERNS = ("all_none", "mixed", "one_slot", "every_slot")
"""all -1 (base rows only); -1 and slots interleaved; every row one slot; every slot used."""


@dataclass
class Case:
    """One op call's inputs (``lengths``/``slots`` are the sgmv runs; ``indices`` one per row)."""

    rows: int
    width_in: int
    rank: int
    width_out: int
    n_slots: int
    dtype: torch.dtype
    slots: list[int]
    lengths: list[int]
    seed: int

    @property
    def indices(self) -> torch.Tensor:
        return torch.repeat_interleave(torch.tensor(self.slots, dtype=torch.long),
                                       torch.tensor(self.lengths, dtype=torch.long))

    def randn(self, *shape: int, dtype: torch.dtype | None = None, salt: int = 0) -> torch.Tensor:
        gen = torch.Generator().manual_seed(self.seed * 7919 + salt)
        return torch.randn(*shape, generator=gen).to(dtype or self.dtype)


def _run_slots(draw: st.DrawFn, pattern: str, n_runs: int, n_slots: int) -> list[int]:
    if pattern == "all_none":
        return [-1] * n_runs
    if pattern == "one_slot":
        return [draw(st.integers(0, n_slots - 1))] * n_runs
    if pattern == "every_slot":
        n_runs = max(n_runs, n_slots)
        order = draw(st.permutations(list(range(n_slots))))
        return list(order) + draw(st.lists(st.integers(-1, n_slots - 1), min_size=n_runs - n_slots,
                                           max_size=n_runs - n_slots))
    slots = draw(st.lists(st.integers(-1, n_slots - 1), min_size=n_runs, max_size=n_runs))
    if n_runs >= 2:  # guarantee both kinds are present
        slots[0], slots[1] = -1, draw(st.integers(0, n_slots - 1))
    return slots


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """Return a random op case: up to 48 rows in up to 12 runs, up to 5 slots, fp32 or bf16."""
    pattern = draw(st.sampled_from(PATTERNS))
    n_slots = draw(st.integers(1, 5))
    n_runs = draw(st.integers(1, 12))
    slots = _run_slots(draw, pattern, n_runs, n_slots)
    lengths = draw(st.lists(st.integers(0, 6), min_size=len(slots), max_size=len(slots)))
    if sum(lengths) == 0:
        lengths[0] = 1
    return Case(
        rows=sum(lengths),
        width_in=draw(st.integers(1, 40)),
        rank=draw(st.integers(1, 16)),
        width_out=draw(st.integers(1, 40)),
        n_slots=n_slots,
        dtype=DTYPES[draw(st.sampled_from(sorted(DTYPES)))],
        slots=slots,
        lengths=lengths,
        seed=draw(st.integers(0, 2**16)),
    )


def assert_close(
    actual: torch.Tensor, expected: torch.Tensor, rounds_through: torch.dtype | None = None
) -> None:
    """Equal up to the coarsest rounding involved (bf16 keeps 8 mantissa bits; sums of rank products).

    ``rounds_through``: a dtype the computation may round intermediate values to, besides the two
    tensors' own (a 16-bit GEMM result widened into an fp32 output).
    """
    if torch.bfloat16 in (actual.dtype, expected.dtype, rounds_through):
        scale = max(1.0, float(expected.float().abs().max())) if expected.numel() else 1.0
        torch.testing.assert_close(actual.float(), expected.float(), rtol=2e-2, atol=2e-2 * scale)
    else:
        torch.testing.assert_close(actual, expected, rtol=1e-4, atol=1e-5)
