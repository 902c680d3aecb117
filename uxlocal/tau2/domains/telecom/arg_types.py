"""Argument types that accept what upstream's unvalidated tools accept, and refuse what they fail on.

tau2's tools take their arguments without validation, so a model that sends ``{"dob": 123}`` gets
an empty result, not an error, and ``{"gb_amount": 2}`` is booked as "2 GB" (not "2.0 GB"). Where
that changes what the model reads (the error flag, the text, the state), telecom's arguments
follow it: ``LooseStr`` takes a number or boolean as its text, ``Number`` keeps an integer an
integer, ``StrictInt`` refuses "2" and 2.0 as a count. The JSON schema shown to the model is the
plain ``string`` / ``number`` / ``integer`` either way.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, PlainValidator, Strict, WithJsonSchema


def _scalar_as_text(value: Any) -> Any:
    """Turn a number or boolean where text is expected into its Python text, as an f-string shows it."""
    return str(value) if isinstance(value, bool | int | float) else value


def _json_number(value: Any) -> int | float:
    """Return an int or float as sent; refuse anything else (a numeric string, a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("Input should be a valid number")
    return value


LooseStr = Annotated[str, BeforeValidator(_scalar_as_text)]
Number = Annotated[float, PlainValidator(_json_number), WithJsonSchema({"type": "number"})]
StrictInt = Annotated[int, Strict()]
