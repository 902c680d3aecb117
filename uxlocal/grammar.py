"""Constraints as data: ``Choice``, ``JsonSchema`` and ``Regex`` travel inside a request.

Each backend maps a constraint to its own mechanism (vLLM ``StructuredOutputsParams``; an
xgrammar or outlines logits mask for the HF backend). Parsing lives here too, so every backend
turns text into a value the same way: a truncated or invalid output is reported as invalid with
the reason, never guessed.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

GrammarBackend = Literal["xgrammar", "outlines"]
GRAMMAR_BACKENDS: tuple[str, ...] = ("xgrammar", "outlines")


@dataclass(frozen=True)
class ParseResult:
    """Outcome of parsing generated text against a constraint."""

    valid: bool
    value: Any = None
    error: str | None = None


@dataclass(frozen=True)
class Choice:
    """Exactly one of ``labels``; the engine also returns a probability for every label."""

    labels: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.labels) < 2 or len(set(self.labels)) != len(self.labels):
            raise ValueError(f"Choice needs at least two distinct labels, got {self.labels!r}")
        if any(not label for label in self.labels):
            raise ValueError("Choice labels must be non-empty")

    kind: Literal["choice"] = field(default="choice", init=False)

    def key(self) -> dict[str, Any]:
        """Canonical form for request hashing."""
        return {"kind": self.kind, "labels": list(self.labels)}

    def parse(self, text: str) -> ParseResult:
        """Return the label if the text is exactly one (surrounding whitespace ignored)."""
        stripped = text.strip()
        if stripped in self.labels:
            return ParseResult(True, stripped)
        return ParseResult(False, None, f"not one of {list(self.labels)}: {stripped[:40]!r}")

    def to_regex(self) -> str:
        """Alternation of the escaped labels (for regex-only grammar engines)."""
        return "(" + "|".join(re.escape(label) for label in self.labels) + ")"


@dataclass(frozen=True)
class JsonSchema:
    """A JSON object matching ``schema``; parsed through ``model`` when a pydantic class is given."""

    schema: dict[str, Any]
    model: type[BaseModel] | None = field(default=None, compare=False, hash=False)
    kind: Literal["json"] = field(default="json", init=False)

    def __hash__(self) -> int:
        return hash(json.dumps(self.schema, sort_keys=True))

    @classmethod
    def from_model(cls, model: type[BaseModel]) -> "JsonSchema":
        """Build from a pydantic model; its validator parses the result."""
        return cls(schema=model.model_json_schema(), model=model)

    def key(self) -> dict[str, Any]:
        """Canonical form for request hashing (``layout``: JSON generated compact, engine/vllm_load.py)."""
        return {"kind": self.kind, "schema": self.schema, "layout": "compact"}

    def parse(self, text: str) -> ParseResult:
        """Parse JSON (control characters allowed inside strings) and validate it.

        ``strict=False`` because xgrammar's JSON string rule admits raw control characters that
        Python's strict parser rejects (shared/notes/cpu-stack.md).
        """
        try:
            value = json.loads(text, strict=False)
        except json.JSONDecodeError as exc:
            return ParseResult(False, None, f"invalid JSON: {exc.msg} at char {exc.pos}")
        if self.model is not None:
            try:
                return ParseResult(True, self.model.model_validate(value).model_dump(mode="json"))
            except ValidationError as exc:
                first = exc.errors()[0]
                loc = ".".join(str(x) for x in first.get("loc", ()))
                return ParseResult(False, None, f"schema: {loc}: {first.get('msg')}")
        return ParseResult(True, value)


@dataclass(frozen=True)
class Regex:
    """Text matching ``pattern`` in full."""

    pattern: str
    kind: Literal["regex"] = field(default="regex", init=False)

    def key(self) -> dict[str, Any]:
        """Canonical form for request hashing."""
        return {"kind": self.kind, "pattern": self.pattern}

    def parse(self, text: str) -> ParseResult:
        """Return the text itself if it matches the whole pattern."""
        if re.fullmatch(self.pattern, text):
            return ParseResult(True, text)
        return ParseResult(False, None, f"does not match /{self.pattern}/")


Constraint = Choice | JsonSchema | Regex


def constraint_key(constraint: Constraint | None) -> dict[str, Any] | None:
    """Hashable canonical description of a constraint (None when unconstrained)."""
    return None if constraint is None else constraint.key()


def parse_output(constraint: Constraint | None, text: str, finish_reason: str) -> ParseResult:
    """Parse generated text; output cut off by the token budget is invalid whatever it says."""
    if constraint is None:
        return ParseResult(True, text)
    if finish_reason == "length" and not isinstance(constraint, Choice):
        return ParseResult(False, None, "truncated at max_tokens before the structure closed")
    return constraint.parse(text)


MAX_ENUM_INTEGERS = 256
"""Widest integer range ``outlines_schema`` spells out as an enum; wider ranges stay unbounded in the
grammar and are checked by the validator only."""


def outlines_schema(schema: Any) -> Any:
    """Return the schema with each bounded integer range (at most ``MAX_ENUM_INTEGERS`` values) as an enum.

    Why: outlines_core turns ``{"type": "integer", "minimum": 1, "maximum": 5}`` into a regex for
    any integer (``shared/notes/cpu-stack.md``), so a 1-5 score could come out as 10 and only be
    caught afterwards as invalid. An ``enum`` it does enforce. Float bounds and wider ranges are
    still left to ``JsonSchema.parse``, which marks such outputs invalid with a ``schema:`` error.
    """
    if isinstance(schema, list):
        return [outlines_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    node = {key: outlines_schema(value) for key, value in schema.items()}
    bounds = _integer_bounds(node)
    if bounds is None:
        return node
    low, high = bounds
    rest = {k: v for k, v in node.items()
            if k not in ("type", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")}
    return {**rest, "enum": list(range(low, high + 1))}


def _integer_bounds(node: dict[str, Any]) -> tuple[int, int] | None:
    """Inclusive ``(low, high)`` of an integer node with both bounds and a small range, else None."""
    if node.get("type") != "integer" or "enum" in node or "const" in node:
        return None
    low = node.get("minimum", _plus_one(node.get("exclusiveMinimum")))
    high = node.get("maximum", _plus_one(node.get("exclusiveMaximum"), -1))
    if not isinstance(low, int | float) or not isinstance(high, int | float):
        return None
    low, high = math.ceil(low), math.floor(high)
    return (low, high) if 0 <= high - low < MAX_ENUM_INTEGERS else None


def _plus_one(value: Any, step: int = 1) -> Any:
    """Return an exclusive bound moved one integer inward (None stays None)."""
    return value + step if isinstance(value, int | float) and not isinstance(value, bool) else None


def json_schema_for_regex(schema: dict[str, Any]) -> str:
    """Regex for a JSON schema via outlines_core (the outlines path of the HF backend), bounds kept."""
    from outlines_core.json_schema import build_regex_from_schema

    return str(build_regex_from_schema(json.dumps(outlines_schema(schema))))


def constraint_regex(constraint: Constraint) -> str:
    """Return the constraint as one regular expression (outlines works on regexes)."""
    if isinstance(constraint, Choice):
        return constraint.to_regex()
    if isinstance(constraint, Regex):
        return constraint.pattern
    return json_schema_for_regex(constraint.schema)
