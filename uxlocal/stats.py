"""Agreement and interval statistics for every suite, on scipy.stats and scikit-learn.

Layer contract: pure functions over plain sequences; no store, no engine, no I/O. A statistic
that is undefined on its input (one class only, constant scores, fewer than two items) returns
None instead of NaN or an exception, so tables print a blank and views can say NULL.

Why libraries: rank correlations with ties, tau-b and the kappas have subtle tie and degenerate
cases that scipy and scikit-learn already get right; hand-written copies drift (issue 17). What
the libraries do not offer is here and documented: ``ece`` (equal-width bins), ``acc_eq``
(pairwise accuracy with ties) and ``bootstrap`` (seeded percentile intervals, optionally
resampling whole clusters).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def _clean(value: Any) -> float | None:
    """A finite float, or None for NaN/inf/None (libraries return NaN on degenerate input)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


# ---------------------------------------------------------------- labels


def accuracy(truth: Sequence[Hashable], pred: Sequence[Hashable]) -> float | None:
    """Share of positions where ``pred`` equals ``truth`` (0-1)."""
    if not truth:
        return None
    return sum(t == p for t, p in zip(truth, pred, strict=True)) / len(truth)


def cohen_kappa(truth: Sequence[Hashable], pred: Sequence[Hashable],
                weights: str | None = None, labels: Sequence[Hashable] | None = None) -> float | None:
    """Cohen's kappa (``weights="quadratic"`` gives QWK); None when chance agreement is total."""
    from sklearn.metrics import cohen_kappa_score

    if len(truth) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(list(truth), list(pred), weights=weights,
                                  labels=None if labels is None else list(labels))
    return _clean(value)


def quadratic_weighted_kappa(truth: Sequence[int], pred: Sequence[int], scale: Sequence[int]) -> float | None:
    """QWK over the points of ``scale`` (e.g. 1..5): disagreement costs the squared distance."""
    return cohen_kappa(truth, pred, weights="quadratic", labels=scale)


def macro_f1(truth: Sequence[Hashable], pred: Sequence[Hashable]) -> float | None:
    """Unweighted mean of per-class F1 over every class seen in ``truth`` or ``pred``."""
    from sklearn.metrics import f1_score

    if not truth:
        return None
    labels = sorted(set(truth) | set(pred), key=str)
    return _clean(f1_score(list(truth), list(pred), labels=labels, average="macro", zero_division=0))


def auroc(positive: Sequence[bool], score: Sequence[float]) -> float | None:
    """Area under the ROC curve of ``score`` for the positive class (ties count one half)."""
    from sklearn.metrics import roc_auc_score

    if len(set(positive)) < 2:
        return None
    return _clean(roc_auc_score([bool(p) for p in positive], list(score)))


ECE_BINS = 10


def ece(confidence: Sequence[float], correct: Sequence[bool], bins: int = ECE_BINS) -> float | None:
    """Expected calibration error (0-1): equal-width bins over [0, 1], the last bin closed.

    ``confidence`` is the probability the judge gave its own verdict; the gap between mean
    confidence and accuracy in each bin is weighted by the bin's share of items.
    """
    if not confidence:
        return None
    conf = np.asarray(confidence, dtype=float)
    hit = np.asarray(correct, dtype=float)
    index = np.minimum((conf * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        mask = index == b
        if mask.any():
            total += mask.sum() / len(conf) * abs(hit[mask].mean() - conf[mask].mean())
    return float(total)


# ---------------------------------------------------------------- scores


def _enough(x: Sequence[float], y: Sequence[float]) -> bool:
    return len(x) >= 2 and len(set(x)) > 1 and len(set(y)) > 1


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; None for constant input."""
    from scipy.stats import pearsonr

    return _clean(pearsonr(x, y).statistic) if _enough(x, y) else None


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (average ranks for ties); None for constant input."""
    from scipy.stats import spearmanr

    return _clean(spearmanr(x, y).statistic) if _enough(x, y) else None


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Kendall's tau-b (ties in either variable shrink the denominator); None for constant input."""
    from scipy.stats import kendalltau

    return _clean(kendalltau(x, y, variant="b").statistic) if _enough(x, y) else None


def _sign(value: float, epsilon: float) -> int:
    return 0 if abs(value) <= epsilon else (1 if value > 0 else -1)


def acc_eq(human: Sequence[float], judge: Sequence[float], groups: Sequence[Hashable] | None = None,
           *, epsilon: float = 0.0) -> float | None:
    """Pairwise accuracy with ties (Deutsch, Foster and Freitag, EMNLP 2023).

    Over every pair of items in the same group (all items when ``groups`` is None): the pair
    counts as agreeing when the judge orders it as the human does, a tie matching a tie. Judge
    differences within ``epsilon`` count as ties (the paper's tie calibration picks it; 0 =
    exact). Pooled over groups: agreeing pairs / all pairs.
    """
    keys = list(groups) if groups is not None else [None] * len(human)
    by_group: dict[Hashable, list[int]] = {}
    for i, key in enumerate(keys):
        by_group.setdefault(key, []).append(i)
    agree = pairs = 0
    for members in by_group.values():
        for a in range(len(members)):
            for b in range(a + 1, len(members)):
                i, j = members[a], members[b]
                pairs += 1
                agree += _sign(human[i] - human[j], 0.0) == _sign(judge[i] - judge[j], epsilon)
    return agree / pairs if pairs else None


# ---------------------------------------------------------------- intervals


@dataclass(frozen=True)
class Interval:
    """A point estimate with a percentile bootstrap interval (None when undefined)."""

    point: float | None
    low: float | None = None
    high: float | None = None
    n_resamples: int = 0


def bootstrap(statistic: Callable[[np.ndarray], float | None], n: int, *,
              clusters: Sequence[Hashable] | None = None, n_resamples: int = 1000, seed: int = 0,
              level: float = 0.95) -> Interval:
    """Percentile bootstrap of ``statistic(indices)`` over ``n`` items.

    ``statistic`` receives an index array into the caller's data (with repeats). With
    ``clusters``, whole clusters are drawn with replacement (items of one conversation or user
    are not independent); otherwise items are. Resamples where the statistic is undefined are
    dropped. The same seed gives the same interval.
    """
    point = statistic(np.arange(n))
    if n == 0 or n_resamples <= 0 or point is None:
        return Interval(point)
    rng = np.random.default_rng(seed)
    if clusters is None:
        draws = (rng.integers(0, n, size=n) for _ in range(n_resamples))
    else:
        members: dict[Hashable, list[int]] = {}
        for i, key in enumerate(clusters):
            members.setdefault(key, []).append(i)
        blocks = [np.asarray(v) for v in members.values()]
        draws = (np.concatenate([blocks[k] for k in rng.integers(0, len(blocks), size=len(blocks))])
                 for _ in range(n_resamples))
    values = [v for v in (statistic(idx) for idx in draws) if v is not None and math.isfinite(v)]
    if not values:
        return Interval(point)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return Interval(point, float(low), float(high), n_resamples)
