"""banking_knowledge's tools on the real pinned DB: rows written, refusals, and upstream's answer texts.

Issue 29 made the tools answer as upstream's (refusals are ``Error: …`` answers, not error
results; look-ups print rows as ``field: value`` lines), so these tests replace the card and
account tests of issue 16, which asserted our earlier refusal exceptions. The exhaustive check is
the recorded conformance suite (``tests/conformance``); here each family keeps a success path with
its numbers and its main refusals. Tests needing ``../shared/data/tau2`` skip without it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from uxlocal.tau2 import Domain, Environment, load_domain
from uxlocal.tau2.domains.banking_knowledge.db import TODAY_MDY, BankingDB
from uxlocal.tau2.domains.banking_knowledge.discoverable import DISCOVERABLE_AGENT, DISCOVERABLE_USER
from uxlocal.tau2.domains.banking_knowledge.records import query_text, rows_where


@pytest.fixture(scope="module")
def banking(data_dir: Path) -> Domain:
    return load_domain(data_dir, "banking_knowledge")


@pytest.fixture()
def env(banking: Domain) -> Environment:
    return Environment(banking)


def _db(env: Environment) -> BankingDB:
    assert isinstance(env.agent_db, BankingDB)
    return env.agent_db


def run(env: Environment, name: str, **arguments: Any) -> str:
    """Unlock and call a discoverable agent tool through the doors; the answer must not be an error result."""
    env.call("unlock_discoverable_agent_tool", {"agent_tool_name": name})
    result = env.call(
        "call_discoverable_agent_tool", {"agent_tool_name": name, "arguments": json.dumps(arguments)}
    )
    assert result.ok, result.content
    return result.content


def _row(env: Environment, table: str, key: str) -> dict[str, Any]:
    row = _db(env).table(table).get(key)
    assert row is not None, f"{table} has no row {key!r}"
    return row


def _sha(seed: str, digits: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:digits]


# --- registry and look-ups ------------------------------------------------------------------------


def test_registries_hold_upstreams_44_agent_and_4_user_discoverable_tools() -> None:
    assert len(DISCOVERABLE_AGENT.tools()) == 44 and len(DISCOVERABLE_USER.tools()) == 4
    kinds = {s.kind for s in DISCOVERABLE_AGENT.tools()}
    assert kinds == {"read", "write", "generic"}  # reads are never replayed; transfers change nothing


def test_lookup_prints_rows_as_field_lines_with_python_values(env: Environment) -> None:
    text = rows_where(_db(env), "users", "user_id", "123")
    assert text.startswith("Found 1 record(s) in 'users':\n\n1. Record ID: 123\n   name: Mia Smith\n")
    assert text.endswith("   date_of_birth: 03/15/1992\n")
    assert (
        query_text(_db(env), "referrals", '{"referrer_id": "nobody"}') == "No records found in 'referrals'."
    )


def test_lookup_value_with_a_quote_breaks_the_filter_as_upstream(env: Environment) -> None:
    answer = env.call("get_user_information_by_id", {"user_id": 'x"y'})
    assert answer.ok and answer.content.startswith("Error: Invalid JSON: Expecting ',' delimiter")


def test_listed_tool_with_a_missing_argument_is_pythons_error(env: Environment) -> None:
    answer = env.call("change_user_email", {"user_id": "123"})
    assert not answer.ok
    assert (
        answer.content
        == "Error: KnowledgeTools.change_user_email() missing 1 required positional argument: 'new_email'"
    )


def test_log_verification_writes_once_per_user_and_time(env: Environment) -> None:
    args = {
        "name": "Mia Smith",
        "user_id": "123",
        "address": "a",
        "email": "e",
        "phone_number": "p",
        "date_of_birth": "03/15/1992",
        "time_verified": "2025-11-14 03:40:00 EST",
    }
    first = env.call("log_verification", args)
    assert first.content == (
        "Verification logged successfully.\n  - User: Mia Smith (ID: 123)\n"
        "  - Verified at: 2025-11-14 03:40:00 EST"
    )
    assert (
        _row(env, "verification_history", "123_20251114_034000_EST")["time_verified"] == args["time_verified"]
    )
    again = env.call("log_verification", args)
    assert again.ok and again.content == "Failed to log verification: Record may already exist."


# --- credit cards ---------------------------------------------------------------------------------


def test_credit_limit_request_is_refused_the_second_time(env: Environment) -> None:
    request = {
        "credit_card_account_id": "cc_5e4c1a83b0_bronze",
        "user_id": "5e4c1a83b0",
        "requested_increase_amount": 2500,
    }
    first = run(env, "submit_credit_limit_increase_request_7392", **request)
    key = "cli_" + _sha("cli_request:cc_5e4c1a83b0_bronze:5e4c1a83b0:2500.00", 12)
    assert f"  - Request ID: {key}\n" in first and "  - Requested Increase: $2,500\n" in first
    assert _row(env, "credit_limit_increase_requests", key)["requested_increase_amount"] == 2500
    # task_051's gold asks twice; upstream refuses the repeat in words
    assert (
        run(env, "submit_credit_limit_increase_request_7392", **request)
        == "Error: A similar request may already exist."
    )


def test_approval_sets_the_limit_unless_a_dispute_is_open(env: Environment) -> None:
    card = {"credit_card_account_id": "cc_5e4c1a83b0_bronze", "user_id": "5e4c1a83b0"}
    _db(env).credit_card_accounts.edit("cc_5e4c1a83b0_bronze")["credit_limit"] = (
        "$4,000.00"  # as task_051 sets it
    )
    answer = run(env, "approve_credit_limit_increase_5847", **card, new_credit_limit=6500)
    assert "  - Previous Limit: $4000.00\n  - New Limit: $6500.00\n  - Increase: $2500.00\n" in answer
    assert _row(env, "credit_card_accounts", "cc_5e4c1a83b0_bronze")["credit_limit"] == "$6500.00"
    _db(env).transaction_disputes.add("d1", {"user_id": "5e4c1a83b0", "status": "UNDER_REVIEW"})
    blocked = run(env, "approve_credit_limit_increase_5847", **card, new_credit_limit=7000)
    assert blocked == "Error: Credit limit increase request cannot be approved at this time."


def test_credit_dispute_validates_codes_in_order_and_files_once(env: Environment) -> None:
    dispute = {
        "transaction_id": "txn_8d1aa1219382",
        "card_action": "keep_active",
        "card_last_4_digits": "1234",
        "full_name": "T",
        "user_id": "01f21c9970",
        "phone": "p",
        "email": "e",
        "address": "a",
        "contacted_merchant": True,
        "purchase_date": "10/02/2025",
        "issue_noticed_date": "10/05/2025",
        "dispute_reason": "duplicate_charge",
        "resolution_requested": "partial_refund",
        "eligible_for_provisional_credit": False,
    }
    bad = run(env, "file_credit_card_transaction_dispute_4829", **{**dispute, "card_action": "freeze"})
    assert bad == "Error: Invalid card_action. Must be one of: ['keep_active', 'cancel_and_reissue']"
    no_amount = run(env, "file_credit_card_transaction_dispute_4829", **dispute)
    assert no_amount.startswith("Error: partial_refund_amount is required")
    filed = run(env, "file_credit_card_transaction_dispute_4829", **dispute, partial_refund_amount=12.5)
    key = "dsp_" + _sha("dispute:01f21c9970:txn_8d1aa1219382", 12)
    assert f"Dispute ID: {key}\n" in filed and "Partial Refund Amount: $12.50\n" in filed
    assert _row(env, "transaction_disputes", key)["status"] == "SUBMITTED"
    again = run(env, "file_credit_card_transaction_dispute_4829", **dispute, partial_refund_amount=12.5)
    assert again == "Error: Dispute may have already been filed for this transaction."


def test_replacement_card_closes_the_old_card(env: Environment) -> None:
    answer = run(
        env,
        "order_replacement_credit_card_7291",
        credit_card_account_id="cc_lj82d4f1a9_silver",
        user_id="lj82d4f1a9",
        shipping_address="1 Main St",
        reason="lost",
        expedited_shipping=True,
    )
    assert "Shipping Method: Expedited\nExpected Delivery: 2-3 business days\n" in answer
    card = _row(env, "credit_card_accounts", "cc_lj82d4f1a9_silver")
    assert (card["status"], card["closed_date"]) == ("CLOSED", TODAY_MDY)


# --- bank accounts ----------------------------------------------------------------------------------


def test_savings_needs_a_checking_account_two_weeks_old(env: Environment) -> None:
    # user 123's checking account '01' opened 11/08/2025: six days before the frozen today
    refused = run(
        env, "open_bank_account_4821", user_id="123", account_type="savings", account_class="Gold Account"
    )
    assert refused == "Error: Account eligibility requirements not met."
    opened = run(
        env, "open_bank_account_4821", user_id="123", account_type="checking", account_class="Blue Account"
    )
    key = _sha("account:123:checking:Blue Account", 16)
    assert f"  - Account ID: {key}\n" in opened and _row(env, "accounts", key)["current_holdings"] == "0.00"


def test_transfer_moves_money_and_writes_dollar_text(env: Environment) -> None:
    answer = run(
        env,
        "transfer_funds_between_bank_accounts_7291",
        source_account_id="03",
        destination_account_id="04",
        amount=400,
    )
    assert answer == (
        "Transfer completed successfully!\n  - Amount: $400.00\n  - From: 03 (new balance: $3000.00)\n"
        "  - To: 04 (new balance: $1300.00)"
    )
    assert [_row(env, "accounts", k)["current_holdings"] for k in ("03", "04")] == ["$3000.00", "$1300.00"]
    short = run(
        env,
        "transfer_funds_between_bank_accounts_7291",
        source_account_id="03",
        destination_account_id="04",
        amount=5000,
    )
    assert short.startswith("Error: Insufficient funds. Source account balance is $3000.00")


def test_closing_an_account_with_money_in_it_is_refused(env: Environment) -> None:
    answer = run(env, "close_bank_account_7392", account_id="05")
    assert answer == "Error: Account balance must be $0.00 before closing. Current balance: $2850.00"
    assert _row(env, "accounts", "05")["status"] == "OPEN"


# --- debit cards ----------------------------------------------------------------------------------


def test_activation_names_the_right_variant_for_the_cards_issue_reason(env: Environment) -> None:
    args = {
        "card_id": "dbc_7a3f9c2b1e",
        "last_4_digits": "2847",
        "expiration_date": "11/29",
        "cvv": "123",
        "pin": "4829",
    }
    wrong = run(env, "activate_debit_card_8292", **args)
    assert wrong == (
        "Error: Wrong activation tool. This card has issue_reason='new_account'. Please use "
        "activate_debit_card_8291 instead of activate_debit_card_8292."
    )
    sequential = run(env, "activate_debit_card_8291", **{**args, "pin": "1234"})
    assert sequential == "Error: PIN cannot be sequential (e.g., 1234). Please choose a more secure PIN."
    done = run(env, "activate_debit_card_8291", **args)
    assert done.startswith("New Debit Card Activation Successful\nCard ID: dbc_7a3f9c2b1e\nStatus: ACTIVE\n")
    assert _row(env, "debit_cards", "dbc_7a3f9c2b1e")["status"] == "ACTIVE"


def test_freeze_then_unfreeze_round_trips_the_status(env: Environment) -> None:
    assert run(env, "freeze_debit_card_3892", card_id="dbc_lj82d4f1a9_bluest").startswith("Debit Card Frozen")
    assert run(env, "freeze_debit_card_3892", card_id="dbc_lj82d4f1a9_bluest") == (
        "Error: Debit card 'dbc_lj82d4f1a9_bluest' is already frozen."
    )
    assert run(env, "unfreeze_debit_card_3893", card_id="dbc_lj82d4f1a9_bluest").startswith(
        "Debit Card Unfrozen"
    )
    card = _row(env, "debit_cards", "dbc_lj82d4f1a9_bluest")
    assert (card["status"], card["frozen_date"], card["unfrozen_date"]) == ("ACTIVE", TODAY_MDY, TODAY_MDY)


def test_temporary_limit_is_capped_at_150_percent(env: Environment) -> None:
    card = _row(env, "debit_cards", "dbc_lj82d4f1a9_bluest")
    current = card.get("daily_atm_limit", 1500)  # the Bluest tier's default when the card sets none
    over = run(
        env,
        "request_temporary_debit_card_limit_increase_8374",
        card_id="dbc_lj82d4f1a9_bluest",
        limit_type="atm",
        new_limit=int(current * 1.5) + 1,
    )
    assert over.startswith(f"Error: Requested limit ${int(current * 1.5) + 1} exceeds the maximum")
    granted = run(
        env,
        "request_temporary_debit_card_limit_increase_8374",
        card_id="dbc_lj82d4f1a9_bluest",
        limit_type="atm",
        new_limit=int(current * 1.5),
    )
    assert f"Previous Limit: ${current}\nNew Temporary Limit: ${int(current * 1.5)}\n" in granted
    assert _row(env, "debit_cards", "dbc_lj82d4f1a9_bluest")["daily_atm_limit"] == int(current * 1.5)


# --- user tools ----------------------------------------------------------------------------------


def test_transaction_earns_points_at_the_cards_category_rate(env: Environment) -> None:
    answer = env.call(
        "submit_transaction",
        {
            "user_id": "123",
            "credit_card_type": "Silver Rewards Card",
            "merchant_name": "Air",
            "amount": 250.5,
            "category": "Travel",
        },
        "user",
    )
    key = "txn_" + _sha("transaction:123:Silver Rewards Card:Air:250.50:Travel", 12)
    assert answer.ok and answer.content.endswith("  - Rewards Earned: 1002 points (4.0% cashback rate)\n")
    assert _row(env, "credit_card_transaction_history", key)["rewards_earned"] == "1002 points"


def test_unknown_card_type_is_refused_with_the_list(env: Environment) -> None:
    answer = env.call(
        "apply_for_credit_card", {"card_type": "Gold Card", "customer_name": "M", "annual_income": 1}, "user"
    )
    assert answer.ok and answer.content.startswith(
        "Error: Invalid card_type 'Gold Card'. Must be one of: "
        "['Bronze Rewards Card', 'Business Bronze Rewards Card',"
    )


def test_user_call_door_checks_required_arguments_before_the_tool(env: Environment) -> None:
    answer = env.call(
        "call_discoverable_user_tool",
        {"discoverable_tool_name": "deposit_check_3847", "arguments": '{"account_id": "03"}'},
        "user",
    )
    assert answer.ok and answer.content == "Error: Missing required parameter: check_amount"


def test_check_deposit_after_the_agent_gives_the_tool(env: Environment) -> None:
    env.call("give_discoverable_user_tool", {"discoverable_tool_name": "deposit_check_3847"})
    answer = env.call(
        "call_discoverable_user_tool",
        {
            "discoverable_tool_name": "deposit_check_3847",
            "arguments": '{"account_id": "03", "check_amount": 100}',
        },
        "user",
    )
    assert answer.ok and answer.content.endswith("  - Previous Balance: $3400.00\n  - New Balance: $3500.00")
    assert _row(env, "accounts", "03")["current_holdings"] == "$3500.00"
    logged = list(_db(env).user_discoverable_tool_calls.values())
    assert [(r["tool_name"], r["arguments"]) for r in logged] == [
        ("deposit_check_3847", {"account_id": "03", "check_amount": 100})
    ]


# --- calls as upstream's environment answers them (issue 29) -----------------------------------------


def test_discoverable_tool_called_by_name_runs_unlocked_and_unlogged(env: Environment) -> None:
    answer = env.call("get_bank_account_transactions_9173", {"account_id": "nowhere"})
    assert answer.ok and answer.content == "Error: Account 'nowhere' not found."
    assert len(_db(env).agent_discoverable_tools) == 0  # only the call door logs a call
    missing = env.call("get_bank_account_transactions_9173", {})
    assert not missing.ok and missing.content == (
        "Error: KnowledgeTools.get_bank_account_transactions_9173() missing 1 required positional argument: "
        "'account_id'")


def test_numbers_reach_the_tools_as_sent(env: Environment) -> None:
    # pydantic would hand the float parameter 100000.0; upstream's id and row keep the int
    env.call("apply_for_credit_card", {"card_type": "Gold Rewards Card", "customer_name": "M",
                                       "annual_income": 100000}, "user")
    key = _sha("credit_card:Gold Rewards Card:M:100000:False", 16)
    assert type(_row(env, "credit_card_applications", key)["annual_income"]) is int


def test_replay_reruns_a_user_tool_the_task_does_not_offer(banking: Domain, data_dir: Path) -> None:
    from uxlocal.tau2 import Message, ToolCall, load_tasks

    task = next(t for t in load_tasks(data_dir, "banking_knowledge") if t.id == "task_001")
    assert task.user_tools == ["apply_for_credit_card"]
    call = ToolCall(id="1", name="submit_referral", arguments={"user_id": "123", "account_type": "x"},
                    requestor="user")
    fresh = Environment.for_task(banking, task)
    before = fresh.db_hash()
    fresh.replay([Message.calls("user", [call])])
    assert fresh.db_hash() != before and fresh.tool_kind("submit_referral", "user") == "write"
