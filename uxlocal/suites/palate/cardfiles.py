"""Card files in: our JSON/JSONL cards and Character Card V1/V2/V3 (JSON, or PNG ``tEXt`` chunks).

Layer contract: files in, validated ``Card`` objects out; errors name the file and line. The card
schema lives in ``profiles.py`` and the V1/V2/V3 conversion in ``cardv2.py``; this module picks
which one a file or a JSON object needs, so neither of those two has to import the other's reader.
"""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from uxlocal.errors import InputError, format_validation_error
from uxlocal.suites.palate.cardv2 import card_from_v2
from uxlocal.suites.palate.profiles import Card, bundled_cards_dir


def load_cards(source: str | Path | None = None) -> list[Card]:
    """Cards from a ``.jsonl`` file, a ``.json`` file (one card or a list) or a folder of both.

    ``None`` loads the bundled pool. Errors name the file and line.
    """
    root = Path(source) if source else bundled_cards_dir()
    if root.is_dir():
        files = sorted(list(root.glob("*.jsonl")) + list(root.glob("*.json")))
        if not files:
            raise InputError("no .jsonl or .json card files in this folder", path=root)
    elif root.is_file():
        files = [root]
    else:
        raise InputError("no such card file or folder", path=root)
    cards: list[Card] = []
    for file in files:
        cards.extend(_read_card_file(file))
    return cards


def _read_card_file(file: Path) -> list[Card]:
    if file.suffix == ".jsonl":
        cards = []
        for lineno, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
            if line.strip():
                cards.append(parse_card(_json_line(file, lineno, line), file, lineno))
        return cards
    try:
        raw = json.loads(file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=file, line=exc.lineno) from exc
    items = raw if isinstance(raw, list) else [raw]
    return [parse_card(item, file, None) for item in items]


def _json_line(file: Path, lineno: int, line: str) -> object:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} at column {exc.colno}", path=file, line=lineno) from exc


def parse_card(raw: object, file: str | Path | None = None, line: int | None = None) -> Card:
    """Validate one card dict; a Character Card V2/V1 dict is converted first."""
    if isinstance(raw, dict) and ("spec" in raw or "first_mes" in raw or "data" in raw):
        return card_from_v2(raw, source=file, line=line)
    try:
        return Card.model_validate(raw)
    except ValidationError as exc:
        raise InputError(f"not a valid card: {format_validation_error(exc)}", path=file, line=line) from exc


def read_card_file(path: Path) -> list[Card]:
    """Cards from a V1/V2/V3 JSON file, a PNG card (``chara``/``ccv3`` text chunk) or our JSON/JSONL."""
    if path.suffix.lower() == ".png":
        return [card_from_v2(_png_card(path), source=path)]
    return load_cards(path)


def _png_card(path: Path) -> dict[str, Any]:
    """Return the JSON inside a PNG card's ``tEXt`` chunk (``ccv3`` preferred over ``chara``)."""
    blob = path.read_bytes()
    if not blob.startswith(b"\x89PNG\r\n\x1a\n"):
        raise InputError("not a PNG file", path=path)
    found: dict[str, bytes] = {}
    pos = 8
    while pos + 8 <= len(blob):
        (length,) = struct.unpack(">I", blob[pos : pos + 4])
        kind = blob[pos + 4 : pos + 8]
        body = blob[pos + 8 : pos + 8 + length]
        if kind == b"tEXt" and b"\0" in body:
            key, _, value = body.partition(b"\0")
            found[key.decode("latin-1").lower()] = value
        pos += 12 + length
    payload = found.get("ccv3") or found.get("chara")
    if payload is None:
        raise InputError("PNG has no 'chara' or 'ccv3' text chunk (not a character card)", path=path)
    try:
        raw = json.loads(base64.b64decode(payload))
    except (ValueError, json.JSONDecodeError) as exc:
        raise InputError(f"card chunk is not base64 JSON: {exc}", path=path) from exc
    if not isinstance(raw, dict):
        raise InputError("card chunk is not a JSON object", path=path)
    return raw
