"""UFS arithmetic in Python: episode scores, per-domain UFS, Mean UFS, intervals and effects.

Spec userproxybench.md §A.3 (Eq. 1) and §A.7, §A.9 step 7. The SQL views in
``suites/userproxy/views.sql`` compute the same point numbers from the store; this module is the
reference they are tested against, and the place for what SQL does badly (bootstrap intervals).

Episode score, per the paper: an episode passes iff every *applicable* criterion passes; with no
applicable criterion it is *unscorable* and left out (and counted). One case the paper never
meets, because its grader always answered: a verdict the judge's output could not give
(``valid=False``). We never guess it. An episode with a valid failing verdict still fails (the
missing verdict cannot rescue it); otherwise it is *undetermined* and left out like an
unscorable one, and counted separately, so a weak judge shows up as a coverage problem rather than
as a higher or lower UFS.

UFS per domain = mean of the episode scores over scorable (pass or fail) episodes; Mean UFS = the
unweighted mean of the per-domain values (Table 1's caption), over domains that have any.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from uxlocal import stats
from uxlocal.tau2 import Message

from .taxonomy import FAMILIES

EpisodeStatus = Literal["pass", "fail", "unscorable", "undetermined"]
SUCCESS_TOLERANCE = 1e-6
"""tau2's success rule: |reward - 1| <= 1e-6."""
GREETING = "Hi! How can I help you today?"
"""tau2's fixed opening line; not counted as an agent question (every episode has it)."""


@dataclass(frozen=True)
class CriterionVerdict:
    """One graded criterion of one episode; ``applicable``/``passed`` are None when invalid."""

    criterion_id: str
    family: str
    mode: str
    applicable: bool | None
    passed: bool | None
    valid: bool = True

    @property
    def failed(self) -> bool:
        """A usable verdict that found the criterion applicable and violated."""
        return self.valid and bool(self.applicable) and self.passed is False


def episode_status(verdicts: Iterable[CriterionVerdict]) -> EpisodeStatus:
    """Pass | fail | unscorable | undetermined (see the module docstring)."""
    verdicts = list(verdicts)
    if any(v.failed for v in verdicts):
        return "fail"
    if any(not v.valid for v in verdicts):
        return "undetermined"
    if not any(v.applicable for v in verdicts):
        return "unscorable"
    return "pass"


@dataclass(frozen=True)
class EpisodeRecord:
    """What the UFS numbers need from one graded trajectory."""

    key: str
    domain: str
    verdicts: tuple[CriterionVerdict, ...]
    proxy: str = ""
    reward: float | None = None
    agent_tool_calls: int = 0
    agent_questions: int = 0

    @property
    def status(self) -> EpisodeStatus:
        """The episode's UFS status."""
        return episode_status(self.verdicts)

    @property
    def f(self) -> int | None:
        """The paper's f_i: 1 pass, 0 fail, None when left out."""
        return {"pass": 1, "fail": 0}.get(self.status)

    @property
    def success(self) -> bool:
        """The agent succeeded (reward 1, tau2's tolerance)."""
        return self.reward is not None and abs(self.reward - 1.0) <= SUCCESS_TOLERANCE

    def has_failure(self, family: str) -> bool:
        """Whether some usable verdict of ``family`` failed."""
        return any(v.failed and v.family == family for v in self.verdicts)

    def family_known(self, family: str) -> bool:
        """Whether presence or absence of a ``family`` failure is known (no invalid verdict of it)."""
        return self.has_failure(family) or all(v.valid for v in self.verdicts if v.family == family)


def agent_effort(messages: Sequence[Message]) -> tuple[int, int]:
    """(agent tool calls, agent questions) of a trajectory.

    A question is an agent text message containing ``?`` other than the fixed greeting; several
    question marks in one message count once (the paper counts questions asked, per turn).
    """
    calls = sum(len(m.tool_calls or []) for m in messages if m.role == "assistant")
    questions = sum(
        1
        for m in messages
        if m.role == "assistant"
        and not m.tool_calls
        and m.content
        and "?" in m.content
        and m.content.strip() != GREETING
    )
    return calls, questions


# --- UFS per domain and Mean UFS --------------------------------------------------------------------


@dataclass(frozen=True)
class DomainUFS:
    """One domain's UFS with the counts behind it."""

    domain: str
    episodes: int
    passed: int
    failed: int
    unscorable: int
    undetermined: int

    @property
    def scorable(self) -> int:
        """Episodes that count: pass + fail."""
        return self.passed + self.failed

    @property
    def ufs(self) -> float | None:
        """Passed / scorable, or None without scorable episodes."""
        return self.passed / self.scorable if self.scorable else None


def domain_ufs(episodes: Iterable[EpisodeRecord]) -> dict[str, DomainUFS]:
    """UFS per domain, domains in sorted order."""
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for episode in episodes:
        counts[episode.domain][episode.status] += 1
    return {
        d: DomainUFS(d, sum(c.values()), c["pass"], c["fail"], c["unscorable"], c["undetermined"])
        for d, c in sorted(counts.items())
    }


def mean_ufs(by_domain: dict[str, DomainUFS] | Iterable[float | None]) -> float | None:
    """Unweighted mean of per-domain UFS values (domains without scorable episodes are skipped)."""
    values = [d.ufs for d in by_domain.values()] if isinstance(by_domain, dict) else list(by_domain)
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def group_by(
    episodes: Iterable[EpisodeRecord], key: Callable[[EpisodeRecord], str]
) -> dict[str, list[EpisodeRecord]]:
    """Split episodes by a key (e.g. ``lambda e: e.proxy``), keys sorted."""
    groups: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for episode in episodes:
        groups[key(episode)].append(episode)
    return dict(sorted(groups.items()))


# --- bootstrap intervals ------------------------------------------------------------------------------


Interval = stats.Interval
"""A point estimate (``.estimate``) with a percentile bootstrap interval."""


@dataclass(frozen=True)
class UFSIntervals:
    """Per-domain and Mean UFS intervals from one set of bootstrap replicates."""

    domains: dict[str, Interval]
    mean: Interval
    replicates: int
    level: float


def bootstrap_ufs(
    episodes: Iterable[EpisodeRecord], *, replicates: int = 2000, level: float = 0.95, seed: int = 0
) -> UFSIntervals:
    """Percentile bootstrap of per-domain UFS and Mean UFS, resampling scorable episodes per domain.

    Resampling is stratified by domain (each domain keeps its size), and each replicate's Mean
    UFS is the mean of that replicate's domain values, so the Mean UFS interval reflects every
    domain's sampling noise and nothing else. Episodes are the resampling unit; with several
    trials per task, trials of a task are treated as independent. Runs on
    ``stats.bootstrap_many`` so the domains and the mean share their replicates.
    """
    scored = sorted(((e.domain, e.f) for e in episodes if e.f is not None), key=lambda d: d[0])
    names = sorted({d for d, _ in scored})
    domain = np.asarray([names.index(d) for d, _ in scored], dtype=np.int64)
    f = np.asarray([v for _, v in scored], dtype=float)

    def ufs(idx: np.ndarray) -> np.ndarray:
        return np.bincount(domain[idx], weights=f[idx], minlength=len(names)) / np.bincount(
            domain[idx], minlength=len(names))

    statistics: dict[str, stats.DrawStatistic] = {
        name: (lambda draw, k=k: float(ufs(draw.index)[k])) for k, name in enumerate(names)}
    statistics["\0mean"] = lambda draw: stats.mean(list(ufs(draw.index)))
    result = stats.bootstrap_many(statistics, len(f), strata=list(domain), n_resamples=replicates, seed=seed,
                                  level=level)
    mean = result.pop("\0mean")
    return UFSIntervals(result, mean, replicates, level)


# --- violations and their effects -------------------------------------------------------------------


@dataclass(frozen=True)
class ViolationCounts:
    """Failed criteria per family and per (family, mode), and episodes with a failure per family."""

    by_family: dict[str, int] = field(default_factory=dict)
    by_mode: dict[tuple[str, str], int] = field(default_factory=dict)
    episodes_by_family: dict[str, int] = field(default_factory=dict)


def violation_counts(episodes: Iterable[EpisodeRecord]) -> ViolationCounts:
    """Count failed criteria (usable, applicable, not passed) over every graded episode."""
    by_family: dict[str, int] = {f: 0 for f in FAMILIES}
    by_mode: dict[tuple[str, str], int] = defaultdict(int)
    episodes_by_family: dict[str, int] = {f: 0 for f in FAMILIES}
    for episode in episodes:
        families = set()
        for verdict in episode.verdicts:
            if verdict.failed:
                by_family[verdict.family] = by_family.get(verdict.family, 0) + 1
                by_mode[(verdict.family, verdict.mode)] += 1
                families.add(verdict.family)
        for family in families:
            episodes_by_family[family] = episodes_by_family.get(family, 0) + 1
    return ViolationCounts(by_family, dict(sorted(by_mode.items())), episodes_by_family)


@dataclass(frozen=True)
class SuccessViolations:
    """Among agent-successful scorable episodes, how many the user still failed."""

    successes: int
    with_violation: int

    @property
    def share(self) -> float | None:
        """with_violation / successes."""
        return self.with_violation / self.successes if self.successes else None


def success_violations(episodes: Iterable[EpisodeRecord]) -> SuccessViolations:
    """Count scorable successes and those the user failed (the paper's "24.4% ... fail UFS")."""
    scored = [e for e in episodes if e.success and e.f is not None]
    return SuccessViolations(len(scored), sum(1 for e in scored if e.f == 0))


@dataclass(frozen=True)
class EffortDelta:
    """Agent effort in successful episodes, with vs without a failure of one family."""

    family: str
    n_with: int
    n_without: int
    tool_calls_with: float | None
    tool_calls_without: float | None
    questions_with: float | None
    questions_without: float | None

    @property
    def delta_tool_calls(self) -> float | None:
        """Mean tool calls with the failure minus without (the paper: -1.06 for disclosure)."""
        return _diff(self.tool_calls_with, self.tool_calls_without)

    @property
    def delta_questions(self) -> float | None:
        """Mean agent questions with the failure minus without (the paper: -0.26 for disclosure)."""
        return _diff(self.questions_with, self.questions_without)


def effort_delta(episodes: Iterable[EpisodeRecord], family: str = "premature_disclosure") -> EffortDelta:
    """Compare agent tool calls and questions in successful episodes, split by a family's failure.

    Only episodes where the family's presence is known count (an invalid verdict of that family
    without a failing one leaves the episode out).
    """
    pool = [e for e in episodes if e.success and e.family_known(family)]
    with_ = [e for e in pool if e.has_failure(family)]
    without = [e for e in pool if not e.has_failure(family)]
    return EffortDelta(
        family,
        len(with_),
        len(without),
        stats.mean([e.agent_tool_calls for e in with_]),
        stats.mean([e.agent_tool_calls for e in without]),
        stats.mean([e.agent_questions for e in with_]),
        stats.mean([e.agent_questions for e in without]),
    )


@dataclass(frozen=True)
class PassRateCell:
    """One (proxy, domain) cell: agent success rate with vs without a family's failure."""

    proxy: str
    domain: str
    n_with: int
    n_without: int
    rate_with: float | None
    rate_without: float | None

    @property
    def delta(self) -> float | None:
        """rate_with - rate_without."""
        return _diff(self.rate_with, self.rate_without)


def delta_pass_rate(
    episodes: Iterable[EpisodeRecord], family: str, *, min_side: int = 5
) -> tuple[list[PassRateCell], float | None, float | None]:
    """Per-cell Δ pass rate for one family; returns (eligible cells, mean Δ, median Δ).

    The paper's rule (§A.7.3): within each proxy-domain cell, episodes with the failure vs
    without, cells with at least ``min_side`` episodes on each side. Episodes are the graded
    ones whose presence of the family is known; reward None counts as not successful.
    """
    cells = []
    grouped = group_by(episodes, lambda e: f"{e.proxy}\0{e.domain}")
    for key, group in grouped.items():
        proxy, domain = key.split("\0", 1)
        known = [e for e in group if e.family_known(family)]
        with_ = [e.success for e in known if e.has_failure(family)]
        without = [e.success for e in known if not e.has_failure(family)]
        if len(with_) >= min_side and len(without) >= min_side:
            cells.append(
                PassRateCell(proxy, domain, len(with_), len(without), stats.mean(with_), stats.mean(without))
            )
    deltas = [c.delta for c in cells if c.delta is not None]
    return cells, stats.mean(deltas), (statistics.median(deltas) if deltas else None)


def _diff(a: float | None, b: float | None) -> float | None:
    return a - b if a is not None and b is not None else None
