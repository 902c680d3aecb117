"""Label statistics of a folded draw equal scikit-learn's (``uxlocal.stats``) on the draw itself."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from uxlocal import stats
from uxlocal.suites.judge.label_tallies import LabelTallies


def _same(mine: float | None, reference: float | None) -> None:
    """Both undefined, or equal to the last bits of a double (the sums run in another order)."""
    assert (mine is None) == (reference is None), (mine, reference)
    if reference is not None:
        assert mine == pytest.approx(reference, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(("classes", "distinct_scores"), [(2, 7), (2, 5_000), (3, 7), (5, 50)])
def test_folded_draws_give_the_statistics_of_the_unfolded_draws(classes: int, distinct_scores: int,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from uxlocal.suites.judge import label_tallies

    monkeypatch.setattr(label_tallies, "BLOCK", 1_000)  # ECE over several blocks of a draw
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
        _same(tallies.kappa(idx), stats.cohen_kappa(h, j))
        _same(tallies.macro_f1(idx), stats.macro_f1(h, j))
        _same(tallies.auroc(idx), stats.auroc(h == 1, score[idx]))
        _same(tallies.ece(idx), stats.ece(confidence[idx], (h == j).tolist()))


@pytest.mark.parametrize("seed", range(30))
def test_small_and_lopsided_draws_match_scikit_learn(seed: int) -> None:
    """Few verdicts, classes missing from one side, a single class, all tied scores: the edge cases."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 12))
    classes = int(rng.integers(1, 4))
    human = rng.integers(0, classes, n).astype(np.int32)
    judge = (rng.integers(0, classes + 1, n) if seed % 3 else human).astype(np.int32)
    score = rng.integers(0, 1 + seed % 4, n) / 4.0
    tallies = LabelTallies(human, judge, score, positive=0)
    idx = rng.integers(0, n, n)
    h, j = human[idx], judge[idx]
    _same(tallies.kappa(idx), stats.cohen_kappa(h, j))
    _same(tallies.macro_f1(idx), stats.macro_f1(h, j))
    _same(tallies.auroc(idx), stats.auroc(h == 0, score[idx]))


def test_the_tallies_do_not_import_scikit_learn() -> None:
    """The judge report's resamples run without scikit-learn (its import alone is ~84 MB of memory)."""
    code = ("import sys, numpy as np\n"
            "from uxlocal.suites.judge.label_tallies import LabelTallies\n"
            "t = LabelTallies(np.array([0, 1, 1, 0]), np.array([0, 1, 0, 0]), np.array([.1, .9, .4, .3]), 1,"
            " np.array([.6, .7, .8, .9]))\n"
            "idx = np.arange(4)\n"
            "print(t.kappa(idx), t.macro_f1(idx), t.auroc(idx), t.ece(idx), 'sklearn' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    kappa, f1, auroc, ece, imported = done.stdout.split()
    assert imported == "False"
    assert float(kappa) == pytest.approx(0.5) and float(auroc) == 1.0
    assert float(f1) == pytest.approx(0.7333333333333334) and 0 <= float(ece) <= 1


def test_one_class_drawn_has_no_auroc_and_no_scores_no_auroc() -> None:
    human = np.array([1, 1, 0, 0], dtype=np.int32)
    judge = np.array([1, 0, 0, 0], dtype=np.int32)
    score = np.array([0.9, 0.4, 0.2, 0.1])
    tallies = LabelTallies(human, judge, score, positive=1)
    only_positives = np.array([0, 1, 0])
    assert (
        tallies.auroc(only_positives) is None
        and stats.auroc(human[only_positives] == 1, score[only_positives]) is None
    )
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
    assert list(zip(cells.human.tolist(), cells.judge.tolist(), cells.counts.tolist(), strict=True)) == [
        (0, 0, 2),
        (1, 2, 1),
        (2, 2, 1),
    ]
    assert tallies.cells(idx.copy()) is not cells


def test_empty_columns_give_no_statistics() -> None:
    empty = np.empty(0, dtype=object)
    tallies = LabelTallies(empty, empty)
    idx = np.arange(0)
    assert tallies.accuracy(idx) is None and tallies.kappa(idx) is None and tallies.macro_f1(idx) is None
