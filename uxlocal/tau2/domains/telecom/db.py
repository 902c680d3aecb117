"""The carrier's side of telecom (spec tau2-telecom-banking.md §A.1): plans, customers, lines, bills, devices.

``db.toml`` writes each table as a TOML array; we key them by their ids so that tools find a line in
O(1) and writes copy only the touched record. The conformance suite's canonical state keys
upstream's lists the same way, so the keyed form compares equal. Field types are upstream's
(``datetime`` for timestamps, ``date`` for days) because a tool's output prints them with
``str()``: "2025-01-15 10:30:00", not the file's "2025-01-15T10:30:00". The phone is ``phone_db``.
"""

from __future__ import annotations

import datetime
from typing import Any, Literal

from pydantic import BaseModel, model_validator

from ...db import Database, Record, Table

LineStatus = Literal["Active", "Suspended", "Pending Activation", "Closed"]
BillStatus = Literal["Draft", "Issued", "Awaiting Payment", "Paid", "Overdue", "Disputed"]
AccountStatus = Literal["Active", "Suspended", "Pending Verification", "Closed"]
DeviceType = Literal["phone", "router", "tablet", "watch", "other"]
PaymentMethodType = Literal["Credit Card", "Debit Card", "PayPal"]


class Plan(Record):
    """A tariff: monthly price, data allowance and the price of extra data."""

    plan_id: str
    name: str
    data_limit_gb: float
    price_per_month: float
    data_refueling_price_per_gb: float


class Address(Record):
    """A postal address as the file spells it."""

    street: str
    city: str
    state: str
    zip_code: str


class PaymentMethod(Record):
    """A stored card or account, last four digits only."""

    method_type: PaymentMethodType
    account_number_last_4: str
    expiration_date: str


class Customer(Record):
    """An account holder with the ids of their lines and bills."""

    customer_id: str
    full_name: str
    date_of_birth: str
    email: str
    phone_number: str
    address: Address
    account_status: AccountStatus = "Pending Verification"
    payment_methods: list[PaymentMethod] = []
    line_ids: list[str] = []
    bill_ids: list[str] = []
    created_at: datetime.datetime = datetime.datetime(2025, 1, 1)  # noqa: DTZ001 - tau2 parity: upstream's default is naive
    last_extension_date: datetime.date | None = None
    goodwill_credit_used_this_year: float = 0.0


class Line(Record):
    """One phone number on a plan; its status and roaming flag drive the phone's service."""

    line_id: str
    phone_number: str
    status: LineStatus = "Pending Activation"
    plan_id: str
    device_id: str | None = None
    data_used_gb: float = 0.0
    data_refueling_gb: float = 0.0
    roaming_enabled: bool = False
    contract_end_date: datetime.date | None = None
    last_plan_change_date: datetime.date | None = None
    last_sim_replacement_date: datetime.date | None = None
    suspension_start_date: datetime.date | None = None


class LineItem(Record):
    """One charge on a bill."""

    description: str
    amount: float
    date: datetime.date
    item_type: str


class Bill(Record):
    """A monthly bill; a Draft bill collects this month's extra charges (data refuels)."""

    bill_id: str
    customer_id: str
    period_start: datetime.date
    period_end: datetime.date
    issue_date: datetime.date
    total_due: float
    due_date: datetime.date
    line_items: list[LineItem] = []
    status: BillStatus = "Draft"


class Device(Record):
    """A handset registered with the carrier (not the phone's settings: those are the user DB)."""

    device_id: str
    device_type: DeviceType
    model: str
    imei: str | None = None
    is_esim_capable: bool
    activated: bool = False
    activation_date: datetime.datetime | None = None
    last_esim_transfer_date: datetime.datetime | None = None


_ID_FIELDS = {
    "plans": "plan_id",
    "customers": "customer_id",
    "lines": "line_id",
    "bills": "bill_id",
    "devices": "device_id",
}


class TelecomData(BaseModel):
    """The whole of ``db.toml``, each array keyed by its record id."""

    plans: dict[str, Plan]
    customers: dict[str, Customer]
    lines: dict[str, Line]
    bills: dict[str, Bill]
    devices: dict[str, Device]

    @model_validator(mode="before")
    @classmethod
    def _key_arrays(cls, data: Any) -> Any:
        """TOML arrays of tables become id-keyed mappings; a duplicate id is an error, not a merge."""
        if not isinstance(data, dict):
            return data
        keyed = dict(data)
        for table, id_field in _ID_FIELDS.items():
            rows = data.get(table)
            if not isinstance(rows, list):
                continue
            mapping: dict[str, Any] = {}
            for row in rows:
                key = row.get(id_field) if isinstance(row, dict) else None
                if not isinstance(key, str) or key in mapping:
                    raise ValueError(f"{table}: missing or duplicate {id_field} {key!r}")
                mapping[key] = row
            keyed[table] = mapping
        return keyed


class TelecomDB(Database):
    """Agent-side DB of the telecom domain."""

    ROOT = TelecomData
    plans: Table[Plan]
    customers: Table[Customer]
    lines: Table[Line]
    bills: Table[Bill]
    devices: Table[Device]
