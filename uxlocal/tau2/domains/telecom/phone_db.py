"""The user's side of telecom (spec tau2-telecom-banking.md §A.2): one phone and the world around it.

``device`` is what the phone's settings and radio say; ``surroundings`` is where the user is and
the carrier's view of the line that ``sync`` mirrors onto the phone. Field names, defaults and
closed sets are upstream's, because the phone's state is compared with upstream's field by field
(the conformance suite's state digest) and a default that differs shows up in every episode.
Closed sets that a tool's schema shows the model (APN names, network modes) are ``Enum`` classes
named as upstream names them: the schema's ``$defs`` and pydantic's error text carry those names.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, Field

from ...db import Database, Record, Snapshot

SimStatus = Literal["active", "missing", "locked_pin", "locked_puk"]
Technology = Literal["none", "2G", "3G", "4G", "5G"]
Signal = Literal["none", "poor", "fair", "good", "excellent"]
ConnectionStatus = Literal["connected", "searching", "no_service", "emergency_only"]
Performance = Literal["unknown", "poor", "fair", "good", "excellent"]


# Which technologies the radio may attach to; only the first can reach 5G. (No docstring: pydantic
# would show it in the tool schema's $defs, where upstream's enum has no description.)
class NetworkModePreference(str, Enum):  # noqa: D101 - see the comment above
    FOUR_G_5G_PREFERRED = "4g_5g_preferred"
    FOUR_G_ONLY = "4g_only"
    THREE_G_ONLY = "3g_only"
    TWO_G_ONLY = "2g_only"


# The data APNs the phone knows; ``broken`` is the one setup uses to cut service. (No docstring,
# for the same reason.)
class APNNames(str, Enum):  # noqa: D101 - see the comment above
    INTERNET = "internet"
    BROKEN = "broken"


class APNSettings(Record):
    """The mobile-data access point; the defaults are the carrier's working settings."""

    apn_name: APNNames = APNNames.INTERNET
    reset_at_reboot: bool = False
    """Set by ``reset_apn_settings``; the reset itself happens at the next reboot."""
    mms_apn: str | None = "mms"
    mmsc_url: str | None = "http://mms.carrier.com/mms/wapenc"
    mms_proxy: str | None = None
    mms_port: int | None = None


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
    """The VPN server in use; a poor one slows mobile data to a tenth."""

    server_address: str | None = None
    protocol: str | None = None
    server_performance: Performance = "unknown"


def default_vpn() -> VpnDetails:
    """Return the profile ``connect_vpn`` connects to: a new object per connection, never a shared one."""
    return VpnDetails(server_address="192.168.1.1", protocol="OpenVPN", server_performance="excellent")


def _default_apps() -> dict[str, AppStatus]:
    return {
        "messaging": AppStatus(
            app_name="messaging", permissions=AppPermissions(sms=True, storage=True, phone=True)
        ),
        "browser": AppStatus(app_name="browser", permissions=AppPermissions(network=True, storage=True)),
    }


class PhoneDevice(Record):
    """What the phone's settings and radio say right now."""

    sim_card_status: SimStatus = "active"
    sim_card_missing: bool = False
    airplane_mode: bool = False
    network_signal_strength: Signal = "good"
    network_technology_connected: Technology = "5G"
    network_connection_status: ConnectionStatus = "connected"
    battery_level: int = 80
    data_enabled: bool = True
    roaming_enabled: bool = False
    network_mode_preference: NetworkModePreference = NetworkModePreference.FOUR_G_5G_PREFERRED
    active_apn_settings: APNSettings = Field(default_factory=APNSettings)
    wifi_enabled: bool = False
    wifi_connected: bool = False
    wifi_ssid: str | None = None
    wifi_signal_strength: Signal = "none"
    wifi_calling_enabled: bool = False
    wifi_calling_mms_over_wifi: bool = False
    data_saver_mode: bool = False
    vpn_enabled_setting: bool = False
    vpn_connected: bool = False
    vpn_details: VpnDetails | None = None
    app_statuses: dict[str, AppStatus] = Field(default_factory=_default_apps)

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        """Dump without pydantic's type warnings.

        A setting a malformed call stored unchecked (``user_tools.store_unchecked``, upstream's bug
        3) is dumped as it is, on purpose.
        """
        kwargs.setdefault("warnings", False)
        return super().model_dump(**kwargs)


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
    signal_strength: dict[str, Signal] = Field(default_factory=_default_signal)
    """Signal available per technology where the user is."""
    mobile_data_usage_exceeded: bool = False
    """Mirror of used >= limit + refueled on the line, kept by sync."""
    line_active: bool = True
    """Mirror of the line's status == Active, kept by sync."""
    payment_request: PaymentRequest | None = None


class TelecomUserData(BaseModel):
    """The whole of ``user_db.toml``; the file holds only the device, the rest is defaults."""

    device: PhoneDevice = Field(default_factory=PhoneDevice)
    surroundings: Surroundings = Field(default_factory=Surroundings)


class TelecomUserDB(Database):
    """User-side DB of the telecom domain: one phone, copied whole per episode (it is small).

    ``vpn_profile`` is the server ``connect_vpn`` connects to; it belongs to the episode, is not
    part of the DB's state, and is what ``break_vpn`` degrades.
    """

    ROOT = TelecomUserData
    device: PhoneDevice
    surroundings: Surroundings

    def __init__(self, snapshot: Snapshot) -> None:
        super().__init__(snapshot)
        self.vpn_profile = default_vpn()
