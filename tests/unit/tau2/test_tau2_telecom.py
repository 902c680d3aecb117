"""tau2 telecom (issue 15): dual control, device rules, sync, and scripted replays on the 114 base tasks.

The replays are the spec's checks (tau2-telecom-banking.md §C), run on the real task file: gold
actions played by their requestor through the live tool path score 1.0 everywhere, an empty
trajectory scores 0 everywhere, an agent that only transfers passes exactly the 20 unfixable
tasks, and the same gold calls without the sync fail on 71 tasks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_tau2_episode import call, run_tau2, say  # same folder: pytest puts it on sys.path

from uxlocal.cli import cli
from uxlocal.tau2 import Domain, Environment, Task, load_domain, load_tasks
from uxlocal.tau2.domains.telecom.device import can_send_mms, internet_speed, mobile_data_works
from uxlocal.tau2.domains.telecom.phone_db import TelecomUserDB
from uxlocal.tau2.replay import replay_domain, scripted_trajectory, unsynced_gold_holds

TRANSFER_TASKS = {
    "[service_issue]break_apn_settings|lock_sim_card_pin[PERSONA:None]",
    "[service_issue]airplane_mode_on|lock_sim_card_pin[PERSONA:Easy]",
    "[service_issue]lock_sim_card_pin|overdue_bill_suspension[PERSONA:Easy]",
    "[service_issue]contract_end_suspension|unseat_sim_card[PERSONA:Hard]",
    "[service_issue]contract_end_suspension|lock_sim_card_pin[PERSONA:Hard]",
    "[service_issue]break_apn_settings|contract_end_suspension|lock_sim_card_pin[PERSONA:Hard]",
    "[service_issue]airplane_mode_on|lock_sim_card_pin|unseat_sim_card[PERSONA:Hard]",
    "[service_issue]airplane_mode_on|break_apn_settings|lock_sim_card_pin[PERSONA:None]",
    "[service_issue]airplane_mode_on|lock_sim_card_pin|overdue_bill_suspension[PERSONA:Easy]",
    "[service_issue]break_apn_settings|lock_sim_card_pin|overdue_bill_suspension[PERSONA:Easy]",
    "[service_issue]airplane_mode_on|break_apn_settings|contract_end_suspension|lock_sim_card_pin[PERSONA:None]",
    "[service_issue]airplane_mode_on|break_apn_settings|lock_sim_card_pin|unseat_sim_card[PERSONA:None]",
    "[service_issue]airplane_mode_on|lock_sim_card_pin|overdue_bill_suspension|unseat_sim_card[PERSONA:Easy]",
    "[service_issue]airplane_mode_on|break_apn_settings|contract_end_suspension|unseat_sim_card[PERSONA:Easy]",
    "[service_issue]break_apn_settings|lock_sim_card_pin|overdue_bill_suspension|unseat_sim_card[PERSONA:Easy]",
    "[service_issue]airplane_mode_on|contract_end_suspension|lock_sim_card_pin|unseat_sim_card[PERSONA:Hard]",
    "[service_issue]airplane_mode_on|break_apn_settings|lock_sim_card_pin|overdue_bill_suspension[PERSONA:Hard]",
    "[service_issue]break_apn_settings|contract_end_suspension|lock_sim_card_pin|unseat_sim_card[PERSONA:Hard]",
    "[service_issue]airplane_mode_on|break_apn_settings|lock_sim_card_pin|overdue_bill_suspension|unseat_sim_card"
    "[PERSONA:None]",
    "[service_issue]airplane_mode_on|break_apn_settings|contract_end_suspension|lock_sim_card_pin|unseat_sim_card"
    "[PERSONA:Easy]",
}
"""The unfixable tasks (locked SIM or ended contract): their assertion already holds at the start."""


@pytest.fixture(scope="module")
def telecom(data_dir: Path) -> Domain:
    return load_domain(data_dir, "telecom")


@pytest.fixture(scope="module")
def tasks(data_dir: Path) -> list[Task]:
    return load_tasks(data_dir, "telecom")


def _phone(env: Environment) -> TelecomUserDB:
    assert isinstance(env.user_db, TelecomUserDB)
    return env.user_db


# --- loading ----------------------------------------------------------------------------------


def test_telecom_loads_two_typed_dbs_and_both_hashes_change_on_writes(
    telecom: Domain, tasks: list[Task]
) -> None:
    env = Environment(telecom)
    assert [
        len(list(getattr(env.agent_db, t).keys()))
        for t in ("plans", "customers", "lines", "bills", "devices")
    ] == [5, 4, 9, 6, 9]
    assert len(telecom.spec.agent_tools.tools()) == 13 and len(telecom.spec.user_tools.tools()) == 30
    agent_hash, user_hash = env.db_hash(), env.user_db_hash()
    assert env.call("toggle_data", {}, "user").ok
    assert env.user_db_hash() != user_hash and env.db_hash() == agent_hash
    assert env.call("enable_roaming", {"customer_id": "C1001", "line_id": "L1001"}).ok
    assert env.db_hash() != agent_hash
    assert len(tasks) == 114
    policy = telecom.policy_text()
    assert policy.startswith("<main_policy>") and "<tech_support_policy>" in policy


def test_telecom_user_tools_are_offered_to_the_user_only(telecom: Domain) -> None:
    env = Environment(telecom)
    user_names = {s["function"]["name"] for s in env.tool_schemas("user")}
    agent_names = {s["function"]["name"] for s in env.tool_schemas("assistant")}
    assert "toggle_airplane_mode" in user_names and "toggle_airplane_mode" not in agent_names
    assert "refuel_data" in agent_names and not user_names & agent_names
    assert not {"turn_airplane_mode_on", "assert_service_status", "set_user_info"} & user_names
    result = env.call("toggle_airplane_mode", {}, "assistant")
    assert not result.ok and result.content == "Error: Tool 'toggle_airplane_mode' not found."  # tau2's words


# --- device rules (spec §A.2) -----------------------------------------------------------------


def _home_phone(telecom: Domain, tasks: list[Task]) -> Environment:
    """John Smith's phone at home with every setting fine, after a network search."""
    env = Environment(telecom)
    env.invoke("user", "set_user_info", {"name": "John Smith", "phone_number": "555-123-2002"})
    env.invoke("user", "simulate_network_search", {})
    return env


def test_speed_is_275_excellent_on_5g_with_an_excellent_signal(telecom: Domain, tasks: list[Task]) -> None:
    phone = _phone(_home_phone(telecom, tasks))
    assert phone.device.network_technology_connected == "5G"
    assert internet_speed(phone.device, phone.surroundings) == (275.0, "Excellent")


def test_speed_is_44_good_on_4g_with_a_good_signal(telecom: Domain, tasks: list[Task]) -> None:
    env = _home_phone(telecom, tasks)
    assert env.call("set_network_mode_preference", {"mode": "4g_only"}, "user").ok
    phone = _phone(env)
    speed, label = internet_speed(phone.device, phone.surroundings)
    assert (round(speed or 0, 6), label) == (44.0, "Good")


@pytest.mark.parametrize("setup, expected", [
    ({"data_saver": True}, (55.0, "Good")),  # 275 x 0.2
    ({"poor_vpn": True}, (27.5, "Good")),  # 275 x 0.1: not excellent, so bad_vpn tasks fail
    ({"data_saver": True, "poor_vpn": True}, (5.5, "Fair")),  # both factors multiply
    ({"mode": "2g_only"}, (0.05, "Very Poor")),  # 0.25 midpoint x poor 0.2
    ({"mode": "3g_only"}, (1.5, "Poor")),  # 3 midpoint x fair 0.5
])
def test_speed_factors_multiply_as_the_spec_states(
    telecom: Domain, tasks: list[Task], setup: dict[str, object], expected: tuple[float, str]
) -> None:
    env = _home_phone(telecom, tasks)
    if setup.get("data_saver"):
        env.invoke("user", "turn_data_saver_mode_on", {})
    if setup.get("poor_vpn"):
        env.invoke("user", "break_vpn", {})
    if "mode" in setup:
        env.call("set_network_mode_preference", {"mode": setup["mode"]}, "user")
    phone = _phone(env)
    speed, label = internet_speed(phone.device, phone.surroundings)
    assert (round(speed or 0, 6), label) == expected


def test_airplane_mode_on_drops_the_vpn_and_the_service(telecom: Domain, tasks: list[Task]) -> None:
    env = _home_phone(telecom, tasks)
    env.invoke("user", "break_vpn", {})
    assert env.call("toggle_airplane_mode", {}, "user").ok
    phone = _phone(env)
    assert not phone.device.vpn_connected and phone.device.network_connection_status == "no_service"
    refused = env.call("toggle_wifi", {}, "user")  # refused in the answer text, as upstream does (issue 29)
    assert refused.ok and refused.content.startswith(
        "Cannot change Wi-Fi settings while Airplane Mode is ON."
    )
    assert not phone.device.wifi_enabled
    assert env.call("toggle_airplane_mode", {}, "user").ok
    assert phone.device.network_connection_status == "connected" and not phone.device.vpn_connected


def test_apn_reset_takes_effect_only_after_a_reboot(telecom: Domain, tasks: list[Task]) -> None:
    env = _home_phone(telecom, tasks)
    env.invoke("user", "break_apn_settings", {})
    phone = _phone(env)
    assert phone.device.network_connection_status == "no_service"
    assert env.call("reset_apn_settings", {}, "user").ok
    assert phone.device.active_apn_settings.apn_name == "broken"
    assert phone.device.network_connection_status == "no_service"
    assert env.call("reboot_device", {}, "user").ok
    assert phone.device.active_apn_settings.apn_name == "internet"
    assert phone.device.network_connection_status == "connected"


def test_mms_needs_data_off_2g_an_mmsc_and_both_app_permissions(telecom: Domain, tasks: list[Task]) -> None:
    env = _home_phone(telecom, tasks)
    phone = _phone(env)
    assert can_send_mms(phone.device, phone.surroundings)
    env.invoke("user", "remove_app_permission", {"app_name": "messaging", "permission": "storage"})
    assert not can_send_mms(phone.device, phone.surroundings)
    # app names match exactly (upstream's phone has no 'Messaging'); the permission is lower-cased
    missing = env.call("grant_app_permission", {"app_name": "Messaging", "permission": "STORAGE"}, "user")
    assert missing.ok and missing.content.startswith("Error. App 'Messaging' not found.")
    assert not can_send_mms(phone.device, phone.surroundings)
    assert env.call("grant_app_permission", {"app_name": "messaging", "permission": "STORAGE"}, "user").ok
    env.call("set_network_mode_preference", {"mode": "2g_only"}, "user")
    assert mobile_data_works(phone.device, phone.surroundings) and not can_send_mms(
        phone.device, phone.surroundings
    )
    env.call("set_network_mode_preference", {"mode": "4g_5g_preferred"}, "user")
    env.invoke("user", "set_wifi_calling", {"enabled": True, "mms_over_wifi": True})
    assert not can_send_mms(phone.device, phone.surroundings)
    assert env.call("toggle_wifi_calling", {}, "user").ok and not phone.device.wifi_calling_enabled
    assert can_send_mms(phone.device, phone.surroundings)


def test_mobile_data_abroad_needs_roaming_on_the_phone_and_the_line(
    telecom: Domain, tasks: list[Task]
) -> None:
    env = _home_phone(telecom, tasks)
    phone = _phone(env)
    env.invoke("user", "set_user_location", {"abroad": True})
    env.invoke("assistant", "disable_roaming", {"customer_id": "C1001", "line_id": "L1002"})
    assert not phone.surroundings.roaming_allowed  # mirrored by the sync after the setup call
    assert env.call("toggle_roaming", {}, "user").ok and not mobile_data_works(
        phone.device, phone.surroundings
    )
    assert env.call("enable_roaming", {"customer_id": "C1001", "line_id": "L1002"}).ok
    assert mobile_data_works(phone.device, phone.surroundings)


# --- sync (spec §A.3) -------------------------------------------------------------------------


def test_sync_carries_the_payment_chain_both_ways(telecom: Domain, tasks: list[Task]) -> None:
    env = _home_phone(telecom, tasks)
    env.invoke(
        "assistant",
        "suspend_line_for_overdue_bill",
        {"customer_id": "C1001", "line_id": "L1002", "new_bill_id": "B1234321", "contract_ended": False},
    )
    phone = _phone(env)
    assert not phone.surroundings.line_active and phone.surroundings.payment_request is None
    nothing = env.call("make_payment", {}, "user")  # nothing to pay yet: a plain answer upstream (issue 29)
    assert nothing.ok and nothing.content == "You do not have a payment request."
    assert env.call("send_payment_request", {"customer_id": "C1001", "bill_id": "B1234321"}).ok
    request = phone.surroundings.payment_request
    assert request is not None and request.bill_id == "B1234321" and request.amount_due == 65.0
    again = env.call("send_payment_request", {"customer_id": "C1001", "bill_id": "B1002"})
    assert not again.ok and "awaiting payment" in (again.error or "")
    assert env.call("make_payment", {}, "user").ok
    bill = env.agent_db.bills.get("B1234321")  # type: ignore[attr-defined]
    assert bill.status == "Paid" and phone.surroundings.payment_request is None
    assert env.call("resume_line", {"customer_id": "C1001", "line_id": "L1002"}).ok
    assert phone.surroundings.line_active


def test_refuel_clears_usage_exceeded_and_charges_the_draft_bill(telecom: Domain, tasks: list[Task]) -> None:
    env = _home_phone(telecom, tasks)
    env.invoke(
        "assistant", "set_data_usage", {"customer_id": "C1001", "line_id": "L1002", "data_used_gb": 15.1}
    )
    phone = _phone(env)
    assert phone.surroundings.mobile_data_usage_exceeded
    assert env.call("refuel_data", {"customer_id": "C1001", "line_id": "L1002", "gb_amount": 2.0}).ok
    assert not phone.surroundings.mobile_data_usage_exceeded
    draft = env.agent_db.bills.get("B1003")  # type: ignore[attr-defined]
    assert draft.total_due == 4.0 and draft.line_items[-1].amount == 4.0


def test_refuel_without_a_draft_bill_creates_the_same_bill_id_every_time(telecom: Domain) -> None:
    ids = []
    for _ in range(2):
        env = Environment(telecom)
        assert env.call("refuel_data", {"customer_id": "C1002", "line_id": "L1004", "gb_amount": 1.0}).ok
        customer = env.agent_db.customers.get("C1002")  # type: ignore[attr-defined]
        ids.append(customer.bill_ids[-1])
        assert json.loads(env.call("get_details_by_id", {"id": ids[-1]}).content)["status"] == "Draft"
    assert ids == ["B9001", "B9001"]  # counter-drawn, clear of the file's ids; upstream draws a uuid (bug 5)


# --- scripted replays on the 114 base tasks (spec §C) -----------------------------------------


def test_gold_replay_scores_one_on_all_114_tasks(data_dir: Path, telecom: Domain, tasks: list[Task]) -> None:
    summary = replay_domain(data_dir, "telecom", "gold", tasks=tasks)
    assert summary.lines()[0] == "telecom gold: 114 / 114"
    assert len(summary.passed) == 114 and not summary.unscored
    user_calls = 0
    for task in tasks:  # each action ran on its requestor's side
        messages = scripted_trajectory(Environment.for_task(telecom, task), task, "gold")
        results = [m for m in messages if m.role == "tool"]
        assert all(not m.error for m in results), task.id
        user_calls += sum(1 for m in results if m.requestor == "user")
    assert user_calls == 393  # the spec's user-side gold action counts summed


def test_empty_trajectory_scores_zero_on_all_114_tasks(data_dir: Path, tasks: list[Task]) -> None:
    summary = replay_domain(data_dir, "telecom", "empty", tasks=tasks)
    assert summary.passed == [] and len(summary.outcomes) == 114
    failing = {o.task_id: o.failing for o in summary.outcomes}
    assert all(failing[t] == ("ACTION",) for t in TRANSFER_TASKS)  # the device is already "no_service"
    assert all(f == ("ENV_ASSERTION",) for t, f in failing.items() if t not in TRANSFER_TASKS)


def test_transfer_only_agent_passes_exactly_the_20_transfer_tasks(data_dir: Path, tasks: list[Task]) -> None:
    summary = replay_domain(data_dir, "telecom", "transfer-only", tasks=tasks)
    assert set(summary.passed) == TRANSFER_TASKS and len(summary.passed) == 20
    assert summary.lines()[0] == "telecom transfer-only: 20 / 114"


def test_gold_replay_without_the_sync_fails_71_tasks(telecom: Domain, tasks: list[Task]) -> None:
    failed = [t.id for t in tasks if not unsynced_gold_holds(telecom, t)]
    assert len(failed) == 71  # the spec measured 71/114 upstream
    assert all("data_usage_exceeded" in t or "roaming_disabled" in t or "overdue_bill" in t for t in failed)


def test_cli_replay_prints_passed_over_total(data_dir: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["tau2", "replay", "--domain", "telecom", "--agent", "transfer-only", "--tau2-data", str(data_dir)],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "telecom transfer-only: 20 / 114" and len(lines) == 95
    assert lines[1].endswith("(ENV_ASSERTION)")


def test_cli_replay_rejects_a_domain_without_tools_with_exit_2(data_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["tau2", "replay", "--domain", "nope", "--tau2-data", str(data_dir)])
    assert result.exit_code == 2 and "no tau2 environment for domain 'nope'" in result.output


# --- the episode: user tool calls and their errors --------------------------------------------


def test_invalid_user_tool_calls_are_error_results_counted_toward_max_errors(
    tmp_path: Path, data_dir: Path, tasks: list[Task]
) -> None:
    run = run_tau2(
        tmp_path,
        data_dir,
        domain="telecom",
        tasks=tasks[0].id,
        max_errors=3,
        user=[
            call("check_status_bar"),
            call("fly_to_the_moon"),
            call("set_network_mode_preference", mode="6g"),
            call("set_apn_settings", apn_settings={"apn_name": "6g"}),
            call("toggle_data", on=True),
        ],
        agent=[],
    )
    rows = run.rows("SELECT requestor, name, ok, error, result FROM tool_calls ORDER BY turn_idx")
    assert [r[:3] for r in rows] == [("user", "check_status_bar", True), ("user", "fly_to_the_moon", False),
                                     ("user", "set_network_mode_preference", True),
                                     ("user", "set_apn_settings", False), ("user", "toggle_data", False)]
    # an unknown mode is refused in the answer, not as an error (upstream's phone);
    # an unknown APN name is an error
    assert "Tool 'fly_to_the_moon' not found." in rows[1][3] and "'6g' is not a valid option" in rows[2][4]
    assert "Input should be 'internet' or 'broken'" in rows[3][3]
    episode = run.episode()
    assert episode["termination"] == "too_many_errors" and episode["info"]["errors"] == 3
    assert episode["reward"] == 0.0
    assert run.engines["agent"].requests == []  # the agent never saw the user's tool traffic


def test_user_device_actions_reach_the_reward_through_the_episode(
    tmp_path: Path, data_dir: Path, tasks: list[Task]
) -> None:
    task = next(t for t in tasks if t.id == "[mobile_data_issue]airplane_mode_on|data_mode_off[PERSONA:None]")
    run = run_tau2(
        tmp_path, data_dir, domain="telecom", tasks=task.id,
        user=[say("My data does not work."), call("toggle_airplane_mode"), call("toggle_data"),
              call("run_speed_test"), say("Excellent now. ###STOP###")],
        agent=[say("Please turn airplane mode off and mobile data on, then run a speed test.")],
    )
    episode = run.episode()
    assert episode["termination"] == "user_stop" and episode["reward"] == 1.0
    rows = run.rows("SELECT requestor, name, ok, result FROM tool_calls ORDER BY turn_idx")
    assert [r[:3] for r in rows] == [("user", "toggle_airplane_mode", True), ("user", "toggle_data", True),
                                     ("user", "run_speed_test", True)]
    assert "275.00 Mbps (Excellent)" in rows[2][3]
    summary = run.rows("SELECT mean_tool_calls, mean_user_tool_calls FROM tau2_summary")
    assert summary == [(3.0, 3.0)]
    for prepared in run.engines["agent"].requests:
        assert not any("Mbps" in m["content"] for m in prepared.request.messages[1:])


# --- the judge-free telecom probe (spec userproxybench.md "Judge-free Telecom probe") ----------


def test_probe_scores_the_94_tasks_with_gold_user_writes_and_flags_only_missed_ones(
    telecom: Domain, tasks: list[Task]
) -> None:
    from uxlocal.suites.userproxy.ufs.episodes import user_write_tools
    from uxlocal.suites.userproxy.ufs.prechecks import gold_user_actions

    writes = user_write_tools("telecom")
    assert writes is not None and len(writes) == 15
    gold = [
        gold_user_actions(
            t, scripted_trajectory(Environment.for_task(telecom, t), t, "gold"), write_tools=writes
        )
        for t in tasks
    ]
    empty = [gold_user_actions(t, [], write_tools=writes) for t in tasks]
    assert sum(r.applicable for r in gold) == 94 and not any(r.flagged for r in gold)
    assert sum(r.flagged for r in empty) == 94  # a user who never acts misses every gold write
    assert sum(len(r.details["missed"]) for r in empty if r.flagged) == 393
