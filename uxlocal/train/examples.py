"""Training sequences as token ids with a loss mask, and their left-padded batches.

Layer contract: pure data (torch only inside ``pad_batch``); no model, no files.

A label of ``IGNORE`` means "no loss here". Batches are padded on the left with explicit position
ids, so every sequence ends at the last column: when the loss falls only near the end (a judge's
verdict label), the model computes logits for those last columns only instead of the whole
vocabulary at every position.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

IGNORE = -100
"""Label of a token that carries no loss (cross-entropy's ``ignore_index``)."""


@dataclass
class Example:
    """One training sequence: token ids and labels (``IGNORE`` where there is no loss)."""

    ids: list[int]
    labels: list[int]

    @property
    def targets(self) -> int:
        """Number of labelled tokens."""
        return sum(label != IGNORE for label in self.labels)

    def target_ids(self) -> list[int]:
        """Return the labelled token ids, in order (what the loss is about)."""
        return [label for label in self.labels if label != IGNORE]


def completion_example(prompt_ids: Sequence[int], target_ids: Sequence[int]) -> Example:
    """Return a prompt with no loss followed by a completion that carries all of it."""
    return Example(list(prompt_ids) + list(target_ids), [IGNORE] * len(prompt_ids) + list(target_ids))


def loss_span(examples: Sequence[Example]) -> int:
    """Columns from the end of a left-padded batch whose logits predict every labelled token.

    A token at index ``i`` is predicted by the logits at ``i - 1``, so the span reaches one column
    before the earliest label, counted from each sequence's end (at least 2, at most the width).
    """
    width = max(len(e.ids) for e in examples)
    span = 2
    for example in examples:
        first = next((i for i, label in enumerate(example.labels) if label != IGNORE), None)
        if first is not None:
            span = max(span, len(example.ids) - first + 1)
    return max(1, min(span, width))


def pad_batch(examples: Sequence[Example], pad_id: int) -> dict[str, Any]:
    """Left-padded tensors: ``input_ids``, ``attention_mask``, ``position_ids`` and ``labels``."""
    import torch

    width = max(len(e.ids) for e in examples)
    ids, labels, mask, positions = [], [], [], []
    for e in examples:
        pad = width - len(e.ids)
        ids.append([pad_id] * pad + e.ids)
        labels.append([IGNORE] * pad + e.labels)
        mask.append([0] * pad + [1] * len(e.ids))
        positions.append([0] * pad + list(range(len(e.ids))))
    return {"input_ids": torch.tensor(ids), "attention_mask": torch.tensor(mask),
            "position_ids": torch.tensor(positions), "labels": torch.tensor(labels)}
