"""Reference metrics on hand-built verdict sets, including the published numbers of spec §3 and §5."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uxlocal.suites.uxbench.metrics import (
    UNKNOWN,
    JudgeMetric,
    JudgeVerdict,
    ReplyVerdict,
    auroc,
    bootstrap_judge,
    bootstrap_rate,
    breakdown,
    expected_calibration_error,
    good_rate,
    judge_accuracy,
    published_avg,
    recovery_rate,
    verdict_from_p_good,
)


def _v(value: float | None) -> float:
    """Return the value, which the test expects to be defined."""
    assert value is not None
    return value


def _class_rows(truth: int, n: int, correct: int, invalid: int, prefix: str) -> list[JudgeVerdict]:
    """``n`` items of one class: ``correct`` right, ``invalid`` unusable, the rest wrong."""
    preds = [truth] * correct + [None] * invalid + [-truth] * (n - correct - invalid)
    return [JudgeVerdict(f"{prefix}{k}", truth, pred) for k, pred in enumerate(preds)]


def _judge_set(good: tuple[int, int, int], bad: tuple[int, int, int]) -> list[JudgeVerdict]:
    return _class_rows(1, *good, prefix="g") + _class_rows(-1, *bad, prefix="b")


# ---------------------------------------------------------------- T1 accuracy and rounding


def test_gpt5_published_numbers_follow_convention_c() -> None:
    # spec §3.1: 2 unparseable good and 15 unparseable bad rows out of 1,000 each
    acc = judge_accuracy(_judge_set(good=(1000, 893, 2), bad=(1000, 554, 15)))
    assert (round(_v(acc.good_acc), 1), round(_v(acc.bad_acc), 1), acc.avg_acc) == (89.5, 56.2, 72.9)
    assert (acc.good.n_invalid, acc.bad.n_invalid, acc.good.n_valid, acc.bad.n_valid) == (2, 15, 998, 985)


def test_gpt5_strict_convention_b_counts_invalid_as_wrong() -> None:
    acc = judge_accuracy(_judge_set(good=(1000, 893, 2), bad=(1000, 554, 15)))
    strict = (round(_v(acc.good.acc_strict), 1), round(_v(acc.bad.acc_strict), 1), acc.avg_acc_strict)
    assert strict == (89.3, 55.4, 72.3)


@pytest.mark.parametrize(("good", "bad", "avg"), [
    (893 / 998 * 100, 554 / 985 * 100, 72.9),  # GPT-5, parse failures excluded
    (85.0, 65.1, 75.0),  # GPT-5.2: 75.05 in binary float rounds down
    (98.8, 22.9, 60.8),  # Doubao Seed 2.0 Pro: 60.85 rounds down
    (96.9, 36.4, 66.7),  # GLM-5: 66.65 rounds up
    (89.1, 61.5, 75.3),  # Claude Opus 4.7
    (82.1, 72.4, 77.2),  # the fine-tuned GRM: 77.25 rounds down
])
def test_published_avg_reproduces_leaderboard(good: float, bad: float, avg: float) -> None:
    assert published_avg(good, bad) == avg


@pytest.mark.parametrize(("good", "bad", "avg", "naive"), [
    (850, 651, 75.0, 75.1),  # GPT-5.2: 651/1000*100 is 65.10000000000001 in floats
    (988, 229, 60.8, 60.9),  # Doubao Seed 2.0 Pro
    (969, 364, 66.7, 66.6),  # GLM-5: 96.89999999999999 before rounding
])
def test_avg_acc_from_counts_matches_leaderboard_where_naive_rounding_does_not(
        good: int, bad: int, avg: float, naive: float) -> None:
    acc = judge_accuracy(_judge_set(good=(1000, good, 0), bad=(1000, bad, 0)))
    assert acc.avg_acc == avg
    assert round((_v(acc.good_acc) + _v(acc.bad_acc)) / 2, 1) == naive


def test_judge_accuracy_with_a_class_all_invalid_gives_none() -> None:
    acc = judge_accuracy(_judge_set(good=(3, 0, 3), bad=(2, 1, 0)))
    assert acc.good_acc is None and acc.avg_acc is None
    assert acc.good.acc_strict == 0.0 and acc.bad_acc == 50.0


def test_judge_accuracy_accepts_dict_rows_with_extra_columns() -> None:
    rows = [{"item_id": "a", "ground_truth": 1, "pred": 1, "run_id": "r1"},
            {"item_id": "b", "ground_truth": -1, "pred": None, "run_id": "r1"},
            {"item_id": "c", "ground_truth": -1, "pred": -1, "run_id": "r1"}]
    acc = judge_accuracy(rows)
    assert (acc.good_acc, acc.bad_acc, acc.bad.n_invalid) == (100.0, 100.0, 1)


@pytest.mark.parametrize(("rows", "message"), [
    # the same item twice: upstream's resume bug double-counted exactly like this
    ([JudgeVerdict("a", 1, 1), JudgeVerdict("a", 1, -1)], "duplicate item_id 'a'"),
    # 0 is not a label; invalid outputs are None
    ([JudgeVerdict("a", 1, 0)], "use None for an invalid output"),
    # ground truth must be a label
    ([JudgeVerdict("a", 0, 1)], "ground_truth must be -1 or 1"),
    # probabilities stay within [0, 1]
    ([JudgeVerdict("a", 1, 1, p_good=1.5)], "p_good must be within"),
])
def test_judge_rows_reject_malformed_input(rows: list[JudgeVerdict], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        judge_accuracy(rows)


# ---------------------------------------------------------------- AUROC


def _scored(pos: list[float], neg: list[float]) -> list[JudgeVerdict]:
    return [*(JudgeVerdict(f"p{k}", 1, 1, p_good=p) for k, p in enumerate(pos)),
            *(JudgeVerdict(f"n{k}", -1, -1, p_good=p) for k, p in enumerate(neg))]


@pytest.mark.parametrize(("pos", "neg", "expected"), [
    ([0.9, 0.8], [0.2, 0.1], 1.0),  # perfect separation
    ([0.1, 0.2], [0.8, 0.9], 0.0),  # perfectly reversed
    ([0.5, 0.5], [0.5, 0.5, 0.5], 0.5),  # all tied: every pair counts one half
    ([0.9, 0.4], [0.4, 0.1], 0.875),  # one tied pair out of four: (1 + 1 + 0.5 + 1) / 4
])
def test_auroc_on_known_cases(pos: list[float], neg: list[float], expected: float) -> None:
    assert auroc(_scored(pos, neg)) == pytest.approx(expected)


def test_auroc_needs_both_classes_and_ignores_rows_without_p_good() -> None:
    assert auroc(_scored([0.9], [])) is None
    rows = [*_scored([0.9], [0.1]), JudgeVerdict("x", -1, None, p_good=None)]
    assert auroc(rows) == 1.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=1, max_size=12),
       st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=1, max_size=12))
def test_auroc_equals_pairwise_mann_whitney(pos: list[float], neg: list[float]) -> None:
    pairs = [1.0 if p > n else 0.5 if p == n else 0.0 for p, n in itertools.product(pos, neg)]
    assert auroc(_scored(pos, neg)) == pytest.approx(sum(pairs) / len(pairs))


# ---------------------------------------------------------------- ECE


def test_ece_is_zero_when_confidence_matches_accuracy() -> None:
    rows = [JudgeVerdict(f"i{k}", 1 if k < 8 else -1, 1, p_good=0.8) for k in range(10)]
    assert expected_calibration_error(rows) == pytest.approx(0.0)


def test_ece_of_overconfident_judge() -> None:
    rows = [JudgeVerdict(f"i{k}", 1 if k % 2 else -1, 1, p_good=1.0) for k in range(10)]
    assert expected_calibration_error(rows) == pytest.approx(0.5)


def test_ece_weights_bins_by_size_and_uses_predicted_label_confidence() -> None:
    rows = [JudgeVerdict("a", 1, 1, p_good=0.95), JudgeVerdict("b", -1, -1, p_good=0.05),  # bin 9: acc 1
            JudgeVerdict("c", 1, 1, p_good=0.6), JudgeVerdict("d", 1, -1, p_good=0.4),  # bin 6: acc .5
            JudgeVerdict("e", 1, None, p_good=0.7)]  # invalid output: left out
    assert expected_calibration_error(rows) == pytest.approx(0.5 * 0.05 + 0.5 * 0.1)


def test_ece_is_none_without_scored_valid_rows() -> None:
    assert expected_calibration_error([JudgeVerdict("a", 1, None, p_good=0.9)]) is None


# ---------------------------------------------------------------- T2 / T3 rates


def _replies(good: int, bad: int, invalid: int) -> list[ReplyVerdict]:
    verdicts = [1] * good + [-1] * bad + [None] * invalid
    return [ReplyVerdict(f"r{k}", v) for k, v in enumerate(verdicts)]


def test_recovery_rate_uses_judged_valid_denominator() -> None:
    # spec §3.3, Gemini 3.0 Flash: 62 good of 489 judged, 11 unjudged -> 12.7 (the /500 variant gives 12.4)
    result = recovery_rate(_replies(good=62, bad=427, invalid=11))
    assert (round(_v(result.rate), 1), round(_v(result.rate_strict), 1)) == (12.7, 12.4)
    assert (result.n, result.n_valid, result.n_invalid) == (500, 489, 11)


def test_good_rate_matches_published_task2_count() -> None:
    # spec §5.2, Gemini 3.1 Pro: 2798 good of 4900
    assert round(_v(good_rate(_replies(good=2798, bad=2102, invalid=0)).rate), 1) == 57.1


def test_good_rate_of_nothing_valid_is_none() -> None:
    result = good_rate(_replies(good=0, bad=0, invalid=3))
    assert result.rate is None and result.rate_strict == 0.0


def test_verdict_from_p_good_sends_ties_to_good() -> None:
    assert [verdict_from_p_good(p) for p in (0.49, 0.5, 0.51)] == [-1, 1, 1]


# ---------------------------------------------------------------- bootstrap


def test_bootstrap_judge_interval_contains_point_and_is_reproducible() -> None:
    rows = _judge_set(good=(200, 170, 5), bad=(200, 90, 10))
    first = bootstrap_judge(rows, "avg_acc", n_resamples=500, seed=7)
    again = bootstrap_judge(rows, "avg_acc", n_resamples=500, seed=7)
    assert first == again
    acc = judge_accuracy(rows)
    assert first.point == pytest.approx((_v(acc.good_acc) + _v(acc.bad_acc)) / 2)
    assert _v(first.low) < _v(first.point) < _v(first.high)


@pytest.mark.parametrize("metric", ["good_acc", "bad_acc"])
def test_bootstrap_per_class_interval_contains_point(metric: JudgeMetric) -> None:
    rows = _judge_set(good=(150, 120, 3), bad=(150, 60, 0))
    interval = bootstrap_judge(rows, metric, n_resamples=400)
    assert _v(interval.low) <= _v(interval.point) <= _v(interval.high)


def test_bootstrap_avg_width_is_plausible_for_binomial_noise() -> None:
    # two classes of 1,000 at 0.7 and 0.4: the half-width of Avg-Acc is about 1.96 * 1.1 pp
    rows = _judge_set(good=(1000, 700, 0), bad=(1000, 400, 0))
    interval = bootstrap_judge(rows, n_resamples=1000)
    half_width = (_v(interval.high) - _v(interval.low)) / 2
    assert 1.5 < half_width < 2.8


def test_bootstrap_judge_equals_a_stratified_percentile_reference() -> None:
    # the intervals moved onto uxlocal.stats.bootstrap (issue 17): each resample now draws the
    # liked class then the disliked class; this loop is that procedure written out by hand
    rows = _judge_set(good=(40, 30, 2), bad=(30, 12, 1))
    rng = np.random.default_rng(5)
    draws = []
    for _ in range(300):
        rates = []
        for truth in (1, -1):
            own = [r for r in rows if r.ground_truth == truth]
            picked = [own[k] for k in rng.integers(0, len(own), size=len(own))]
            valid = [r for r in picked if r.pred is not None]
            rates.append(sum(r.pred == truth for r in valid) / len(valid) * 100)
        draws.append(sum(rates) / 2)
    interval = bootstrap_judge(rows, "avg_acc", n_resamples=300, seed=5)
    assert (interval.low, interval.high) == pytest.approx(tuple(np.percentile(draws, [2.5, 97.5])))


def test_bootstrap_rate_contains_point_and_handles_invalid_rows() -> None:
    interval = bootstrap_rate(_replies(good=30, bad=60, invalid=10), n_resamples=500)
    assert interval.point == pytest.approx(100 * 30 / 90)
    assert _v(interval.low) < _v(interval.point) < _v(interval.high)


def test_bootstrap_of_empty_class_is_none() -> None:
    interval = bootstrap_judge(_class_rows(1, 5, 4, 0, "g"), "bad_acc", n_resamples=50)
    assert (interval.point, interval.low, interval.high) == (None, None, None)


# ---------------------------------------------------------------- breakdowns


def test_breakdown_groups_by_field_with_unknown_for_missing() -> None:
    rows = [ReplyVerdict("a", 1, scenario="Info"), ReplyVerdict("b", -1, scenario="Info"),
            ReplyVerdict("c", 1, scenario=None), {"item_id": "d", "verdict": 1, "scenario": " "}]
    table = breakdown(rows, "scenario", good_rate)
    assert list(table) == ["Info", UNKNOWN]
    assert (table["Info"].rate, table[UNKNOWN].rate) == (50.0, 100.0)


def test_breakdown_by_difficulty_for_judge_accuracy() -> None:
    rows = [JudgeVerdict("a", 1, 1, difficulty="easy"), JudgeVerdict("b", -1, 1, difficulty="easy"),
            JudgeVerdict("c", -1, -1, difficulty="hard"), JudgeVerdict("d", 1, -1, difficulty="hard")]
    table = breakdown(rows, "difficulty", judge_accuracy)
    assert (table["easy"].good_acc, table["easy"].bad_acc) == (100.0, 0.0)
    assert (table["hard"].good_acc, table["hard"].bad_acc) == (0.0, 100.0)
    assert all(not math.isnan(t.avg_acc or 0.0) for t in table.values())
