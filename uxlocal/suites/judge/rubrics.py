"""Rubrics as data: TOML files validated into ``Rubric``, identified by sha256 of a canonical form.

Layer contract: reads TOML, returns frozen models; no prompts, no engine, no store.

A rubric is one of three kinds. ``label``: a closed set of labels with one-line descriptions
(``positive`` names the label AUROC treats as the positive class; default the first).
``likert``: points 1..N with an anchor each; the judge picks a point, and the expected score
``sum(p_k * k)`` comes from the label probabilities. ``pairwise``: which of two replies (A or B)
is better, optionally ``allow_tie``. Every rubric may add an ``abstain`` label ("cannot tell")
and several ``[[criteria]]``, each judged independently on the same item with the same labels.

Identity: sha256 of the canonical JSON of the validated model (sorted keys, no whitespace), so
reformatting or reordering the TOML keeps the identity and any change of meaning changes it.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from uxlocal import paths
from uxlocal.errors import InputError, format_validation_error

RubricKind = Literal["label", "likert", "pairwise"]
Unit = Literal["conversation", "each_assistant_turn"]
PAIR_LABELS = ("A", "B")
TIE_LABEL = "tie"


class LabelDef(BaseModel):
    """One answer the judge may give."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    description: str = ""


class Criterion(BaseModel):
    """One question judged on every item (the rubric's labels answer it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.-]+$")
    question: str = Field(min_length=1)


class Rubric(BaseModel):
    """A validated rubric; ``labels()`` is the closed set a verdict is constrained to."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1)
    kind: RubricKind
    question: str = Field(min_length=1)
    """What the judge answers when there are no ``criteria`` (one criterion named ``overall``)."""
    language: Literal["en", "zh"] = "en"
    unit: Unit = "conversation"
    labels_: tuple[LabelDef, ...] = Field(default=(), alias="labels")
    positive: str | None = None
    scale: int | None = Field(default=None, ge=2, le=10)
    anchors: dict[str, str] = Field(default_factory=dict)
    allow_tie: bool = False
    abstain: str | None = None
    criteria: tuple[Criterion, ...] = ()
    description: str = ""

    @model_validator(mode="after")
    def _check_kind(self) -> "Rubric":
        if self.kind == "label":
            if len(self.labels_) < 2:
                raise ValueError("a label rubric needs at least two [[labels]]")
            if self.positive is not None and self.positive not in self.names():
                raise ValueError(f"positive {self.positive!r} is not one of the labels")
        elif self.labels_:
            raise ValueError(f"a {self.kind} rubric has fixed labels; remove [[labels]]")
        if self.kind == "likert":
            if self.scale is None:
                raise ValueError("a likert rubric needs scale = N (points 1..N)")
            missing = [str(k) for k in range(1, self.scale + 1) if str(k) not in self.anchors]
            if missing or len(self.anchors) != self.scale:
                raise ValueError(f"anchors must name exactly the points 1..{self.scale} (missing {missing})")
        labels = self.labels()
        if len(set(labels)) != len(labels):
            raise ValueError(f"labels must be distinct (abstain {self.abstain!r} repeats one)")
        names = [c.name for c in self.criteria]
        if len(set(names)) != len(names):
            raise ValueError("criteria names must be distinct")
        if self.unit == "each_assistant_turn" and self.kind == "pairwise":
            raise ValueError("pairwise rubrics judge whole replies; use unit = 'conversation'")
        return self

    def names(self) -> tuple[str, ...]:
        """Return the answer labels without ``abstain``."""
        if self.kind == "label":
            return tuple(label.name for label in self.labels_)
        if self.kind == "likert":
            return tuple(str(k) for k in range(1, (self.scale or 0) + 1))
        return PAIR_LABELS + ((TIE_LABEL,) if self.allow_tie else ())

    def labels(self) -> tuple[str, ...]:
        """Every label the judge may emit (``abstain`` last)."""
        return self.names() + ((self.abstain,) if self.abstain else ())

    def positive_label(self) -> str | None:
        """Return the positive class of a two-label rubric (AUROC, ECE); None for larger label sets."""
        if self.kind != "label" or len(self.names()) != 2:
            return None
        return self.positive or self.names()[0]

    def descriptions(self) -> list[tuple[str, str]]:
        """(label, one-line meaning) pairs shown to the judge."""
        if self.kind == "label":
            pairs = [(label.name, label.description) for label in self.labels_]
        elif self.kind == "likert":
            pairs = [(str(k), self.anchors[str(k)]) for k in range(1, (self.scale or 0) + 1)]
        else:
            pairs = [("A", "reply A is better"), ("B", "reply B is better")]
            if self.allow_tie:
                pairs.append((TIE_LABEL, "neither is better"))
        return pairs + ([(self.abstain, "the conversation does not let you tell")] if self.abstain else [])

    def criteria_list(self) -> tuple[Criterion, ...]:
        """Return the criteria to judge (one ``overall`` criterion asking ``question`` if none is given)."""
        return self.criteria or (Criterion(name="overall", question=self.question),)

    def canonical(self) -> str:
        """Canonical JSON: sorted keys, compact, non-ASCII kept."""
        data = self.model_dump(mode="json", by_alias=True)
        return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))

    def sha256(self) -> str:
        """Return the rubric's identity."""
        return hashlib.sha256(self.canonical().encode("utf-8")).hexdigest()


def builtin_dir() -> Path:
    """Folder of the rubrics shipped in the package."""
    return paths.data_dir() / "judge" / "rubrics"


def builtin_rubrics() -> dict[str, Path]:
    """Built-in rubric name -> file."""
    return {p.stem: p for p in sorted(builtin_dir().glob("*.toml"))}


def load_rubric(spec: str) -> Rubric:
    """Return a built-in rubric by name, or a TOML file by path; errors name the file and the field."""
    known = builtin_rubrics()
    path = known.get(spec) or Path(spec)
    if not path.is_file():
        raise InputError("no such rubric file or built-in rubric",
                         f"built-ins: {', '.join(known)}; see uxlocal judge --list-rubrics", path=spec)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(f"invalid TOML: {exc}", path=path, line=line) from None
    data.setdefault("name", path.stem)
    try:
        return Rubric.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"bad rubric: {format_validation_error(exc)}", path=path) from None
