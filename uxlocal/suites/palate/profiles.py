"""Character cards: the schema, the bundled pool of 300, and the pool checks.

Layer contract: files in, validated ``Card`` objects and lists of problems out; no engine, no
store. Cards are bilingual (``en``/``zh`` per text field). The bundled pool must be fully
bilingual and original (``check_pool(strict=True)``); cards users bring may be monolingual, and
a prompt then falls back to the language the card has.

Near-duplicates are found with Jaccard similarity of word 3-grams (English) and character
3-grams (Chinese) over persona + background + scenario. An inverted index counts shared
shingles, so the 45k pairs of the pool take well under a second. In the bundled pool the most
similar pair scores about 0.02 (en) and 0.02 (zh); ``NEAR_DUP_THRESHOLD`` (0.3) flags a card
that reuses about half of another card's text.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from uxlocal import paths
from uxlocal.lang import Lang

LANGS: tuple[Lang, Lang] = ("en", "zh")
TAG_KINDS = ("genre", "role", "tone", "pace", "setting")
OPEN_LICENSES = ("CC0-1.0", "CC-BY-4.0")
NEAR_DUP_THRESHOLD = 0.3
"""Jaccard similarity of 3-gram shingles above which two cards count as near-duplicates."""

TEXT_FIELDS = ("persona", "background", "relationship_to_user", "scenario", "greeting", "boundaries")
LENGTHS: dict[str, dict[str, tuple[int, int]]] = {
    # characters per language: (min, max). Chinese packs about 3x more meaning per character.
    "name": {"en": (2, 60), "zh": (1, 30)},
    "persona": {"en": (150, 1500), "zh": (50, 600)},
    "background": {"en": (150, 1500), "zh": (50, 600)},
    "relationship_to_user": {"en": (20, 600), "zh": (8, 250)},
    "scenario": {"en": (40, 1000), "zh": (15, 400)},
    "greeting": {"en": (20, 1000), "zh": (10, 400)},
    "boundaries": {"en": (20, 800), "zh": (8, 300)},
    "example_line": {"en": (2, 600), "zh": (1, 250)},
}
"""Allowed text lengths; a card outside them is too thin to act from or too long for small windows."""


def _pick(en: str | None, zh: str | None, lang: str) -> str:
    first = zh if lang == "zh" else en
    return (first or en or zh or "").strip()


class Bilingual(BaseModel):
    """A text in English and/or Chinese (at least one)."""

    model_config = ConfigDict(extra="forbid")

    en: str | None = None
    zh: str | None = None

    @model_validator(mode="after")
    def _one_language(self) -> "Bilingual":
        if not (self.en or "").strip() and not (self.zh or "").strip():
            raise ValueError("needs an 'en' or a 'zh' text")
        return self

    def get(self, lang: str) -> str:
        """Return the text in ``lang``, else the other language (cards users bring may be monolingual)."""
        return _pick(self.en, self.zh, lang)

    def has(self, lang: str) -> bool:
        """Whether a non-empty text exists in ``lang``."""
        return bool(((self.zh if lang == "zh" else self.en) or "").strip())


class DialogueLine(BaseModel):
    """One line of a card's example dialogue."""

    model_config = ConfigDict(extra="forbid")

    speaker: Literal["user", "character"]
    en: str | None = None
    zh: str | None = None

    def get(self, lang: str) -> str:
        """Return the line in ``lang`` with fallback to the other language."""
        return _pick(self.en, self.zh, lang)


class Card(BaseModel):
    """One character card (our schema; Character Card V2 maps onto it, see ``cardv2.py``)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    name: Bilingual
    tags: list[str] = Field(default_factory=list)
    """``kind:value`` labels (kinds: genre, role, tone, pace, setting); the panel stratifies on genre."""
    persona: Bilingual
    background: Bilingual
    relationship_to_user: Bilingual
    scenario: Bilingual
    greeting: Bilingual
    """The character's opening message; it opens every PALATE session."""
    example_dialogue: list[DialogueLine] = Field(default_factory=list)
    boundaries: Bilingual
    """What the character never does; the general rubric's boundaries criterion checks it."""
    provenance: str = "original"
    license: str = "CC0-1.0"

    def tag_values(self, kind: str) -> list[str]:
        """Values of the tags of one kind, in order (``genre`` -> ``["fantasy", "comedy"]``)."""
        prefix = kind + ":"
        return [t[len(prefix) :] for t in self.tags if t.startswith(prefix)]

    def canonical_json(self) -> str:
        """Return the card as canonical JSON (sorted keys, no nulls): what its hash covers."""
        return json.dumps(
            self.model_dump(mode="json", exclude_none=True),
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )

    def sha256(self) -> str:
        """Content hash; a frozen panel records it and refuses a card whose hash changed."""
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()


def bundled_cards_dir() -> Path:
    """Return the 300 original cards shipped with uxlocal."""
    return paths.data_dir() / "palate" / "cards"


def write_cards(cards: Iterable[Card], path: Path) -> None:
    """Write cards as JSONL (one canonical card per line)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(c.canonical_json() + "\n" for c in cards), encoding="utf-8")


# ---- pool checks ------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolProblem:
    """One failed check: which card(s), which check, what is wrong."""

    card_id: str
    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.card_id}: {self.check}: {self.message}"


def check_pool(
    cards: list[Card], *, strict: bool = True, threshold: float = NEAR_DUP_THRESHOLD
) -> list[PoolProblem]:
    """Every pool check; an empty list means the pool is fit to sample a panel from.

    ``strict`` adds what the bundled pool promises: both languages everywhere, original
    provenance and an open license. Cards users bring are checked without it.
    """
    problems = _unique(cards)
    for card in cards:
        problems += _lengths(card, strict)
        problems += _tags(card)
        if strict:
            problems += _bilingual(card)
            if card.provenance != "original":
                problems.append(PoolProblem(card.id, "provenance", f"{card.provenance!r} is not 'original'"))
            if card.license not in OPEN_LICENSES:
                problems.append(PoolProblem(card.id, "license", f"{card.license!r} not in {OPEN_LICENSES}"))
    problems += [
        PoolProblem(f"{a}~{b}", "near_duplicate", f"{lang} 3-gram Jaccard {sim:.2f} >= {threshold}")
        for a, b, lang, sim in near_duplicates(cards, threshold=threshold)
    ]
    return problems


def _unique(cards: list[Card]) -> list[PoolProblem]:
    problems: list[PoolProblem] = []
    seen: dict[str, str] = {}
    for card in cards:
        if card.id in seen:
            problems.append(PoolProblem(card.id, "unique_id", "id used by more than one card"))
        seen[card.id] = card.id
    for lang in LANGS:
        names: dict[str, str] = {}
        for card in cards:
            value = (card.name.zh if lang == "zh" else card.name.en) or ""
            key = re.sub(r"\s+", " ", value).strip().casefold()
            if not key:
                continue
            if key in names:
                problems.append(
                    PoolProblem(card.id, "unique_name", f"{lang} name {value!r} also on {names[key]}")
                )
            names.setdefault(key, card.id)
    return problems


def _lengths(card: Card, strict: bool) -> list[PoolProblem]:
    problems = []
    for field in ("name", *TEXT_FIELDS):
        text: Bilingual = getattr(card, field)
        for lang in LANGS:
            value = ((text.zh if lang == "zh" else text.en) or "").strip()
            if not value:
                continue
            low, high = LENGTHS[field][lang]
            if not low <= len(value) <= high:
                problems.append(
                    PoolProblem(
                        card.id, "length", f"{field}.{lang} has {len(value)} characters, allowed {low}-{high}"
                    )
                )
    if not 2 <= len(card.example_dialogue) <= 12:
        problems.append(
            PoolProblem(
                card.id, "length", f"example_dialogue has {len(card.example_dialogue)} lines, allowed 2-12"
            )
        )
    speakers = {line.speaker for line in card.example_dialogue}
    if card.example_dialogue and speakers != {"user", "character"}:
        problems.append(
            PoolProblem(card.id, "example_dialogue", "needs lines from both the user and the character")
        )
    for k, line in enumerate(card.example_dialogue):
        for lang in LANGS:
            value = ((line.zh if lang == "zh" else line.en) or "").strip()
            low, high = LENGTHS["example_line"][lang]
            if value and not low <= len(value) <= high:
                problems.append(
                    PoolProblem(
                        card.id,
                        "length",
                        f"example_dialogue[{k}].{lang} has {len(value)} characters, allowed {low}-{high}",
                    )
                )
            if strict and not value:
                problems.append(
                    PoolProblem(card.id, "bilingual", f"example_dialogue[{k}] has no {lang} text")
                )
    return problems


def _tags(card: Card) -> list[PoolProblem]:
    problems = []
    for tag in card.tags:
        kind, sep, value = tag.partition(":")
        if not sep or kind not in TAG_KINDS or not re.fullmatch(r"[a-z0-9_]+", value):
            problems.append(
                PoolProblem(card.id, "tags", f"{tag!r} is not kind:value with kind in {TAG_KINDS}")
            )
    if not card.tag_values("genre"):
        problems.append(
            PoolProblem(card.id, "tags", "needs at least one genre: tag (the panel stratifies on it)")
        )
    if len(set(card.tags)) != len(card.tags):
        problems.append(PoolProblem(card.id, "tags", "repeated tag"))
    return problems


def _bilingual(card: Card) -> list[PoolProblem]:
    missing = [
        f"{field}.{lang}"
        for field in ("name", *TEXT_FIELDS)
        for lang in LANGS
        if not getattr(card, field).has(lang)
    ]
    return [PoolProblem(card.id, "bilingual", f"missing {', '.join(missing)}")] if missing else []


def shingles(text: str, lang: str, n: int = 3) -> set[str]:
    """Word n-grams for English, character n-grams (spaces and punctuation dropped) for Chinese."""
    if lang == "zh":
        chars = re.sub(r"[\W_]+", "", text)
        return {chars[i : i + n] for i in range(len(chars) - n + 1)}
    words = re.findall(r"\w+", text.casefold())
    return {" ".join(words[i : i + n]) for i in range(len(words) - n + 1)}


def _card_text(card: Card, lang: str) -> str:
    parts = [card.persona, card.background, card.scenario]
    return " ".join(((p.zh if lang == "zh" else p.en) or "") for p in parts)


def near_duplicates(
    cards: list[Card], *, threshold: float = NEAR_DUP_THRESHOLD
) -> list[tuple[str, str, str, float]]:
    """Pairs ``(id_a, id_b, lang, jaccard)`` at or above ``threshold``, most similar first."""
    found = []
    for lang in LANGS:
        sets = [shingles(_card_text(c, lang), lang) for c in cards]
        for (i, j), sim in _pairwise_jaccard(sets).items():
            if sim >= threshold:
                found.append((cards[i].id, cards[j].id, lang, sim))
    return sorted(found, key=lambda x: -x[3])


def max_similarity(cards: list[Card]) -> dict[str, tuple[float, str, str]]:
    """Return the most similar pair per language (for reports and for choosing the threshold)."""
    best: dict[str, tuple[float, str, str]] = {}
    for lang in LANGS:
        sets = [shingles(_card_text(c, lang), lang) for c in cards]
        pairs = _pairwise_jaccard(sets)
        if pairs:
            (i, j), sim = max(pairs.items(), key=lambda kv: kv[1])
            best[lang] = (sim, cards[i].id, cards[j].id)
    return best


def _pairwise_jaccard(sets: list[set[str]]) -> dict[tuple[int, int], float]:
    """Jaccard of every pair that shares at least one shingle (an inverted index skips the rest)."""
    postings: dict[str, list[int]] = defaultdict(list)
    for index, items in enumerate(sets):
        for item in items:
            postings[item].append(index)
    shared: dict[tuple[int, int], int] = defaultdict(int)
    for members in postings.values():
        if len(members) > 1:
            for pair in combinations(members, 2):
                shared[pair] += 1
    return {(i, j): n / (len(sets[i]) + len(sets[j]) - n) for (i, j), n in shared.items()}
