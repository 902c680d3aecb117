"""Library side of ``uxlocal palate ...`` commands: pool/panel checks, card import/export, panel freezing.

Layer contract: reads and writes the files the user names; returns data for the CLI to print.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from uxlocal.errors import InputError
from uxlocal.suites.palate.cardfiles import load_cards, read_card_file
from uxlocal.suites.palate.cardv2 import write_v2
from uxlocal.suites.palate.panel import Panel, freeze_panel, load_panel, panel_cards, write_panel
from uxlocal.suites.palate.profiles import (
    Card,
    PoolProblem,
    check_pool,
    max_similarity,
    write_cards,
)


@dataclass
class CheckReport:
    """What ``uxlocal palate check`` found."""

    cards: int
    problems: list[PoolProblem]
    similarity: dict[str, tuple[float, str, str]]
    panel: str = ""
    panel_error: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No pool problem and a panel that matches the pool."""
        return not self.problems and self.panel_error is None


def check(
    cards: str | None = None, panel: str | None = "default", *, strict: bool | None = None
) -> CheckReport:
    """Pool checks (strict for the bundled pool unless told) and the panel hash check."""
    pool = load_cards(cards)
    strict = cards is None if strict is None else strict
    report = CheckReport(len(pool), check_pool(pool, strict=strict), max_similarity(pool))
    if panel:
        manifest, where = load_panel(panel)
        report.panel = f"{manifest.name} v{manifest.version} ({len(manifest.cards)} cards)"
        try:
            panel_cards(manifest, pool, where)
        except InputError as exc:
            report.panel_error = exc.format_message()
    return report


def import_cards(files: list[Path], out: Path) -> list[Card]:
    """Convert V1/V2/V3 JSON, PNG cards or our JSON into one JSONL pool file at ``out``."""
    cards: list[Card] = []
    for file in files:
        cards.extend(read_card_file(file))
    seen: set[str] = set()
    for card in cards:
        if card.id in seen:
            raise InputError(f"two imported cards share the id {card.id!r}", "rename one of them", path=out)
        seen.add(card.id)
    write_cards(cards, out)
    return cards


def export_cards(ids: list[str], out_dir: Path, *, lang: str = "en", cards: str | None = None) -> list[Path]:
    """Write the chosen cards (all when ``ids`` is empty) as Character Card V2 JSON, one file each."""
    pool = {c.id: c for c in load_cards(cards)}
    unknown = [i for i in ids if i not in pool]
    if unknown:
        raise InputError(f"unknown card id(s) {', '.join(unknown)}")
    written = []
    for card_id in ids or sorted(pool):
        path = out_dir / f"{card_id}.{lang}.json"
        write_v2(pool[card_id], path, lang)
        written.append(path)
    return written


def freeze(
    out: Path,
    *,
    cards: str | None = None,
    size: int = 10,
    seed: int = 20260729,
    name: str = "custom",
    keep: str | None = None,
) -> Panel:
    """Freeze a new panel (or, with ``keep``, a new version of an existing one) and write its manifest."""
    pool = load_cards(cards)
    kept = load_panel(keep)[0] if keep else None
    panel = freeze_panel(pool, name=name, size=size, seed=seed, keep=kept)
    write_panel(panel, out)
    return panel
