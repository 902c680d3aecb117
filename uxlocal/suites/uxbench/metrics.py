"""Reference UXBench metrics in plain Python: the oracle the SQL views are tested against.

Layer contract: pure functions over lists of verdict rows (dataclasses or dicts with the same
keys); no store, no engine, no I/O. Percentages are 0-100 floats; ECE is a 0-1 fraction.

Pass exactly one row per item. An item whose judge output was unusable (unparseable, cut off,
engine error, never judged) still gets a row, with ``pred``/``verdict`` None: the conventions
below differ only in how those rows count. Duplicate ``item_id``s raise ValueError, because
upstream's resume bug (spec §7) inflated counts exactly that way.

Percentages are computed as ``count / denominator * 100`` (ratio first, as upstream's
percentages carry float noise like 65.10000000000001); the published Avg-Acc rounding removes
that noise, so a SQL view may use either order for Avg-Acc but should use this one for the
unrounded per-class values it is compared against.

Conventions (spec ``uxbench.md`` §3):

- T1 convention C (published): per-class accuracy over rows whose pred is valid; invalid rows
  are counted per class but left out of the denominators.
- T1 convention B (strict): per-class accuracy over all rows of the class; invalid = wrong.
- Avg-Acc: ``round((round(good, 2) + round(bad, 2)) / 2, 1)`` in Python floats, the rule that
  reproduces all 26 published values (naive ``round((g + b) / 2, 1)`` misses 7 by 0.1).
- T2 Good% and T3 Recovery Rate: verdict +1 over judged-valid rows; invalid rows counted apart.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, TypeVar

import numpy as np

from uxlocal import stats

# ---------------------------------------------------------------- rows


@dataclass(frozen=True)
class JudgeVerdict:
    """One T1 item's outcome."""

    item_id: str
    ground_truth: int
    """-1 disliked, 1 liked."""
    pred: int | None
    """-1, 1, or None when the judge output was unusable."""
    p_good: float | None = None
    """Probability of the good label, renormalized over the two labels; None if not recorded."""
    scenario: str | None = None
    difficulty: str | None = None
    dimension: str | None = None
    """failure_dimension for disliked items, success_dimension for liked ones."""


@dataclass(frozen=True)
class ReplyVerdict:
    """One T2 or T3 item's judged candidate reply."""

    item_id: str
    verdict: int | None
    """1 good, -1 bad, None when not judged or the judge output was unusable."""
    p_good: float | None = None
    scenario: str | None = None
    difficulty: str | None = None
    dimension: str | None = None


RowT = TypeVar("RowT", JudgeVerdict, ReplyVerdict)
JudgeRows = Iterable[JudgeVerdict | Mapping[str, Any]]
ReplyRows = Iterable[ReplyVerdict | Mapping[str, Any]]


def _coerce(rows: Iterable[Any], cls: type[RowT]) -> list[RowT]:
    """Dataclass rows as-is, mappings by field name (extra keys such as run_id ignored)."""
    names = {f.name for f in fields(cls)}
    out = [r if isinstance(r, cls) else cls(**{k: v for k, v in r.items() if k in names}) for r in rows]
    seen: set[str] = set()
    for row in out:
        if row.item_id in seen:
            raise ValueError(f"duplicate item_id {row.item_id!r}: pass one row per item")
        seen.add(row.item_id)
    return out


def _check_label(value: int | None, name: str, *, allow_none: bool) -> None:
    if value is None and allow_none:
        return
    if value not in (-1, 1):
        hint = " (use None for an invalid output)" if value == 0 else ""
        raise ValueError(f"{name} must be -1 or 1, got {value!r}{hint}")


def _check_prob(p: float | None) -> None:
    if p is not None and not 0.0 <= p <= 1.0:
        raise ValueError(f"p_good must be within [0, 1], got {p!r}")


def judge_rows(rows: JudgeRows) -> list[JudgeVerdict]:
    """Validate T1 rows: ValueError on a bad label, probability or duplicate id."""
    out = _coerce(rows, JudgeVerdict)
    for row in out:
        _check_label(row.ground_truth, "ground_truth", allow_none=False)
        _check_label(row.pred, "pred", allow_none=True)
        _check_prob(row.p_good)
    return out


def reply_rows(rows: ReplyRows) -> list[ReplyVerdict]:
    """Validate T2/T3 rows the same way."""
    out = _coerce(rows, ReplyVerdict)
    for row in out:
        _check_label(row.verdict, "verdict", allow_none=True)
        _check_prob(row.p_good)
    return out


def verdict_from_p_good(p_good: float) -> int:
    """Greedy verdict from P(good): ties go to good, as upstream's greedy decode did (spec §2.4).

    Thresholding at ``> 0.5`` instead flipped about 7.5% of upstream's verdicts.
    """
    return 1 if p_good >= 0.5 else -1


# ---------------------------------------------------------------- T1 accuracy


def published_avg(good_pct: float, bad_pct: float) -> float:
    """Avg-Acc as published: ``round((round(good, 2) + round(bad, 2)) / 2, 1)``.

    Python's ``round`` works on the binary float, so 75.05 rounds to 75.0; a SQL view must
    reproduce that (DOUBLE, round-half-even on the stored value), not decimal half-up.
    """
    return round((round(good_pct, 2) + round(bad_pct, 2)) / 2, 1)


@dataclass(frozen=True)
class ClassCounts:
    """Outcome counts for one ground-truth class."""

    n: int
    """Items of the class."""
    n_valid: int
    """Items whose pred is -1 or 1."""
    n_correct: int
    n_invalid: int

    @property
    def acc(self) -> float | None:
        """Convention C: correct / valid, in percent; None when nothing is valid."""
        return self.n_correct / self.n_valid * 100 if self.n_valid else None

    @property
    def acc_strict(self) -> float | None:
        """Convention B: correct / all items of the class, in percent."""
        return self.n_correct / self.n * 100 if self.n else None


def _class_counts(rows: list[JudgeVerdict], truth: int) -> ClassCounts:
    own = [r for r in rows if r.ground_truth == truth]
    valid = [r for r in own if r.pred is not None]
    correct = sum(1 for r in valid if r.pred == truth)
    return ClassCounts(n=len(own), n_valid=len(valid), n_correct=correct, n_invalid=len(own) - len(valid))


@dataclass(frozen=True)
class JudgeAccuracy:
    """T1 accuracy under both conventions, with the counts behind it."""

    good: ClassCounts
    bad: ClassCounts

    @property
    def good_acc(self) -> float | None:
        """Good-Acc, convention C, unrounded percent (display with ``round(x, 1)``)."""
        return self.good.acc

    @property
    def bad_acc(self) -> float | None:
        """Bad-Acc, convention C, unrounded percent."""
        return self.bad.acc

    @property
    def avg_acc(self) -> float | None:
        """Avg-Acc, convention C, with the published rounding (one decimal)."""
        return _avg_or_none(self.good.acc, self.bad.acc)

    @property
    def avg_acc_strict(self) -> float | None:
        """Avg-Acc, convention B, same rounding rule."""
        return _avg_or_none(self.good.acc_strict, self.bad.acc_strict)


def _avg_or_none(good: float | None, bad: float | None) -> float | None:
    return None if good is None or bad is None else published_avg(good, bad)


def judge_accuracy(rows: JudgeRows) -> JudgeAccuracy:
    """Good-Acc, Bad-Acc and Avg-Acc (C and B) with per-class invalid counts."""
    checked = judge_rows(rows)
    return JudgeAccuracy(good=_class_counts(checked, 1), bad=_class_counts(checked, -1))


# ---------------------------------------------------------------- T1 ranking and calibration


def auroc(rows: JudgeRows) -> float | None:
    """AUROC of ``p_good`` against ground truth (rank-based Mann-Whitney; a tie counts 0.5).

    Uses every row with a recorded ``p_good``, valid pred or not; None when a class has none.
    """
    scored = [(r.p_good, r.ground_truth) for r in judge_rows(rows) if r.p_good is not None]
    return stats.auroc([t == 1 for _, t in scored], [p for p, _ in scored])


def _confidence(p_good: float, pred: int) -> float:
    return p_good if pred == 1 else 1.0 - p_good


def expected_calibration_error(rows: JudgeRows, *, n_bins: int = 10) -> float | None:
    """ECE (0-1) of the judge's confidence in its own verdict.

    Confidence is P(predicted label): ``p_good`` for pred 1, ``1 - p_good`` for pred -1;
    correctness is pred == ground_truth. Bins are equal-width over [0, 1], left-closed, the last
    one closed on both sides (confidence 1.0 falls in bin 9 of 10). ECE = sum over bins of
    (bin share of rows) * |accuracy - mean confidence|. Rows with an invalid pred or no p_good
    are left out; None when none remain. Greedy two-label confidences are >= 0.5, so the lower
    half of the bins stays empty unless preds were sampled.
    """
    pairs = [(_confidence(r.p_good, r.pred), r.pred == r.ground_truth)
             for r in judge_rows(rows) if r.pred is not None and r.p_good is not None]
    return stats.ece([c for c, _ in pairs], [ok for _, ok in pairs], bins=n_bins)


# ---------------------------------------------------------------- T2 / T3 rates


@dataclass(frozen=True)
class RateResult:
    """Good% (T2) or Recovery Rate (T3), with the counts behind it."""

    n: int
    """Items given (one row each)."""
    n_valid: int
    """Items with a verdict of -1 or 1: the published denominator."""
    n_good: int
    n_invalid: int

    @property
    def rate(self) -> float | None:
        """Percent good over judged-valid items (published); None when none is valid."""
        return self.n_good / self.n_valid * 100 if self.n_valid else None

    @property
    def rate_strict(self) -> float | None:
        """Percent good over all items (invalid = not good), the old ``/4900`` variant."""
        return self.n_good / self.n * 100 if self.n else None


def good_rate(rows: ReplyRows) -> RateResult:
    """T2 Good%: share of candidate replies the judge rated good."""
    checked = reply_rows(rows)
    valid = [r for r in checked if r.verdict is not None]
    n_good = sum(1 for r in valid if r.verdict == 1)
    return RateResult(n=len(checked), n_valid=len(valid), n_good=n_good, n_invalid=len(checked) - len(valid))


def recovery_rate(rows: ReplyRows) -> RateResult:
    """T3 Recovery Rate: the Good% formula applied to recovery replies (spec §3.3)."""
    return good_rate(rows)


# ---------------------------------------------------------------- bootstrap


Interval = stats.Interval
"""A point estimate with its percentile-bootstrap interval (same unit as the point)."""

JudgeMetric = Literal["good_acc", "bad_acc", "avg_acc"]


def _rate(hits: np.ndarray, valid: np.ndarray) -> float | None:
    """Percent hits/valid (ratio first, as the published per-class values); None without valid rows."""
    den = int(valid.sum())
    return int(hits.sum()) / den * 100 if den else None


def bootstrap_judge(rows: JudgeRows, metric: JudgeMetric = "avg_acc", *, n_resamples: int = 2000,
                    seed: int = 0, level: float = 0.95) -> Interval:
    """Percentile bootstrap interval for a T1 accuracy (convention C), on ``stats.bootstrap``.

    Items are resampled with replacement *within each ground-truth class* (stratified), so
    every resample keeps the real class sizes; a fixed ``seed`` makes intervals reproducible.
    The avg_acc point and bounds are the unrounded mean (good + bad) / 2: the published
    rounding would quantize the resampling distribution.
    """
    checked = judge_rows(rows)
    truth = np.array([r.ground_truth for r in checked])
    hits = np.array([r.pred == r.ground_truth for r in checked], dtype=bool)
    valid = np.array([r.pred is not None for r in checked], dtype=bool)

    def per_class(idx: np.ndarray, label: int) -> float | None:
        own = idx[truth[idx] == label]
        return _rate(hits[own], valid[own])

    def statistic(idx: np.ndarray) -> float | None:
        if metric != "avg_acc":
            return per_class(idx, 1 if metric == "good_acc" else -1)
        return _mean_or_none(per_class(idx, 1), per_class(idx, -1))

    return stats.bootstrap(statistic, len(checked), strata=list(truth), n_resamples=n_resamples, seed=seed,
                           level=level)


def _mean_or_none(good: float | None, bad: float | None) -> float | None:
    return None if good is None or bad is None else (good + bad) / 2


def bootstrap_rate(rows: ReplyRows, *, n_resamples: int = 2000, seed: int = 0,
                   level: float = 0.95) -> Interval:
    """Percentile bootstrap interval for Good% / Recovery Rate (items resampled, all at once).

    Invalid rows are resampled too and stay out of each resample's denominator, so the
    interval reflects the published judged-valid convention.
    """
    checked = reply_rows(rows)
    hits = np.array([r.verdict == 1 for r in checked], dtype=bool)
    valid = np.array([r.verdict is not None for r in checked], dtype=bool)
    return stats.bootstrap(lambda idx: _rate(hits[idx], valid[idx]), len(checked), n_resamples=n_resamples,
                           seed=seed, level=level)


# ---------------------------------------------------------------- breakdowns

BreakdownKey = Literal["scenario", "difficulty", "dimension"]
ResultT = TypeVar("ResultT")
UNKNOWN = "unknown"
"""Group name for rows whose breakdown field is missing (upstream's T3 scorer does the same)."""


def breakdown(rows: Iterable[Any], by: BreakdownKey,
              metric: Callable[[list[Any]], ResultT]) -> dict[str, ResultT]:
    """Compute ``metric`` per value of ``by`` (``judge_accuracy``, ``good_rate``, ``auroc`` ...).

    Groups are sorted by name; a missing or blank value groups under ``UNKNOWN``.
    """
    groups: dict[str, list[Any]] = {}
    for row in rows:
        value = row.get(by) if isinstance(row, Mapping) else getattr(row, by)
        key = value.strip() if isinstance(value, str) and value.strip() else UNKNOWN
        groups.setdefault(key, []).append(row)
    return {key: metric(groups[key]) for key in sorted(groups)}

