"""Agreement and interval statistics for every suite, on scipy.stats and scikit-learn.

Layer contract: pure functions over plain sequences; no store, no engine, no I/O. The label
statistics also take numpy arrays and never copy them into lists (a judge report hands them a
million verdicts per resample). A statistic that is undefined on its input (one class only,
constant scores, fewer than two items) returns None instead of NaN or an exception, so tables
print a blank and views can say NULL.

Why libraries: rank correlations with ties, tau-b and the kappas have subtle tie and degenerate
cases that scipy and scikit-learn already get right; hand-written copies drift (issue 17). What
the libraries do not offer is here and documented: ``ece`` (equal-width bins), ``acc_eq``
(pairwise accuracy with ties), ``pair_counts`` and ``kendall_tau_b_within`` (pairs inside
groups, pooled: PALATE's within-session statistics) and ``bootstrap``/``bootstrap_many``
(seeded percentile intervals resampling items or whole clusters, optionally per stratum). The
suites' bootstraps (UXBench, UFS, PALATE) all run on ``bootstrap_many``. The judge report's
label bootstrap folds each draw into counts and computes kappa, macro-F1, AUROC and ECE from them
(``suites/judge/label_tallies.py``); its tests hold those to the functions here.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


def _clean(value: Any) -> float | None:
    """Return a finite float, or None for NaN/inf/None (libraries return NaN on degenerate input)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


# ---------------------------------------------------------------- labels


def _values(values: Sequence[Any] | np.ndarray) -> list[Any] | np.ndarray:
    """Return what scikit-learn is given: an array as it is, any other sequence as a list.

    A list of a million values costs ~8 bytes each plus the objects, so arrays are not converted.
    """
    return values if isinstance(values, np.ndarray) else list(values)


def accuracy(truth: Sequence[Hashable] | np.ndarray, pred: Sequence[Hashable] | np.ndarray) -> float | None:
    """Share of positions where ``pred`` equals ``truth`` (0-1)."""
    if not len(truth):
        return None
    if isinstance(truth, np.ndarray) and isinstance(pred, np.ndarray):
        if len(truth) != len(pred):
            raise ValueError(f"accuracy: {len(truth)} truths, {len(pred)} predictions")
        return int(np.count_nonzero(truth == pred)) / len(truth)
    return sum(t == p for t, p in zip(truth, pred, strict=True)) / len(truth)


def cohen_kappa(truth: Sequence[Hashable] | np.ndarray, pred: Sequence[Hashable] | np.ndarray,
                weights: str | None = None, labels: Sequence[Hashable] | None = None,
                counts: np.ndarray | None = None) -> float | None:
    """Cohen's kappa (``weights="quadratic"`` gives QWK); None when chance agreement is total.

    ``counts`` (optional) says how many items each position stands for (a bootstrap draw folded
    into its distinct (truth, prediction) cells); the result is the one of the unfolded items.
    """
    from sklearn.metrics import cohen_kappa_score

    if (len(truth) if counts is None else int(counts.sum())) < 2:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(_values(truth), _values(pred), weights=weights,
                                  labels=None if labels is None else list(labels), sample_weight=counts)
    return _clean(value)


def quadratic_weighted_kappa(truth: Sequence[int], pred: Sequence[int], scale: Sequence[int]) -> float | None:
    """QWK over the points of ``scale`` (e.g. 1..5): disagreement costs the squared distance."""
    return cohen_kappa(truth, pred, weights="quadratic", labels=scale)


def macro_f1(truth: Sequence[Hashable] | np.ndarray, pred: Sequence[Hashable] | np.ndarray,
             counts: np.ndarray | None = None) -> float | None:
    """Return the unweighted mean of per-class F1 over every class seen in ``truth`` or ``pred``.

    ``counts``: as in ``cohen_kappa``.
    """
    from sklearn.metrics import f1_score

    if not len(truth):
        return None
    seen = (np.union1d(truth, pred).tolist() if isinstance(truth, np.ndarray) and isinstance(pred, np.ndarray)
            else set(truth) | set(pred))
    labels = sorted(seen, key=str)
    return _clean(f1_score(_values(truth), _values(pred), labels=labels, average="macro", zero_division=0,
                           sample_weight=counts))


def auroc(positive: Sequence[bool] | np.ndarray, score: Sequence[float] | np.ndarray,
          counts: np.ndarray | None = None) -> float | None:
    """Return the area under the ROC curve of ``score`` for the positive class.

    Ties count one half; ``counts``: as in ``cohen_kappa``.
    """
    from sklearn.metrics import roc_auc_score

    array = isinstance(positive, np.ndarray)
    if len(np.unique(positive) if array else set(positive)) < 2:
        return None
    truth = positive.astype(bool, copy=False) if array else [bool(p) for p in positive]
    return _clean(roc_auc_score(truth, _values(score), sample_weight=counts))


ECE_BINS = 10


def ece_bins(confidence: np.ndarray, bins: int = ECE_BINS) -> np.ndarray:
    """Return the ECE bin of each confidence (int8 for up to 127 bins)."""
    return np.minimum((confidence * bins).astype(int), bins - 1).astype(np.int8 if bins < 128 else np.int64)


def ece(confidence: Sequence[float], correct: Sequence[bool], bins: int = ECE_BINS,
        bin_index: np.ndarray | None = None) -> float | None:
    """Return the expected calibration error (0-1): equal-width bins over [0, 1], the last bin closed.

    ``confidence`` is the probability the judge gave its own verdict; the gap between mean
    confidence and accuracy in each bin is weighted by the bin's share of items. ``bin_index``
    (optional) is each position's bin, when the caller already has it (``ece_bins``).
    """
    if not len(confidence):
        return None
    conf = np.asarray(confidence, dtype=float)
    hit = np.asarray(correct, dtype=bool)  # a mean of booleans sums exactly, as of 0.0/1.0
    index = ece_bins(conf, bins) if bin_index is None else bin_index
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


@dataclass(frozen=True)
class PairCounts:
    """How the pairs of items inside the same group are ordered by ``x`` and by ``y``.

    Every pair falls in exactly one field; ``missing`` holds the pairs ``y`` could not order
    because a value was missing (None/NaN) although ``x`` orders them (a pair ``x`` ties has no
    order to miss, so it is not counted anywhere).
    """

    concordant: int
    discordant: int
    x_tied: int
    """Tied in ``x`` only."""
    y_tied: int
    """Tied in ``y`` only."""
    both_tied: int
    missing: int

    @property
    def pairs(self) -> int:
        """Pairs with both values present."""
        return self.concordant + self.discordant + self.x_tied + self.y_tied + self.both_tied


def pair_counts(x: Sequence[float] | np.ndarray, y: Sequence[float | None] | np.ndarray,
                groups: Sequence[Hashable] | np.ndarray | None = None, *, epsilon: float = 0.0) -> PairCounts:
    """Count concordant, discordant and tied pairs over pairs *inside* each group, pooled.

    The shared core of tau-b within groups, acc_eq and PALATE's within-session agreement: a
    pair never crosses groups (turns of two sessions are not comparable). ``x`` is the
    reference and must be complete; ``y`` may hold None or NaN. Differences in ``y`` within
    ``epsilon`` count as ties. Vectorized (every within-group pair is built at once), because
    the bootstraps call it once per resample.
    """
    xs = np.asarray(x, dtype=float)
    ys = y.astype(float) if isinstance(y, np.ndarray) else np.asarray(
        [np.nan if v is None else v for v in y], dtype=float)
    first, second = _pairs_within(_codes(groups, len(xs)))
    sx = np.sign(xs[second] - xs[first])
    dy = ys[second] - ys[first]
    present = ~np.isnan(dy)
    dy = np.where(present, dy, 0.0)
    sy = np.where(np.abs(dy) <= epsilon, 0.0, np.sign(dy))
    both = present & (sx != 0) & (sy != 0)
    tally = [both & (sx == sy), both & (sx != sy), present & (sx == 0) & (sy != 0),
             present & (sx != 0) & (sy == 0), present & (sx == 0) & (sy == 0), ~present & (sx != 0)]
    return PairCounts(*(int(np.count_nonzero(t)) for t in tally))


def _pairs_within(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index arrays (i, j), i before j, of every pair of items sharing a code."""
    order = np.argsort(codes, kind="stable")
    sorted_codes = codes[order]
    n = len(order)
    starts = np.flatnonzero(np.r_[True, sorted_codes[1:] != sorted_codes[:-1]]) if n else np.arange(0)
    ends = np.r_[starts[1:], n]
    end_of = np.repeat(ends, ends - starts)
    later = end_of - np.arange(n) - 1  # items after each one inside its group
    first = np.repeat(np.arange(n), later)
    offset = np.arange(len(first)) - np.repeat(np.cumsum(later) - later, later)
    return order[first], order[first + 1 + offset]


def _codes(groups: Sequence[Hashable] | np.ndarray | None, n: int) -> np.ndarray:
    """Integer code per item (one group when ``groups`` is None).

    Lists are numbered by first appearance (strata and clusters keep the caller's order, so a
    seed draws the same resamples as before); integer arrays by ``np.unique``, which is faster.
    """
    if groups is None:
        return np.zeros(n, dtype=np.int64)
    if isinstance(groups, np.ndarray) and groups.dtype.kind in "iu":
        if _increasing(groups):  # distinct and in order: the codes are the positions, no sort needed
            return np.arange(n, dtype=np.int64)
        return np.unique(groups, return_inverse=True)[1].astype(np.int64).reshape(-1)
    seen: dict[Hashable, int] = {}
    return np.asarray([seen.setdefault(g, len(seen)) for g in groups], dtype=np.int64)


def kendall_tau_b_within(x: Sequence[float], y: Sequence[float | None],
                         groups: Sequence[Hashable]) -> float | None:
    """Kendall's tau-b over pairs inside each group, pooled (PALATE's within-session tau-b).

    (concordant - discordant) / sqrt((pairs not tied in x) * (pairs not tied in y)), every
    count over within-group pairs of all groups together; pairs with a missing ``y`` are left
    out. With one group it is scipy's tau-b (the unit tests check this); scipy has no grouped
    form, hence the pair counting. None when either side is tied on every pair.
    """
    c = pair_counts(x, y, groups)
    denominator = math.sqrt((c.pairs - c.x_tied - c.both_tied) * (c.pairs - c.y_tied - c.both_tied))
    return (c.concordant - c.discordant) / denominator if denominator else None


def acc_eq(human: Sequence[float], judge: Sequence[float], groups: Sequence[Hashable] | None = None,
           *, epsilon: float = 0.0) -> float | None:
    """Pairwise accuracy with ties (Deutsch, Foster and Freitag, EMNLP 2023).

    Over every pair of items in the same group (all items when ``groups`` is None): the pair
    counts as agreeing when the judge orders it as the human does, a tie matching a tie. Judge
    differences within ``epsilon`` count as ties (the paper's tie calibration picks it; 0 =
    exact). Pooled over groups: agreeing pairs / all pairs.
    """
    c = pair_counts(human, judge, groups, epsilon=epsilon)
    return (c.concordant + c.both_tied) / c.pairs if c.pairs else None


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean, None for no values (a blank cell, not a ZeroDivisionError)."""
    return sum(float(v) for v in values) / len(values) if values else None


# ---------------------------------------------------------------- intervals


@dataclass(frozen=True)
class Interval:
    """A point estimate with a percentile bootstrap interval (None when undefined)."""

    point: float | None
    low: float | None = None
    high: float | None = None
    n_resamples: int = 0

    @property
    def estimate(self) -> float | None:
        """The point estimate under the UFS tables' name."""
        return self.point


@dataclass(frozen=True)
class Draw:
    """One bootstrap resample: ``index`` into the caller's data, with repeats.

    ``unit`` names the drawn copy each position came from: with clusters, every drawn cluster
    gets its own number (a session drawn twice is two sessions, so pairs never cross copies);
    without, every position is its own unit. On the original data (the point estimate) the
    units are the clusters themselves.
    """

    index: np.ndarray
    units: np.ndarray | None = None
    """The units, or None when every position is its own (built only when asked: 8 MB a million)."""

    @property
    def unit(self) -> np.ndarray:
        """The unit of each position."""
        return np.arange(len(self.index)) if self.units is None else self.units


Statistic = Callable[[np.ndarray], "float | None"]
DrawStatistic = Callable[[Draw], "float | None"]


def bootstrap(statistic: Statistic, n: int, *, clusters: Sequence[Hashable] | None = None,
              strata: Sequence[Hashable] | None = None, n_resamples: int = 1000, seed: int = 0,
              level: float = 0.95) -> Interval:
    """Percentile bootstrap of ``statistic(indices)`` over ``n`` items (see ``bootstrap_many``)."""
    one = {"": lambda draw: statistic(draw.index)}
    return bootstrap_many(one, n, clusters=clusters, strata=strata, n_resamples=n_resamples, seed=seed,
                          level=level)[""]


def bootstrap_many(statistics: Mapping[str, DrawStatistic], n: int, *,
                   clusters: Sequence[Hashable] | None = None, strata: Sequence[Hashable] | None = None,
                   n_resamples: int = 1000, seed: int = 0, level: float = 0.95) -> dict[str, Interval]:
    """Percentile bootstrap intervals of several statistics computed on the same resamples.

    Each resample draws with replacement: whole clusters when ``clusters`` is given (items of
    one conversation, session or user are not independent), items otherwise; with ``strata``,
    each stratum is drawn on its own and keeps its size (UXBench's classes, UFS's domains,
    PALATE's users). A cluster belongs to the stratum of its first item. Resamples where a
    statistic is undefined (None or NaN) are dropped for it. Bounds are numpy's linear
    percentiles; the same seed gives the same intervals. Sharing the resamples matters when
    one statistic is built from others (Mean UFS from the domains).
    """
    plan = _plan(n, clusters, strata)
    original = Draw(np.arange(n), _codes(clusters, n) if clusters is not None else None)
    points = {name: _finite(f(original)) for name, f in statistics.items()}
    values: dict[str, list[float]] = {name: [] for name in statistics}
    if n and n_resamples > 0 and any(p is not None for p in points.values()):
        rng = np.random.default_rng(seed)
        for _ in range(n_resamples):
            draw = _draw(plan, rng)
            for name, f in statistics.items():
                value = _finite(f(draw)) if points[name] is not None else None
                if value is not None:
                    values[name].append(value)
    return {name: _interval(points[name], values[name], n_resamples, level) for name in statistics}


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def _interval(point: float | None, values: list[float], n_resamples: int, level: float) -> Interval:
    if point is None or not values:
        return Interval(point)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return Interval(point, float(low), float(high), n_resamples)


Plan = list["int | np.ndarray | list[np.ndarray]"]
"""Per stratum: its item indices (items resampled) or its clusters' index blocks; a number n for
one stratum of all n items (its draw is the picks themselves, no copy through an index)."""


def _plan(n: int, clusters: Sequence[Hashable] | None, strata: Sequence[Hashable] | None) -> Plan:
    single_items = clusters is None or _all_distinct(clusters, n)  # single-item clusters are items
    if n and strata is None and single_items:
        return [n]  # one stratum of all items
    stratum_of = _codes(strata, n)
    if single_items:
        return [np.flatnonzero(stratum_of == s) for s in range(int(stratum_of.max(initial=-1)) + 1)]
    blocks: dict[Hashable, list[int]] = {}
    for i, key in enumerate(clusters):
        blocks.setdefault(key, []).append(i)
    per_stratum: dict[int, list[np.ndarray]] = {}
    for members in blocks.values():
        per_stratum.setdefault(int(stratum_of[members[0]]), []).append(np.asarray(members))
    return [_singletons(per_stratum[s]) for s in sorted(per_stratum)]


def _all_distinct(clusters: Sequence[Hashable], n: int) -> bool:
    """Tell whether every item is its own cluster.

    The plan is then the items', in the same order, without a block per item (a million one-verdict
    conversations took ~250 MB of blocks).
    """
    if isinstance(clusters, np.ndarray) and clusters.dtype.kind in "iu":  # codes: no set of a million numbers
        return _increasing(clusters) or np.unique(clusters).size == n
    return len(set(clusters)) == n


def _increasing(values: np.ndarray) -> bool:
    """Whether an integer array is strictly increasing (so its values are distinct), without a sort."""
    return len(values) < 2 or bool(np.all(values[1:] > values[:-1]))


def _singletons(blocks: list[np.ndarray]) -> "np.ndarray | list[np.ndarray]":
    """Return a stratum whose clusters are single items, as those items.

    ``_draw`` then takes the same picks with one numpy index instead of a Python loop over clusters
    (a judge report's bootstrap over 100k conversations, one verdict each, spent most of its time
    there).
    """
    if all(len(block) == 1 for block in blocks):
        return np.concatenate(blocks) if blocks else np.arange(0)
    return blocks


def _draw(plan: Plan, rng: np.random.Generator) -> Draw:
    """Draw one resample of every stratum; each drawn unit gets a fresh number.

    Positions are their own units, and the draw says so with no array, unless some stratum draws
    clusters.
    """
    indices, units, next_unit = [], [], 0
    clustered = any(isinstance(stratum, list) for stratum in plan)
    for stratum in plan:
        size = stratum if isinstance(stratum, int) else len(stratum)
        picks = rng.integers(0, size, size=size)
        if isinstance(stratum, list):
            blocks = [stratum[k] for k in picks]
            indices.append(np.concatenate(blocks))
            units.append(np.repeat(np.arange(next_unit, next_unit + len(picks)), [len(b) for b in blocks]))
        else:
            indices.append(picks if isinstance(stratum, int) else stratum[picks])
            if clustered:
                units.append(np.arange(next_unit, next_unit + len(picks)))
        next_unit += len(picks)
    if not indices:
        return Draw(np.arange(0))
    if len(indices) == 1:  # one stratum (no strata): its arrays as drawn, not a copy of a million
        return Draw(indices[0], units[0] if clustered else None)
    return Draw(np.concatenate(indices), np.concatenate(units) if clustered else None)
