"""The frozen panel: seeded stratified sampling, the shipped manifest, and the hash check."""

from __future__ import annotations

from pathlib import Path

import pytest

from uxlocal.errors import InputError
from uxlocal.suites.palate.cardfiles import load_cards
from uxlocal.suites.palate.panel import (
    freeze_panel,
    load_panel,
    panel_cards,
    primary,
    sample_panel,
    write_panel,
)
from uxlocal.suites.palate.profiles import Bilingual, Card


@pytest.fixture(scope="module")
def pool() -> list[Card]:
    return load_cards()


def test_default_manifest_matches_the_bundled_pool(pool: list[Card]) -> None:
    panel, path = load_panel("default")
    cards = panel_cards(panel, pool, path)
    assert len(cards) == 10 and panel.version == 1
    assert len({primary(c) for c in cards}) == 10  # ten different primary genres
    # the shipped manifest is exactly what the sampler freezes from the shipped pool
    assert [e.id for e in freeze_panel(pool).cards] == [c.id for c in cards]


def test_sampling_is_deterministic_per_seed_and_varies_across_seeds(pool: list[Card]) -> None:
    a = [c.id for c in sample_panel(pool, seed=1)]
    assert a == [c.id for c in sample_panel(pool, seed=1)]
    assert a != [c.id for c in sample_panel(pool, seed=2)]


def test_sampling_allocates_slots_in_proportion_to_strata(pool: list[Card]) -> None:
    genres = ["fantasy"] * 6 + ["horror"] * 3 + ["romance"] * 1
    cards = [pool[i].model_copy(update={"id": f"x{i}", "tags": [f"genre:{g}"]}) for i, g in enumerate(genres)]
    chosen = sample_panel(cards, size=7, seed=3)
    counts = {g: sum(primary(c) == g for c in chosen) for g in ("fantasy", "horror", "romance")}
    assert counts == {"fantasy": 4, "horror": 2, "romance": 1}  # 4.2, 2.1, 0.7 -> largest remainder


def test_changed_card_breaks_the_panel_hash_check(pool: list[Card]) -> None:
    panel, path = load_panel("default")
    target = panel.cards[3].id
    edited = [
        c.model_copy(update={"greeting": Bilingual(en=c.greeting.en + " Well?", zh=c.greeting.zh)})
        if c.id == target
        else c
        for c in pool
    ]
    with pytest.raises(InputError, match=rf"card {target} changed since the panel was frozen") as info:
        panel_cards(panel, edited, path)
    assert "declare a new panel version" in str(info.value)


def test_new_panel_version_accepts_the_changed_card(pool: list[Card], tmp_path: Path) -> None:
    panel, _ = load_panel("default")
    target = panel.cards[0].id
    edited = [
        c.model_copy(update={"scenario": Bilingual(en=c.scenario.en + " It is raining.", zh=c.scenario.zh)})
        if c.id == target
        else c
        for c in pool
    ]
    bumped = freeze_panel(edited, keep=panel)
    assert bumped.version == 2 and [e.id for e in bumped.cards] == [e.id for e in panel.cards]
    write_panel(bumped, tmp_path / "v2.json")
    again, path = load_panel(str(tmp_path / "v2.json"))
    assert [c.id for c in panel_cards(again, edited, path)] == [e.id for e in panel.cards]
    assert again.sha256() != panel.sha256()


def test_missing_panel_card_is_refused(pool: list[Card]) -> None:
    panel, path = load_panel("default")
    with pytest.raises(InputError, match=f"card {panel.cards[0].id} is not in the pool"):
        panel_cards(panel, pool[:0], path)


def test_unknown_panel_name_lists_the_bundled_ones() -> None:
    with pytest.raises(InputError, match="bundled panels: default"):
        load_panel("nope")
