"""The frozen panel: which cards every (user, candidate) pair converses over, pinned by content hash.

Layer contract: cards and manifest files in, a validated ``Panel`` and its cards out; writing a
manifest happens only in ``write_panel`` (called by the CLI).

Sampling (``sample_panel``) is seeded and stratified on each card's *primary* genre (its first
``genre:`` tag). Panel slots go to strata in proportion to their size by largest remainder, ties
broken by the seed; inside a stratum the seeded order is used, preferring a card whose role and
tone tags the panel does not have yet, so ten slots cover many roles and tones as well.

A run refuses a panel whose cards changed (missing id or different sha256): the manifest is the
promise that every candidate saw the same cards. To accept the change, declare a new version
(``freeze_panel(..., keep=old)``): same ids, new hashes, version + 1.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from uxlocal import paths
from uxlocal.errors import InputError, format_validation_error
from uxlocal.suites.palate.profiles import Card

DEFAULT_PANEL_SIZE = 10
DEFAULT_PANEL_SEED = 20260729


class PanelEntry(BaseModel):
    """One card of the panel, pinned by its hash."""

    model_config = ConfigDict(extra="forbid")

    id: str
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    stratum: str = ""


class Panel(BaseModel):
    """A panel manifest (``data/palate/panels/<name>.json`` or a user's file)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    version: int = Field(ge=1)
    """Bumped whenever a card's content changes; runs record it."""
    seed: int
    stratify_on: str = "genre"
    pool_size: int = Field(ge=1)
    cards: list[PanelEntry]
    note: str = ""

    def sha256(self) -> str:
        """Hash of the manifest (part of a run's identity)."""
        blob = json.dumps(
            self.model_dump(mode="json"), sort_keys=True, ensure_ascii=False, separators=(",", ":")
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def primary(card: Card, kind: str = "genre") -> str:
    """Return the card's first tag value of ``kind`` (its stratum)."""
    values = card.tag_values(kind)
    return values[0] if values else "untagged"


def sample_panel(
    cards: list[Card],
    *,
    size: int = DEFAULT_PANEL_SIZE,
    seed: int = DEFAULT_PANEL_SEED,
    stratify_on: str = "genre",
) -> list[Card]:
    """Seeded stratified sample of ``size`` cards (see the module docstring)."""
    if size > len(cards):
        raise InputError(f"panel size {size} exceeds the pool's {len(cards)} cards")
    rng = random.Random(seed)
    strata: dict[str, list[Card]] = defaultdict(list)
    for card in sorted(cards, key=lambda c: c.id):
        strata[primary(card, stratify_on)].append(card)
    quota = _allocate(strata, size, rng)
    chosen: list[Card] = []
    for name in sorted(strata, key=lambda s: (-quota[s], s)):
        members = list(strata[name])
        rng.shuffle(members)
        for _ in range(quota[name]):
            pick = _most_novel(members, chosen)
            members.remove(pick)
            chosen.append(pick)
    return chosen


def _allocate(strata: dict[str, list[Card]], size: int, rng: random.Random) -> dict[str, int]:
    """Largest-remainder allocation of ``size`` slots, proportional to stratum sizes."""
    total = sum(len(v) for v in strata.values())
    exact = {name: size * len(members) / total for name, members in strata.items()}
    quota = {name: int(value) for name, value in exact.items()}
    tiebreak = {name: rng.random() for name in sorted(strata)}
    order = sorted(strata, key=lambda s: (-(exact[s] - quota[s]), tiebreak[s]))
    for name in order[: size - sum(quota.values())]:
        quota[name] += 1
    return quota


def _most_novel(members: list[Card], chosen: list[Card]) -> Card:
    """Return the first member (in seeded order) adding the most role/tone tags the panel lacks."""
    have = {t for c in chosen for t in c.tags if t.startswith(("role:", "tone:"))}
    return max(members, key=lambda c: len({t for t in c.tags if t.startswith(("role:", "tone:"))} - have))


def freeze_panel(
    cards: list[Card],
    *,
    name: str = "default",
    size: int = DEFAULT_PANEL_SIZE,
    seed: int = DEFAULT_PANEL_SEED,
    keep: Panel | None = None,
    note: str = "",
) -> Panel:
    """Return a manifest for a new panel, or with ``keep`` a new version of it (same ids, new hashes)."""
    by_id = {c.id: c for c in cards}
    if keep is not None:
        missing = [e.id for e in keep.cards if e.id not in by_id]
        if missing:
            raise InputError(
                f"cards {', '.join(missing)} of panel {keep.name} v{keep.version} are not in the pool"
            )
        chosen = [by_id[e.id] for e in keep.cards]
        name, seed, version = keep.name, keep.seed, keep.version + 1
        stratify_on = keep.stratify_on
    else:
        stratify_on = "genre"
        chosen = sample_panel(cards, size=size, seed=seed, stratify_on=stratify_on)
        version = 1
    entries = [PanelEntry(id=c.id, sha256=c.sha256(), stratum=primary(c, stratify_on)) for c in chosen]
    return Panel(
        name=name,
        version=version,
        seed=seed,
        stratify_on=stratify_on,
        pool_size=len(cards),
        cards=entries,
        note=note,
    )


def bundled_panels_dir() -> Path:
    """Panel manifests shipped with uxlocal."""
    return paths.data_dir() / "palate" / "panels"


def load_panel(spec: str) -> tuple[Panel, Path]:
    """Return a panel by bundled name (``default``) or by manifest path."""
    path = Path(spec)
    if not path.is_file():
        path = bundled_panels_dir() / f"{spec}.json"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in bundled_panels_dir().glob("*.json"))) or "none"
        raise InputError("no such panel manifest", f"bundled panels: {known}; or pass a file path",
                         path=spec)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=path, line=exc.lineno) from exc
    try:
        return Panel.model_validate(raw), path
    except ValidationError as exc:
        raise InputError(f"not a panel manifest: {format_validation_error(exc)}", path=path) from exc


def panel_cards(panel: Panel, cards: list[Card], where: str | Path = "panel") -> list[Card]:
    """Return the panel's cards in manifest order; refuse any card that is missing or changed."""
    by_id = {c.id: c for c in cards}
    hint = (
        f"if the change is intended, declare a new panel version: uxlocal palate freeze-panel "
        f"--from {where} --out NEW.json (version {panel.version + 1}), then pass --panel NEW.json"
    )
    chosen = []
    for entry in panel.cards:
        card = by_id.get(entry.id)
        if card is None:
            raise InputError(f"panel {panel.name} v{panel.version}: card {entry.id} is not in the pool",
                             hint, path=where)
        actual = card.sha256()
        if actual != entry.sha256:
            raise InputError(f"panel {panel.name} v{panel.version}: card {entry.id} changed since the "
                f"panel was frozen (sha256 {actual[:12]} != {entry.sha256[:12]})",
                             hint, path=where)
        chosen.append(card)
    return chosen


def write_panel(panel: Panel, path: Path) -> None:
    """Write a manifest as indented JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(panel.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
