"""Telecom user tools (spec tau2-telecom-banking.md §A.2): what the simulated user can do on the phone.

15 read tools look at the phone, 15 write tools change it; every write answers with what it did
followed by the status bar, as a person looking at their phone would see it. Hidden helpers break
the phone for a task's setup and check it for the task's assertions; they never reach a model.

Which changes re-run the network search (the radio re-attaching) is part of the rules the
assertions read: the preference, airplane mode, the SIM, data, roaming and a reboot do; data
saver, Wi-Fi, Wi-Fi calling, the VPN, permissions and an APN edit do not (an APN reset waits for
the reboot). Setup helpers that break the radio (airplane on, SIM out or locked, APN broken) search
too, so a task starts in the state a real phone would be in.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ValidationError

from .db import ApnSettings, ModePreference, Permission, TelecomUserDB, VpnDetails
from .device import can_send_mms as _can_send_mms
from .device import internet_speed, mobile_data_works, network_search
from ...toolkit import ToolError, Toolkit, arg

USER = Toolkit("telecom-user")

AppName = Annotated[str, arg("The app's name as installed, e.g. 'messaging' or 'browser'.")]
PERMISSIONS: tuple[str, ...] = ("sms", "storage", "phone", "network")


def _on(flag: bool) -> str:
    return "ON" if flag else "OFF"


def _search(db: TelecomUserDB) -> None:
    network_search(db.device, db.surroundings)


def status_bar(db: TelecomUserDB) -> str:
    """The icons along the top of the screen, in words."""
    d = db.device
    parts = []
    if d.airplane_mode:
        parts.append("Airplane mode")
    if d.network_connection_status == "no_service":
        parts.append("No Service")
    else:
        parts.append(f"Signal: {d.network_signal_strength}, {d.network_technology_connected}")
    if d.data_enabled and mobile_data_works(d, db.surroundings):
        parts.append("Mobile data")
    if d.wifi_enabled:
        parts.append("Wi-Fi connected" if d.wifi_connected else "Wi-Fi on (not connected)")
    if d.vpn_connected:
        parts.append("VPN")
    if d.data_saver_mode:
        parts.append("Data saver")
    parts.append(f"Battery {d.battery_level}%")
    return "Status bar: " + " | ".join(parts)


def _did(db: TelecomUserDB, what: str) -> str:
    return f"{what}\n{status_bar(db)}"


# --- read tools -----------------------------------------------------------------------------


@USER.tool("read", "Look at the phone's status bar (signal, network type, airplane mode, data, Wi-Fi, VPN).")
def check_status_bar(db: TelecomUserDB) -> str:
    """What the user sees first when asked whether the phone has service."""
    return status_bar(db)


@USER.tool("read", "Open the network settings: connection status, network type and signal strength.")
def check_network_status(db: TelecomUserDB) -> str:
    """The radio's state, plus the switches that decide it."""
    d = db.device
    return (
        f"Connection: {d.network_connection_status}; network type: {d.network_technology_connected}; "
        f"signal: {d.network_signal_strength}; airplane mode {_on(d.airplane_mode)}; "
        f"mobile data {_on(d.data_enabled)}; data roaming {_on(d.roaming_enabled)}"
    )


@USER.tool("read", "See which network types the phone prefers (e.g. 4G/5G preferred, 2G only).")
def check_network_mode_preference(db: TelecomUserDB) -> str:
    """The preference decides the technology at the next network search."""
    return f"Preferred network type: {db.device.network_mode_preference}"


@USER.tool("read", "Run a speed test of the mobile data connection.")
def run_speed_test(db: TelecomUserDB) -> str:
    """Speed in Mbps and its label; says so when there is no connection at all."""
    speed, label = internet_speed(db.device, db.surroundings)
    if speed is None:
        return "Speed test failed: no internet connection."
    return f"Download speed: {speed:.2f} Mbps ({label})"


@USER.tool("read", "Check the SIM card: inserted, active, or locked by PIN/PUK.")
def check_sim_status(db: TelecomUserDB) -> str:
    """Missing and locked SIMs both mean no service; the user can only reseat a missing one."""
    d = db.device
    if d.sim_card_missing:
        return "SIM card: not detected (missing)"
    return f"SIM card: {d.sim_card_status}"


@USER.tool("read", "Check what limits mobile data: the data switch, data saver, roaming, and the usage cap.")
def check_data_restriction_status(db: TelecomUserDB) -> str:
    """Usage over the cap shows here because the phone shows the carrier's notice."""
    d, s = db.device, db.surroundings
    cap = "reached: mobile data is paused by the carrier" if s.mobile_data_usage_exceeded else "not reached"
    return (
        f"Mobile data {_on(d.data_enabled)}; data saver {_on(d.data_saver_mode)}; "
        f"data roaming {_on(d.roaming_enabled)}; data usage limit {cap}"
    )


@USER.tool("read", "Show the mobile network access point (APN) settings.")
def check_apn_settings(db: TelecomUserDB) -> str:
    """The settings as stored, including a reset waiting for the next reboot."""
    apn = db.device.active_apn_settings
    pending = "; a reset to defaults will apply at the next reboot" if apn.reset_at_reboot else ""
    mmsc = apn.mmsc_url or "(not set)"
    return f"APN name: {apn.apn_name}; MMS APN: {apn.mms_apn}; MMSC URL: {mmsc}{pending}"


@USER.tool("read", "Check Wi-Fi: on or off, connected, and the Wi-Fi signal.")
def check_wifi_status(db: TelecomUserDB) -> str:
    """Wi-Fi never carries mobile data here; it matters for Wi-Fi calling and MMS."""
    d = db.device
    signal = d.wifi_signal_strength
    return f"Wi-Fi {_on(d.wifi_enabled)}; connected: {d.wifi_connected}; Wi-Fi signal: {signal}"


@USER.tool("read", "Check Wi-Fi calling and whether it also sends MMS over Wi-Fi.")
def check_wifi_calling_status(db: TelecomUserDB) -> str:
    """Wi-Fi calling with MMS over Wi-Fi blocks MMS when there is no Wi-Fi."""
    d = db.device
    return f"Wi-Fi calling {_on(d.wifi_calling_enabled)}; MMS over Wi-Fi {_on(d.wifi_calling_mms_over_wifi)}"


@USER.tool("read", "Check the VPN: connected or not, and how well its server performs.")
def check_vpn_status(db: TelecomUserDB) -> str:
    """A connected VPN with a poor server slows every connection."""
    d = db.device
    if not d.vpn_connected:
        return "VPN: not connected"
    details = d.vpn_details or VpnDetails()
    server = f"{details.server_address} ({details.protocol})"
    return f"VPN: connected to {server}; server performance: {details.server_performance}"


@USER.tool("read", "List the apps installed on the phone.")
def check_installed_apps(db: TelecomUserDB) -> str:
    """Names only; the status and permission tools take one of them."""
    return "Installed apps: " + ", ".join(sorted(db.device.app_statuses))


def _app(db: TelecomUserDB, app_name: str) -> str:
    name = app_name.strip().lower()
    if name not in db.device.app_statuses:
        raise ToolError(f"no app named {app_name!r}; installed: {', '.join(sorted(db.device.app_statuses))}")
    return name


@USER.tool("read", "Show one app's status and its permissions.")
def check_app_status(db: TelecomUserDB, app_name: AppName) -> str:
    """Same facts as the permission view, phrased as the app's info page."""
    name = _app(db, app_name)
    return f"App {name}: installed. " + check_app_permissions(db, name)


@USER.tool("read", "Show which permissions one app has (sms, storage, phone, network).")
def check_app_permissions(db: TelecomUserDB, app_name: AppName) -> str:
    """Granted and missing permissions, in a fixed order."""
    perms = db.device.app_statuses[_app(db, app_name)].permissions
    granted = [p for p in PERMISSIONS if getattr(perms, p)]
    missing = [p for p in PERMISSIONS if not getattr(perms, p)]
    return f"Permissions granted: {', '.join(granted) or 'none'}; not granted: {', '.join(missing) or 'none'}"


@USER.tool("read", "Try sending a picture message (MMS) and see whether it goes through.")
def can_send_mms(db: TelecomUserDB) -> str:
    """The outcome only; finding the cause is the agent's job."""
    if _can_send_mms(db.device, db.surroundings):
        return "MMS sent successfully."
    return "MMS could not be sent."


@USER.tool("read", "Check whether the carrier has sent a payment request to the phone.")
def check_payment_request(db: TelecomUserDB) -> str:
    """A request appears once the agent sends one (the sync carries it to the phone)."""
    request = db.surroundings.payment_request
    if request is None:
        return "No payment request."
    state = "paid" if request.paid else "waiting for your payment"
    return f"Payment request for bill {request.bill_id}: {request.amount_due:.2f} USD, {state}"


# --- write tools ----------------------------------------------------------------------------


@USER.tool("write", "Set the preferred network type; the phone then searches for a network.")
def set_network_mode_preference(
    db: TelecomUserDB,
    mode: Annotated[ModePreference, arg("One of 4g_5g_preferred, 4g_only, 3g_only, 2g_only.")],
) -> str:
    """Only 4g_5g_preferred can reach 5G, so only it can give an excellent speed."""
    db.device.network_mode_preference = mode
    _search(db)
    return _did(db, f"Preferred network type set to {mode}.")


@USER.tool("write", "Turn airplane mode on or off (turning it on also drops Wi-Fi and the VPN).")
def toggle_airplane_mode(db: TelecomUserDB) -> str:
    """Either direction re-runs the network search."""
    _set_airplane(db, not db.device.airplane_mode)
    return _did(db, f"Airplane mode is now {_on(db.device.airplane_mode)}.")


def _set_airplane(db: TelecomUserDB, on: bool) -> None:
    d = db.device
    d.airplane_mode = on
    if on:
        d.wifi_enabled = False
        d.wifi_connected = False
        d.vpn_connected = False
    _search(db)


@USER.tool("write", "Take the SIM card out and put it back in; the phone then searches for a network.")
def reseat_sim_card(db: TelecomUserDB) -> str:
    """Fixes a SIM that was out; a PIN/PUK lock stays."""
    d = db.device
    d.sim_card_missing = False
    if d.sim_card_status == "missing":
        d.sim_card_status = "active"
    _search(db)
    return _did(db, "SIM card removed and reinserted.")


@USER.tool("write", "Turn mobile data on or off.")
def toggle_data(db: TelecomUserDB) -> str:
    """Re-runs the network search."""
    db.device.data_enabled = not db.device.data_enabled
    _search(db)
    return _did(db, f"Mobile data is now {_on(db.device.data_enabled)}.")


@USER.tool("write", "Turn data roaming on or off on the phone.")
def toggle_roaming(db: TelecomUserDB) -> str:
    """The phone's setting only; the carrier must also allow roaming on the line."""
    db.device.roaming_enabled = not db.device.roaming_enabled
    _search(db)
    return _did(db, f"Data roaming is now {_on(db.device.roaming_enabled)}.")


@USER.tool("write", "Turn data saver mode on or off.")
def toggle_data_saver_mode(db: TelecomUserDB) -> str:
    """No network search: data saver only throttles."""
    db.device.data_saver_mode = not db.device.data_saver_mode
    return _did(db, f"Data saver is now {_on(db.device.data_saver_mode)}.")


@USER.tool("write", "Change APN settings; give only the fields to change (apn_name, mms_apn, mmsc_url).")
def set_apn_settings(
    db: TelecomUserDB,
    apn_settings: Annotated[dict[str, Any], arg("Fields to change, e.g. {\"apn_name\": \"internet\"}.")],
) -> str:
    """An edit takes effect at once for MMS; the radio re-attaches only at the next search."""
    current = db.device.active_apn_settings.model_dump()
    unknown = sorted(set(apn_settings) - set(current) - {"reset_at_reboot"})
    if unknown:
        raise ToolError(f"unknown APN fields: {', '.join(unknown)}")
    try:
        db.device.active_apn_settings = ApnSettings.model_validate({**current, **apn_settings})
    except ValidationError as err:
        raise ToolError(f"invalid APN settings: {err.errors()[0]['msg']}") from None
    return _did(db, "APN settings saved.")


@USER.tool("write", "Reset the APN settings to the carrier's defaults (takes effect after a reboot).")
def reset_apn_settings(db: TelecomUserDB) -> str:
    """Only schedules the reset: the user must reboot, which is what the manual tells the agent."""
    db.device.active_apn_settings.reset_at_reboot = True
    return _did(db, "APN settings will be reset to defaults when the phone restarts.")


@USER.tool("write", "Turn Wi-Fi on or off (not possible while airplane mode is on).")
def toggle_wifi(db: TelecomUserDB) -> str:
    """There is no Wi-Fi network around in these tasks, so turning it on connects to nothing."""
    d = db.device
    if d.airplane_mode:
        raise ToolError("Wi-Fi cannot be changed while airplane mode is on")
    d.wifi_enabled = not d.wifi_enabled
    d.wifi_connected = False
    return _did(db, f"Wi-Fi is now {_on(d.wifi_enabled)}.")


@USER.tool("write", "Turn Wi-Fi calling on or off.")
def toggle_wifi_calling(db: TelecomUserDB) -> str:
    """Leaves the MMS-over-Wi-Fi preference as it is; it matters only while Wi-Fi calling is on."""
    db.device.wifi_calling_enabled = not db.device.wifi_calling_enabled
    return _did(db, f"Wi-Fi calling is now {_on(db.device.wifi_calling_enabled)}.")


@USER.tool("write", "Connect the VPN.")
def connect_vpn(db: TelecomUserDB) -> str:
    """Connects to the configured server (a default one when none is set)."""
    d = db.device
    if d.vpn_connected:
        return _did(db, "The VPN is already connected.")
    d.vpn_connected = True
    d.vpn_enabled_setting = True
    if d.vpn_details is None:
        d.vpn_details = VpnDetails()
    return _did(db, "VPN connected.")


@USER.tool("write", "Disconnect the VPN.")
def disconnect_vpn(db: TelecomUserDB) -> str:
    """Disconnecting twice is not an error, so a cautious user is not punished."""
    d = db.device
    if not d.vpn_connected:
        return _did(db, "No VPN is connected.")
    d.vpn_connected = False
    d.vpn_enabled_setting = False
    return _did(db, "VPN disconnected.")


@USER.tool("write", "Give an app one permission (sms, storage, phone or network).")
def grant_app_permission(
    db: TelecomUserDB,
    app_name: AppName,
    permission: Annotated[str, arg("One of sms, storage, phone, network.")],
) -> str:
    """Names are lower-cased, so 'SMS' works; other permissions are not tracked and are refused."""
    name, perm = _app(db, app_name), permission.strip().lower()
    if perm not in PERMISSIONS:
        raise ToolError(f"unknown permission {permission!r}; use one of {', '.join(PERMISSIONS)}")
    setattr(db.device.app_statuses[name].permissions, perm, True)
    return _did(db, f"Permission {perm} granted to {name}.")


@USER.tool("write", "Restart the phone; a pending APN reset applies, then it searches for a network.")
def reboot_device(db: TelecomUserDB) -> str:
    """The only way a scheduled APN reset takes effect."""
    d = db.device
    if d.active_apn_settings.reset_at_reboot:
        d.active_apn_settings = ApnSettings()
    _search(db)
    return _did(db, "The phone restarted.")


@USER.tool("write", "Pay the carrier's pending payment request from the phone.")
def make_payment(db: TelecomUserDB) -> str:
    """Marks the request paid; the carrier's bill becomes Paid at the next sync."""
    request = db.surroundings.payment_request
    if request is None:
        raise ToolError("there is no payment request to pay")
    if request.paid:
        raise ToolError(f"bill {request.bill_id} is already paid")
    request.paid = True
    return _did(db, f"Paid {request.amount_due:.2f} USD for bill {request.bill_id}.")


# --- hidden: task setup -------------------------------------------------------------------


@USER.helper("Say whose phone this is (setup only).")
def set_user_info(db: TelecomUserDB, name: str, phone_number: str) -> str:
    """The phone number is how sync finds the carrier's line."""
    db.surroundings.name = name
    db.surroundings.phone_number = phone_number
    return "ok"


@USER.helper("Put the user abroad or at home (setup only).")
def set_user_location(db: TelecomUserDB, abroad: bool) -> str:
    """Abroad, mobile data needs roaming on both the phone and the line."""
    db.surroundings.is_abroad = abroad
    return "ok"


def _switch_helper(name: str, field: str, on: bool) -> None:
    """Register ``turn_<name>_on/off``: set one switch as a task's setup needs (airplane also searches)."""

    def helper(db: TelecomUserDB) -> str:
        if field == "airplane_mode":
            _set_airplane(db, on)
        else:
            setattr(db.device, field, on)
        return "ok"

    helper.__name__ = f"turn_{name}_{'on' if on else 'off'}"
    USER.helper(f"Turn {name.replace('_', ' ')} {'on' if on else 'off'} (setup only).")(helper)


for _name, _field in {
    "airplane_mode": "airplane_mode",
    "data": "data_enabled",
    "roaming": "roaming_enabled",
    "data_saver_mode": "data_saver_mode",
}.items():
    _switch_helper(_name, _field, True)
    _switch_helper(_name, _field, False)


@USER.helper("Take the SIM card out (setup only).")
def unseat_sim_card(db: TelecomUserDB) -> str:
    """No SIM, no service."""
    db.device.sim_card_missing = True
    db.device.sim_card_status = "missing"
    _search(db)
    return "ok"


@USER.helper("Lock the SIM card by PIN or PUK (setup only).")
def lock_sim_card(db: TelecomUserDB, mode: str) -> str:
    """A locked SIM cannot be fixed by the user or the agent: such tasks end in a transfer."""
    if mode not in ("pin", "puk"):
        raise ToolError("mode must be 'pin' or 'puk'")
    db.device.sim_card_status = "locked_pin" if mode == "pin" else "locked_puk"
    _search(db)
    return "ok"


@USER.helper("Break the data APN (setup only).")
def break_apn_settings(db: TelecomUserDB) -> str:
    """A broken APN means no service until a reset and a reboot."""
    db.device.active_apn_settings.apn_name = "broken"
    _search(db)
    return "ok"


@USER.helper("Remove the MMS server address from the APN (setup only).")
def break_apn_mms_setting(db: TelecomUserDB) -> str:
    """Data still works; only MMS fails."""
    db.device.active_apn_settings.mmsc_url = None
    return "ok"


@USER.helper("Set Wi-Fi calling and its MMS-over-Wi-Fi option (setup only).")
def set_wifi_calling(db: TelecomUserDB, enabled: bool, mms_over_wifi: bool) -> str:
    """Both on, with no Wi-Fi around, blocks MMS."""
    db.device.wifi_calling_enabled = enabled
    db.device.wifi_calling_mms_over_wifi = mms_over_wifi
    return "ok"


@USER.helper("Connect a VPN whose server performs poorly (setup only).")
def break_vpn(db: TelecomUserDB) -> str:
    """Slows data to a tenth; disconnecting fixes it."""
    d = db.device
    d.vpn_connected = True
    d.vpn_enabled_setting = True
    d.vpn_details = VpnDetails(server_performance="poor")
    return "ok"


@USER.helper("Take one permission away from an app (setup only).")
def remove_app_permission(db: TelecomUserDB, app_name: str, permission: Permission) -> str:
    """The messaging app without sms or storage cannot send MMS."""
    setattr(db.device.app_statuses[_app(db, app_name)].permissions, permission, False)
    return "ok"


@USER.helper("Re-run the network search (setup only).")
def simulate_network_search(db: TelecomUserDB) -> str:
    """Setup calls it after changing the carrier's side, which the phone notices only on a search."""
    _search(db)
    return "ok"


# --- hidden: assertions -------------------------------------------------------------------


@USER.helper("Whether the phone's connection status is the expected one.")
def assert_service_status(db: TelecomUserDB, expected_status: str) -> bool:
    """Env assertion: 'connected' or 'no_service'."""
    return db.device.network_connection_status == expected_status


@USER.helper("Whether mobile data works (or not, as expected).")
def assert_mobile_data_status(db: TelecomUserDB, expected_status: bool) -> bool:
    """Env assertion on the derived mobile-data rule."""
    return mobile_data_works(db.device, db.surroundings) == expected_status


@USER.helper("Whether the speed test reaches a speed (Mbps) and/or label.")
def assert_internet_speed(
    db: TelecomUserDB, expected_speed: float | None = None, expected_desc: str | None = None
) -> bool:
    """At least ``expected_speed`` and the same label, case-insensitively; no connection fails."""
    speed, label = internet_speed(db.device, db.surroundings)
    if speed is None:
        return False
    if expected_speed is not None and speed < expected_speed:
        return False
    return expected_desc is None or label.lower() == expected_desc.lower()


@USER.helper("Whether the phone can send MMS (or not, as expected).")
def assert_can_send_mms(db: TelecomUserDB, expected_status: bool) -> bool:
    """Env assertion on the derived MMS rule."""
    return _can_send_mms(db.device, db.surroundings) == expected_status


@USER.helper("Whether airplane mode is as expected.")
def assert_airplane_mode_status(db: TelecomUserDB, expected_status: bool) -> bool:
    """Env assertion used by generated precondition checks."""
    return db.device.airplane_mode == expected_status
