"""Agreement of rubric scores with users' held-out ratings, simulator realism, per-user ranks.

Layer contract: pure functions over plain rows; the SQL views give the same point estimates and
``tests/unit/palate/test_palate_agreement.py`` pins both to hand-built sets.

**Within-session pairwise agreement** (spec palate.md §4.4). Take every pair of rated turns of
the same session whose human ratings differ. The scorer agrees on the pair when its scores order
the two turns the way the ratings do. The spec does not say what a scorer tie earns; we count it
as half a pair, so a constant scorer and a coin both sit at the chance level 0.5, and we report
the tie share next to it (``ties=0`` gives the strict variant). A pair with a missing score (an
invalid verdict) is left out and counted in ``missing``. Pairs pool over the sessions of a
user; the macro average weights every user equally.

**Kendall's tau-b**, within sessions: concordant minus discordant pairs, over the square root of
(pairs not tied in the ratings) x (pairs not tied in the scores), where every count runs over
pairs *inside* a session and pools the sessions of a user. With one session it is the textbook
tau-b. ``None`` when either side is tied on every pair. Both statistics count pairs with
``uxlocal.stats.pair_counts``; the tie rule stays here.

**Bootstrap intervals** (``uxlocal.stats.bootstrap_many``) resample whole sessions (turns of one
session are not independent), separately per user, and take numpy's linear percentile bounds;
the macro interval resamples every user's sessions and macro-averages each draw.

**Realism** (2AFC): the share of trials in which the judge picked the simulated turn as the real
one; 0.5 means the judge cannot tell them apart. Shown order is randomised per trial, so a judge
that always answers "A" lands at 0.5, not at its position bias.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from uxlocal import stats


@dataclass(frozen=True)
class ScoredTurn:
    """One rated turn of a held-out session with a scorer's score (None = invalid verdict)."""

    session_id: str
    human: float
    score: float | None


@dataclass(frozen=True)
class Agreement:
    """Pairwise agreement of one scorer on one set of sessions."""

    value: float | None
    """Share of pairs ordered like the user (ties count ``tie``); None without pairs."""
    pairs: int
    """Pairs with different human ratings and both scores present."""
    ties: int
    """Of those, pairs the scorer scored equal."""
    missing: int
    """Pairs left out because a score was missing."""


def _by_session(turns: Iterable[ScoredTurn]) -> dict[str, list[ScoredTurn]]:
    sessions: dict[str, list[ScoredTurn]] = defaultdict(list)
    for turn in turns:
        sessions[turn.session_id].append(turn)
    return sessions


def _agreement(counts: stats.PairCounts, tie: float) -> Agreement:
    """Apply the tie rule: a scorer tie on a pair the human orders earns ``tie``; human ties drop out."""
    pairs = counts.concordant + counts.discordant + counts.y_tied
    value = (counts.concordant + tie * counts.y_tied) / pairs if pairs else None
    return Agreement(value, pairs, counts.y_tied, counts.missing)


def pairwise_agreement(turns: Iterable[ScoredTurn], *, tie: float = 0.5) -> Agreement:
    """Within-session pairwise agreement pooled over sessions (see the module docstring)."""
    turns = list(turns)
    counts = stats.pair_counts(
        [t.human for t in turns], [t.score for t in turns], [t.session_id for t in turns]
    )
    return _agreement(counts, tie)


def kendall_tau_b(turns: Iterable[ScoredTurn]) -> float | None:
    """Within-session Kendall tau-b pooled over sessions; turns with a missing score are dropped."""
    turns = list(turns)
    return stats.kendall_tau_b_within([t.human for t in turns], [t.score for t in turns],
                                      [t.session_id for t in turns])


def bootstrap_agreement(
    groups: Sequence[Iterable[ScoredTurn]], *, n_resamples: int = 1000, seed: int = 0, level: float = 0.95
) -> tuple[float | None, float | None]:
    """Percentile interval of the macro agreement over ``groups`` (one group per user).

    Runs on ``stats.bootstrap_many``: users are strata, sessions the clusters; a session drawn
    twice is two units, so pairs never cross copies.
    """
    turns = [(u, t) for u, group in enumerate(groups) for t in group]
    human = np.asarray([t.human for _, t in turns], dtype=float)
    score = np.asarray([np.nan if t.score is None else t.score for _, t in turns], dtype=float)
    user = np.asarray([u for u, _ in turns], dtype=np.int64)

    def macro(draw: stats.Draw) -> float | None:
        values = []
        drawn_users = user[draw.index]
        for u in np.unique(drawn_users):
            mask = drawn_users == u
            index = draw.index[mask]
            counts = stats.pair_counts(human[index], score[index], draw.unit[mask])
            values.append(_agreement(counts, 0.5).value)
        return stats.mean([v for v in values if v is not None])

    interval = stats.bootstrap_many(
        {"macro": macro},
        len(turns),
        clusters=[(u, t.session_id) for u, t in turns],
        strata=list(user),
        n_resamples=n_resamples,
        seed=seed,
        level=level,
    )["macro"]
    return interval.low, interval.high


@dataclass(frozen=True)
class AgreementRow:
    """One line of the agreement table."""

    scorer: str
    user_id: str
    """A user id, or ``macro`` for the unweighted mean over users."""
    sessions: int
    pairs: int
    agreement: float | None
    ci_low: float | None
    ci_high: float | None
    tie_share: float | None
    kendall_tau: float | None


def agreement_table(
    rows: Iterable[tuple[str, str, str, float, float | None]], *, n_resamples: int = 1000, seed: int = 0
) -> list[AgreementRow]:
    """Per (scorer, user) and macro rows from ``(scorer, user_id, session_id, human, score)`` tuples."""
    grouped: dict[str, dict[str, list[ScoredTurn]]] = defaultdict(lambda: defaultdict(list))
    for scorer, user_id, session_id, human, score in rows:
        grouped[scorer][user_id].append(ScoredTurn(session_id, human, score))
    table: list[AgreementRow] = []
    for scorer in sorted(grouped):
        per_user = grouped[scorer]
        values, taus = [], []
        for user_id in sorted(per_user):
            turns = per_user[user_id]
            result = pairwise_agreement(turns)
            tau = kendall_tau_b(turns)
            low, high = bootstrap_agreement([turns], n_resamples=n_resamples, seed=seed)
            table.append(
                AgreementRow(
                    scorer,
                    user_id,
                    len(_by_session(turns)),
                    result.pairs,
                    result.value,
                    low,
                    high,
                    result.ties / result.pairs if result.pairs else None,
                    tau,
                )
            )
            if result.value is not None:
                values.append(result.value)
            if tau is not None:
                taus.append(tau)
        low, high = bootstrap_agreement(list(per_user.values()), n_resamples=n_resamples, seed=seed)
        pairs = sum(r.pairs for r in table if r.scorer == scorer)
        sessions = sum(r.sessions for r in table if r.scorer == scorer)
        ties = [r.tie_share for r in table if r.scorer == scorer and r.tie_share is not None]
        table.append(
            AgreementRow(
                scorer,
                "macro",
                sessions,
                pairs,
                stats.mean(values),
                low,
                high,
                stats.mean(ties),
                stats.mean(taus),
            )
        )
    return table


# ---- simulator realism ------------------------------------------------------------------------


@dataclass(frozen=True)
class RealismRow:
    """Rate at which the judge took the simulated turn for the real one."""

    simulator: str
    user_id: str
    trials: int
    picked_simulated: float | None
    """Share of valid trials where the simulated turn was picked (0.5 = indistinguishable)."""
    ci_low: float | None
    ci_high: float | None
    p_simulated: float | None
    """Mean probability the judge gave the simulated turn's label (label probabilities)."""


def realism_table(
    trials: Iterable[tuple[str, str, bool | None, float | None]], *, n_resamples: int = 1000, seed: int = 0
) -> list[RealismRow]:
    """Rows per (simulator, user) and a macro row per simulator from ``(simulator, user, picked, p)``."""
    grouped: dict[str, dict[str, list[tuple[bool | None, float | None]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for simulator, user_id, picked, prob in trials:
        grouped[simulator][user_id].append((picked, prob))
    rows: list[RealismRow] = []
    for simulator in sorted(grouped):
        rates: list[float] = []
        probs: list[float] = []
        for user_id in sorted(grouped[simulator]):
            entries = grouped[simulator][user_id]
            picks = [float(p) for p, _ in entries if p is not None]
            user_probs = [q for _, q in entries if q is not None]
            low, high = _mean_interval(picks, n_resamples, seed)
            rows.append(
                RealismRow(
                    simulator, user_id, len(picks), stats.mean(picks), low, high, stats.mean(user_probs)
                )
            )
            if picks:
                rates.append(sum(picks) / len(picks))
            if user_probs:
                probs.append(sum(user_probs) / len(user_probs))
        total = sum(r.trials for r in rows if r.simulator == simulator)
        rows.append(RealismRow(simulator, "macro", total, stats.mean(rates), None, None, stats.mean(probs)))
    return rows


def _mean_interval(values: list[float], n_resamples: int, seed: int) -> tuple[float | None, float | None]:
    """Percentile interval of a share, trials resampled (``stats.bootstrap``)."""
    array = np.asarray(values, dtype=float)
    interval = stats.bootstrap(
        lambda idx: float(array[idx].mean()), len(array), n_resamples=n_resamples, seed=seed
    )
    return interval.low, interval.high


# ---- per-user ranks ---------------------------------------------------------------------------


def competition_ranks(scores: dict[str, float | None]) -> dict[str, int | None]:
    """1 = best; equal scores share the better rank ("1, 2, 2, 4"); None scores get no rank."""
    present = sorted((v, k) for k, v in scores.items() if v is not None)
    ranks: dict[str, int | None] = {k: None for k in scores}
    for key, value in scores.items():
        if value is not None:
            ranks[key] = 1 + sum(1 for v, _ in present if v > value)
    return ranks
