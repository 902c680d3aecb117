"""The phone's behaviour and the carrier <-> phone coupling (spec tau2-telecom-banking.md §A.2-A.3).

Pure functions over the two telecom DBs; the user tools, the hidden helpers and the env assertions
all read the same rules here, so a rule cannot drift between the tool a user calls and the check
that scores it. The numbers and the order of the rules are upstream's: assertions compare against
them and the conformance suite compares every state after every call.

- ``network_search``: what the radio attaches to (technology, signal, status).
- ``mobile_data_works`` / ``internet_speed`` / ``can_send_mms``: derived, never stored.
- ``sync``: after every tool call, setup action and assertion, the phone's view of the line
  (active, roaming allowed, usage exceeded, payment request) follows the carrier's DB and a paid
  request settles its bill.
"""

from __future__ import annotations

from .db import Customer, Line, TelecomDB
from .phone_db import (
    APNNames,
    NetworkModePreference,
    PaymentRequest,
    PhoneDevice,
    SimStatus,
    Surroundings,
    TelecomUserDB,
)

SPEED_RANGE_MBPS: dict[str, tuple[float, float]] = {
    "2G": (0.1, 0.4),
    "3G": (1.0, 5.0),
    "4G": (10.0, 100.0),
    "5G": (50.0, 500.0),
}
"""Download speed range per technology; a connection gets the midpoint times the signal factor."""

SIGNAL_FACTOR: dict[str, float] = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0}
POOR_VPN_FACTOR = 0.1
"""A connected VPN whose server performs poorly keeps a tenth of the speed."""
DATA_SAVER_FACTOR = 0.2
"""Data saver keeps a fifth of the speed (upstream's docstring says half; its code says 0.2)."""

SPEED_LABELS: tuple[tuple[float, str], ...] = (
    (1.0, "Very Poor"),
    (5.0, "Poor"),
    (25.0, "Fair"),
    (100.0, "Good"),
)
"""Upper bounds (exclusive) of each label; at or above the last bound the speed is Excellent."""

_ONLY_MODE = {
    NetworkModePreference.FOUR_G_ONLY: "4G",
    NetworkModePreference.THREE_G_ONLY: "3G",
    NetworkModePreference.TWO_G_ONLY: "2G",
}


def sim_status(device: PhoneDevice) -> SimStatus:
    """A SIM out of its slot reads as missing whatever its lock says; reseating keeps the lock."""
    return "missing" if device.sim_card_missing else device.sim_card_status


def network_search(device: PhoneDevice, surroundings: Surroundings) -> None:
    """Re-attach the radio: the technology follows the preference, the signal the surroundings.

    The rules apply one after another, in upstream's order, so a phone whose APN setting was
    broken by a malformed call (upstream's bug 3, see ``user_tools.store_unchecked``) fails at
    the same point, with the same partial state, as upstream's does.
    """
    if sim_status(device) == "active":
        preference = device.network_mode_preference
        if preference == NetworkModePreference.FOUR_G_5G_PREFERRED:
            technology = "5G" if surroundings.signal_strength.get("5G", "none") != "none" else "4G"
        else:
            technology = _ONLY_MODE.get(preference, "4G")
        device.network_connection_status = "connected"
        device.network_technology_connected = technology  # type: ignore[assignment]
        device.network_signal_strength = surroundings.signal_strength.get(technology, "none")
    else:
        _no_service(device)
    if device.airplane_mode:
        _no_service(device)
    if device.active_apn_settings.apn_name == APNNames.BROKEN:
        _no_service(device)
    if not surroundings.line_active:
        _no_service(device)


def _no_service(device: PhoneDevice) -> None:
    device.network_connection_status = "no_service"
    device.network_technology_connected = "none"
    device.network_signal_strength = "none"


def mobile_data_works(device: PhoneDevice, surroundings: Surroundings) -> bool:
    """Mobile data needs service, data on, roaming allowed on both ends abroad, and usage left."""
    if device.airplane_mode or device.network_signal_strength == "none":
        return False
    if device.network_connection_status == "no_service":
        return False
    if surroundings.is_abroad and not (device.roaming_enabled and surroundings.roaming_allowed):
        return False
    return device.data_enabled and not surroundings.mobile_data_usage_exceeded


def internet_speed(device: PhoneDevice, surroundings: Surroundings) -> tuple[float | None, str]:
    """Download speed in Mbps (2 decimals) and its label; ``(None, "No Connection")`` without data."""
    if not mobile_data_works(device, surroundings):
        return None, "No Connection"
    factor = 1.0
    if device.vpn_connected and device.vpn_details and device.vpn_details.server_performance == "poor":
        factor = POOR_VPN_FACTOR
    if device.data_saver_mode:
        factor *= DATA_SAVER_FACTOR
    low, high = SPEED_RANGE_MBPS.get(device.network_technology_connected, (0.0, 0.0))
    signal = SIGNAL_FACTOR.get(device.network_signal_strength, 0.0)
    speed = round((low + high) / 2.0 * signal * factor, 2)
    return speed, speed_label(speed)


def speed_label(speed_mbps: float) -> str:
    """Name a speed the way the speed test does."""
    for bound, label in SPEED_LABELS:
        if speed_mbps < bound:
            return label
    return "Excellent"


def can_send_mms(device: PhoneDevice, surroundings: Surroundings) -> bool:
    """MMS needs mobile data off 2G, an MMSC address, no MMS-over-Wi-Fi, and the app's permissions."""
    if not mobile_data_works(device, surroundings) or device.network_technology_connected == "2G":
        return False
    if device.wifi_calling_enabled and device.wifi_calling_mms_over_wifi:
        return False
    if device.active_apn_settings.mmsc_url is None:
        return False
    messaging = device.app_statuses.get("messaging")
    return messaging is not None and messaging.permissions.sms and messaging.permissions.storage


def customer_by_phone(db: TelecomDB, phone_number: str) -> Customer | None:
    """The first customer, in file order, whose own number or one of whose lines has the number."""
    for customer in db.customers.values():
        if customer.phone_number == phone_number:
            return customer
        for line_id in customer.line_ids:
            line = db.lines.get(line_id)
            if line is not None and line.phone_number == phone_number:
                return customer
    return None


def sync(agent_db: TelecomDB, user_db: TelecomUserDB) -> None:
    """Align the phone's mirror of its line with the carrier's DB and settle a paid request.

    Runs after every call on either side, so it must be cheap and idempotent; it edits a carrier
    record only when a paid request has to mark its bill Paid. A paid request is cleared and, in
    the same pass, the next bill awaiting payment (if any) becomes the new request.
    """
    surroundings = user_db.surroundings
    line = _line_of(agent_db, surroundings.phone_number)
    if line is None:
        return
    surroundings.line_active = line.status == "Active"
    surroundings.roaming_allowed = line.roaming_enabled
    plan = agent_db.plans.get(line.plan_id)
    limit = plan.data_limit_gb if plan is not None else 0.0
    surroundings.mobile_data_usage_exceeded = line.data_used_gb >= limit + line.data_refueling_gb
    request = surroundings.payment_request
    if request is not None and request.paid:
        if request.bill_id in agent_db.bills:
            agent_db.bills.edit(request.bill_id).status = "Paid"
        surroundings.payment_request = None
    if surroundings.payment_request is None and surroundings.phone_number is not None:
        surroundings.payment_request = _awaiting_request(agent_db, surroundings.phone_number)


def _line_of(agent_db: TelecomDB, phone_number: str | None) -> Line | None:
    if phone_number is None:
        return None
    return next((line for line in agent_db.lines.values() if line.phone_number == phone_number), None)


def _awaiting_request(agent_db: TelecomDB, phone_number: str) -> PaymentRequest | None:
    """A request for the first bill awaiting payment on the account the phone number finds."""
    customer = customer_by_phone(agent_db, phone_number)
    if customer is None:
        return None
    for bill_id in customer.bill_ids:
        bill = agent_db.bills.get(bill_id)
        if bill is not None and bill.status == "Awaiting Payment":
            return PaymentRequest(bill_id=bill_id, amount_due=bill.total_due)
    return None
