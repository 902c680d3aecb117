"""``uxlocal run palate`` options (each field's docstring is its ``--help`` text) and candidate parsing."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from pydantic import Field, model_validator

from uxlocal.config import SuiteConfig
from uxlocal.errors import InputError

PARTS = ("trajectories", "agreement", "realism")
SIMULATORS = ("prompted", "lora")
CANDIDATE_PREFIX = "candidate:"


class PalateConfig(SuiteConfig):
    """Options of the PALATE suite."""

    not_in_identity: ClassVar[dict[str, str]] = {
        "users_dir": "where user files sit; their content is hashed into the run identity (prompt_hashes)",
        "cards": "where the card pool sits; the panel's card hashes are part of the run identity",
        "adapters_dir": "where adapters sit; their content-addressed folder names are hashed instead",
    }

    candidates: str = ""
    """Comma-separated role-play agents to evaluate: presets, HF folders or NAME=SPEC; each becomes role
    candidate:NAME (e.g. "small=embedded,big=qwen2.5-7b-instruct")."""
    users: str = "all"
    """Users to simulate: "all" or comma-separated ids (bundled: u1..u5)."""
    users_dir: str | None = None
    """Folder of user folders (profile.json + sessions.jsonl each); default: the bundled sample users."""
    simulator: str = "prompted"
    """Simulator kind(s) in the user seat: prompted, lora, or both comma-separated (lora needs
    `uxlocal palate train-simulator` first)."""
    panel: str = "default"
    """Frozen panel: a bundled name or a manifest file; a card whose hash changed is refused."""
    cards: str | None = None
    """Card pool (.jsonl/.json file or folder) the panel's cards come from; default: the bundled 300."""
    panel_cards: int | None = Field(default=None, ge=1)
    """Use only the first N cards of the panel (quick runs); default: all of them."""
    parts: str = ",".join(PARTS)
    """What to run, comma-separated: trajectories (three axes), agreement (rubrics vs held-out
    ratings), realism (2AFC of simulated vs real user turns)."""
    max_turns: int = Field(default=10, ge=1)
    """Turn cap: candidate replies per session before it ends as turn_cap (the simulator may [QUIT] first)."""
    trials: int = Field(default=1, ge=1)
    """Sessions per (candidate, user, card); each trial samples with its own seed."""
    candidate_max_tokens: int = Field(default=200, ge=1)
    """Completion budget of each candidate reply (tokens)."""
    user_max_tokens: int = Field(default=120, ge=1)
    """Completion budget of each simulated user turn (tokens)."""
    candidate_temperature: float = Field(default=0.7, ge=0)
    """Sampling temperature of the candidates."""
    user_temperature: float = Field(default=0.8, ge=0)
    """Sampling temperature of the simulators."""
    judge_context_turns: int = Field(default=8, ge=1)
    """Turns before the judged reply that the judge sees (older turns are marked omitted)."""
    judge_turn_chars: int = Field(default=600, ge=40)
    """Characters kept per turn in judge prompts (a third for Chinese)."""
    example_turns: int = Field(default=6, ge=0)
    """Example messages from the user's training sessions shown to the prompted simulator."""
    induction_examples: int = Field(default=8, ge=2)
    """Rated training replies shown to the judge when inducing a user's rubric."""
    rubric_max_tokens: int = Field(default=400, ge=16)
    """Completion budget of a rubric induction (tokens); a rubric cut off here falls back to the
    user's profile summary."""
    heldout_sessions: int | None = Field(default=None, ge=1)
    """At most N held-out sessions per user for agreement and realism; default: all."""
    agreement_without_reaction: bool = True
    """Also score held-out replies with the user's rubric but without the next-turn evidence (the
    spec's ablation: how much the reaction evidence adds)."""
    realism_turns: int = Field(default=2, ge=1)
    """Real user turns per held-out session tested against a simulated one (2AFC trials)."""
    adapters_dir: str | None = None
    """Folder of trained LoRA simulators; default: $UXLOCAL_HOME/palate/adapters."""

    @model_validator(mode="after")
    def _known_names(self) -> "PalateConfig":
        for field, allowed in (("parts", PARTS), ("simulator", SIMULATORS)):
            values = split_list(getattr(self, field))
            unknown = [v for v in values if v not in allowed]
            if unknown or not values:
                raise ValueError(f"{field}: {', '.join(unknown) or '(empty)'} not in {', '.join(allowed)}")
        parse_candidates(self.candidates)
        return self

    @property
    def part_set(self) -> set[str]:
        """The parts to run."""
        return set(split_list(self.parts))

    @property
    def simulator_kinds(self) -> list[str]:
        """Simulator kinds in the order given."""
        return split_list(self.simulator)

    @property
    def needs_user_seat(self) -> bool:
        """Whether any part runs a simulator."""
        return bool(self.part_set & {"trajectories", "realism"})


def split_list(text: str) -> list[str]:
    """Comma-separated values, trimmed, empty ones dropped, order kept, repeats removed."""
    return list(dict.fromkeys(v.strip() for v in text.split(",") if v.strip()))


@dataclass(frozen=True)
class Candidate:
    """One role-play agent under test."""

    name: str
    spec: str
    """What to resolve (preset, folder, either @backend)."""

    @property
    def role(self) -> str:
        """The role its requests use."""
        return CANDIDATE_PREFIX + self.name


def parse_candidates(text: str) -> list[Candidate]:
    """``A,B`` or ``name=spec,...``; a bare spec is named after its preset or folder."""
    out: list[Candidate] = []
    for item in split_list(text):
        name, sep, spec = item.partition("=")
        if not sep:
            spec = item
            head, _, backend = item.rpartition("@")
            base = Path(head if backend in ("vllm", "hf") else item).name or item
            name = base + (f"@{backend}" if backend in ("vllm", "hf") else "")
        name, spec = name.strip(), spec.strip()
        if not re.fullmatch(r"[A-Za-z0-9_.@+-]{1,64}", name) or not spec:
            raise InputError(f"--candidates: bad entry {item!r}",
                             "use PRESET, FOLDER or NAME=SPEC with NAME of letters, digits, _.@+-")
        if any(c.name == name for c in out):
            raise InputError(f"--candidates: name {name!r} appears twice", "use NAME=SPEC to rename one")
        out.append(Candidate(name, spec))
    return out
