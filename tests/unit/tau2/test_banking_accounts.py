"""banking_knowledge bank-account and debit-card tools (issue 16) on the pinned db.json.

Per tool: a success path and its main refusals, asserting the rows written (fields, id seeds,
money strings) rather than the wording. Then the gold check: every task whose gold actions call
these tools, replayed call by call on a fresh DB with the task's patch, succeeds (except a call
that needs another group's tool first) and lands on the same DB hash twice.
Needs ../shared/data/tau2 (or UXLOCAL_TAU2_DATA); skips with a reason without it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from uxlocal.tau2.domains.banking_knowledge import accounts
from uxlocal.tau2.domains.banking_knowledge.discoverable import DISCOVERABLE_AGENT
from uxlocal.tau2.domains.banking_knowledge.db import BankingDB, BankingGrading, BankingSnapshot, parse_money, seed_of, seeded_id
from uxlocal.tau2.toolkit import ToolError

MINE = [s.name for s in DISCOVERABLE_AGENT.tools() if s.func.__module__ == accounts.__name__]


@pytest.fixture(scope="module")
def banking_dir(data_dir: Path) -> Path:
    return data_dir / "domains" / "banking_knowledge"


@pytest.fixture(scope="module")
def snapshot(banking_dir: Path) -> BankingSnapshot:
    return BankingDB.load(banking_dir / "db.json")


@pytest.fixture
def db(snapshot: BankingSnapshot) -> BankingDB:
    return BankingDB(snapshot)


@pytest.fixture
def later_db(snapshot: BankingSnapshot) -> BankingDB:
    fresh = BankingDB(snapshot)
    fresh.grading = BankingGrading("1.0.1")
    return fresh


def call(db: BankingDB, name: str, **arguments: Any) -> Any:
    """Run one of our tools the way the environment does (arguments validated by its model)."""
    spec = DISCOVERABLE_AGENT.spec(name)
    assert spec is not None, name
    return spec.run(db, arguments)


def refused(db: BankingDB, name: str, match: str, **arguments: Any) -> None:
    """The call is refused with a message matching ``match`` and the DB is unchanged."""
    before = db.hash()
    with pytest.raises(ToolError, match=match):
        call(db, name, **arguments)
    assert db.hash() == before


def test_accounts_registers_twenty_described_tools() -> None:
    assert sorted(MINE) == sorted([
        "open_bank_account_4821", "close_bank_account_7392", "get_all_user_accounts_by_user_id_3847",
        "transfer_funds_between_bank_accounts_7291", "apply_checking_account_credit_5829",
        "apply_savings_account_credit_6831", "submit_interest_discrepancy_report_7294",
        "get_bank_account_transactions_9173", "order_debit_card_5739", "activate_debit_card_8291",
        "activate_debit_card_8292", "activate_debit_card_8293", "close_debit_card_4721",
        "freeze_debit_card_3892", "unfreeze_debit_card_3893", "clear_debit_card_fraud_alert_4892",
        "reset_debit_card_pin_6284", "change_debit_card_pin_6285", "get_debit_cards_by_account_id_7823",
        "request_temporary_debit_card_limit_increase_8374",
    ])
    reads = {s.name for s in DISCOVERABLE_AGENT.tools() if s.name in MINE and s.kind == "read"}
    assert reads == {"get_all_user_accounts_by_user_id_3847", "get_bank_account_transactions_9173",
                     "get_debit_cards_by_account_id_7823"}
    for name in MINE:
        schema = DISCOVERABLE_AGENT.spec(name).openai_schema()  # type: ignore[union-attr]
        assert len(schema["function"]["description"]) > 40
        assert all(p.get("description") for p in schema["function"]["parameters"]["properties"].values())


def test_parse_money_reads_every_stored_balance_form() -> None:
    assert parse_money("$2,850.50") == 2850.5
    assert parse_money("129.02") == 129.02
    assert parse_money(3400) == 3400.0
    assert parse_money(None) == 0.0
    with pytest.raises(ToolError):
        parse_money("n/a")


# --- bank accounts --------------------------------------------------------------------------


def test_open_bank_account_writes_seeded_zero_balance_row_when_eligible(db: BankingDB) -> None:
    out = call(db, "open_bank_account_4821", user_id="125", account_type="savings",
               account_class="Gold Account")
    account_id = seeded_id(seed_of("account", "125", "savings", "Gold Account"))
    assert out["account"]["account_id"] == account_id
    assert db.accounts.get(account_id) == {
        "account_id": account_id, "user_id": "125", "account_type": "savings",
        "account_class": "Gold Account",
        "current_holdings": "0.00", "status": "OPEN", "date_opened": "11/14/2025"}
    refused(db, "open_bank_account_4821", "already exists",
            user_id="125", account_type="savings", account_class="Gold Account")


def test_open_bank_account_refuses_when_eligibility_or_type_fails(db: BankingDB) -> None:
    # user 123's checking is 6 days old: savings needs 14
    refused(db, "open_bank_account_4821", "eligibility", user_id="123", account_type="savings",
            account_class="Bronze Account")
    # no business checking yet, so no business savings
    refused(db, "open_bank_account_4821", "eligibility", user_id="125", account_type="business_savings",
            account_class="Gold Saver Account")
    refused(db, "open_bank_account_4821", "account_type", user_id="125", account_type="cd",
            account_class="x")
    db.accounts.edit("04")["status"] = "CLOSED"  # a closed account bars business checking
    refused(db, "open_bank_account_4821", "eligibility", user_id="125", account_type="business_checking",
            account_class="Sky Blue")


def test_close_bank_account_marks_closed_when_balance_zero_or_exactly_the_fee(db: BankingDB) -> None:
    db.accounts.edit("05")["current_holdings"] = "0.00"  # Green, opened 2022: outside the window
    call(db, "close_bank_account_7392", account_id="05", reason="Moving banks")
    row = db.accounts.get("05")
    assert row is not None
    assert (row["status"], row["date_closed"], row["closure_reason"], row["early_closure_fee_waived"]) == (
        "CLOSED", "11/14/2025", "Moving banks", False)
    # Blue Account opened 11/08/2025: inside its 60-day window, the $25 fee must be on the account
    db.accounts.edit("01")["current_holdings"] = "$25.00"
    call(db, "close_bank_account_7392", account_id="01")
    assert db.accounts.get("01")["current_holdings"] == "$25.00"  # type: ignore[index]  # checked, not taken
    refused(db, "close_bank_account_7392", "already closed", account_id="01")


def test_close_bank_account_refuses_balance_or_unpaid_fee(db: BankingDB) -> None:
    refused(db, "close_bank_account_7392", r"\$0\.00 before closing.*\$3400\.00", account_id="03")
    refused(db, "close_bank_account_7392", "unable to be closed", account_id="01")  # $0 < $25 fee
    refused(db, "close_bank_account_7392", "not found", account_id="nope")
    call(db, "close_bank_account_7392", account_id="01", waive_early_closure_fee=True)
    assert db.accounts.get("01")["early_closure_fee_waived"] is True  # type: ignore[index]


def test_get_all_user_accounts_lists_bank_and_card_accounts(db: BankingDB) -> None:
    out = call(db, "get_all_user_accounts_by_user_id_3847", user_id="kj93a7b2e1")
    assert [a["account_id"] for a in out["bank_accounts"]] == [
        k for k, _ in db.accounts.find(user_id="kj93a7b2e1")]
    assert len(out["bank_accounts"]) >= 3
    assert len(out["credit_card_accounts"]) == len(db.credit_card_accounts.find(user_id="kj93a7b2e1"))
    assert call(db, "get_all_user_accounts_by_user_id_3847", user_id="nobody")["bank_accounts"] == []


def test_transfer_moves_money_and_writes_dollar_strings(db: BankingDB) -> None:
    out = call(db, "transfer_funds_between_bank_accounts_7291",
               source_account_id="03", destination_account_id="04", amount=100)
    assert out["source"]["new_balance"] == "$3300.00"
    assert db.accounts.get("03")["current_holdings"] == "$3300.00"  # type: ignore[index]
    assert db.accounts.get("04")["current_holdings"] == "$1000.00"  # type: ignore[index]


@pytest.mark.parametrize(
    ("arguments", "match"),
    [
        ({"source_account_id": "03", "destination_account_id": "04", "amount": 5000}, "Insufficient funds"),
        ({"source_account_id": "03", "destination_account_id": "03", "amount": 5}, "cannot be the same"),
        ({"source_account_id": "03", "destination_account_id": "04", "amount": 0}, "positive"),
        ({"source_account_id": "03", "destination_account_id": "zz", "amount": 5}, "Destination.*not found"),
    ],
    ids=["more than the balance", "same account", "zero amount", "unknown destination"],
)
def test_transfer_refuses(db: BankingDB, arguments: dict[str, Any], match: str) -> None:
    refused(db, "transfer_funds_between_bank_accounts_7291", match, **arguments)


def test_transfer_refuses_closed_source(db: BankingDB) -> None:
    db.accounts.edit("03")["status"] = "CLOSED"
    refused(db, "transfer_funds_between_bank_accounts_7291", "Source.*not active",
            source_account_id="03", destination_account_id="04", amount=5)


# --- credits and interest -------------------------------------------------------------------


def test_checking_credit_posts_transaction_with_the_amount_as_sent(db: BankingDB) -> None:
    out = call(db, "apply_checking_account_credit_5829", account_id="03", amount=14.0,
               credit_type="fee_refund")
    txn_id = "txn_" + seeded_id("checking_credit:03:fee_refund:14.0:11/14/2025")
    assert out["transaction_id"] == txn_id
    assert db.accounts.get("03")["current_holdings"] == "$3414.00"  # type: ignore[index]
    assert db.bank_account_transaction_history.get(txn_id) == {
        "transaction_id": txn_id, "account_id": "03", "date": "11/14/2025",
        "description": "FEE REFUND - CUSTOMER SERVICE", "amount": 14.0, "type": "fee_refund",
        "status": "posted"}
    # 8ebb749 keeps an int an int: another id, another row
    as_int = call(db, "apply_checking_account_credit_5829", account_id="03", amount=14,
                  credit_type="fee_refund")
    assert as_int["transaction_id"] != txn_id
    assert db.bank_account_transaction_history.get(as_int["transaction_id"])["amount"] == 14  # type: ignore[index]


def test_checking_credit_turns_amount_into_float_at_later_grading(later_db: BankingDB) -> None:
    out = call(later_db, "apply_checking_account_credit_5829", account_id="03", amount=14,
               credit_type="fee_refund")
    assert out["transaction_id"] == "txn_" + seeded_id("checking_credit:03:fee_refund:14.0:11/14/2025")


def test_checking_credit_refuses_savings_account_type_or_amount(db: BankingDB) -> None:
    refused(db, "apply_checking_account_credit_5829", "not a checking", account_id="04", amount=5,
            credit_type="fee_refund")
    refused(db, "apply_checking_account_credit_5829", "credit_type", account_id="03", amount=5,
            credit_type="goodwill_credit")
    refused(db, "apply_checking_account_credit_5829", "positive", account_id="03", amount=-5,
            credit_type="fee_refund")


def test_savings_credit_writes_balance_without_dollar_sign(db: BankingDB) -> None:
    out = call(db, "apply_savings_account_credit_6831", account_id="04", amount=33.0,
               credit_type="interest_correction")
    assert db.accounts.get("04")["current_holdings"] == "933.00"  # type: ignore[index]
    row = db.bank_account_transaction_history.get(out["transaction_id"])
    assert row is not None and row["description"] == "INTEREST CORRECTION - CUSTOMER SERVICE"
    seed = "savings_credit:04:interest_correction:33.0:11/14/2025"
    assert out["transaction_id"] == "txn_" + seeded_id(seed)
    refused(db, "apply_savings_account_credit_6831", "not a savings", account_id="03", amount=5,
            credit_type="fee_refund")


def test_interest_report_changes_no_table(db: BankingDB) -> None:
    before = db.hash()
    out = call(db, "submit_interest_discrepancy_report_7294", account_id="04", user_id="125",
               expected_apy=4.275, actual_apy=4, amount_difference=33)
    assert out["report_id"] == "IDR_" + seeded_id("interest_report:04:125:4.275:4.0:11/14/2025")
    assert out["apy_difference"] == 0.275 and out["status"] == "PENDING_REVIEW"
    assert db.hash() == before
    refused(db, "submit_interest_discrepancy_report_7294", "User", account_id="04", user_id="nobody",
            expected_apy=4.0, actual_apy=3.0, amount_difference=1.0)


def test_transactions_keep_stored_order_at_pin_and_newest_first_later(
    db: BankingDB, later_db: BankingDB
) -> None:
    for fresh in (db, later_db):  # an old transaction added last
        fresh.bank_account_transaction_history.add("btxn_old", {
            "transaction_id": "btxn_old", "account_id": "chk_lj82d4f1a9", "date": "10/01/2025",
            "description": "OLD", "amount": -1.0, "type": "bill_pay", "status": "posted"})
    stored = [k for k, _ in db.bank_account_transaction_history.find(account_id="chk_lj82d4f1a9")]
    pinned = call(db, "get_bank_account_transactions_9173", account_id="chk_lj82d4f1a9")["transactions"]
    assert [t["transaction_id"] for t in pinned] == stored
    later = call(later_db, "get_bank_account_transactions_9173", account_id="chk_lj82d4f1a9")["transactions"]
    assert len(later) == len(stored) == 33
    assert later[0]["date"] == "11/20/2025" and later[-1]["transaction_id"] == "btxn_old"
    same_day = [t["transaction_id"] for t in later if t["date"] == "11/18/2025"]
    rows = dict(db.bank_account_transaction_history.items())
    assert len(same_day) == 3 and same_day == [k for k in stored if rows[k]["date"] == "11/18/2025"]
    refused(db, "get_bank_account_transactions_9173", "not found", account_id="nope")


# --- debit cards ----------------------------------------------------------------------------


def test_order_debit_card_creates_order_card_and_fee_like_upstream(db: BankingDB) -> None:
    refused(db, "order_debit_card_5739", "already has an active debit card", **_order("chk_lj82d4f1a9"))
    call(db, "close_debit_card_4721", card_id="dbc_lj82d4f1a9_bluest", reason="Lost")
    out = call(db, "order_debit_card_5739", **_order("chk_lj82d4f1a9", delivery_fee=15, design_fee=5))
    order_id = "dcord_" + seeded_id("debit_card_order:chk_lj82d4f1a9:lj82d4f1a9:EXPEDITED", 12)
    card_id = "dbc_" + seeded_id("debit_card:chk_lj82d4f1a9:lj82d4f1a9:11/14/2025", 12)
    assert (out["order_id"], out["card_id"]) == (order_id, card_id)
    card = db.debit_cards.get(card_id)
    assert card is not None
    assert (card["status"], card["issue_reason"], card["cardholder_name"], card["expiration_date"]) == (
        "PENDING", "lost", "LIANG JINHAI", "11/30/2029")
    assert card["last_4_digits"].isdigit() and len(card["last_4_digits"]) == 4 and len(card["cvv"]) == 3
    order = db.debit_card_orders.get(order_id)
    assert order is not None and (order["delivery_fee"], order["total_fee"], order["card_design"]) == (
        15.0, 20.0, "PREMIUM")
    assert db.accounts.get("chk_lj82d4f1a9")["current_holdings"] == "127430.00"  # type: ignore[index]
    fee = db.bank_account_transaction_history.get(f"btxn_dcfee_{order_id[-8:]}")
    assert fee is not None and (fee["amount"], fee["description"]) == (
        -20.0, "DEBIT CARD ORDER FEE - Delivery $15.0, Design $5.0")
    refused(db, "order_debit_card_5739", "pending debit card order", **_order("chk_lj82d4f1a9"))


@pytest.mark.parametrize(
    ("closure", "issue_reason"),
    [("fraud_suspected", "fraud"), ("stolen", "stolen"), ("damaged", "first_card")],
    ids=["fraud becomes fraud", "stolen stays stolen", "other reasons give a first card"],
)
def test_order_debit_card_issue_reason_follows_the_closed_card(
    db: BankingDB, closure: str, issue_reason: str
) -> None:
    call(db, "close_debit_card_4721", card_id="dbc_538bfb9cba", reason=closure)
    out = call(db, "order_debit_card_5739", **_order("chk_538bfb9cba", delivery_option="STANDARD"))
    assert db.debit_cards.get(out["card_id"])["issue_reason"] == issue_reason  # type: ignore[index]
    assert out["new_balance"] == "$1847.50"  # no fee: the balance is untouched
    assert db.accounts.get("chk_538bfb9cba")["current_holdings"] == "1847.50"  # type: ignore[index]


def test_order_debit_card_issue_reason_is_new_account_without_earlier_cards(db: BankingDB) -> None:
    db.accounts.edit("01")["current_holdings"] = "100"
    out = call(db, "order_debit_card_5739", **_order("01"))
    assert db.debit_cards.get(out["card_id"])["issue_reason"] == "new_account"  # type: ignore[index]
    out = call(db, "order_debit_card_5739", **_order("03"))  # 03 has a PENDING card already
    assert db.debit_cards.get(out["card_id"])["issue_reason"] == "first_card"  # type: ignore[index]


def _order(account_id: str, **override: Any) -> dict[str, Any]:
    user = {"01": "123", "03": "125", "04": "125"}.get(account_id, "lj82d4f1a9")
    base = {"account_id": account_id, "user_id": user, "delivery_option": "expedited", "delivery_fee": 0,
            "card_design": "premium", "design_fee": 0, "shipping_address": "1 Main St"}
    return base | override


def test_order_debit_card_refuses_savings_wrong_owner_and_dollar_balance(db: BankingDB) -> None:
    refused(db, "order_debit_card_5739", "only be ordered for checking", **_order("04"))
    refused(db, "order_debit_card_5739", "does not belong", **(_order("03") | {"user_id": "123"}))
    refused(db, "order_debit_card_5739", "delivery_option", **_order("03", delivery_option="drone"))
    # upstream reads "$…" balances as $0 here, so the $25 minimum fails
    db.accounts.edit("03")["current_holdings"] = "$3400.00"
    refused(db, "order_debit_card_5739", "minimum balance", **_order("03"))


def _activation(card_id: str, last4: str, pin: str = "2580") -> dict[str, str]:
    return {"card_id": card_id, "last_4_digits": last4, "expiration_date": "01/30", "cvv": "123", "pin": pin}


def test_activate_new_card_only_with_its_variant_digits_and_pin(db: BankingDB) -> None:
    args = _activation("dbc_7a3f9c2b1e", "2847")
    refused(db, "activate_debit_card_8292", "activate_debit_card_8291", **args)
    refused(db, "activate_debit_card_8291", "last 4 digits do not match",
            **_activation("dbc_7a3f9c2b1e", "1111"))
    refused(db, "activate_debit_card_8291", "sequential", **_activation("dbc_7a3f9c2b1e", "2847", "1234"))
    refused(db, "activate_debit_card_8291", "same digit", **_activation("dbc_7a3f9c2b1e", "2847", "7777"))
    out = call(db, "activate_debit_card_8291", **args)
    card = db.debit_cards.get("dbc_7a3f9c2b1e")
    assert card is not None and (card["status"], card["activated_date"]) == ("ACTIVE", "11/14/2025")
    assert out["previous_cards"] == {}
    refused(db, "activate_debit_card_8291", "already active", **args)


def test_activate_replacement_deactivates_other_active_cards(db: BankingDB) -> None:
    db.debit_cards.add("dbc_old", {"card_id": "dbc_old", "account_id": "05", "status": "ACTIVE"})
    out = call(db, "activate_debit_card_8292", **_activation("dbc_4e8d2a6f9c", "8765"))
    assert out["previous_cards"] == {"dbc_old": "DEACTIVATED"}
    assert db.debit_cards.get("dbc_old") == {
        "card_id": "dbc_old", "account_id": "05", "status": "DEACTIVATED", "deactivated_date": "11/14/2025",
        "deactivation_reason": "Replacement card activated (stolen)"}


def test_activate_reissue_gives_old_card_grace_period_and_needs_open_account(db: BankingDB) -> None:
    db.debit_cards.add("dbc_old", {"card_id": "dbc_old", "account_id": "06", "status": "ACTIVE"})
    db.accounts.edit("06")["status"] = "CLOSED"
    refused(db, "activate_debit_card_8293", "no longer open", **_activation("dbc_9b1c5d7e3a", "5291"))
    db.accounts.edit("06")["status"] = "OPEN"
    call(db, "activate_debit_card_8293", **_activation("dbc_9b1c5d7e3a", "5291"))
    old = db.debit_cards.get("dbc_old")
    assert old is not None and (old["status"], old["grace_period_ends"]) == ("GRACE_PERIOD", "11/14/2025")


def test_close_debit_card_lowercases_reason_and_refuses_closed(db: BankingDB) -> None:
    refused(db, "close_debit_card_4721", "Invalid reason", card_id="dbc_538bfb9cba", reason="bored")
    call(db, "close_debit_card_4721", card_id="dbc_538bfb9cba", reason="Fraud_Suspected")
    card = db.debit_cards.get("dbc_538bfb9cba")
    assert card is not None and (card["status"], card["closure_reason"], card["closed_date"]) == (
        "CLOSED", "fraud_suspected", "11/14/2025")
    refused(db, "close_debit_card_4721", "cannot be closed", card_id="dbc_538bfb9cba", reason="lost")


def test_freeze_then_unfreeze_round_trips_status(db: BankingDB) -> None:
    call(db, "freeze_debit_card_3892", card_id="dbc_538bfb9cba")
    assert db.debit_cards.get("dbc_538bfb9cba")["status"] == "FROZEN"  # type: ignore[index]
    refused(db, "freeze_debit_card_3892", "already frozen", card_id="dbc_538bfb9cba")
    refused(db, "change_debit_card_pin_6285", "Card status is FROZEN", card_id="dbc_538bfb9cba",
            current_pin="2580", new_pin="3691")
    call(db, "unfreeze_debit_card_3893", card_id="dbc_538bfb9cba")
    card = db.debit_cards.get("dbc_538bfb9cba")
    assert card is not None and (card["status"], card["frozen_date"], card["unfrozen_date"]) == (
        "ACTIVE", "11/14/2025", "11/14/2025")
    refused(db, "unfreeze_debit_card_3893", "already active", card_id="dbc_538bfb9cba")
    refused(db, "freeze_debit_card_3892", "not found", card_id="dbc_nope")


def test_clear_fraud_alert_and_velocity_block(db: BankingDB) -> None:
    refused(db, "clear_debit_card_fraud_alert_4892", "velocity block", card_id="dbc_538bfb9cba",
            reason="velocity_clear")
    db.debit_cards.edit("dbc_538bfb9cba").update(velocity_blocked=True, fraud_alert_active=True,
                                                 alert_source="bank_initiated")
    call(db, "clear_debit_card_fraud_alert_4892", card_id="dbc_538bfb9cba", reason="velocity_clear")
    assert db.debit_cards.get("dbc_538bfb9cba")["velocity_blocked"] is False  # type: ignore[index]
    refused(db, "clear_debit_card_fraud_alert_4892", "BANK_INITIATED", card_id="dbc_538bfb9cba",
            reason="customer_verified")
    db.debit_cards.edit("dbc_538bfb9cba")["alert_source"] = "customer_reported"
    call(db, "clear_debit_card_fraud_alert_4892", card_id="dbc_538bfb9cba", reason="customer_verified")
    card = db.debit_cards.get("dbc_538bfb9cba")
    assert card is not None and (card["fraud_alert_active"], card["alert_source"]) == (False, None)
    refused(db, "clear_debit_card_fraud_alert_4892", "Invalid reason", card_id="dbc_538bfb9cba", reason="x")


def test_reset_pin_unlocks_card_after_checking_last_four(db: BankingDB) -> None:
    refused(db, "reset_debit_card_pin_6284", "do not match", card_id="dbc_lj82d4f1a9_bluest",
            last_4_digits="0000", new_pin="2580")
    refused(db, "reset_debit_card_pin_6284", "same digit", card_id="dbc_lj82d4f1a9_bluest",
            last_4_digits="4821", new_pin="1111")
    call(db, "reset_debit_card_pin_6284", card_id="dbc_lj82d4f1a9_bluest", last_4_digits="4821",
         new_pin="2580")
    card = db.debit_cards.get("dbc_lj82d4f1a9_bluest")
    assert card is not None
    pin_state = (card["pin_last_changed"], card["pin_locked"], card["pin_attempts_remaining"])
    assert pin_state == ("11/14/2025", False, 3)


def test_change_pin_needs_a_different_valid_pin(db: BankingDB) -> None:
    refused(db, "change_debit_card_pin_6285", "different", card_id="dbc_538bfb9cba",
            current_pin="2580", new_pin="2580")
    refused(db, "change_debit_card_pin_6285", "Current PIN", card_id="dbc_538bfb9cba",
            current_pin="25", new_pin="3691")
    call(db, "change_debit_card_pin_6285", card_id="dbc_538bfb9cba", current_pin="2580", new_pin="3691")
    assert db.debit_cards.get("dbc_538bfb9cba")["pin_last_changed"] == "11/14/2025"  # type: ignore[index]


def test_get_debit_cards_shows_display_names_newest_first(db: BankingDB) -> None:
    db.debit_cards.add("dbc_new", {"card_id": "dbc_new", "account_id": "chk_lj82d4f1a9", "status": "PENDING",
                                   "last_4_digits": "1212", "issue_date": "11/14/2025"})
    cards = call(db, "get_debit_cards_by_account_id_7823", account_id="chk_lj82d4f1a9")
    assert [c["card_id"] for c in cards] == ["dbc_new", "dbc_lj82d4f1a9_bluest"]
    assert cards[1]["card_number_last_4"] == "4821" and cards[1]["date_issued"] == "03/20/2024"
    assert "last_4_digits" not in cards[1]
    assert "No debit cards" in call(db, "get_debit_cards_by_account_id_7823", account_id="01")
    refused(db, "get_debit_cards_by_account_id_7823", "not a checking", account_id="04")


def test_limit_increase_uses_level_default_and_caps_at_150_percent(db: BankingDB) -> None:
    # Blue Account (opened 01/15/2025): default ATM limit $500, so at most $750
    refused(db, "request_temporary_debit_card_limit_increase_8374", r"maximum.*\$750",
            card_id="dbc_kj93a7b2e1_blue", limit_type="atm", new_limit=800)
    refused(db, "request_temporary_debit_card_limit_increase_8374", "not higher",
            card_id="dbc_kj93a7b2e1_blue", limit_type="atm", new_limit=500)
    call(db, "request_temporary_debit_card_limit_increase_8374", card_id="dbc_kj93a7b2e1_blue",
         limit_type="atm", new_limit=700)
    card = db.debit_cards.get("dbc_kj93a7b2e1_blue")
    assert card is not None
    assert {k: card[k] for k in ("daily_atm_limit", "temporary_atm_limit_increase", "original_atm_limit",
                                 "temporary_atm_limit_expires")} == {
        "daily_atm_limit": 700, "temporary_atm_limit_increase": True, "original_atm_limit": 500,
        "temporary_atm_limit_expires": "11/14/2025"}


def test_limit_increase_refuses_teen_young_account_and_missing_purchase_limit(db: BankingDB) -> None:
    refused(db, "request_temporary_debit_card_limit_increase_8374", "Light Green",
            card_id="dbc_kj93a7b2e1_lightgreen", limit_type="atm", new_limit=200)
    refused(db, "request_temporary_debit_card_limit_increase_8374", "purchase limit",
            card_id="dbc_kj93a7b2e1_blue", limit_type="purchase", new_limit=200)
    db.accounts.edit("chk_kj93a7b2e1_1")["date_opened"] = "10/01/2025"
    refused(db, "request_temporary_debit_card_limit_increase_8374", "60 days",
            card_id="dbc_kj93a7b2e1_blue", limit_type="atm", new_limit=700)


def test_limit_increase_truncates_at_pin_and_refuses_fraction_later(
    db: BankingDB, later_db: BankingDB
) -> None:
    call(db, "request_temporary_debit_card_limit_increase_8374", card_id="dbc_kj93a7b2e1_blue",
         limit_type="atm", new_limit=700.9)
    assert db.debit_cards.get("dbc_kj93a7b2e1_blue")["daily_atm_limit"] == 700  # type: ignore[index]
    refused(later_db, "request_temporary_debit_card_limit_increase_8374", "integer",
            card_id="dbc_kj93a7b2e1_blue", limit_type="atm", new_limit=700.9)


# --- the gold check -------------------------------------------------------------------------

NEEDS_OTHER_GROUP = {
    ("task_061", "close_bank_account_7392"): "unable to be closed",
}
"""Gold calls that fail here only because we skip another group's call before them: in task_061
the user deposits a $25 check (deposit_check_3847, a user tool) to cover the early-closure fee."""

BY_DESIGN = {
    "task_051": "submit_credit_limit_increase_request_7392",  # the same request twice
    "task_077": "get_credit_card_accounts_by_user",  # a listed tool called through the wrapper
    "task_083": "file_debit_card_transaction_dispute_6281",  # a required argument missing
}
"""The spec's gold calls that fail by design (§C), by task: none is one of ours."""


def _gold_calls(task: dict[str, Any]) -> list[tuple[int, str, str]]:
    """(index, tool, JSON arguments) of the gold's calls to our tools, in order."""
    actions = (task.get("evaluation_criteria") or {}).get("actions") or []
    return [(i, a["arguments"]["agent_tool_name"], a["arguments"].get("arguments", "{}"))
            for i, a in enumerate(actions)
            if a["name"] == "call_discoverable_agent_tool" and a["arguments"]["agent_tool_name"] in MINE]


@pytest.fixture(scope="module")
def gold_tasks(banking_dir: Path) -> dict[str, dict[str, Any]]:
    tasks = {p.stem: json.loads(p.read_text()) for p in sorted((banking_dir / "tasks").glob("task_*.json"))}
    return {name: t for name, t in tasks.items() if _gold_calls(t)}


def _fresh(snapshot: BankingSnapshot, task: dict[str, Any], version: str) -> BankingDB:
    """A new DB with the task's ``agent_data`` patch, graded as ``version``."""
    db = BankingDB(snapshot)
    db.grading = BankingGrading(version)
    patch = ((task.get("initial_state") or {}).get("initialization_data") or {}).get("agent_data")
    if patch:
        db.apply_patch(patch)
    return db


def _replay(snapshot: BankingSnapshot, task: dict[str, Any], version: str) -> tuple[BankingDB, list[str]]:
    """Play the gold's calls to our tools on a fresh patched DB; return it and the failures."""
    db = _fresh(snapshot, task, version)
    # at 1.0.1 the caller parses every JSON number as a float (upstream #397)
    parse_int: Callable[[str], Any] = float if version == "1.0.1" else int
    failures = []
    for _, name, arguments in _gold_calls(task):
        try:
            call(db, name, **json.loads(arguments, parse_int=parse_int))
        except ToolError as err:
            failures.append(f"{name}: {err}")
    return db, failures


def test_gold_uses_our_tools_in_48_tasks(gold_tasks: dict[str, dict[str, Any]]) -> None:
    numbers = sorted(int(name.split("_")[1]) for name in gold_tasks)
    assert numbers == [43, 45, 48, 51, *range(55, 83), *range(84, 98), 99, 100]
    assert not set(BY_DESIGN.values()) & set(MINE)


@pytest.mark.parametrize("version", ["8ebb749", "1.0.1"])
def test_gold_calls_succeed_and_replay_to_one_hash(
    snapshot: BankingSnapshot, gold_tasks: dict[str, dict[str, Any]], version: str
) -> None:
    unexpected = {}
    for name, task in gold_tasks.items():
        db, failures = _replay(snapshot, task, version)
        expected = [f"{tool}: " for (t, tool) in NEEDS_OTHER_GROUP if t == name]
        if [f.split(": ")[0] + ": " for f in failures] != expected:
            unexpected[name] = failures
        again, _ = _replay(snapshot, task, version)
        assert db.hash() == again.hash(), name
        wrote = any(DISCOVERABLE_AGENT.spec(n).kind == "write" for _, n, _ in _gold_calls(task))  # type: ignore[union-attr]
        assert (db.hash() != _fresh(snapshot, task, version).hash()) == wrote, name
    assert unexpected == {}
    _, failures = _replay(snapshot, gold_tasks["task_061"], version)
    assert len(failures) == 1 and NEEDS_OTHER_GROUP[("task_061", "close_bank_account_7392")] in failures[0]


def test_gold_task_077_activates_the_card_its_order_created(
    snapshot: BankingSnapshot, gold_tasks: dict[str, dict[str, Any]]
) -> None:
    db, failures = _replay(snapshot, gold_tasks["task_077"], "8ebb749")
    assert failures == []
    card = db.debit_cards.get("dbc_8eed7b16caeb")  # the id upstream's gold names
    assert card is not None and (card["status"], card["issue_reason"], card["last_4_digits"]) == (
        "ACTIVE", "lost", "7260")
    assert db.debit_cards.get("dbc_lj82d4f1a9_bluest")["status"] == "CLOSED"  # type: ignore[index]


def test_by_design_failures_are_calls_of_other_groups(banking_dir: Path) -> None:
    for name, tool in BY_DESIGN.items():
        task = json.loads((banking_dir / "tasks" / f"{name}.json").read_text())
        called = [a["arguments"].get("agent_tool_name") for a in task["evaluation_criteria"]["actions"]
                  if a["name"] == "call_discoverable_agent_tool"]
        assert tool in called and tool not in MINE
