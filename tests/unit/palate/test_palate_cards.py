"""Card pool checks and Character Card V2 import/export."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import pytest

from uxlocal.errors import InputError
from uxlocal.lang import detect_lang
from uxlocal.suites.palate.cardfiles import load_cards, read_card_file
from uxlocal.suites.palate.cardv2 import card_from_v2, card_to_v2, write_v2
from uxlocal.suites.palate.profiles import (
    Bilingual,
    Card,
    check_pool,
    max_similarity,
    write_cards,
)


@pytest.fixture(scope="module")
def pool() -> list[Card]:
    return load_cards()


def test_bundled_pool_has_300_cards_and_passes_every_check(pool: list[Card]) -> None:
    assert len(pool) == 300
    assert check_pool(pool, strict=True) == []


def test_bundled_pool_is_far_from_the_near_duplicate_threshold(pool: list[Card]) -> None:
    best = max_similarity(pool)
    assert best["en"][0] < 0.1 and best["zh"][0] < 0.1


def test_pool_check_flags_a_reworded_copy_as_near_duplicate(pool: list[Card]) -> None:
    source = pool[0]
    persona = Bilingual(en=source.persona.en.replace("sixties", "fifties"), zh=source.persona.zh)
    copy = source.model_copy(
        update={"id": "c9999", "name": Bilingual(en="Someone Else", zh="别人"), "persona": persona}
    )
    problems = check_pool([*pool[:20], copy])
    assert {p.check for p in problems} == {"near_duplicate"}
    assert any("c0001" in p.card_id and "c9999" in p.card_id for p in problems)


def test_pool_check_flags_repeated_id_and_name(pool: list[Card]) -> None:
    twin = pool[1].model_copy(update={"id": pool[0].id, "name": pool[0].name})
    checks = {p.check for p in check_pool([pool[0], twin])}
    assert {"unique_id", "unique_name"} <= checks


@pytest.mark.parametrize(
    "field, value, check",
    [
        (
            "persona",
            Bilingual(
                en="Too short.",
                zh="太短了，太短了，太短了，太短了，太短了，太短了，太短了，太短了，太短了，太短了，太短了。",
            ),
            "length",
        ),  # en below 150
        ("tags", ["role:mentor"], "tags"),  # no genre tag to stratify on
        ("tags", ["genre:Fantasy"], "tags"),  # not kind:lowercase_value
        ("license", "CC-BY-NC-4.0", "license"),  # not an open license
        ("provenance", "franchise:someone", "provenance"),  # not original
        ("greeting", Bilingual(en="Hello there, traveller of the long road."), "bilingual"),  # zh missing
    ],
)
def test_pool_check_names_the_failing_check(pool: list[Card], field: str, value: object, check: str) -> None:
    bad = pool[5].model_copy(update={field: value})
    assert check in {p.check for p in check_pool([bad])}


def test_monolingual_card_passes_non_strict_checks(pool: list[Card]) -> None:
    card = pool[3]
    mono = card.model_copy(
        update={
            k: Bilingual(en=getattr(card, k).en)
            for k in (
                "name",
                "persona",
                "background",
                "relationship_to_user",
                "scenario",
                "greeting",
                "boundaries",
            )
        }
    )
    assert check_pool([mono], strict=False) == []
    assert mono.persona.get("zh") == card.persona.en  # prompts fall back to the language the card has


def test_card_hash_changes_with_content(pool: list[Card]) -> None:
    card = pool[0]
    edited = card.model_copy(update={"greeting": Bilingual(en=card.greeting.en + "!", zh=card.greeting.zh)})
    assert card.sha256() != edited.sha256()
    assert Card.model_validate_json(card.canonical_json()).sha256() == card.sha256()


@pytest.mark.parametrize("lang", ["en", "zh"])  # both languages export and come back unchanged
def test_v2_export_then_import_is_lossless(pool: list[Card], lang: str, tmp_path: Path) -> None:
    card = pool[42]
    v2 = card_to_v2(card, lang)
    assert v2["spec"] == "chara_card_v2" and v2["data"]["first_mes"] == card.greeting.get(lang)
    assert v2["data"]["mes_example"].startswith("<START>\n{{user}}: ")
    write_v2(card, tmp_path / "c.json", lang)
    assert read_card_file(tmp_path / "c.json") == [card]


def test_v2_card_edited_elsewhere_imports_the_edited_text(pool: list[Card]) -> None:
    v2 = card_to_v2(pool[7], "en")
    v2["data"]["first_mes"] = "A brand new greeting written in another editor."
    card = card_from_v2(v2)
    assert card.greeting.en == "A brand new greeting written in another editor."
    assert card.provenance == "imported"


def test_foreign_v2_card_is_converted_with_placeholders_filled() -> None:
    raw = {
        "spec": "chara_card_v2",
        "spec_version": "2.0",
        "data": {
            "name": "Captain Mirelle",
            "description": "A retired airship captain who runs a tea stall at the docks.",
            "personality": "Gruff, generous, tells tall tales.",
            "scenario": "{{user}} sits down at {{char}}'s stall.",
            "first_mes": "*{{char}} slides a cup over.* Sit, {{user}}. Rain's coming.",
            "mes_example": (
                "<START>\n{{user}}: Were you really a captain?\n{{char}}: Thirty years, more or less."
            ),
            "tags": ["Steampunk", "genre:slice_of_life"],
            "creator": "someone",
            "extensions": {},
        },
    }
    card = card_from_v2(raw, source="mirelle.json")
    assert card.greeting.en == "*Captain Mirelle slides a cup over.* Sit, you. Rain's coming."
    assert card.scenario.en == "you sits down at Captain Mirelle's stall."
    assert [line.speaker for line in card.example_dialogue] == ["user", "character"]
    assert card.tags == ["genre:steampunk", "genre:slice_of_life"]
    assert card.provenance == "imported:mirelle.json" and card.license == "unknown"
    assert card.id.startswith("captain-mirelle-")


def test_v1_flat_card_and_chinese_detection() -> None:
    card = card_from_v2(
        {
            "name": "林小满",
            "description": "一个在古镇开书店的年轻人，喜欢收集旧地图。",
            "personality": "安静、细心",
            "scenario": "雨天的书店",
            "first_mes": "欢迎光临，外面雨大，进来坐坐吧。",
            "mes_example": "",
        }
    )
    assert detect_lang(card.greeting.get("zh")) == "zh"
    assert card.greeting.zh == "欢迎光临，外面雨大，进来坐坐吧。" and card.greeting.en is None


def test_card_without_greeting_is_refused_with_the_file_name() -> None:
    with pytest.raises(InputError, match="x.json: card needs a name and a first_mes"):
        card_from_v2({"spec": "chara_card_v2", "data": {"name": "Nobody"}}, source="x.json")


def _png_with_text(key: str, payload: bytes) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"tEXt", key.encode() + b"\0" + payload)
        + chunk(b"IEND", b"")
    )


def test_png_card_is_read_from_its_chara_chunk(pool: list[Card], tmp_path: Path) -> None:
    blob = base64.b64encode(json.dumps(card_to_v2(pool[9], "zh")).encode())
    (tmp_path / "card.png").write_bytes(_png_with_text("chara", blob))
    assert read_card_file(tmp_path / "card.png") == [pool[9]]


def test_bad_jsonl_line_names_file_and_line(pool: list[Card], tmp_path: Path) -> None:
    file = tmp_path / "cards.jsonl"
    write_cards(pool[:2], file)
    with file.open("a") as handle:
        handle.write('{"id": "c1", "name": {"en": "X"}}\n')
    with pytest.raises(InputError, match=r"cards.jsonl:3: not a valid card: persona: Field required"):
        load_cards(file)
