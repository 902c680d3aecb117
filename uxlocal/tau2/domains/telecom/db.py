"""Telecom DB models (spec tau2-telecom-banking.md §A.1-A.2): the carrier's records and the phone.

Two databases per episode. The agent side (``db.toml``) holds plans, customers, lines, bills and
devices; the file writes them as TOML arrays, which we key by their ids so that tools find a line in
O(1) and writes copy only the touched record (the hash is therefore of the keyed form; it is ours
on both sides of the DB check, so gold and predicted compare like with like). The user side
(``user_db.toml``) is one phone: ``device`` (what its settings and radio say) and ``surroundings``
(what the world around it is: location, per-technology signal, and the mirror of the carrier's
line state that ``sync`` keeps). The file holds no ``surroundings``; its defaults are here.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from ...db import Database, Record, Table

LineStatus = Literal["Active", "Suspended", "Pending Activation", "Closed"]
BillStatus = Literal["Draft", "Issued", "Awaiting Payment", "Paid", "Overdue", "Disputed"]
Signal = Literal["none", "poor", "fair", "good", "excellent"]
Technology = Literal["none", "2G", "3G", "4G", "5G"]
ConnectionStatus = Literal["connected", "searching", "no_service"]
ModePreference = Literal["4g_5g_preferred", "4g_only", "3g_only", "2g_only"]
SimStatus = Literal["active", "missing", "locked_pin", "locked_puk"]
Permission = Literal["sms", "storage", "phone", "network"]
Performance = Literal["poor", "fair", "good", "excellent"]


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

    method_type: str
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
    account_status: str
    payment_methods: list[PaymentMethod] = []
    line_ids: list[str] = []
    bill_ids: list[str] = []
    created_at: str
    last_extension_date: str | None = None
    goodwill_credit_used_this_year: float = 0.0


class Line(Record):
    """One phone number on a plan; its status and roaming flag drive the phone's service."""

    line_id: str
    phone_number: str
    status: LineStatus
    plan_id: str
    device_id: str | None = None
    data_used_gb: float = 0.0
    data_refueling_gb: float = 0.0
    roaming_enabled: bool = False
    contract_end_date: str | None = None
    last_plan_change_date: str | None = None
    last_sim_replacement_date: str | None = None
    suspension_start_date: str | None = None


class LineItem(Record):
    """One charge on a bill."""

    description: str
    amount: float
    date: str
    item_type: str


class Bill(Record):
    """A monthly bill; a Draft bill collects this month's extra charges (data refuels)."""

    bill_id: str
    customer_id: str
    period_start: str
    period_end: str
    issue_date: str
    total_due: float
    due_date: str
    line_items: list[LineItem] = []
    status: BillStatus


class Device(Record):
    """A handset registered with the carrier (not the phone's settings: those are the user DB)."""

    device_id: str
    device_type: str
    model: str
    imei: str | None = None
    is_esim_capable: bool = False
    activated: bool = False
    activation_date: str | None = None
    last_esim_transfer_date: str | None = None


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


# --- the user's phone ----------------------------------------------------------------------------


class ApnSettings(Record):
    """The mobile-data access point; the defaults are the carrier's working settings."""

    apn_name: str = "internet"
    mms_apn: str = "mms"
    mmsc_url: str | None = "http://mms.carrier.com/mms/wapenc"
    reset_at_reboot: bool = False
    """Set by ``reset_apn_settings``; the reset happens at the next reboot, not before."""


class AppPermissions(Record):
    """The four permissions the telecom tasks track."""

    sms: bool = False
    storage: bool = False
    phone: bool = False
    network: bool = False


class AppStatus(Record):
    """An installed app and its permissions."""

    app_name: str
    permissions: AppPermissions = Field(default_factory=AppPermissions)


class VpnDetails(Record):
    """The VPN server in use; a poor one slows every connection to a tenth."""

    server_address: str = "vpn.example.net"
    protocol: str = "IKEv2"
    server_performance: Performance = "good"


class PhoneDevice(Record):
    """What the phone's settings and radio say right now."""

    sim_card_status: SimStatus = "active"
    sim_card_missing: bool = False
    airplane_mode: bool = False
    network_signal_strength: Signal = "good"
    network_technology_connected: Technology = "4G"
    network_connection_status: ConnectionStatus = "connected"
    battery_level: int = 80
    data_enabled: bool = True
    roaming_enabled: bool = False
    network_mode_preference: ModePreference = "4g_5g_preferred"
    active_apn_settings: ApnSettings = Field(default_factory=ApnSettings)
    wifi_enabled: bool = False
    wifi_connected: bool = False
    wifi_signal_strength: Signal = "none"
    wifi_calling_enabled: bool = False
    wifi_calling_mms_over_wifi: bool = False
    data_saver_mode: bool = False
    vpn_enabled_setting: bool = False
    vpn_connected: bool = False
    vpn_details: VpnDetails | None = None
    app_statuses: dict[str, AppStatus] = Field(default_factory=dict)


class PaymentRequest(Record):
    """A bill the carrier asked the user to pay; ``make_payment`` sets ``paid``, sync settles it."""

    bill_id: str
    amount_due: float
    paid: bool = False


def _default_signal() -> dict[str, Signal]:
    return {"2G": "poor", "3G": "fair", "4G": "good", "5G": "excellent"}


class Surroundings(Record):
    """The world around the phone: who holds it, where, and what the carrier says about the line."""

    name: str | None = None
    phone_number: str | None = None
    is_abroad: bool = False
    roaming_allowed: bool = False
    """Mirror of the line's ``roaming_enabled``, kept by sync."""
    mobile_data_usage_exceeded: bool = False
    """Mirror of used >= limit + refueled on the line, kept by sync."""
    line_active: bool = True
    """Mirror of the line's status == Active, kept by sync."""
    signal_strength: dict[str, Signal] = Field(default_factory=_default_signal)
    """Signal available per technology where the user is."""
    payment_request: PaymentRequest | None = None


class TelecomUserData(BaseModel):
    """The whole of ``user_db.toml``."""

    device: PhoneDevice
    surroundings: Surroundings = Field(default_factory=Surroundings)


class TelecomUserDB(Database):
    """User-side DB of the telecom domain: one phone, copied whole per episode (it is small)."""

    ROOT = TelecomUserData
    device: PhoneDevice
    surroundings: Surroundings
