"""Pairwise agreement, Kendall's tau-b, bootstrap intervals, realism rate and ranks on hand-built sets."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from uxlocal.suites.palate.agreement import (
    ScoredTurn,
    agreement_table,
    bootstrap_agreement,
    competition_ranks,
    kendall_tau_b,
    pairwise_agreement,
    realism_table,
)


def _session(sid: str, humans: list[float], scores: list[float | None]) -> list[ScoredTurn]:
    return [ScoredTurn(sid, h, s) for h, s in zip(humans, scores, strict=True)]


# s1: (5,3) scorer tie, (5,1) and (3,1) concordant.
# s2: (2,4a) discordant, (2,4b) concordant, (4a,4b) human tie.
HAND = _session("s1", [5, 3, 1], [4, 4, 2]) + _session("s2", [2, 4, 4], [3, 1, 5])


def test_pairwise_agreement_counts_ties_as_half_and_skips_human_ties() -> None:
    result = pairwise_agreement(HAND)
    assert (result.pairs, result.ties, result.missing) == (5, 1, 0)
    assert result.value == pytest.approx((3 + 0.5) / 5)
    assert pairwise_agreement(HAND, tie=0.0).value == pytest.approx(3 / 5)  # strict variant


def test_pairs_never_cross_sessions() -> None:
    # across sessions these turns would make concordant pairs; within each session there is no pair
    turns = _session("a", [5], [5]) + _session("b", [1], [1])
    assert pairwise_agreement(turns).pairs == 0 and pairwise_agreement(turns).value is None


def test_missing_scores_are_left_out_and_counted() -> None:
    result = pairwise_agreement(_session("s", [5, 3, 1], [4, None, 2]))
    assert (result.pairs, result.missing, result.value) == (1, 2, 1.0)


def test_constant_scorer_sits_at_chance() -> None:
    assert pairwise_agreement(_session("s", [1, 2, 3, 4, 5], [3] * 5)).value == 0.5


def test_kendall_tau_b_pools_within_session_pairs() -> None:
    # 6 pairs, 1 human tie, 1 score tie, C=3, D=1 -> (3-1)/sqrt(5*5)
    assert kendall_tau_b(HAND) == pytest.approx(0.4)


def _textbook_tau_b(x: list[float], y: list[float]) -> float:
    c = d = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        sx, sy = (x[i] > x[j]) - (x[i] < x[j]), (y[i] > y[j]) - (y[i] < y[j])
        tx += sx == 0
        ty += sy == 0
        if sx and sy:
            c += sx == sy
            d += sx != sy
    n0 = len(x) * (len(x) - 1) / 2
    return (c - d) / math.sqrt((n0 - tx) * (n0 - ty))


@pytest.mark.parametrize("seed", range(5))  # random sessions with ties on both sides
def test_kendall_tau_b_of_one_session_equals_the_textbook_formula(seed: int) -> None:
    rng = random.Random(seed)
    humans = [float(rng.randint(1, 5)) for _ in range(8)]
    scores = [float(rng.randint(1, 5)) for _ in range(8)]
    assert kendall_tau_b(_session("s", humans, scores)) == pytest.approx(_textbook_tau_b(humans, scores))


def test_kendall_tau_b_perfect_and_reversed_orders() -> None:
    assert kendall_tau_b(_session("s", [1, 2, 3, 4, 5], [1, 3, 2, 5, 4])) == pytest.approx(0.6)
    assert kendall_tau_b(_session("s", [1, 2, 3], [3, 2, 1])) == pytest.approx(-1.0)
    assert kendall_tau_b(_session("s", [1, 2, 3], [2, 2, 2])) is None  # scorer tied on every pair


def test_bootstrap_interval_brackets_the_estimate_and_collapses_on_identical_sessions() -> None:
    low, high = bootstrap_agreement([HAND], n_resamples=500, seed=1)
    assert low is not None and high is not None
    assert low <= pairwise_agreement(HAND).value <= high  # type: ignore[operator]
    same = _session("a", [5, 1], [4, 2]) + _session("b", [5, 1], [4, 2])
    assert bootstrap_agreement([same], n_resamples=50) == (1.0, 1.0)


def test_bootstrap_equals_a_session_resampling_reference() -> None:
    # the interval moved onto uxlocal.stats.bootstrap_many (issue 17): numpy's generator and
    # linear percentiles replace random.Random and nearest-rank bounds; this loop is the
    # procedure written out by hand (sessions drawn with replacement, each copy its own session)
    sessions = [HAND[:3], HAND[3:], _session("s3", [1, 2, 3, 4], [1, 3, 2, 2])]
    rng = np.random.default_rng(11)
    draws = []
    for _ in range(300):
        picked = [sessions[k] for k in rng.integers(0, len(sessions), size=len(sessions))]
        copies = [ScoredTurn(str(n), t.human, t.score) for n, s in enumerate(picked) for t in s]
        value = pairwise_agreement(copies).value
        if value is not None:
            draws.append(value)
    low, high = bootstrap_agreement([[t for s in sessions for t in s]], n_resamples=300, seed=11)
    assert (low, high) == pytest.approx(tuple(np.percentile(draws, [2.5, 97.5])))


def test_agreement_table_has_user_rows_and_an_unweighted_macro_row() -> None:
    rows = [("general", "u1", t.session_id, t.human, t.score) for t in HAND]
    rows += [("general", "u2", "x", 5, 5), ("general", "u2", "x", 1, 1)]
    table = agreement_table(rows, n_resamples=100)
    by_user = {r.user_id: r for r in table}
    assert by_user["u1"].agreement == pytest.approx(0.7) and by_user["u2"].agreement == 1.0
    assert by_user["macro"].agreement == pytest.approx(0.85)  # users weigh equally, not pairs
    assert by_user["macro"].pairs == 6 and by_user["macro"].sessions == 3
    assert by_user["u1"].kendall_tau == pytest.approx(0.4)


def test_realism_rate_per_user_and_macro() -> None:
    trials = [
        ("prompted", "u1", True, 0.7),
        ("prompted", "u1", False, 0.4),
        ("prompted", "u2", True, None),
        ("prompted", "u2", None, None),
        ("lora", "u1", False, 0.2),
    ]
    rows = {(r.simulator, r.user_id): r for r in realism_table(trials, n_resamples=50)}
    assert rows[("prompted", "u1")].picked_simulated == 0.5
    assert rows[("prompted", "u1")].p_simulated == pytest.approx(0.55)
    assert rows[("prompted", "u2")].trials == 1  # the invalid trial is not counted
    assert rows[("prompted", "macro")].picked_simulated == pytest.approx(0.75)
    assert rows[("lora", "macro")].picked_simulated == 0.0


def test_competition_ranks_share_the_better_rank_on_ties() -> None:
    assert competition_ranks({"A": 4.0, "B": 3.5, "C": 4.0, "D": None}) == {"A": 1, "B": 3, "C": 1, "D": None}
