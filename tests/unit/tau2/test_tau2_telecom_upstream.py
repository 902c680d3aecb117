"""tau2 telecom as the model sees it upstream (issue 29): the reward-changing behaviours, one test each.

Each test is one of the issue's reproducers, run on the real task file (skipped without
``../shared``): a reseated SIM keeps its PIN lock, ``set_apn_settings`` replaces the profile and
re-searches, a user-seat transfer meets the agent's gold transfer, the phone tells the user no
more than upstream's does, records print as tau2 prints them, and a degraded VPN stays in its
episode (upstream bug 1).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uxlocal.tau2 import Domain, Environment, Message, Task, ToolCall, load_domain, load_tasks, score_episode
from uxlocal.tau2.domains.telecom.device import mobile_data_works
from uxlocal.tau2.domains.telecom.phone_db import TelecomUserDB
from uxlocal.tau2.termination import USER_STOP

LOCKED_AND_UNSEATED = "[service_issue]airplane_mode_on|lock_sim_card_pin|unseat_sim_card[PERSONA:Hard]"
BROKEN_APN = "[service_issue]airplane_mode_on|break_apn_settings|unseat_sim_card[PERSONA:None]"
LOCKED = "[service_issue]airplane_mode_on|lock_sim_card_pin[PERSONA:Easy]"
EXCEEDED_ABROAD = "[mobile_data_issue]data_usage_exceeded|user_abroad_roaming_enabled_off[PERSONA:Easy]"
BAD_VPN = "[mobile_data_issue]bad_vpn|data_saver_mode_on|user_abroad_roaming_disabled_on[PERSONA:None]"


@pytest.fixture(scope="module")
def telecom(data_dir: Path) -> Domain:
    return load_domain(data_dir, "telecom")


@pytest.fixture(scope="module")
def tasks(data_dir: Path) -> dict[str, Task]:
    return {t.id: t for t in load_tasks(data_dir, "telecom", split=None)}


def _env(telecom: Domain, tasks: dict[str, Task], task_id: str) -> tuple[Environment, TelecomUserDB]:
    env = Environment.for_task(telecom, tasks[task_id])
    assert isinstance(env.user_db, TelecomUserDB)
    return env, env.user_db


def _text(env: Environment, name: str, requestor: str = "user", **arguments: object) -> str:
    result = env.call(name, arguments, requestor)  # type: ignore[arg-type]
    assert result.ok, result.content
    return result.content


def test_reseated_sim_keeps_its_pin_lock(telecom: Domain, tasks: dict[str, Task]) -> None:
    env, phone = _env(telecom, tasks, LOCKED_AND_UNSEATED)
    assert _text(env, "check_sim_status") == "No SIM card detected in the phone."
    _text(env, "toggle_airplane_mode")
    _text(env, "reseat_sim_card")
    assert _text(env, "check_sim_status") == "The SIM card is locked with a PIN code."
    assert phone.device.network_connection_status == "no_service"


def test_set_apn_settings_replaces_the_profile_and_searches_again(
    telecom: Domain, tasks: dict[str, Task]
) -> None:
    env, phone = _env(telecom, tasks, BROKEN_APN)
    _text(env, "toggle_airplane_mode")
    _text(env, "reseat_sim_card")
    assert "📵 No Signal" in _text(env, "check_status_bar")
    answer = _text(env, "set_apn_settings", apn_settings={"apn_name": "internet", "mmsc_url": None})
    assert answer.startswith("APN settings set to: internet\nStatus Bar: 📶⁴ Excellent | 5G")
    apn = phone.device.active_apn_settings
    assert (apn.mms_apn, apn.mmsc_url) == ("mms", None)  # omitted fields take defaults, given ones stay
    refused = env.call("set_apn_settings", {"apn_settings": {"apn_name": "fast"}}, "user")
    assert not refused.ok and "Input should be 'internet' or 'broken'" in refused.content
    assert phone.device.active_apn_settings.apn_name == "internet"


def test_a_user_seat_transfer_meets_the_agents_gold_transfer(telecom: Domain, tasks: dict[str, Task]) -> None:
    task = tasks[LOCKED]
    env = Environment.for_task(telecom, task)
    call = ToolCall(id="t1", name="transfer_to_human_agents", arguments={"summary": "x"}, requestor="user")
    result = env.call_tool(call)
    assert not result.ok  # the user has no such tool ...
    messages = [Message.calls("user", [call]), Message.tool_result(call, result.content, error=True)]
    info = score_episode(telecom, task, messages, USER_STOP).finish(None)
    assert [c.action_match for c in info.action_checks or []] == [True]  # ... but ACTION ignores the seat
    assert info.reward == 1.0


def test_the_phone_does_not_show_the_data_cap_or_whether_data_flows(
    telecom: Domain, tasks: dict[str, Task]
) -> None:
    env, phone = _env(telecom, tasks, EXCEEDED_ABROAD)
    _text(env, "toggle_roaming")
    assert phone.surroundings.mobile_data_usage_exceeded
    assert not mobile_data_works(phone.device, phone.surroundings)
    assert _text(env, "check_data_restriction_status") == "Data Saver mode is OFF."
    assert "📱 Data Enabled" in _text(env, "check_status_bar")  # the switch, not whether data flows
    assert _text(env, "run_speed_test") == "Speed test failed: No Connection."


def test_wifi_calling_status_leaves_out_mms_over_wifi(telecom: Domain, tasks: dict[str, Task]) -> None:
    env, phone = _env(telecom, tasks, LOCKED)
    env.invoke("user", "set_wifi_calling", {"enabled": True, "mms_over_wifi": True})
    assert phone.device.wifi_calling_mms_over_wifi
    assert _text(env, "check_wifi_calling_status") == "Wi-Fi Calling is currently turned ON."


def test_records_print_as_tau2_prints_them(telecom: Domain, tasks: dict[str, Task]) -> None:
    env, _ = _env(telecom, tasks, EXCEEDED_ABROAD)
    customer = json.loads(_text(env, "get_customer_by_id", "assistant", customer_id="C1001"))
    assert customer["created_at"] == "2025-01-15 10:30:00"  # a timestamp through str(), not ISO "T"
    usage = json.loads(_text(env, "get_data_usage", "assistant", customer_id="C1001", line_id="L1002"))
    assert usage == {"line_id": "L1002", "data_used_gb": "15.1", "data_limit_gb": "15.0",
                     "data_refueling_gb": "0.0", "cycle_end_date": "2025-02-28"}
    refuel = json.loads(
        _text(env, "refuel_data", "assistant", customer_id="C1001", line_id="L1002", gb_amount=2)
    )
    assert refuel["message"] == "Successfully added 2 GB of data for line L1002 for $4.00"
    assert (refuel["new_data_refueling_gb"], refuel["charge"]) == ("2.0", "4.0")


def test_loose_and_strict_arguments_follow_upstreams_outcomes(
    telecom: Domain, tasks: dict[str, Task]
) -> None:
    env, _ = _env(telecom, tasks, EXCEEDED_ABROAD)
    assert _text(env, "get_customer_by_name", "assistant", full_name="John Smith", dob=123) == "[]"
    assert _text(env, "check_app_permissions", app_name=123) == "App '123' not found on this phone."
    assert not env.call("get_bills_for_customer", {"customer_id": "C1001", "limit": "2"}).ok
    assert not env.call("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": "2.0"}).ok


def test_a_degraded_vpn_stays_in_its_episode(telecom: Domain, tasks: dict[str, Task]) -> None:
    env, phone = _env(telecom, tasks, BAD_VPN)
    assert "'server_performance': <PerformanceLevel.POOR: 'poor'>" in _text(env, "check_vpn_status")
    _text(env, "disconnect_vpn")
    _text(env, "connect_vpn")
    assert phone.device.vpn_details is not None and phone.device.vpn_details.server_performance == "poor"
    other, other_phone = _env(telecom, tasks, LOCKED)  # a later episode in the same process
    _text(other, "connect_vpn")
    assert other_phone.device.vpn_details is not None
    assert other_phone.device.vpn_details.server_performance == "excellent"  # upstream: "poor" (bug 1)


def test_a_malformed_setting_breaks_the_phone_as_upstreams(telecom: Domain, tasks: dict[str, Task]) -> None:
    env, phone = _env(telecom, tasks, LOCKED)
    bad = env.call("set_network_mode_preference", {"mode": 123}, "user")
    assert not bad.ok and bad.content == "Error: 'int' object has no attribute 'value'"
    assert phone.device.__dict__["network_mode_preference"] == 123  # stored first, as upstream does (bug 3)
    assert not env.call("check_network_mode_preference", {}, "user").ok
    broken = env.call("set_apn_settings", {"apn_settings": "internet"}, "user")
    assert broken.content == "Error: 'str' object has no attribute 'apn_name'"
    assert (
        env.call("reseat_sim_card", {}, "user").content == "Error: 'str' object has no attribute 'apn_name'"
    )
