"""A bootstrap draw of label verdicts folded into counts: the same statistics from a few small arrays.

Accuracy, kappa and macro-F1 depend only on how many drawn verdicts fall in each (human, judge)
label cell, and AUROC only on how many fall on each (score, human is positive) pair (ECE takes
one-byte bins and hits per verdict instead of computing them per draw). A draw of a million
verdicts is therefore counted once into those cells (one ``bincount``) and each statistic is a few
lines of arithmetic on the counts: the textbook formulas on a confusion matrix and on the ROC's
steps, held to scikit-learn's results on the unfolded draws by the tests (``uxlocal.stats``, the
reference, stays on scikit-learn). Not calling scikit-learn here keeps its import (~84 MB of
memory, more than anything else in a judge report) and its per-call input checks out of the
report's thousand resamples.
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
        if self.confidence is not None:  # ECE's bin of each verdict twice plus its hit: one byte a verdict
            bins = stats.ece_bins(self.confidence)
            self.bin_hit = (bins * 2 + (human == judge)).astype(np.int8 if stats.ECE_BINS < 64 else np.int64)

    def cells(self, idx: np.ndarray) -> Cells:
        """Return the draw's (human, judge) cells (counted once per draw: the statistics share them)."""
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
        """Return Cohen's kappa of the draw (``stats.cohen_kappa``).

        None under two verdicts or when chance agreement is total.
        """
        matrix = self.confusion(idx)
        n = int(matrix.sum())
        if n < 2:
            return None
        observed = np.trace(matrix) / n
        chance = float(matrix.sum(axis=1) @ matrix.sum(axis=0)) / (n * n)
        return None if chance == 1 else float((observed - chance) / (1 - chance))

    def macro_f1(self, idx: np.ndarray) -> float | None:
        """Return the macro-F1 of the draw over the classes it holds (``stats.macro_f1``).

        Each class's 2·TP / (2·TP + FP + FN), averaged unweighted.
        """
        matrix = self.confusion(idx)
        if not matrix.size:
            return None
        hits = np.diag(matrix)
        return float(np.mean(2 * hits / (matrix.sum(axis=0) + matrix.sum(axis=1))))

    def confusion(self, idx: np.ndarray) -> np.ndarray:
        """Return the draw's confusion matrix (human rows, judge columns) over the classes it holds."""
        c = self.cells(idx)
        classes, codes = np.unique(np.concatenate([c.human, c.judge]), return_inverse=True)
        matrix = np.zeros((len(classes), len(classes)), dtype=np.int64)
        np.add.at(matrix, (codes[:len(c.human)], codes[len(c.human):]), c.counts)
        return matrix

    def ece(self, idx: np.ndarray) -> float | None:
        """Return the expected calibration error of the draw (``stats.ece``).

        None without confidences. Each bin's verdicts, hits and summed confidence are counted a
        block of the draw at a time, so no copy of a million drawn confidences is made.
        """
        if self.confidence is None or not len(idx):
            return None
        bins = stats.ECE_BINS
        counted, confidence = np.zeros(2 * bins, dtype=np.int64), np.zeros(bins)
        for start in range(0, len(idx), BLOCK):
            part = idx[start:start + BLOCK]
            codes = self.bin_hit[part]
            counted += np.bincount(codes, minlength=2 * bins)
            confidence += np.bincount(codes >> 1, weights=self.confidence[part], minlength=bins)
        misses, hits = counted[0::2], counted[1::2]
        size = misses + hits
        filled = np.flatnonzero(size)
        gaps = np.abs(hits[filled] / size[filled] - confidence[filled] / size[filled])
        return float(np.sum(size[filled] / len(idx) * gaps))

    def auroc(self, idx: np.ndarray) -> float | None:
        """AUROC of the scores for the positive label (None without scores or one class drawn)."""
        if self.scores is None:
            return None
        steps = np.bincount(self.score_cell[idx], minlength=2 * len(self.scores)).reshape(-1, 2)
        negatives, positives = steps[:, 0], steps[:, 1]  # per distinct score, in ascending order
        n_neg, n_pos = int(negatives.sum()), int(positives.sum())
        if not n_neg or not n_pos:
            return None
        # each positive beats the negatives below its score and ties (one half) those at it:
        # twice the area is a whole number, so the one division is the only rounding
        below = np.cumsum(negatives) - negatives
        return int(positives @ (2 * below + negatives)) / (2 * n_neg * n_pos)


BLOCK = 65_536
"""Drawn verdicts per block in ``ece``: its per-block copies stay well under a megabyte."""


def _count(codes: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the codes (below ``size``) that occur, and how often each does."""
    counts = np.bincount(codes, minlength=size)
    filled = np.flatnonzero(counts)
    return filled, counts[filled]


def _narrow(codes: np.ndarray, size: int) -> np.ndarray:
    """``codes`` (all below ``size``) as int32 when they fit: a draw's take of them is then half the size."""
    return codes.astype(np.int32) if size < 2**31 else codes
