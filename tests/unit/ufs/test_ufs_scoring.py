"""UFS arithmetic on hand-built verdict sets (issue 5, items 2 and 4; spec §A.3 Eq. 1)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from uxlocal.suites.userproxy.ufs.scoring import (
    CriterionVerdict,
    EpisodeRecord,
    agent_effort,
    bootstrap_ufs,
    delta_pass_rate,
    domain_ufs,
    effort_delta,
    episode_status,
    mean_ufs,
    success_violations,
    violation_counts,
)
from uxlocal.tau2 import Message


def v(
    cid: str,
    applicable: bool | None,
    passed: bool | None,
    *,
    family: str = "premature_disclosure",
    mode: str = "volunteers_unasked_info",
    valid: bool = True,
) -> CriterionVerdict:
    return CriterionVerdict(cid, family, mode, applicable, passed, valid)


PASS, FAIL, NA = v("c", True, True), v("c", True, False), v("c", False, True)
INVALID = v("c", None, None, valid=False)


@pytest.mark.parametrize(
    ("verdicts", "status"),
    [
        ([v("a", True, True), v("b", True, True)], "pass"),  # every applicable criterion passes
        ([v("a", True, True), v("b", True, False)], "fail"),  # one applicable failure is enough
        ([v("a", True, True), v("b", False, False)], "pass"),  # a conditional that did not apply is ignored
        ([v("a", False, True), v("b", False, False)], "unscorable"),  # nothing applied
        ([], "unscorable"),  # no criteria at all
        ([v("a", True, True), INVALID], "undetermined"),  # an unusable verdict is never guessed
        ([v("a", True, False), INVALID], "fail"),  # ... but cannot rescue a failure
        ([v("a", False, True), INVALID], "undetermined"),  # it might have applied
    ],
)
def test_episode_status(verdicts: list[CriterionVerdict], status: str) -> None:
    assert episode_status(verdicts) == status


def ep(
    key: str,
    domain: str,
    *verdicts: CriterionVerdict,
    proxy: str = "p",
    reward: float | None = 1.0,
    calls: int = 0,
    questions: int = 0,
) -> EpisodeRecord:
    return EpisodeRecord(key, domain, tuple(verdicts), proxy, reward, calls, questions)


def test_ufs_per_domain_and_mean_follow_the_definition() -> None:
    episodes = [
        # retail: 3 scorable (2 pass, 1 fail), 1 unscorable, 1 undetermined -> 2/3
        ep("r1", "retail", PASS, NA),
        ep("r2", "retail", PASS),
        ep("r3", "retail", PASS, FAIL),
        ep("r4", "retail", NA, NA),
        ep("r5", "retail", PASS, INVALID),
        # airline: 4 scorable, 1 pass -> 1/4
        ep("a1", "airline", PASS),
        ep("a2", "airline", FAIL),
        ep("a3", "airline", FAIL),
        ep("a4", "airline", NA, FAIL),
        # mock: only unscorable -> no UFS, left out of the mean
        ep("m1", "mock", NA),
    ]
    by = domain_ufs(episodes)
    assert list(by) == ["airline", "mock", "retail"]
    assert (by["retail"].passed, by["retail"].failed, by["retail"].unscorable, by["retail"].undetermined) == (
        2,
        1,
        1,
        1,
    )
    assert by["retail"].ufs == pytest.approx(2 / 3)
    assert by["airline"].ufs == pytest.approx(1 / 4)
    assert by["mock"].ufs is None and by["mock"].episodes == 1
    # unweighted over domains: (2/3 + 1/4) / 2, not the pooled 3/7
    assert mean_ufs(by) == pytest.approx((2 / 3 + 1 / 4) / 2)


def test_mean_ufs_reproduces_table_1_from_table_2() -> None:
    # Table 2 per-domain UFS (telecom, airline, retail, banking) -> Table 1 Mean UFS, within .001
    table2 = {
        "Sonnet-4-6": ((0.474, 0.840, 0.912, 0.885), 0.778),
        "Gemini-3.5-Flash": ((0.711, 0.940, 0.929, 0.876), 0.864),
        "Qwen3.6-35B": ((0.254, 0.680, 0.646, 0.866), 0.612),
        "Gemma-31B": ((0.781, 0.880, 0.886, 0.835), 0.845),
        "Gemma-26B": ((0.588, 0.800, 0.868, 0.781), 0.759),
        "GPT-5.4-mini": ((0.325, 0.580, 0.717, 0.773), 0.599),
        "GPT-4.1-mini": ((0.737, 0.740, 0.779, 0.753), 0.752),
    }
    for proxy, (domains, mean) in table2.items():
        assert mean_ufs(domains) == pytest.approx(mean, abs=0.0011), proxy


def test_bootstrap_is_seeded_and_brackets_the_estimate() -> None:
    episodes = (
        [ep(f"r{k}", "retail", PASS if k % 3 else FAIL) for k in range(30)]
        + [ep(f"a{k}", "airline", PASS if k % 2 else FAIL) for k in range(20)]
        + [ep("u", "airline", NA)]
    )
    first = bootstrap_ufs(episodes, replicates=500, seed=7)
    assert first == bootstrap_ufs(episodes, replicates=500, seed=7)
    retail = first.domains["retail"]
    assert retail.estimate == pytest.approx(20 / 30)
    assert retail.low < retail.estimate < retail.high
    assert first.mean.estimate == pytest.approx((20 / 30 + 10 / 20) / 2)
    assert first.mean.low < first.mean.estimate < first.mean.high
    # averaging two domains narrows the interval relative to the noisier domain
    airline = first.domains["airline"]
    assert first.mean.high - first.mean.low < airline.high - airline.low


def test_bootstrap_equals_a_per_domain_percentile_reference() -> None:
    # bootstrap_ufs runs on uxlocal.stats.bootstrap_many (issue 17): each replicate resamples
    # the domains in sorted order; the reference below is that procedure written out by hand
    episodes = [ep(f"r{k}", "retail", PASS if k % 3 else FAIL) for k in range(12)]
    episodes += [ep(f"a{k}", "airline", PASS if k % 2 else FAIL) for k in range(9)]
    scores = {d: [e.f for e in episodes if e.domain == d] for d in ("airline", "retail")}
    rng = np.random.default_rng(3)
    per_domain: dict[str, list[float]] = {"airline": [], "retail": []}
    means = []
    for _ in range(400):
        values = {
            d: float(np.asarray(f)[rng.integers(0, len(f), size=len(f))].mean()) for d, f in scores.items()
        }
        for d, value in values.items():
            per_domain[d].append(value)
        means.append(sum(values.values()) / 2)
    result = bootstrap_ufs(episodes, replicates=400, seed=3)
    assert (result.mean.low, result.mean.high) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    retail = result.domains["retail"]
    assert (retail.low, retail.high) == pytest.approx(tuple(np.percentile(per_domain["retail"], [2.5, 97.5])))


def test_bootstrap_of_a_constant_domain_is_a_point() -> None:
    result = bootstrap_ufs([ep(f"r{k}", "retail", PASS) for k in range(5)], replicates=50)
    assert (result.domains["retail"].low, result.domains["retail"].high) == (1.0, 1.0)
    assert bootstrap_ufs([ep("u", "retail", NA)]).mean.estimate is None


def test_violation_counts_by_family_and_mode() -> None:
    ground = v("g", True, False, family="groundedness", mode="unexecuted_action_claim")
    episodes = [
        ep("1", "retail", FAIL, v("d2", True, False, mode="dumps_blueprint"), ground),
        ep("2", "retail", FAIL, v("x", False, False, family="goal_deviation", mode="premature_stop")),
        ep("3", "retail", v("bad", None, None, valid=False, family="goal_deviation", mode="abandons_goal")),
    ]
    counts = violation_counts(episodes)
    assert counts.by_family == {
        "premature_disclosure": 3,
        "groundedness": 1,
        "goal_deviation": 0,
        "missed_information": 0,
    }
    assert counts.by_mode == {
        ("groundedness", "unexecuted_action_claim"): 1,
        ("premature_disclosure", "dumps_blueprint"): 1,
        ("premature_disclosure", "volunteers_unasked_info"): 2,
    }
    assert counts.episodes_by_family["premature_disclosure"] == 2


def test_share_of_successful_episodes_with_a_violation() -> None:
    episodes = [
        ep("1", "r", PASS),
        ep("2", "r", FAIL),
        ep("3", "r", FAIL, reward=0.0),
        ep("4", "r", NA),
        ep("5", "r", PASS, reward=0.9999999),
        ep("6", "r", FAIL, reward=None),
    ]
    result = success_violations(episodes)
    assert (result.successes, result.with_violation) == (3, 1)  # 1, 2, 5 (tau2's 1e-6 tolerance)
    assert result.share == pytest.approx(1 / 3)


def test_effort_delta_compares_successful_episodes_with_and_without_disclosure() -> None:
    other = v("g", True, False, family="groundedness", mode="self_contradiction")
    episodes = [
        ep("1", "r", FAIL, calls=3, questions=1),
        ep("2", "r", FAIL, other, calls=5, questions=1),
        ep("3", "r", PASS, calls=6, questions=3),
        ep("4", "r", other, calls=8, questions=2),
        ep("5", "r", FAIL, calls=99, questions=99, reward=0.0),  # failed task: left out
        ep("6", "r", v("x", None, None, valid=False), calls=50, questions=50),  # presence unknown: left out
    ]
    delta = effort_delta(episodes)
    assert (delta.n_with, delta.n_without) == (2, 2)
    assert delta.delta_tool_calls == pytest.approx(4 - 7)
    assert delta.delta_questions == pytest.approx(1 - 2.5)
    empty = effort_delta([ep("1", "r", PASS)])
    assert empty.delta_tool_calls is None


def test_delta_pass_rate_uses_cells_with_enough_episodes_on_each_side() -> None:
    fam = "goal_deviation"
    gd = v("g", True, False, family=fam, mode="premature_stop")
    cell_a = [ep(f"a{k}", "retail", gd, proxy="A", reward=1.0 if k < 1 else 0.0) for k in range(5)] + [
        ep(f"b{k}", "retail", PASS, proxy="A", reward=1.0 if k < 4 else 0.0) for k in range(5)
    ]
    cell_small = [ep(f"c{k}", "airline", gd, proxy="A") for k in range(4)] + [
        ep(f"d{k}", "airline", PASS, proxy="A") for k in range(9)
    ]
    cells, mean, median = delta_pass_rate(cell_a + cell_small, fam)
    assert [(c.proxy, c.domain) for c in cells] == [("A", "retail")]
    assert cells[0].delta == pytest.approx(0.2 - 0.8)
    assert mean == pytest.approx(-0.6) and median == pytest.approx(-0.6)
    assert delta_pass_rate(cell_small, fam)[1] is None


def test_agent_effort_counts_calls_and_questions_but_not_the_greeting(
    make_convo: Callable[..., list[Message]],
) -> None:
    messages = make_convo(
        ("assistant", "Hi! How can I help you today?"),
        ("user", "Hello?"),
        ("assistant", "Could you give me your email? And your zip?"),
        ("call", "assistant", "find_user_id_by_email", {"email": "a?b@x.com"}),
        ("result", "id"),
        ("call", "user", "check_notifications", {}),
        ("result", "[]"),
        ("assistant", "Done."),
        ("assistant", "Anything else?"),
    )
    assert agent_effort(messages) == (1, 2)
