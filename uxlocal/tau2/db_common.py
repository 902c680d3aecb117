"""Record shapes shared by several domains' DB models (retail and airline use the same two)."""

from __future__ import annotations

from pydantic import ConfigDict

from .db import Record


class Address(Record):
    """A postal address; ``address2`` is an empty string when unused (titled as tau2 names it)."""

    model_config = ConfigDict(title="UserAddress")

    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str


class PersonName(Record):
    """A user's name, matched case-insensitively by lookup tools."""

    first_name: str
    last_name: str
