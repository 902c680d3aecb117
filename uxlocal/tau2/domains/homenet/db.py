"""Homenet DBs: a home-internet provider's accounts (agent side) and the customer's router (user side).

Homenet is our own sample domain (CC0, data in ``uxlocal/data/tau2/domains/homenet``), written so
that a clone without tau2's data still exercises every part of the runtime: a TOML agent DB, a
JSON user DB, user tools that change state (dual control), DB patches, setup calls and histories.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from ...db import Database, Record, Table

AccountStatus = Literal["active", "suspended"]
LineStatus = Literal["ok", "fault"]
RouterFault = Literal["none", "frozen", "no_signal"]
"""``frozen`` clears with a restart; ``no_signal`` (a fault on the line outside) does not."""
Light = Literal["green", "red"]


class Plan(Record):
    """A tariff; prices are per month, in the account's currency."""

    plan_id: str
    name: str
    download_mbps: int
    monthly_price: float


class AppliedCredit(BaseModel):
    """One outage credit on an account (at most one per outage, by policy and by the tool)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    outage_id: str
    amount: float


class Customer(Record):
    """An account: who, where (the postcode decides outages), what plan, what is owed."""

    customer_id: str
    name: str
    email: str
    postcode: str
    plan_id: str
    status: AccountStatus
    balance_due: float
    line_status: LineStatus
    """What the provider's line test sees from the exchange; the customer cannot see it."""
    credits: list[AppliedCredit] = []


class Outage(Record):
    """A network outage in one postcode; ``full_days`` is set once it is resolved."""

    outage_id: str
    postcode: str
    status: Literal["ongoing", "resolved"]
    started: str
    ended: str | None = None
    full_days: int | None = None
    expected_fix: str | None = None


class Visit(Record):
    """A technician visit booked for a customer."""

    visit_id: str
    customer_id: str
    date: str
    status: Literal["booked"] = "booked"


class HomenetData(BaseModel):
    """The whole agent-side file (``db.toml``)."""

    plans: dict[str, Plan]
    customers: dict[str, Customer]
    outages: dict[str, Outage]
    visits: dict[str, Visit]


class HomenetDB(Database):
    """Agent-side DB of the homenet domain."""

    ROOT = HomenetData
    plans: Table[Plan]
    customers: Table[Customer]
    outages: Table[Outage]
    visits: Table[Visit]


class Router(Record):
    """The customer's router as the customer sees it; ``fault`` is hidden from both seats."""

    router_id: str
    light: Light
    fault: RouterFault
    restarts: int


class HomenetUserData(BaseModel):
    """The whole user-side file (``user_db.json``)."""

    routers: dict[str, Router]


class HomenetUserDB(Database):
    """User-side DB of the homenet domain (what is on the customer's desk)."""

    ROOT = HomenetUserData
    routers: Table[Router]
