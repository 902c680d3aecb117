"""Character Card V2 interop: export our cards, convert cards users bring (V1, V2, V3 dicts).

Layer contract: dicts in, ``Card`` or dicts out (``write_v2`` writes one file); no engine, no
store. Reading card files (JSON, JSONL, PNG chunks) is ``cardfiles.py``.

Export writes one language per file (V2 cards are monolingual) and keeps the whole bilingual
card under ``data.extensions.uxlocal.card``, so export -> import is lossless. If another tool
edited the V2 text since, the edited text wins: the card is then imported as a foreign card.

Mapping (V2 key <- our field): ``name`` <- name, ``personality`` <- persona, ``description`` <-
background + relationship_to_user, ``scenario`` <- scenario, ``first_mes`` <- greeting,
``mes_example`` <- example_dialogue (``<START>`` block, ``{{user}}:``/``{{char}}:`` lines),
``post_history_instructions`` <- boundaries, ``tags`` <- tags, ``character_version`` <- the first
12 hex of the card hash. Importing a foreign card: ``{{char}}`` becomes the name and ``{{user}}``
becomes "you"/"你"; free-form tags become ``genre:<slug>`` so a panel can stratify on them; a
missing relationship or boundary gets a neutral default; provenance is ``imported:<file>`` and the
license ``unknown`` unless the card's extensions say otherwise.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from uxlocal.errors import InputError, format_validation_error
from uxlocal.lang import detect_lang
from uxlocal.suites.palate.profiles import Bilingual, Card, DialogueLine

SPEC_V2 = "chara_card_v2"
_DEFAULTS = {
    "relationship": {"en": "The user has just met {name}.", "zh": "用户刚刚认识{name}。"},
    "boundaries": {
        "en": "{name} stays in character and keeps the story suitable for a general audience.",
        "zh": "{name}始终保持角色，内容适合一般读者。",
    },
    "you": {"en": "you", "zh": "你"},
}


def card_to_v2(card: Card, lang: str = "en") -> dict[str, Any]:
    """Return a Character Card V2 dict for ``card`` in one language (the full card rides in extensions)."""
    lines = [
        ("{{user}}: " if line.speaker == "user" else "{{char}}: ") + line.get(lang)
        for line in card.example_dialogue
    ]
    data = {
        "name": card.name.get(lang),
        "description": card.background.get(lang) + "\n\n" + card.relationship_to_user.get(lang),
        "personality": card.persona.get(lang),
        "scenario": card.scenario.get(lang),
        "first_mes": card.greeting.get(lang),
        "mes_example": "<START>\n" + "\n".join(lines) if lines else "",
        "creator_notes": f"uxlocal PALATE card {card.id} ({card.provenance}, {card.license})",
        "system_prompt": "",
        "post_history_instructions": card.boundaries.get(lang),
        "alternate_greetings": [],
        "tags": list(card.tags),
        "creator": "uxlocal",
        "character_version": card.sha256()[:12],
        "extensions": {
            "uxlocal": {
                "lang": lang,
                "license": card.license,
                "card": card.model_dump(mode="json", exclude_none=True),
            }
        },
    }
    return {"spec": SPEC_V2, "spec_version": "2.0", "data": data}


def card_from_v2(
    raw: dict[str, Any],
    *,
    source: str | Path | None = None,
    line: int | None = None,
    card_id: str | None = None,
) -> Card:
    """Return a ``Card`` from a V1 (flat), V2 or V3 card dict."""
    data = raw.get("data") if isinstance(raw.get("data"), dict) else raw
    assert isinstance(data, dict)
    ours = (data.get("extensions") or {}).get("uxlocal") or {}
    if isinstance(ours, dict) and isinstance(ours.get("card"), dict):
        try:
            card = Card.model_validate(ours["card"])
        except ValidationError as exc:
            raise InputError(f"extensions.uxlocal.card: {format_validation_error(exc)}", path=source,
                             line=line) from exc
        lang = str(ours.get("lang") or "en")
        if _v2_text(card_to_v2(card, lang)["data"]) == _v2_text(data):
            return card
    return _foreign(data, source, line, card_id)


def _v2_text(data: dict[str, Any]) -> tuple[str, ...]:
    keys = (
        "name",
        "description",
        "personality",
        "scenario",
        "first_mes",
        "mes_example",
        "post_history_instructions",
    )
    return tuple(str(data.get(k) or "").strip() for k in keys)


def _foreign(data: dict[str, Any], source: str | Path | None, line: int | None, card_id: str | None) -> Card:
    name = str(data.get("name") or "").strip()
    greeting = str(data.get("first_mes") or "").strip()
    if not name or not greeting:
        raise InputError("card needs a name and a first_mes (the greeting that opens a session)",
                         path=source, line=line)
    description = str(data.get("description") or "").strip()
    personality = str(data.get("personality") or "").strip()
    lang = detect_lang(" ".join([name, description, personality, greeting]))

    def fill(text: str) -> str:
        text = re.sub(r"\{\{\s*char\s*\}\}|<BOT>", name, text, flags=re.I)
        return re.sub(r"\{\{\s*user\s*\}\}|<USER>", _DEFAULTS["you"][lang], text, flags=re.I).strip()

    def text(value: str) -> Bilingual:
        return Bilingual(**{lang: fill(value)})

    boundaries = str(data.get("post_history_instructions") or data.get("system_prompt") or "").strip()
    license_ = str(((data.get("extensions") or {}).get("license")) or "unknown")
    fields = {
        "id": card_id or _slug_id(name),
        "name": Bilingual(**{lang: name}),
        "tags": [_tag(t) for t in data.get("tags") or [] if _tag(t)],
        "persona": text(personality or description),
        "background": text(description or personality),
        "relationship_to_user": text(_DEFAULTS["relationship"][lang].format(name=name)),
        "scenario": text(str(data.get("scenario") or "").strip() or greeting),
        "greeting": text(greeting),
        "example_dialogue": parse_mes_example(fill(str(data.get("mes_example") or "")), lang),
        "boundaries": text(boundaries or _DEFAULTS["boundaries"][lang].format(name=name)),
        "provenance": f"imported:{Path(source).name}" if source else "imported",
        "license": license_,
    }
    try:
        return Card.model_validate(fields)
    except ValidationError as exc:
        raise InputError(
            f"card cannot be converted: {format_validation_error(exc)}", path=source, line=line
        ) from exc


def _slug_id(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.casefold()).strip("-")[:40]
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:6]
    return f"{slug or 'card'}-{digest}"


def _tag(value: Any) -> str:
    tag = str(value).strip()
    if re.fullmatch(r"[a-z]+:[a-z0-9_]+", tag):
        return tag
    slug = re.sub(r"[^a-z0-9]+", "_", tag.casefold()).strip("_")
    return f"genre:{slug}" if slug else ""


def parse_mes_example(text: str, lang: str) -> list[DialogueLine]:
    """Return example lines from a ``mes_example`` block (``You:``/name prefixes, placeholders filled)."""
    lines: list[DialogueLine] = []
    you = _DEFAULTS["you"][lang]
    for raw in text.splitlines():
        raw = raw.strip()
        if not raw or raw.upper() == "<START>":
            continue
        head, sep, body = raw.partition(":")
        if not sep:
            if lines:  # continuation of the previous line
                last = lines[-1]
                merged = last.get(lang) + "\n" + raw
                lines[-1] = DialogueLine.model_validate({"speaker": last.speaker, lang: merged})
            continue
        speaker = "user" if head.strip().casefold() in (you, "user", "{{user}}") else "character"
        lines.append(DialogueLine.model_validate({"speaker": speaker, lang: body.strip()}))
    return lines


def write_v2(card: Card, path: Path, lang: str = "en") -> None:
    """Write one card as Character Card V2 JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(card_to_v2(card, lang), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
