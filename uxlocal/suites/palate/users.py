"""Per-user rated histories: the file format, the loader and its checks, the bundled sample users.

Layer contract: user folders in, validated ``UserData`` out; errors name the file and line.

A user folder holds ``profile.json`` and ``sessions.jsonl`` (one session per line). A session
opens with an unrated character turn; then user and character turns alternate; every later
character turn carries the user's satisfaction ``rating`` (1-5) and the ``reaction`` of the
user's next turn (continue, correct, repeat, change_topic, quit); the last turn is the user's
``[QUIT]``, and the character turn before it is the only one whose reaction is ``quit``.
``split`` is ``train`` (simulator training, rubric induction) or ``heldout`` (agreement and
realism). ``data/palate/users/README.md`` documents the same format for people writing files.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from uxlocal import paths
from uxlocal.errors import InputError, format_validation_error

QUIT = "[QUIT]"
"""The user's exit action: a simulator that writes it ends the session."""
Reaction = Literal["continue", "correct", "repeat", "change_topic", "quit"]
REACTIONS: tuple[str, ...] = ("continue", "correct", "repeat", "change_topic", "quit")


class UserProfile(BaseModel):
    """``profile.json``: who the user is, in a few sentences of their own language."""

    model_config = ConfigDict(extra="forbid")

    user_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    display_name: str = ""
    lang: Literal["en", "zh"]
    summary: str = Field(min_length=10)
    """What pleases and annoys this user; the prompted simulator's persona."""
    license: str = "unknown"
    provenance: str = "unknown"


class SessionTurn(BaseModel):
    """One turn of a rated session."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["character", "user"]
    text: str = Field(min_length=1)
    rating: int | None = Field(default=None, ge=1, le=5)
    """The user's satisfaction with this character reply (character turns after the first)."""
    reaction: Reaction | None = None
    """What the user's next turn does in response to this reply."""


class SessionCharacter(BaseModel):
    """The character the user talked with (sessions need not use pool cards)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    description: str = ""


class Session(BaseModel):
    """One rated conversation; the validator enforces the turn rules of the module docstring."""

    model_config = ConfigDict(extra="forbid")

    session_id: str = Field(min_length=1)
    split: Literal["train", "heldout"]
    card_id: str | None = None
    character: SessionCharacter
    lang: Literal["en", "zh"]
    turns: list[SessionTurn] = Field(min_length=4)

    @model_validator(mode="after")
    def _turn_rules(self) -> "Session":
        turns = self.turns
        last = turns[-1]
        if last.role != "user" or last.text.strip() != QUIT:
            raise ValueError(f"turns.{len(turns) - 1}: the last turn must be the user's {QUIT}")
        first = turns[0]
        if first.role != "character" or first.rating is not None or first.reaction is not None:
            raise ValueError("turns.0: must be the character's unrated opening turn")
        for k, turn in enumerate(turns[1:], start=1):
            expected = "user" if k % 2 == 1 else "character"
            if turn.role != expected:
                raise ValueError(f"turns.{k}: expected a {expected} turn (user and character alternate)")
            if turn.role == "user" and (turn.rating is not None or turn.reaction is not None):
                raise ValueError(f"turns.{k}: user turns carry no rating or reaction")
            if turn.role == "user" and QUIT in turn.text and k != len(turns) - 1:
                raise ValueError(f"turns.{k}: {QUIT} may only be the last turn")
            if turn.role == "character" and (turn.rating is None or turn.reaction is None):
                raise ValueError(f"turns.{k}: character replies need a rating (1-5) and a reaction")
            if turn.role == "character" and turn.reaction == "quit" and k != len(turns) - 2:
                raise ValueError(f"turns.{k}: reaction 'quit' only on the reply before the final {QUIT}")
        if turns[-2].reaction != "quit":
            raise ValueError(f"turns.{len(turns) - 2}: the reply before {QUIT} must have reaction 'quit'")
        return self

    def rated(self) -> list[tuple[int, SessionTurn]]:
        """``(index, turn)`` of every rated character reply."""
        return [(k, t) for k, t in enumerate(self.turns) if t.rating is not None]


@dataclass
class UserData:
    """One user's profile and sessions, with where they came from."""

    profile: UserProfile
    sessions: list[Session]
    folder: Path
    lines: dict[str, int] = field(default_factory=dict)
    """session_id -> line in ``sessions.jsonl`` (for messages that point at the data)."""

    @property
    def user_id(self) -> str:
        """The user's id."""
        return self.profile.user_id

    @property
    def lang(self) -> str:
        """The user's language (``en`` or ``zh``)."""
        return self.profile.lang

    def split(self, name: str) -> list[Session]:
        """Sessions of one split (``train`` or ``heldout``)."""
        return [s for s in self.sessions if s.split == name]

    @property
    def train(self) -> list[Session]:
        """Sessions for simulator training and rubric induction."""
        return self.split("train")

    @property
    def heldout(self) -> list[Session]:
        """Sessions kept for agreement and realism."""
        return self.split("heldout")

    def sha256(self) -> str:
        """Hash of the profile and sessions as validated (a changed file is a different run)."""
        blob = json.dumps(
            {
                "profile": self.profile.model_dump(mode="json"),
                "sessions": [s.model_dump(mode="json") for s in self.sessions],
            },
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def train_sha256(self) -> str:
        """Hash of the profile and training sessions only (what simulators and rubrics learn from)."""
        blob = json.dumps(
            {
                "profile": self.profile.model_dump(mode="json"),
                "sessions": [s.model_dump(mode="json") for s in self.train],
            },
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def bundled_users_dir() -> Path:
    """Return the five sample users shipped with uxlocal."""
    return paths.data_dir() / "palate" / "users"


def load_user(folder: Path) -> UserData:
    """Load and validate one user folder (``profile.json`` + ``sessions.jsonl``)."""
    profile_file, sessions_file = folder / "profile.json", folder / "sessions.jsonl"
    for file in (profile_file, sessions_file):
        if not file.is_file():
            raise InputError("missing", "a user folder holds profile.json and sessions.jsonl", path=file)
    try:
        raw = json.loads(profile_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg}", path=profile_file, line=exc.lineno) from exc
    try:
        profile = UserProfile.model_validate(raw)
    except ValidationError as exc:
        raise InputError(format_validation_error(exc), path=profile_file) from exc
    sessions, lines = _read_sessions(sessions_file)
    user = UserData(profile, sessions, folder, lines)
    _check_user(user, sessions_file)
    return user


def _read_sessions(file: Path) -> tuple[list[Session], dict[str, int]]:
    sessions: list[Session] = []
    lines: dict[str, int] = {}
    for lineno, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"not valid JSON: {exc.msg} at column {exc.colno}", path=file, line=lineno
            ) from exc
        try:
            session = Session.model_validate(raw)
        except ValidationError as exc:
            raise InputError(_describe(exc), path=file, line=lineno) from exc
        if session.session_id in lines:
            raise InputError(f"session_id {session.session_id!r} repeats line {lines[session.session_id]}",
                             path=file, line=lineno)
        lines[session.session_id] = lineno
        sessions.append(session)
    return sessions, lines


def _describe(exc: ValidationError) -> str:
    """Field errors as ``loc: message``; our turn-rule errors already name their turn."""
    return format_validation_error(exc).replace("(root): Value error, ", "")


def _check_user(user: UserData, file: Path) -> None:
    if not user.train:
        raise InputError("no 'train' sessions", "simulators and rubrics learn from the train split",
                         path=file)
    if not user.heldout:
        raise InputError("no 'heldout' sessions", "agreement and realism need held-out sessions", path=file)
    for session in user.sessions:
        if session.lang != user.lang:
            raise InputError(f"session lang {session.lang!r} differs from the profile's {user.lang!r}",
                             path=file, line=user.lines[session.session_id])


def load_users(spec: str = "all", folder: str | Path | None = None) -> list[UserData]:
    """Users by id list (``u1,u3``) or ``all``, from ``folder`` (default: the bundled users)."""
    root = Path(folder) if folder else bundled_users_dir()
    if not root.is_dir():
        raise InputError("no such users folder", path=root)
    available = sorted(p.name for p in root.iterdir() if (p / "profile.json").is_file())
    if not available:
        raise InputError("no user folders (each needs profile.json and sessions.jsonl)", path=root)
    wanted = available if spec.strip() in ("", "all") else [s.strip() for s in spec.split(",") if s.strip()]
    unknown = [u for u in wanted if u not in available]
    if unknown:
        raise InputError(f"unknown user(s) {', '.join(unknown)}", f"available: {', '.join(available)}",
                         path=root)
    users = [load_user(root / u) for u in wanted]
    for user, name in zip(users, wanted, strict=True):
        if user.user_id != name:
            raise InputError(f"user_id {user.user_id!r} differs from its folder name {name!r}",
                             path=root / name / "profile.json")
    return users
