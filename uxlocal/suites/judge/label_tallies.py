"""A bootstrap draw of label verdicts folded into counts: the same statistics from a few small arrays.

Accuracy, kappa and macro-F1 depend only on how many drawn verdicts fall in each (human, judge)
label cell, and AUROC only on how many fall on each (score, human is positive) pair (ECE takes
one-byte bins and hits per verdict instead of computing them per draw). A draw of a
million verdicts is therefore counted once into those cells (one ``bincount``) and scikit-learn
gets the cells with their counts as sample weights: the counts are whole numbers, so every sum it
forms is exact and the result is the one of the unfolded draw, without the per-draw copies of a
million labels and scores (and AUROC's sort of them) that set the judge report's peak memory.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from uxlocal import stats


class Cells(NamedTuple):
    """The non-empty cells of a draw: human code, judge code, and how many verdicts fell there."""

    human: np.ndarray
    judge: np.ndarray
    counts: np.ndarray


class LabelTallies:
    """Label statistics of draws (arrays of verdict indices) over coded human and judge labels."""

    def __init__(self, human: np.ndarray, judge: np.ndarray, score: np.ndarray | None = None,
                 positive: int = -1, confidence: np.ndarray | None = None) -> None:
        self.width = int(max(human.max(initial=-1), judge.max(initial=-1))) + 1
        self.cell = _narrow(human.astype(np.int64) * self.width + judge.astype(np.int64), self.width ** 2)
        self._cells: tuple[np.ndarray | None, Cells | None] = (None, None)
        self.scores: np.ndarray | None = None
        if score is not None:  # each verdict's (distinct score, human is positive) pair, numbered once
            self.scores, inverse = np.unique(score, return_inverse=True)
            self.score_cell = _narrow(inverse.reshape(-1) * 2 + (human == positive), 2 * len(self.scores))
        self.confidence = None if confidence is None else np.asarray(confidence, dtype=float)
        if self.confidence is not None:  # ECE's bins and hits, one byte a verdict
            self.bins, self.correct = stats.ece_bins(self.confidence), human == judge

    def cells(self, idx: np.ndarray) -> Cells:
        """The draw's (human, judge) cells (counted once per draw: the statistics share them)."""
        last, cells = self._cells
        if last is not idx or cells is None:
            filled, counts = _count(self.cell[idx], self.width * self.width)
            cells = Cells(filled // self.width, filled % self.width, counts)
            self._cells = (idx, cells)
        return cells

    def accuracy(self, idx: np.ndarray) -> float | None:
        """Share of drawn verdicts whose label is the human's."""
        c = self.cells(idx)
        total = int(c.counts.sum())
        return int(c.counts[c.human == c.judge].sum()) / total if total else None

    def kappa(self, idx: np.ndarray) -> float | None:
        """Cohen's kappa of the draw."""
        c = self.cells(idx)
        return stats.cohen_kappa(c.human, c.judge, counts=c.counts)

    def macro_f1(self, idx: np.ndarray) -> float | None:
        """Macro-F1 of the draw over the classes it holds."""
        c = self.cells(idx)
        return stats.macro_f1(c.human, c.judge, counts=c.counts)

    def ece(self, idx: np.ndarray) -> float | None:
        """Expected calibration error of the draw (None without confidences)."""
        if self.confidence is None:
            return None
        return stats.ece(self.confidence[idx], self.correct[idx], bin_index=self.bins[idx])

    def auroc(self, idx: np.ndarray) -> float | None:
        """AUROC of the scores for the positive label (None without scores or one class drawn)."""
        if self.scores is None:
            return None
        filled, counts = _count(self.score_cell[idx], 2 * len(self.scores))
        return stats.auroc(filled % 2 == 1, self.scores[filled // 2], counts=counts)


def _count(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The codes (below ``size``) that occur, and how often each does."""
    counts = np.bincount(codes, minlength=size)
    filled = np.flatnonzero(counts)
    return filled, counts[filled]


def _narrow(codes: np.ndarray, size: int) -> np.ndarray:
    """``codes`` (all below ``size``) as int32 when they fit: a draw's take of them is then half the size."""
    return codes.astype(np.int32) if size < 2**31 else codes
