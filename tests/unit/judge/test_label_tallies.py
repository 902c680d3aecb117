"""Label statistics of a folded draw equal those of the draw itself, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from uxlocal import stats
from uxlocal.suites.judge.label_tallies import LabelTallies


@pytest.mark.parametrize(("classes", "distinct_scores"), [(2, 7), (2, 5_000), (3, 7), (5, 50)])
def test_folded_draws_give_the_statistics_of_the_unfolded_draws(classes: int, distinct_scores: int) -> None:
    rng = np.random.default_rng(classes * 100 + distinct_scores)
    n = 4_000
    human = rng.integers(0, classes, n).astype(np.int32)
    judge = np.where(rng.random(n) < 0.6, human, rng.integers(0, classes, n)).astype(np.int32)
    score = np.round(rng.random(n) * (distinct_scores - 1)) / (distinct_scores - 1)  # ties when few values
    confidence = rng.random(n)
    confidence[:3] = [0.0, 1.0, 0.95]  # the edges of the first and last bins
    tallies = LabelTallies(human, judge, score, positive=1, confidence=confidence)
    draws = [np.arange(n)] + [rng.integers(0, n, n) for _ in range(40)] + [rng.integers(0, n, 3)]
    for idx in draws:
        h, j = human[idx], judge[idx]
        assert tallies.accuracy(idx) == stats.accuracy(h, j)
        assert tallies.kappa(idx) == stats.cohen_kappa(h, j)
        assert tallies.macro_f1(idx) == stats.macro_f1(h, j)
        assert tallies.auroc(idx) == stats.auroc(h == 1, score[idx])
        assert tallies.ece(idx) == stats.ece(confidence[idx], (h == j).tolist())


def test_one_class_drawn_has_no_auroc_and_no_scores_no_auroc() -> None:
    human = np.array([1, 1, 0, 0], dtype=np.int32)
    judge = np.array([1, 0, 0, 0], dtype=np.int32)
    score = np.array([0.9, 0.4, 0.2, 0.1])
    tallies = LabelTallies(human, judge, score, positive=1)
    only_positives = np.array([0, 1, 0])
    assert tallies.auroc(only_positives) is None and stats.auroc(human[only_positives] == 1, score[only_positives]) is None
    assert tallies.auroc(np.arange(4)) == 1.0
    assert tallies.accuracy(np.arange(4)) == 0.75
    assert LabelTallies(human, judge).auroc(np.arange(4)) is None
    assert LabelTallies(human, judge).ece(np.arange(4)) is None


def test_cells_are_counted_once_per_draw() -> None:
    human = np.array([0, 1, 1, 2], dtype=np.int32)
    judge = np.array([0, 1, 2, 2], dtype=np.int32)
    tallies = LabelTallies(human, judge)
    idx = np.array([0, 0, 2, 3])
    cells = tallies.cells(idx)
    assert tallies.cells(idx) is cells  # the same draw: not counted again
    assert list(zip(cells.human.tolist(), cells.judge.tolist(), cells.counts.tolist())) == [(0, 0, 2), (1, 2, 1), (2, 2, 1)]
    assert tallies.cells(idx.copy()) is not cells


def test_empty_columns_give_no_statistics() -> None:
    empty = np.empty(0, dtype=object)
    tallies = LabelTallies(empty, empty)
    idx = np.arange(0)
    assert tallies.accuracy(idx) is None and tallies.kappa(idx) is None and tallies.macro_f1(idx) is None
