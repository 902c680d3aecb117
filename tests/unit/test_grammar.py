from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from uxlocal.grammar import Choice, JsonSchema, Regex, parse_output


class Verdict(BaseModel):
    verdict: str
    score: int = Field(ge=1, le=5)


def test_choice_parses_exact_label_with_surrounding_space() -> None:
    assert Choice(("good", "bad")).parse(" bad\n").value == "bad"


def test_choice_rejects_other_text() -> None:
    result = Choice(("good", "bad")).parse("goodish")
    assert not result.valid and "not one of" in (result.error or "")


@pytest.mark.parametrize("labels", [("only",), ("a", "a"), ("", "x")])  # one label, duplicate, empty
def test_choice_rejects_degenerate_labels(labels: tuple[str, ...]) -> None:
    with pytest.raises(ValueError):
        Choice(labels)


def test_json_schema_validates_through_pydantic_model() -> None:
    constraint = JsonSchema.from_model(Verdict)
    assert constraint.parse('{"verdict": "ok", "score": 3}').value == {"verdict": "ok", "score": 3}
    bad = constraint.parse('{"verdict": "ok", "score": 9}')
    assert not bad.valid and "score" in (bad.error or "")


def test_json_schema_accepts_control_characters_inside_strings() -> None:
    # xgrammar's JSON string rule admits raw control characters; strict json.loads would fail
    assert JsonSchema.from_model(Verdict).parse('{"verdict": "a\x1bb", "score": 1}').valid


def test_truncated_json_is_invalid_even_if_it_happens_to_parse() -> None:
    result = parse_output(JsonSchema({"type": "object"}), "{}", "length")
    assert not result.valid and "truncated" in (result.error or "")


def test_truncated_choice_is_judged_on_its_text() -> None:
    assert parse_output(Choice(("good", "bad")), "bad", "length").valid


def test_regex_requires_full_match() -> None:
    assert Regex(r"\d{3}").parse("123").valid
    assert not Regex(r"\d{3}").parse("1234").valid


def test_constraint_keys_differ_by_content() -> None:
    assert Choice(("a", "b")).key() != Choice(("b", "a")).key()
    assert JsonSchema({"type": "object"}).key() != JsonSchema({"type": "array"}).key()


# --- outlines: integer bounds enforced in the grammar (issue 14) -----------------------------------


class _Scored(BaseModel):
    verdict: str = Field(pattern="^(good|bad)$")
    score: int = Field(ge=1, le=5)
    rank: int = Field(gt=0, lt=4)
    count: int = Field(ge=0, le=10_000)
    weight: float = Field(ge=0, le=1)


def test_outlines_schema_spells_small_integer_ranges_as_enums() -> None:
    from uxlocal.grammar import MAX_ENUM_INTEGERS, outlines_schema

    props = outlines_schema(JsonSchema.from_model(_Scored).schema)["properties"]
    assert props["score"]["enum"] == [1, 2, 3, 4, 5] and "maximum" not in props["score"]
    assert props["rank"]["enum"] == [1, 2, 3]  # exclusive bounds move one inward
    assert props["count"]["maximum"] == 10_000 > MAX_ENUM_INTEGERS  # too wide: left to the validator
    assert props["weight"] == {"type": "number", "minimum": 0, "maximum": 1, "title": "Weight"}


@pytest.mark.parametrize(("text", "allowed"), [
    ('{"verdict":"good","score":5,"rank":3,"count":7,"weight":0.5}', True),
    ('{"verdict" : "good" ,"score" : 10,"rank":3,"count":7,"weight":0.5}', False),  # the output
    ('{"verdict":"good","score":0,"rank":3,"count":7,"weight":0.5}', False),  # below the minimum
    ('{"verdict":"good","score":2,"rank":4,"count":7,"weight":0.5}', False),  # exclusive maximum
])
def test_outlines_regex_enforces_integer_bounds(text: str, allowed: bool) -> None:
    import re

    from uxlocal.grammar import json_schema_for_regex

    pytest.importorskip("outlines_core")
    assert bool(re.fullmatch(json_schema_for_regex(JsonSchema.from_model(_Scored).schema), text)) is allowed
