"""uxlocal.stats against textbook formulas computed here on fixed data (ties included)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from uxlocal import stats

HUMAN = [1, 2, 2, 3, 4, 4, 5, 5, 3, 1]
JUDGE = [1.2, 2.5, 2.0, 2.0, 4.4, 3.9, 5.0, 4.1, 3.0, 2.0]


def _tau_b(x: list[float], y: list[float]) -> float:
    s_xy = s_x = s_y = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        dx, dy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        s_xy += dx * dy
        s_x += abs(dx)
        s_y += abs(dy)
    return s_xy / math.sqrt(s_x * s_y)


def _avg_ranks(x: list[float]) -> list[float]:
    return [sum(v < a for v in x) + (sum(v == a for v in x) + 1) / 2 for a in x]


def test_kendall_tau_b_matches_pair_counting_with_ties() -> None:
    assert stats.kendall_tau_b(JUDGE, HUMAN) == pytest.approx(_tau_b(JUDGE, HUMAN))


def test_spearman_is_pearson_of_average_ranks_with_ties() -> None:
    expected = np.corrcoef(_avg_ranks(JUDGE), _avg_ranks(HUMAN))[0, 1]
    assert stats.spearman(JUDGE, HUMAN) == pytest.approx(expected)
    assert stats.pearson(JUDGE, HUMAN) == pytest.approx(np.corrcoef(JUDGE, HUMAN)[0, 1])


def test_rank_statistics_are_none_when_input_is_constant() -> None:
    assert stats.spearman([1, 1, 1], [1, 2, 3]) is None
    assert stats.kendall_tau_b([1, 2, 3], [2, 2, 2]) is None


def test_cohen_kappa_matches_observed_and_chance_agreement() -> None:
    truth = ["a", "a", "b", "b", "c", "a", "b", "c"]
    pred = ["a", "b", "b", "b", "c", "a", "c", "a"]
    po = np.mean([t == p for t, p in zip(truth, pred, strict=True)])
    pe = sum(truth.count(k) * pred.count(k) for k in "abc") / len(truth) ** 2
    assert stats.cohen_kappa(truth, pred) == pytest.approx((po - pe) / (1 - pe))
    assert stats.accuracy(truth, pred) == pytest.approx(po)


def test_macro_f1_averages_per_class_f1() -> None:
    truth = ["a", "a", "b", "b", "c", "a"]
    pred = ["a", "b", "b", "b", "a", "a"]
    f1 = []
    for k in "abc":
        tp = sum(t == k and p == k for t, p in zip(truth, pred, strict=True))
        fp = sum(t != k and p == k for t, p in zip(truth, pred, strict=True))
        fn = sum(t == k and p != k for t, p in zip(truth, pred, strict=True))
        f1.append(2 * tp / (2 * tp + fp + fn))
    assert stats.macro_f1(truth, pred) == pytest.approx(sum(f1) / 3)


def test_auroc_counts_ties_as_one_half() -> None:
    positive = [True, True, False, False, True]
    score = [0.9, 0.4, 0.4, 0.1, 0.6]
    pairs = [
        (p, n)
        for p in [s for s, y in zip(score, positive, strict=True) if y]
        for n in [s for s, y in zip(score, positive, strict=True) if not y]
    ]
    expected = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in pairs) / len(pairs)
    assert stats.auroc(positive, score) == pytest.approx(expected)
    assert stats.auroc([True, True], [0.1, 0.2]) is None


def test_ece_weights_bin_gaps_by_bin_share() -> None:
    conf = [0.95, 0.95, 0.65, 0.62, 1.0]
    correct = [True, False, True, True, True]
    # bins: 9 -> {0.95, 0.95, 1.0} acc 2/3 conf 0.9667; 6 -> {0.65, 0.62} acc 1 conf 0.635
    expected = 3 / 5 * abs(2 / 3 - (0.95 + 0.95 + 1.0) / 3) + 2 / 5 * abs(1 - 0.635)
    assert stats.ece(conf, correct) == pytest.approx(expected)


def test_quadratic_weighted_kappa_matches_weight_matrix_formula() -> None:
    human, judge, scale = [1, 2, 3, 4, 5, 3, 2], [1, 3, 3, 5, 4, 2, 2], [1, 2, 3, 4, 5]
    n = len(human)
    observed = sum((h - j) ** 2 for h, j in zip(human, judge, strict=True)) / n
    expected = sum(human.count(a) * judge.count(b) * (a - b) ** 2 for a in scale for b in scale) / n ** 2
    assert stats.quadratic_weighted_kappa(human, judge, scale) == pytest.approx(1 - observed / expected)


def test_acc_eq_counts_tie_matching_tie_within_groups() -> None:
    human = [1, 1, 2, 3, 3]
    judge = [2, 2, 1, 3, 4]
    groups = ["x", "x", "x", "y", "y"]
    # group x pairs: (0,1) tie/tie agree, (0,2) +/- disagree, (1,2) disagree; group y: (3,4) tie vs < disagree
    assert stats.acc_eq(human, judge, groups) == pytest.approx(1 / 4)
    # epsilon 1 makes the judge's 3 vs 4 a tie, matching the human tie
    assert stats.acc_eq(human, judge, groups, epsilon=1.0) == pytest.approx(2 / 4)
    assert stats.acc_eq([1], [1]) is None


def test_bootstrap_is_reproducible_and_contains_point_when_seeded() -> None:
    values = np.array([0.1, 0.5, 0.9, 0.3, 0.7, 0.2, 0.8, 0.6])
    mean = lambda idx: float(values[idx].mean())  # noqa: E731
    first = stats.bootstrap(mean, len(values), n_resamples=500, seed=3)
    again = stats.bootstrap(mean, len(values), n_resamples=500, seed=3)
    assert first == again
    assert first.low is not None and first.high is not None
    assert first.low <= first.point <= first.high
    assert first.point == pytest.approx(values.mean())


def test_bootstrap_resamples_whole_clusters_when_given() -> None:
    values = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    seen: set[int] = set()

    def count_ones(idx: np.ndarray) -> float:
        seen.add(int(values[idx].sum()))
        return float(values[idx].mean())
    stats.bootstrap(count_ones, 6, clusters=["a", "a", "a", "b", "b", "b"], n_resamples=200, seed=0)
    # drawing two whole clusters gives 0, 3 or 6 ones, never a partial cluster
    assert seen <= {0, 3, 6} and len(seen) >= 2


def _pairs_reference(x: list[float], y: list[float | None], groups: list[str]) -> tuple[int, ...]:
    """(concordant, discordant, x-tied, y-tied, both-tied, missing) by looping over pairs."""
    out = [0] * 6
    for i, j in itertools.combinations(range(len(x)), 2):
        if groups[i] != groups[j]:
            continue
        sx = np.sign(x[i] - x[j])
        if y[i] is None or y[j] is None:
            out[5] += sx != 0
            continue
        sy = np.sign(y[i] - y[j])  # type: ignore[operator]
        out[0 if sx and sy and sx == sy else 1 if sx and sy else 2 if sy else 3 if sx else 4] += 1
    return tuple(out)


@pytest.mark.parametrize("seed", range(4))  # random scores 1..4 (many ties), 1-4 groups, some None
def test_pair_counts_match_a_pair_loop_within_groups(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = [float(v) for v in rng.integers(1, 5, size=15)]
    y = [None if rng.random() < 0.15 else float(v) for v in rng.integers(1, 5, size=15)]
    groups = [f"g{v}" for v in rng.integers(0, 1 + seed, size=15)]
    counts = stats.pair_counts(x, y, groups)
    fields = (
        counts.concordant,
        counts.discordant,
        counts.x_tied,
        counts.y_tied,
        counts.both_tied,
        counts.missing,
    )
    assert fields == _pairs_reference(x, y, groups)


def test_kendall_tau_b_within_one_group_equals_scipy() -> None:
    assert stats.kendall_tau_b_within(HUMAN, JUDGE, ["s"] * len(HUMAN)) == pytest.approx(
        stats.kendall_tau_b(HUMAN, JUDGE))


def test_kendall_tau_b_within_pools_pairs_and_never_crosses_groups() -> None:
    # g1: (1,2) concordant, (1,3) concordant, (2,3) judge tie; g2: one discordant pair.
    # Across groups the pairs would add concordance; pooled within: C=2, D=1, 4 pairs, 1 judge tie.
    x, y, g = [1, 2, 3, 10, 20], [1, 2, 2, 30, 25], ["g1", "g1", "g1", "g2", "g2"]
    assert stats.kendall_tau_b_within(x, y, g) == pytest.approx((2 - 1) / math.sqrt(4 * 3))


def test_bootstrap_keeps_stratum_sizes_when_strata_given() -> None:
    labels = np.array([1] * 3 + [0] * 7)
    sizes: set[int] = set()

    def positives(idx: np.ndarray) -> float:
        sizes.add(int(labels[idx].sum()))
        return float(labels[idx].mean())
    result = stats.bootstrap(positives, 10, strata=list(labels), n_resamples=100, seed=0)
    assert sizes == {3}  # every resample keeps 3 positives and 7 negatives
    assert (result.low, result.point, result.high) == (0.3, 0.3, 0.3)


def test_bootstrap_many_numbers_each_drawn_cluster_copy_apart() -> None:
    units_per_draw: list[int] = []

    def distinct_units(draw: stats.Draw) -> float:
        units_per_draw.append(len(set(draw.unit.tolist())))
        return float(len(draw.index))
    stats.bootstrap_many({"n": distinct_units}, 4, clusters=["a", "a", "b", "b"], n_resamples=30, seed=2)
    assert units_per_draw[0] == 2  # the original data: its two clusters
    assert set(units_per_draw[1:]) == {2}  # a cluster drawn twice is two units, never merged


def test_bootstrap_many_statistics_share_their_resamples() -> None:
    values = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    result = stats.bootstrap_many(
        {"sum": lambda d: float(values[d.index].sum()), "mean": lambda d: float(values[d.index].mean())},
        5,
        n_resamples=200,
        seed=4,
    )
    assert result["sum"].low == pytest.approx(5 * result["mean"].low)  # type: ignore[operator]
    assert result["sum"].high == pytest.approx(5 * result["mean"].high)  # type: ignore[operator]


def test_bootstrap_draw_of_single_item_clusters_equals_the_cluster_loop() -> None:
    import numpy as np

    from uxlocal.stats import _draw, _plan

    clusters = [f"c{i}" for i in range(50)]
    strata = [i % 3 for i in range(50)]
    fast = _plan(50, clusters, strata)
    assert all(isinstance(stratum, np.ndarray) for stratum in fast)
    slow = [[np.asarray([i]) for i in stratum] for stratum in fast]  # what the plan was before
    for seed in range(3):
        a, b = _draw(fast, np.random.default_rng(seed)), _draw(slow, np.random.default_rng(seed))
        assert a.index.tolist() == b.index.tolist() and a.unit.tolist() == b.unit.tolist()


def test_bootstrap_with_one_item_per_cluster_draws_as_without_clusters() -> None:
    values = np.random.default_rng(3).random(200)
    strata = [i % 3 for i in range(200)]
    def mean(idx: np.ndarray) -> float:
        return float(values[idx].mean())
    for groups in (None, strata):
        plain = stats.bootstrap(mean, 200, strata=groups, n_resamples=30, seed=4)
        clustered = stats.bootstrap(mean, 200, clusters=[f"c{i}" for i in range(200)], strata=groups,
                                    n_resamples=30, seed=4)
        assert clustered == plain and plain.low is not None


@pytest.mark.parametrize("case", ["random", "one class", "classes only in pred", "empty", "one item"])
def test_label_statistics_give_the_same_on_arrays_as_on_lists(case: str) -> None:
    """The judge report passes numpy arrays, the other suites lists: the same numbers, None alike."""
    rng = np.random.default_rng(7)
    truth, pred = rng.integers(0, 3, 200), rng.integers(0, 3, 200)
    if case == "one class":
        truth = pred = np.zeros(50, dtype=np.int32)
    elif case == "classes only in pred":
        truth, pred = np.zeros(50, dtype=np.int32), rng.integers(1, 4, 50).astype(np.int32)
    elif case in ("empty", "one item"):
        size = 0 if case == "empty" else 1
        truth, pred = truth[:size], pred[:size]
    score, conf = np.round(rng.random(len(truth)), 1), 0.5 + rng.random(len(truth)) / 2
    on_arrays = (stats.accuracy(truth, pred), stats.cohen_kappa(truth, pred), stats.macro_f1(truth, pred),
                 stats.auroc(truth == 0, score), stats.ece(conf, truth == pred))
    t, p = truth.tolist(), pred.tolist()
    on_lists = (stats.accuracy(t, p), stats.cohen_kappa(t, p), stats.macro_f1(t, p),
                stats.auroc((truth == 0).tolist(), score.tolist()),
                stats.ece(conf.tolist(), (truth == pred).tolist()))
    assert on_arrays == on_lists
