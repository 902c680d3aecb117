"""Rubrics and judge verdict schemas: the general rubric, the session rubric, induced per-user rubrics.

Layer contract: pydantic schemas, scoring rules and rubric bookkeeping; no engine, no store.

Every judge output is constrained by a JSON schema made from these models, so a verdict either
parses or is recorded invalid (never guessed). Criteria are scored 1-5 as an enum, which both
grammar engines enforce (outlines does not enforce integer bounds).

- General rubric, per candidate reply (``GeneralTurnVerdict``): five criteria; the turn score is
  their mean.
- Session rubric (``SessionVerdict``): the same five criteria over the whole conversation plus
  ``overall``; the session score is ``overall`` (the criteria are diagnostics).
- Personalized rubric: induced once per user by the judge model from that user's rated training
  sessions (``induction_examples``), stored as the ``rubric`` verdict of the user's ``induce``
  episode with its sha256 and version, and scored per reply with the user's next message as
  evidence (``PersonalVerdict``: the judge first names the reaction, then the score). If the
  judge cannot produce a valid rubric, the fallback rubric is built from the user's own profile
  summary and marked ``source: fallback``, so the track still runs and says so.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from uxlocal.suites.palate.users import Session, UserData

Score = Literal[1, 2, 3, 4, 5]
RUBRIC_FORMAT = "palate-rubric-v1"
"""Bumped when the rubric schema or the induction procedure changes meaning."""
NAME_CHARS, DESCRIPTION_CHARS = 40, 240
"""Induced criteria are clipped to these lengths (characters) before use."""
GENERAL_CRITERIA = ("in_character", "coherence_memory", "engagement_progress", "responsiveness", "boundaries")


class GeneralTurnVerdict(BaseModel):
    """The general rubric for one candidate reply."""

    model_config = ConfigDict(extra="forbid")

    in_character: Score
    coherence_memory: Score
    engagement_progress: Score
    responsiveness: Score
    boundaries: Score


class SessionVerdict(GeneralTurnVerdict):
    """The general rubric over a whole session, plus the overall session score."""

    overall: Score


class PersonalVerdict(BaseModel):
    """A user's predicted satisfaction with a reply, read from their rubric and their next message."""

    model_config = ConfigDict(extra="forbid")

    reaction: Literal["continue", "correct", "repeat", "change_topic", "quit"]
    score: Score


class PersonalScore(BaseModel):
    """The personalized score without reaction evidence (the agreement study's ablation)."""

    model_config = ConfigDict(extra="forbid")

    score: Score


class Criterion(BaseModel):
    """One criterion of an induced rubric.

    No ``maxLength`` in the schema on purpose: xgrammar expands it into a counted repetition that
    took 3.3 s to compile and slowed every decoding step (measured on the embedded model);
    ``rubric_from_verdict`` clips names and descriptions instead.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    description: str = Field(min_length=1)


class InducedRubric(BaseModel):
    """What the judge writes when inducing a user's rubric."""

    model_config = ConfigDict(extra="forbid")

    criteria: list[Criterion] = Field(min_length=3, max_length=5)


def general_score(parsed: dict[str, Any] | None) -> float | None:
    """Mean of the five general criteria (None for an invalid verdict)."""
    if not parsed:
        return None
    return sum(float(parsed[c]) for c in GENERAL_CRITERIA) / len(GENERAL_CRITERIA)


def session_score(parsed: dict[str, Any] | None) -> float | None:
    """Return the session verdict's ``overall`` (None for an invalid verdict)."""
    return None if not parsed else float(parsed["overall"])


def personal_score(parsed: dict[str, Any] | None) -> float | None:
    """Return the personalized verdict's ``score`` (None for an invalid verdict)."""
    return None if not parsed else float(parsed["score"])


@dataclass(frozen=True)
class Rubric:
    """A user's personalized rubric as used for scoring, with its identity."""

    user_id: str
    criteria: tuple[tuple[str, str], ...]
    source: Literal["induced", "fallback"]
    train_sha256: str
    """Hash of the training data it was induced from."""

    def payload(self) -> dict[str, Any]:
        """Canonical content (what the hash covers)."""
        return {
            "format": RUBRIC_FORMAT,
            "user_id": self.user_id,
            "source": self.source,
            "train_sha256": self.train_sha256,
            "criteria": [{"name": n, "description": d} for n, d in self.criteria],
        }

    def sha256(self) -> str:
        """Content hash; every personalized verdict records the rubric it used."""
        blob = json.dumps(self.payload(), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    @property
    def version(self) -> str:
        """``palate-rubric-v1:<12 hex>``: the format version and the content hash."""
        return f"{RUBRIC_FORMAT}:{self.sha256()[:12]}"

    def as_prompt(self) -> list[dict[str, str]]:
        """Criteria for the personalized judge prompt."""
        return [{"name": n, "description": d} for n, d in self.criteria]


def rubric_from_verdict(user: UserData, parsed: dict[str, Any] | None) -> Rubric:
    """Return the induced rubric, or the profile-summary fallback when the judge's output was invalid."""
    if parsed:
        criteria = tuple(
            (clip(str(c["name"]), NAME_CHARS), clip(str(c["description"]), DESCRIPTION_CHARS))
            for c in parsed["criteria"]
        )
        return Rubric(user.user_id, criteria, "induced", user.train_sha256())
    name = "这位用户的口味" if user.lang == "zh" else "this user's taste"
    return Rubric(user.user_id, ((name, user.profile.summary),), "fallback", user.train_sha256())


@dataclass(frozen=True)
class InductionExample:
    """One rated reply shown to the judge when inducing a rubric."""

    rating: int
    reaction: str
    before: str
    reply: str
    after: str


def induction_examples(
    sessions: list[Session], *, count: int = 8, max_chars: int = 240
) -> list[InductionExample]:
    """Up to ``count`` rated replies from training sessions, balanced between low and high ratings.

    Taking both ends makes the contrast visible to the judge; inside each end, replies come in
    session order, one per session before a second one from the same session, so several
    sessions are represented. ``max_chars`` clips every text (Chinese users get a third).
    """
    pool: list[tuple[int, int, InductionExample]] = []
    for s_index, session in enumerate(sessions):
        lang = session.lang
        for k, turn in session.rated():
            assert turn.rating is not None and turn.reaction is not None
            example = InductionExample(
                turn.rating,
                turn.reaction,
                clip(session.turns[k - 1].text, max_chars, lang),
                clip(turn.text, max_chars, lang),
                clip(session.turns[k + 1].text, max_chars, lang),
            )
            pool.append((s_index, k, example))
    low = [e for e in pool if e[2].rating <= 2]
    high = [e for e in pool if e[2].rating >= 4]
    mid = [e for e in pool if e[2].rating == 3]
    chosen = _spread(low, count // 2) + _spread(high, count - count // 2)
    if len(chosen) < count:
        chosen += _spread(mid, count - len(chosen))
    chosen.sort(key=lambda e: (e[0], e[1]))
    return [e[2] for e in chosen]


def _spread(
    items: list[tuple[int, int, InductionExample]], count: int
) -> list[tuple[int, int, InductionExample]]:
    """Round-robin over sessions so one long session does not fill the quota."""
    by_session: dict[int, list[tuple[int, int, InductionExample]]] = {}
    for item in items:
        by_session.setdefault(item[0], []).append(item)
    out: list[tuple[int, int, InductionExample]] = []
    queues = [by_session[k] for k in sorted(by_session)]
    while len(out) < count and any(queues):
        for queue in queues:
            if queue and len(out) < count:
                out.append(queue.pop(0))
    return out


def clip(text: str, limit: int, lang: str = "en") -> str:
    """Whitespace-normalised text cut to ``limit`` characters (a third for Chinese), with an ellipsis."""
    limit = max(8, limit // 3) if lang == "zh" else limit
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
