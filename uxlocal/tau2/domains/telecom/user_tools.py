"""Telecom user tools (spec tau2-telecom-banking.md §A.2): what the simulated user can do on the phone.

15 read tools look at the phone, 15 write tools change it; every write answers with what it did
followed by the status bar. What each tool says, and what it leaves unsaid, is upstream's: a user
proxy can only disclose what its phone shows it, so a phone that shows more (the data cap, MMS over
Wi-Fi, whether mobile data really works) would change the very thing UserProxyBench measures.
Hidden setup and assertion helpers live in ``phone_helpers``.

Which changes re-run the network search (the radio re-attaching) is part of the rules the
assertions read: the preference, airplane mode, the SIM, data, roaming, a reboot and both APN
tools do; data saver, Wi-Fi, Wi-Fi calling, the VPN and permissions do not. An APN reset only
marks the settings; they return to the defaults at the next reboot.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ValidationError

from ...toolkit import ToolError, Toolkit, arg
from .arg_types import LooseStr
from .device import can_send_mms as _can_send_mms
from .device import internet_speed, network_search, sim_status
from .phone_db import APNSettings, NetworkModePreference, PhoneDevice, TelecomUserDB

USER = Toolkit("telecom-user", qualifier="TelecomUserTools")

AppName = Annotated[LooseStr, arg("The app's name as installed, e.g. 'messaging' or 'browser'.")]

_SIGNAL_ICON = {
    "none": "📵 No Signal",
    "poor": "📶¹ Poor",
    "fair": "📶² Fair",
    "good": "📶³ Good",
    "excellent": "📶⁴ Excellent",
}
_SIM_TEXT = {
    "active": "Your SIM card is active and working.",
    "missing": "No SIM card detected in the phone.",
    "locked_pin": "The SIM card is locked with a PIN code.",
    "locked_puk": "The SIM card is locked with a PUK code.",
}
_SPEED_ADVICE = {
    "Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
    "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
    "Fair": "Connection is okay for web browsing and some standard definition streaming.",
    "Good": "Connection is good for most activities, including HD streaming.",
    "Excellent": "Connection is very fast.",
}


def _on(flag: bool) -> str:
    return "ON" if flag else "OFF"


def _yes(flag: bool) -> str:
    return "Yes" if flag else "No"


def search(db: TelecomUserDB) -> None:
    """Re-run the network search on this phone."""
    network_search(db.device, db.surroundings)


def status_bar(db: TelecomUserDB) -> str:
    """Return the icons along the top of the screen; it shows the data switch, not whether data works."""
    d = db.device
    icons = []
    if d.airplane_mode:
        icons.append("✈️ Airplane Mode")
    else:
        icons.append(_SIGNAL_ICON.get(d.network_signal_strength, "📵 No Signal"))
        if d.network_technology_connected != "none":
            icons.append(d.network_technology_connected)
        if d.data_enabled and d.network_technology_connected != "none":
            icons.append("📱 Data Enabled")
            if d.data_saver_mode:
                icons.append("🔽 Data Saver")
        else:
            icons.append("📵 Data Disabled")
    if d.wifi_enabled and d.wifi_connected:
        icons.append(f"📡 Connected to {d.wifi_ssid}" if d.wifi_ssid else "📡 Enabled")
    if d.vpn_connected:
        icons.append("🔒 VPN Connected")
    icons.append(f"🔋 {d.battery_level}%")
    return " | ".join(icons)


def store_unchecked(device: PhoneDevice, field: str, value: object) -> None:
    """Put a value of the wrong type into a phone setting, bypassing validation: upstream's bug 3.

    Upstream's setters store what the model sent before using it, so ``mode=123`` or
    ``apn_settings="internet"`` stays in the phone, later calls that read the setting fail (the
    recorded suite has both), and the state the reward compares holds the bad value. A model
    can see that, so the phone does the same; only these two setters do it.
    """
    device.__dict__[field] = value


def did(db: TelecomUserDB, what: str) -> str:
    """Return a write tool's answer: what happened, then the status bar."""
    return f"{what}\nStatus Bar: {status_bar(db)}"


# --- read tools -----------------------------------------------------------------------------


@USER.tool("read", "Look at the status bar: signal, network type, mobile data, Wi-Fi, VPN, battery.")
def check_status_bar(db: TelecomUserDB) -> str:
    """Return what the user sees first when asked whether the phone has service."""
    return f"Status Bar: {status_bar(db)}"


@USER.tool("read", "Open the network settings: airplane mode, SIM, signal, data and roaming switches, Wi-Fi.")
def check_network_status(db: TelecomUserDB) -> str:
    """Return the radio's state and the switches; whether data actually flows is not shown."""
    d = db.device
    lines = [
        f"Airplane Mode: {_on(d.airplane_mode)}",
        f"SIM Card Status: {sim_status(d)}",
        f"Cellular Connection: {d.network_connection_status}",
        f"Cellular Signal: {d.network_signal_strength}",
        f"Cellular Network Type: {d.network_technology_connected}",
        f"Mobile Data Enabled: {_yes(d.data_enabled)}",
        f"Data Roaming Enabled: {_yes(d.roaming_enabled)}",
        f"Wi-Fi Radio: {_on(d.wifi_enabled)}",
        f"Wi-Fi Connected: {_yes(d.wifi_connected)}",
    ]
    if d.wifi_connected:
        lines.append(f"Connected Wi-Fi Network: {d.wifi_ssid}")
    return "\n".join(lines)


@USER.tool("read", "See which network types the phone prefers (e.g. 4G/5G preferred, 3G only).")
def check_network_mode_preference(db: TelecomUserDB) -> str:
    """Return the network mode preference, which decides the technology at the next network search."""
    return f"Network Mode Preference: {db.device.network_mode_preference.value}"


@USER.tool("write", "Set the preferred network type; the phone then searches for a network.")
def set_network_mode_preference(db: TelecomUserDB, mode: NetworkModePreference | str) -> str:
    """Set the network mode preference; an unknown mode is refused in the answer text (not as an error).

    A mode that is not text breaks the phone as it breaks upstream's (see ``store_unchecked``).
    """
    if not isinstance(mode, str):
        store_unchecked(db.device, "network_mode_preference", mode)
        search(db)  # an unknown preference falls back to 4G
        raise ToolError(f"'{type(mode).__name__}' object has no attribute 'value'")
    try:
        valid = NetworkModePreference(mode)
    except ValueError:
        choices = ", ".join(m.value for m in NetworkModePreference)
        why = f"'{mode}' is not a valid option. Please use one of: {choices}"
        return did(db, f"Failed to set network mode: {why}")
    db.device.network_mode_preference = valid
    search(db)
    return did(db, f"Preferred Network Mode set to: {valid.value}")


@USER.tool("read", "Run a speed test of the mobile data connection.")
def run_speed_test(db: TelecomUserDB) -> str:
    """Speed in Mbps, its label and what it is good for; a failure when mobile data does not work."""
    speed, label = internet_speed(db.device, db.surroundings)
    if speed is None:
        return f"Speed test failed: {label}."
    return f"Speed Test Result: {speed:.2f} Mbps ({label}). {_SPEED_ADVICE.get(label, '')}"


@USER.tool("write", "Turn airplane mode on or off.")
def toggle_airplane_mode(db: TelecomUserDB) -> str:
    """Either direction re-runs the network search."""
    on = toggle_airplane(db)
    return did(db, f"Airplane Mode is now {_on(on)}.")


def toggle_airplane(db: TelecomUserDB) -> bool:
    """Flip airplane mode: on drops Wi-Fi's connection and the VPN; off starts a search."""
    d = db.device
    turning_on = not d.airplane_mode
    d.airplane_mode = turning_on
    if not turning_on:
        d.network_connection_status = "searching"
    if turning_on or d.wifi_enabled:
        d.wifi_connected = False
        d.wifi_ssid = None
        d.wifi_signal_strength = "none"
    if turning_on and d.vpn_connected:
        disconnect(db)
    search(db)
    return d.airplane_mode


@USER.tool("read", "Check whether the SIM card is active, missing, or locked by a PIN or PUK code.")
def check_sim_status(db: TelecomUserDB) -> str:
    """Missing, active, or locked by PIN/PUK."""
    return _SIM_TEXT[sim_status(db.device)]


@USER.tool("write", "Take the SIM card out and put it back in; helps when the phone does not detect it.")
def reseat_sim_card(db: TelecomUserDB) -> str:
    """Fix a SIM that was out of its slot; a PIN or PUK lock stays (the issue's reproducer)."""
    db.device.sim_card_missing = False
    search(db)
    return did(db, "SIM card re-seated successfully.")


@USER.tool("write", "Turn mobile data on or off.")
def toggle_data(db: TelecomUserDB) -> str:
    """Re-runs the network search."""
    on = flip(db, "data_enabled", search_after=True)
    return did(db, f"Mobile Data is now {_on(on)}.")


def flip(db: TelecomUserDB, field: str, *, search_after: bool) -> bool:
    """Invert one boolean setting of the phone, optionally re-running the search; the new value."""
    value = not getattr(db.device, field)
    setattr(db.device, field, value)
    if search_after:
        search(db)
    return value


@USER.tool("write", "Turn data roaming on or off on the phone.")
def toggle_roaming(db: TelecomUserDB) -> str:
    """Toggle the phone's roaming setting only; the carrier must also allow roaming on the line."""
    on = flip(db, "roaming_enabled", search_after=True)
    return did(db, f"Data Roaming is now {_on(on)}.")


@USER.tool("read", "Check whether data saver limits mobile data.")
def check_data_restriction_status(db: TelecomUserDB) -> str:
    """Return the data saver setting only: the carrier's usage cap is not something the phone shows."""
    if db.device.data_saver_mode:
        return "Data Saver mode is ON (limits data usage)."
    return "Data Saver mode is OFF."


@USER.tool("write", "Turn data saver mode on or off.")
def toggle_data_saver_mode(db: TelecomUserDB) -> str:
    """No network search: data saver only throttles."""
    on = flip(db, "data_saver_mode", search_after=False)
    return did(db, f"Data Saver Mode is now {_on(on)}.")


@USER.tool("read", "Show the APN settings.")
def check_apn_settings(db: TelecomUserDB) -> str:
    """Return the APN name and MMSC address only, as a settings screen for non-experts shows them."""
    apn = db.device.active_apn_settings
    return (
        f"Current APN Name: {apn.apn_name.value or 'Not Set'}\n"
        f"MMSC URL (for picture messages): {apn.mmsc_url or 'Not Set'}\n"
        "(These are technical settings, usually best left unchanged.)"
    )


@USER.tool("write", "Replace the APN settings; omitted fields take their defaults.")
def set_apn_settings(db: TelecomUserDB, apn_settings: APNSettings | dict[str, Any]) -> str:
    """Replace the whole APN profile (not merged); only known APN names pass, then a search runs.

    Settings that are neither a mapping nor a profile break the phone as they break upstream's
    (see ``store_unchecked``).
    """
    if not isinstance(apn_settings, dict | APNSettings):
        store_unchecked(db.device, "active_apn_settings", apn_settings)
        raise ToolError(f"'{type(apn_settings).__name__}' object has no attribute 'apn_name'")
    if isinstance(apn_settings, dict):
        try:
            apn_settings = APNSettings(**apn_settings)
        except ValidationError as err:
            raise ToolError(str(err)) from None
    db.device.active_apn_settings = apn_settings
    search(db)
    return did(db, f"APN settings set to: {apn_settings.apn_name.value}")


@USER.tool("write", "Reset the APN settings to the defaults at the next reboot.")
def reset_apn_settings(db: TelecomUserDB) -> str:
    """Only marks the settings; the user must reboot, which is what the manual tells the agent."""
    db.device.active_apn_settings.reset_at_reboot = True
    search(db)
    return did(db, "APN settings will reset at reboot.")


@USER.tool("read", "Check Wi-Fi: on or off, and the network it is connected to.")
def check_wifi_status(db: TelecomUserDB) -> str:
    """On or off, and the network it is connected to."""
    d = db.device
    if not d.wifi_enabled:
        return "Wi-Fi is turned OFF."
    if d.wifi_connected:
        return f"Wi-Fi is ON and connected to '{d.wifi_ssid}'. Signal strength: {d.wifi_signal_strength}."
    return "Wi-Fi is ON but not connected to any network."


@USER.tool("write", "Turn Wi-Fi on or off.")
def toggle_wifi(db: TelecomUserDB) -> str:
    """Refused (as text) while airplane mode is on; there is no Wi-Fi network to join in these tasks."""
    d = db.device
    if d.airplane_mode:
        return did(db, "Cannot change Wi-Fi settings while Airplane Mode is ON.")
    d.wifi_enabled = not d.wifi_enabled
    if not d.wifi_enabled:
        d.wifi_connected = False
        d.wifi_ssid = None
        d.wifi_signal_strength = "none"
    return did(db, f"Wi-Fi is now {_on(d.wifi_enabled)}.")


@USER.tool("read", "Check whether Wi-Fi calling is on.")
def check_wifi_calling_status(db: TelecomUserDB) -> str:
    """On or off only; the MMS-over-Wi-Fi option is not shown."""
    return f"Wi-Fi Calling is currently turned {_on(db.device.wifi_calling_enabled)}."


@USER.tool("write", "Turn Wi-Fi calling on or off.")
def toggle_wifi_calling(db: TelecomUserDB) -> str:
    """Leaves the MMS-over-Wi-Fi preference as it is."""
    on = flip(db, "wifi_calling_enabled", search_after=False)
    return did(db, f"Wi-Fi Calling is now {_on(on)}.")


@USER.tool("read", "Check the VPN: off, on but not connected, or connected (with its details).")
def check_vpn_status(db: TelecomUserDB) -> str:
    """Report the VPN as connected (with the server's details), set on but not connected, or off."""
    d = db.device
    if d.vpn_connected:
        if d.vpn_details is None:
            return "VPN is ON and connected (no specific details available)."
        return f"VPN is ON and connected. Details: {_details_text(d.vpn_details.model_dump())}"
    if d.vpn_enabled_setting:
        return "VPN is turned ON in settings, but currently not connected."
    return "VPN is turned OFF."


def _details_text(details: dict[str, Any]) -> str:
    """Return the VPN details as a Python dict prints them, the performance shown as its enum member."""
    parts = []
    for key, value in details.items():
        enum_member = f"<PerformanceLevel.{str(value).upper()}: '{value}'>"
        shown = enum_member if key == "server_performance" else repr(value)
        parts.append(f"{key!r}: {shown}")
    return "{" + ", ".join(parts) + "}"


@USER.tool("write", "Connect to the phone's VPN.")
def connect_vpn(db: TelecomUserDB) -> str:
    """Connect to the default profile; the setting switch is left as it is."""
    if not connect(db):
        return "VPN already connected."
    return did(db, "VPN connected successfully.")


def connect(db: TelecomUserDB) -> bool:
    """Connect to this episode's VPN profile; False when already connected.

    The device holds the profile itself, not a copy: once ``break_vpn`` has degraded it, a
    reconnect in the same episode meets the same poor server (as upstream's does), while the next
    episode starts from a new profile (upstream's leaks into every later episode of the process).
    """
    d = db.device
    if d.vpn_connected:
        return False
    d.vpn_connected = True
    d.vpn_details = db.vpn_profile
    return True


@USER.tool("write", "Disconnect the VPN.")
def disconnect_vpn(db: TelecomUserDB) -> str:
    """Disconnecting twice is not an error."""
    if disconnect(db):
        return did(db, "VPN disconnected successfully.")
    return did(db, "No active VPN connection to disconnect.")


def disconnect(db: TelecomUserDB) -> bool:
    """Drop the VPN connection and its details; False when none was connected."""
    d = db.device
    if not d.vpn_connected:
        return False
    d.vpn_connected = False
    d.vpn_details = None
    return True


@USER.tool("read", "List the apps installed on the phone.")
def check_installed_apps(db: TelecomUserDB) -> str:
    """Names only, in the phone's order."""
    return f"The following apps are installed on the phone: {', '.join(db.device.app_statuses)}"


def _granted(db: TelecomUserDB, app_name: str) -> list[str] | None:
    app = db.device.app_statuses.get(app_name)
    if app is None:
        return None
    return [name for name, allowed in app.permissions.model_dump().items() if allowed]


@USER.tool("read", "Show one app's status and the permissions it has.")
def check_app_status(db: TelecomUserDB, app_name: AppName) -> str:
    """Return the app's granted permissions as a list; names match exactly (case matters)."""
    granted = _granted(db, app_name)
    if granted is None:
        return f"App '{app_name}' not found on this phone."
    lines = [f"Status for App: {app_name}"]
    if granted:
        lines.append(" - Permissions Granted:")
        lines.extend(f"   - {perm}" for perm in granted)
    else:
        lines.append(" - Permissions: None granted.")
    return "\n".join(lines)


@USER.tool("read", "Show which permissions one app has.")
def check_app_permissions(db: TelecomUserDB, app_name: AppName) -> str:
    """Granted permissions only."""
    granted = _granted(db, app_name)
    if granted is None:
        return f"App '{app_name}' not found on this phone."
    if not granted:
        return f"App '{app_name}' currently has no permissions granted."
    return f"App '{app_name}' has permission for: {', '.join(granted)}."


@USER.tool("write", "Give an app one permission (sms, storage, phone or network), in lower case.")
def grant_app_permission(
    db: TelecomUserDB, app_name: AppName, permission: Annotated[str, arg("The permission, lower case.")]
) -> str:
    """Refusals (unknown app or permission) are answered in the text, not as errors."""
    ok, message = set_permission(db, app_name, permission, True)
    return did(db, f"{'Success' if ok else 'Error'}. {message}")


def set_permission(db: TelecomUserDB, app_name: str, permission: str, allowed: bool) -> tuple[bool, str]:
    """Grant or remove one tracked permission; (False, why) for an unknown app or permission."""
    permission = permission.lower()  # first, as upstream: a permission that is not text fails here
    app = db.device.app_statuses.get(app_name)
    if app is None:
        verb = "grant" if allowed else "remove"
        return False, f"App '{app_name}' not found. Cannot {verb} permission."
    tracked = list(app.permissions.model_dump())
    if permission not in tracked:
        if allowed:
            listing = f"available permissions: {tracked}"
            return False, f"Permission '{permission}' not tracked for app '{app_name}', {listing}"
        return False, f"Permission '{permission}' not tracked for app '{app_name}'."
    setattr(app.permissions, permission, allowed)
    return True, f"Permission '{permission}' {'granted to' if allowed else 'removed from'} app '{app_name}'."


@USER.tool("read", "Check whether the messaging app can send MMS.")
def can_send_mms(db: TelecomUserDB) -> str:
    """Return the outcome only; finding the cause is the agent's job."""
    if _can_send_mms(db.device, db.surroundings):
        return "Your messaging app can send MMS messages."
    return "Your messaging app cannot send MMS messages."


@USER.tool("write", "Restart the phone; a pending APN reset applies and the phone looks for a network.")
def reboot_device(db: TelecomUserDB) -> str:
    """Reboot the phone: a pending APN reset applies, then the network search runs."""
    d = db.device
    lines = []
    if d.active_apn_settings.reset_at_reboot:
        lines.append("Resetting APN settings...")
        d.active_apn_settings = APNSettings()
    lines.append("Restarting network services...")
    d.network_connection_status = "searching"
    search(db)
    return did(db, "\n".join(lines))


@USER.tool("read", "Check whether the agent has sent a payment request.")
def check_payment_request(db: TelecomUserDB) -> str:
    """Return the payment request; one appears once the agent sends it (the sync carries it to the phone)."""
    request = db.surroundings.payment_request
    if request is None:
        return "No payment request has been made."
    return f"You have a payment request for bill {request.bill_id} of {request.amount_due} USD."


@USER.tool("write", "Pay the bill the agent sent you a payment request for.")
def make_payment(db: TelecomUserDB) -> str:
    """Mark the request paid; the carrier's bill becomes Paid at the next sync."""
    request = db.surroundings.payment_request
    if request is None:
        return "You do not have a payment request."
    request.paid = True
    return f"Payment of {request.amount_due} USD has been made for bill {request.bill_id}."
