"""Hidden user-side functions of telecom: task setup that breaks the phone, and the env assertions.

Models never see these (``Toolkit.helper``). Setup must leave the phone exactly as upstream's
setup does, because every episode starts from it: ``turn_data_on`` sets the switch without a
network search while ``turn_data_off`` toggles (and searches), airplane mode on keeps the Wi-Fi
radio's switch, and ``break_vpn`` degrades the episode's own VPN profile (upstream degrades a
class-level default shared by every later episode in the process; we never share it).
"""

from __future__ import annotations

from collections.abc import Callable

from ...toolkit import ToolError
from .device import can_send_mms, internet_speed, mobile_data_works
from .phone_db import TelecomUserDB
from .user_tools import USER, connect, flip, search, set_permission, toggle_airplane

# --- setup ----------------------------------------------------------------------------------


@USER.helper("Say whose phone this is (setup only).")
def set_user_info(db: TelecomUserDB, name: str, phone_number: str) -> None:
    """Set the phone's user info; the phone number is how sync finds the carrier's line."""
    db.surroundings.name = name
    db.surroundings.phone_number = phone_number


@USER.helper("Put the user abroad or at home (setup only).")
def set_user_location(db: TelecomUserDB, abroad: bool) -> None:
    """Abroad, mobile data needs roaming on both the phone and the line."""
    db.surroundings.is_abroad = abroad


def _turn(db: TelecomUserDB, field: str, on: bool) -> None:
    """Toggle a switch, and toggle again when it then reads the wrong way, as upstream does.

    A switch already in place is therefore toggled twice: same value, but the side effects of
    both toggles (network searches; for airplane mode, Wi-Fi and VPN dropped) happen.
    """
    for _ in range(2):
        if field == "airplane_mode":
            toggle_airplane(db)
        else:
            flip(db, field, search_after=field != "data_saver_mode")
        if bool(getattr(db.device, field)) == on:
            return


def _register_turn(name: str, field: str, on: bool) -> None:
    """Register ``turn_<name>_on`` / ``_off``: set one switch as a task's setup does (see ``_turn``)."""

    def helper(db: TelecomUserDB) -> None:
        _turn(db, field, on)

    helper.__name__ = f"turn_{name}_{'on' if on else 'off'}"
    USER.helper(f"Turn {name.replace('_', ' ')} {'on' if on else 'off'} (setup only).")(helper)


_SWITCHES = {"airplane_mode": "airplane_mode", "data": "data_enabled", "roaming": "roaming_enabled",
             "data_saver_mode": "data_saver_mode"}  # fmt: skip
for _name, _field in _SWITCHES.items():
    for _on in (True, False):
        if (_name, _on) != ("data", True):  # turn_data_on is the odd one out, below
            _register_turn(_name, _field, _on)


@USER.helper("Turn mobile data on (setup only).")
def turn_data_on(db: TelecomUserDB) -> None:
    """Set the data switch only; unlike every other ``turn_*``, no toggle and so no network search."""
    db.device.data_enabled = True


@USER.helper("Take the SIM card out (setup only).")
def unseat_sim_card(db: TelecomUserDB) -> None:
    """No SIM, no service; the SIM's own status (a lock) is untouched."""
    db.device.sim_card_missing = True
    search(db)


@USER.helper("Lock the SIM card by PIN or PUK (setup only).")
def lock_sim_card(db: TelecomUserDB, mode: str) -> None:
    """Lock the SIM; a locked SIM cannot be fixed by the user or the agent: such tasks end in a transfer."""
    if mode not in ("pin", "puk"):
        raise ToolError("mode must be 'pin' or 'puk'")
    db.device.sim_card_status = "locked_pin" if mode == "pin" else "locked_puk"
    search(db)


@USER.helper("Break the data APN (setup only).")
def break_apn_settings(db: TelecomUserDB) -> None:
    """Break the APN: no service until a reset and a reboot."""
    db.device.active_apn_settings.apn_name = "broken"  # type: ignore[assignment]
    search(db)


@USER.helper("Remove the MMS server address from the APN (setup only).")
def break_apn_mms_setting(db: TelecomUserDB) -> None:
    """Break only the MMS setting of the APN: data still works, only MMS fails."""
    db.device.active_apn_settings.mmsc_url = None


@USER.helper("Set Wi-Fi calling and, when given, its MMS-over-Wi-Fi option (setup only).")
def set_wifi_calling(db: TelecomUserDB, enabled: bool, mms_over_wifi: bool | None = None) -> None:
    """Both on blocks MMS."""
    db.device.wifi_calling_enabled = enabled
    if mms_over_wifi is not None:
        db.device.wifi_calling_mms_over_wifi = mms_over_wifi


@USER.helper("Connect a VPN whose server performs poorly (setup only).")
def break_vpn(db: TelecomUserDB) -> None:
    """Slows data to a tenth; disconnecting fixes it. Degrades this phone's own profile only."""
    connect(db)
    if db.device.vpn_details is not None:
        db.device.vpn_details.server_performance = "poor"


@USER.helper("Take one permission away from an app (setup only).")
def remove_app_permission(db: TelecomUserDB, app_name: str, permission: str) -> None:
    """Remove an app permission; the messaging app without sms or storage cannot send MMS."""
    set_permission(db, app_name, permission, False)


@USER.helper("Re-run the network search (setup only).")
def simulate_network_search(db: TelecomUserDB) -> None:
    """Run a network search: the phone notices a change setup made on the carrier's side only then."""
    search(db)


# --- assertions -----------------------------------------------------------------------------


_READINGS: dict[str, tuple[str, Callable[[TelecomUserDB], object]]] = {
    "assert_airplane_mode_status": ("airplane mode", lambda db: db.device.airplane_mode),
    "assert_service_status": ("the connection status", lambda db: db.device.network_connection_status),
    "assert_mobile_data_status": (
        "whether mobile data works", lambda db: mobile_data_works(db.device, db.surroundings)
    ),
    "assert_mobile_roaming_status": ("the phone's roaming switch", lambda db: db.device.roaming_enabled),
    "assert_mobile_data_saver_mode_status": ("data saver", lambda db: db.device.data_saver_mode),
    "assert_can_send_mms": ("whether MMS can be sent", lambda db: can_send_mms(db.device, db.surroundings)),
    "assert_mobile_data_usage_exceeded": (
        "the usage-exceeded mirror", lambda db: db.surroundings.mobile_data_usage_exceeded
    ),
}
"""Env assertions that compare one reading of the phone with ``expected_status``."""


def _register_reading(name: str, what: str, read: Callable[[TelecomUserDB], object]) -> None:
    def assertion(db: TelecomUserDB, expected_status: bool | str) -> bool:
        return read(db) == expected_status

    assertion.__name__ = name
    USER.helper(f"Whether {what} is as expected.")(assertion)


for _assertion, (_what, _read) in _READINGS.items():
    _register_reading(_assertion, _what, _read)


@USER.helper("Whether the speed test reaches a speed (Mbps) and, when given, a label.")
def assert_internet_speed(db: TelecomUserDB, expected_speed: float, expected_desc: str | None = None) -> bool:
    """No connection counts as 0 Mbps labelled "No Connection"; labels compare case-insensitively."""
    speed, label = internet_speed(db.device, db.surroundings)
    if (speed or 0.0) < expected_speed:
        return False
    return expected_desc is None or label.lower() == expected_desc.lower()


@USER.helper("Whether the speed test's label is anything but Excellent.")
def assert_internet_not_excellent(db: TelecomUserDB) -> bool:
    """No connection also passes."""
    return internet_speed(db.device, db.surroundings)[1].lower() != "excellent"
