"""The credit-card group of banking_knowledge's discoverable agent tools, on the real pinned DB.

Each tool: a success path and its main refusals. Then the gold check: every task whose gold calls
one of these tools through ``call_discoverable_agent_tool`` is played (our calls only, on a fresh
DB with the task's patch) twice; every call succeeds except the by-design failures of task_051 and
task_083, and both runs end in the same DB hash. Tests needing ``../shared/data/tau2`` skip without it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from uxlocal.tau2.domains.banking_knowledge.discoverable import DISCOVERABLE_AGENT
from uxlocal.tau2.domains.banking_knowledge.db import TODAY_MDY, BankingDB, BankingGrading, BankingSnapshot, parse_money
from uxlocal.tau2.toolkit import ToolError, ToolSpec
from uxlocal.tau2.domains.banking_knowledge.cards import (
    CARD_TOOLS,
    card_transaction_id,
    dispute_id,
    limit_request_id,
)

BRONZE = {"credit_card_account_id": "cc_5e4c1a83b0_bronze", "user_id": "5e4c1a83b0"}
"""Zhang Mei's card in task_051: $3,000.00 owed on a $4,000.00 limit, $5,000.00 in checking."""
CREDIT_DISPUTE = {
    "transaction_id": "txn_8d1aa1219382",
    "card_action": "keep_active",
    "card_last_4_digits": "1234",
    "full_name": "Test Holder",
    "user_id": "01f21c9970",
    "phone": "555-0100",
    "email": "t@example.com",
    "address": "1 Main St",
    "contacted_merchant": True,
    "purchase_date": "10/02/2025",
    "issue_noticed_date": "10/05/2025",
    "dispute_reason": "duplicate_charge",
    "resolution_requested": "full_refund",
    "eligible_for_provisional_credit": True,
}
DEBIT_DISPUTE = {
    "transaction_id": "btxn_b17aa1648835",
    "account_id": "chk_mc47a2b9e1_blue",
    "card_id": "dbc_mc47a2b9e1_blue",
    "user_id": "mc47a2b9e1",
    "dispute_category": "card_present_fraud",
    "transaction_date": "11/07/2025",
    "discovery_date": "11/14/2025",
    "disputed_amount": 647.5,
    "transaction_type": "pin_purchase",
    "card_in_possession": False,
    "pin_compromised": "yes_shared",
    "contacted_merchant": False,
    "police_report_filed": False,
    "written_statement_provided": True,
    "provisional_credit_eligible": True,
    "card_action": "close_and_reissue",
    "customer_max_liability_amount": 50,
}
BY_DESIGN_FAILURES = {
    # task_051 asks for the same credit-limit increase twice; the second request is refused
    "task_051": [("submit_credit_limit_increase_request_7392", ToolError)],
    # task_083's gold omits the required customer_max_liability_amount in all four disputes (#385)
    "task_083": [("file_debit_card_transaction_dispute_6281", ValidationError)] * 4,
}
"""Gold calls of ours that fail upstream too; task_077's failure is a direct tool, not ours."""


@pytest.fixture(scope="session")
def banking_root(data_dir: Path) -> Path:
    root = data_dir / "domains" / "banking_knowledge"
    if not (root / "db.json").is_file():
        pytest.skip(f"banking_knowledge data not found at {root}")
    return root


@pytest.fixture(scope="session")
def snapshot(banking_root: Path) -> BankingSnapshot:
    return BankingDB.load(banking_root / "db.json")


def _task(root: Path, task_id: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((root / "tasks" / f"{task_id}.json").read_text())
    return loaded


def _patch(task: dict[str, Any]) -> dict[str, Any]:
    init = (task.get("initial_state") or {}).get("initialization_data") or {}
    patch: dict[str, Any] = init.get("agent_data") or {}
    return patch


def _db(snapshot: BankingSnapshot, root: Path | None = None, task_id: str | None = None) -> BankingDB:
    db = BankingDB(snapshot)
    if root is not None and task_id is not None:
        db.apply_patch(_patch(_task(root, task_id)))
    return db


def call(db: BankingDB, name: str, **arguments: Any) -> Any:
    """Run one of our tools with validated arguments (pydantic's ``ValidationError`` when they are not)."""
    spec = _spec(name)
    parsed = spec.args_model.model_validate(arguments)
    return spec.func(db, **{field: getattr(parsed, field) for field in type(parsed).model_fields})


def refused(db: BankingDB, name: str, match: str, **arguments: Any) -> None:
    """Assert the call is refused and leaves the DB as it was."""
    before = db.hash()
    with pytest.raises(ToolError, match=match):
        call(db, name, **arguments)
    assert db.hash() == before


def _sha(seed: str, digits: int) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:digits]


def _row(db: BankingDB, table: str, key: str) -> dict[str, Any]:
    row = db.table(table).get(key)
    assert row is not None, f"{table} has no row {key!r}"
    return row


def _spec(name: str) -> ToolSpec:
    spec = DISCOVERABLE_AGENT.spec(name)
    assert spec is not None, name
    return spec


def _kind(name: str) -> str:
    return _spec(name).kind


# --- registry and ids ----------------------------------------------------------------------------


def test_card_tools_register_all_24_with_upstream_kinds() -> None:
    kinds = {name: _kind(name) for name in CARD_TOOLS}
    assert len(kinds) == 24
    assert sorted(n for n, k in kinds.items() if k == "generic") == [
        "emergency_credit_bureau_incident_transfer_1114",
        "initial_transfer_to_human_agent_0218",
        "initial_transfer_to_human_agent_1822",
    ]
    assert sorted(n for n, k in kinds.items() if k == "read") == [
        "get_atm_deposit_images_8473",
        "get_closure_reason_history_8293",
        "get_credit_limit_increase_history_4829",
        "get_debit_dispute_status_7483",
        "get_payment_history_6183",
        "get_pending_replacement_orders_5765",
        "get_user_dispute_history_7291",
    ]
    assert sum(k == "write" for k in kinds.values()) == 14  # the placeholder is a write upstream too
    assert all(_spec(n).description for n in CARD_TOOLS)


def test_card_tool_schemas_ask_for_numbers_when_amounts_are_due() -> None:
    for name, field in [
        ("approve_credit_limit_increase_5847", "new_credit_limit"),  # accepts numeric text too
        ("apply_statement_credit_8472", "amount"),  # accepts JSON numbers only
    ]:
        properties = _spec(name).openai_schema()["function"]["parameters"]["properties"]
        assert properties[field]["type"] == "number"


def test_card_ids_follow_seeds_when_built_from_parts() -> None:
    assert dispute_id("u1", "t1") == "dsp_" + _sha("dispute:u1:t1", 12)
    assert limit_request_id("cc_a", "u1", 1000) == "cli_" + _sha("cli_request:cc_a:u1:1000.00", 12)
    # amounts enter with two decimals, so the spelling of the number does not change the id
    assert card_transaction_id("u", "T", "m", 25, "c") == card_transaction_id("u", "T", "m", 25.0, "c")


@pytest.mark.parametrize(
    ("value", "dollars"),
    [
        ("$1,234.56", 1234.56),  # the DB's card balances
        ("5000.00", 5000.0),  # checking balances carry no '$'
        (-50, -50.0),  # transaction amounts are numbers
        (None, 0.0),  # a missing field
    ],
)
def test_money_reads_balances_when_spelled_any_way(value: object, dollars: float) -> None:
    assert parse_money(value) == dollars


# --- placeholder, rewards, transfers --------------------------------------------------------------


def test_placeholder_and_transfer_steps_answer_text_when_called(snapshot: BankingSnapshot) -> None:
    db = _db(snapshot)
    for name in (
        "example_agent_tool_0000",
        "initial_transfer_to_human_agent_0218",
        "initial_transfer_to_human_agent_1822",
        "emergency_credit_bureau_incident_transfer_1114",
    ):
        assert isinstance(call(db, name), str) and call(db, name)
    assert "transfer_to_human_agents" in call(db, "emergency_credit_bureau_incident_transfer_1114")
    assert db.hash() == _db(snapshot).hash()
    with pytest.raises(ValidationError):
        call(db, "initial_transfer_to_human_agent_0218", reason="x")


def test_update_rewards_changes_one_row_when_transaction_exists(snapshot: BankingSnapshot) -> None:
    db = _db(snapshot)
    call(
        db,
        "update_transaction_rewards_3847",
        transaction_id="txn_8d1aa1219382",
        new_rewards_earned="6300 points",
    )
    assert _row(db, "credit_card_transaction_history", "txn_8d1aa1219382")["rewards_earned"] == "6300 points"
    refused(
        db,
        "update_transaction_rewards_3847",
        "not found",
        transaction_id="txn_nope",
        new_rewards_earned="1 points",
    )
    refused(
        db,
        "update_transaction_rewards_3847",
        "missing",
        transaction_id="txn_8d1aa1219382",
        new_rewards_earned="",
    )


# --- disputes --------------------------------------------------------------------------------


def test_credit_dispute_stores_the_arguments_verbatim_when_filed(snapshot: BankingSnapshot) -> None:
    db = _db(snapshot)
    result = call(db, "file_credit_card_transaction_dispute_4829", **CREDIT_DISPUTE)
    key = dispute_id("01f21c9970", "txn_8d1aa1219382")
    assert result["dispute_id"] == key
    row = db.transaction_disputes.get(key)
    assert row == {
        "dispute_id": key,
        **CREDIT_DISPUTE,
        "partial_refund_amount": None,
        "provisional_credit_given": True,
        "submitted_at": TODAY_MDY,
        "status": "SUBMITTED",
    }
    history = call(db, "get_user_dispute_history_7291", user_id="01f21c9970")
    assert [d["dispute_id"] for d in history["disputes"]] == [key]
    refused(db, "file_credit_card_transaction_dispute_4829", "already filed", **CREDIT_DISPUTE)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"card_action": "shred"}, "card_action"),  # not one of the two card actions
        ({"dispute_reason": "changed my mind"}, "dispute_reason"),  # not a listed reason
        (
            {"resolution_requested": "partial_refund"},
            "partial_refund_amount",
        ),  # partial refund needs its amount
        ({"transaction_id": ""}, "missing"),  # an empty id
    ],
)
def test_credit_dispute_refuses_when_a_field_is_wrong(
    snapshot: BankingSnapshot, change: dict[str, Any], match: str
) -> None:
    refused(_db(snapshot), "file_credit_card_transaction_dispute_4829", match, **{**CREDIT_DISPUTE, **change})


def test_credit_dispute_arguments_do_not_bind_when_one_is_missing(snapshot: BankingSnapshot) -> None:
    arguments = {k: v for k, v in CREDIT_DISPUTE.items() if k != "phone"}
    with pytest.raises(ValidationError):
        call(_db(snapshot), "file_credit_card_transaction_dispute_4829", **arguments)


def test_debit_dispute_records_provisional_credit_when_eligible(
    snapshot: BankingSnapshot, banking_root: Path
) -> None:
    db = _db(snapshot, banking_root, "task_082")
    result = call(db, "file_debit_card_transaction_dispute_6281", **DEBIT_DISPUTE)
    row = db.debit_card_disputes.get(result["dispute_id"])
    assert row is not None
    assert (row["provisional_credit_amount"], row["is_fraud_category"], row["pin_shared_voluntarily"]) == (
        647.5,
        True,
        True,
    )
    assert row["customer_max_liability_amount"] == 50 and isinstance(
        row["customer_max_liability_amount"], int
    )
    assert len(result["notes"]) == 2  # PIN shared; fraud over $500 without a police report
    status = call(db, "get_debit_dispute_status_7483", user_id="mc47a2b9e1")
    assert [d["dispute_id"] for d in status["debit_disputes"]] == [result["dispute_id"]]
    refused(db, "file_debit_card_transaction_dispute_6281", "already filed", **DEBIT_DISPUTE)


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"disputed_amount": -5}, "positive"),  # a negative amount
        ({"pin_compromised": "maybe"}, "pin_compromised"),  # not a listed PIN exposure
        ({"transaction_type": "barter"}, "transaction_type"),  # not a listed type
        ({"card_action": "shred"}, "card_action"),  # not a listed card action
        ({"dispute_category": "other"}, "dispute_category"),  # not a listed category
    ],
)
def test_debit_dispute_refuses_when_a_field_is_wrong(
    snapshot: BankingSnapshot, change: dict[str, Any], match: str
) -> None:
    refused(_db(snapshot), "file_debit_card_transaction_dispute_6281", match, **{**DEBIT_DISPUTE, **change})


def test_debit_dispute_status_is_empty_when_user_has_none(snapshot: BankingSnapshot) -> None:
    assert call(_db(snapshot), "get_debit_dispute_status_7483", user_id="mc47a2b9e1")["debit_disputes"] == []
    refused(_db(snapshot), "get_debit_dispute_status_7483", "missing", user_id="")


def test_recurring_block_sets_the_flag_when_card_is_active(snapshot: BankingSnapshot) -> None:
    db = _db(snapshot)
    call(db, "set_debit_card_recurring_block_7382", card_id="dbc_lj82d4f1a9_bluest", block_recurring=True)
    assert _row(db, "debit_cards", "dbc_lj82d4f1a9_bluest")["recurring_blocked"] is True
    pending = next(k for k, r in db.debit_cards.items() if r["status"] == "PENDING")
    refused(db, "set_debit_card_recurring_block_7382", "ACTIVE", card_id=pending, block_recurring=True)
    refused(db, "set_debit_card_recurring_block_7382", "not found", card_id="dbc_nope", block_recurring=False)
    with pytest.raises(ValidationError):  # booleans are strict: a string is not a flag
        call(
            db, "set_debit_card_recurring_block_7382", card_id="dbc_lj82d4f1a9_bluest", block_recurring="yes"
        )


def test_atm_images_are_unavailable_when_deposit_is_at_a_rho_bank_atm(
    snapshot: BankingSnapshot, banking_root: Path
) -> None:
    db = _db(snapshot, banking_root, "task_086")
    result = call(db, "get_atm_deposit_images_8473", transaction_id="btxn_0788d2513c8c")
    assert (result["images"], result["amount_recorded"]) == ("not available", "$400.00")
    refused(db, "get_atm_deposit_images_8473", "not an ATM deposit", transaction_id="btxn_bd30d42f67a2")
    refused(db, "get_atm_deposit_images_8473", "not found", transaction_id="btxn_nope")


# --- replacement, closure, credits, flags ------------------------------------------------------


def test_replacement_order_cancels_the_old_card_when_placed(snapshot: BankingSnapshot) -> None:
    db = _db(snapshot)
    args = {
        "credit_card_account_id": "cc_lj82d4f1a9_silver",
        "user_id": "lj82d4f1a9",
        "shipping_address": "1420 Lake Shore Drive, Chicago, IL 60610",
        "reason": "lost",
    }
    result = call(db, "order_replacement_credit_card_7291", **args)
    order = db.credit_card_orders.get(result["order_id"])
    assert order is not None and (order["status"], order["expedited_shipping"]) == ("ORDERED", False)
    card = db.credit_card_accounts.get("cc_lj82d4f1a9_silver")
    assert card is not None and (card["status"], card["closed_date"]) == ("CLOSED", TODAY_MDY)
    orders = call(db, "get_pending_replacement_orders_5765", credit_card_account_id="cc_lj82d4f1a9_silver")
    assert [o["order_id"] for o in orders["orders"]] == [result["order_id"]]
    refused(db, "order_replacement_credit_card_7291", "already ordered", **args)
    refused(db, "order_replacement_credit_card_7291", "reason", **{**args, "reason": "bored"})
    refused(
        db, "order_replacement_credit_card_7291", "not found", **{**args, "credit_card_account_id": "cc_no"}
    )


def test_closure_reason_keeps_the_first_reason_when_logged_twice(snapshot: BankingSnapshot) -> None:
    db = _db(snapshot)
    args = {"credit_card_account_id": "cc_76ad9cc60e_gold", "user_id": "76ad9cc60e"}
    call(db, "log_credit_card_closure_reason_4521", closure_reason="annual_fee", **args)
    after_first = db.hash()
    call(db, "log_credit_card_closure_reason_4521", closure_reason="other", **args)
    assert db.hash() == after_first
    history = call(db, "get_closure_reason_history_8293", credit_card_account_id="cc_76ad9cc60e_gold")
    assert [r["closure_reason"] for r in history["closure_reasons"]] == ["annual_fee"]
    refused(db, "log_credit_card_closure_reason_4521", "closure_reason", closure_reason="meh", **args)


def test_close_account_marks_it_closed_when_it_exists(snapshot: BankingSnapshot) -> None:
    db = _db(snapshot)
    call(
        db,
        "close_credit_card_account_7834",
        credit_card_account_id="cc_76ad9cc60e_gold",
        user_id="76ad9cc60e",
    )
    card = db.credit_card_accounts.get("cc_76ad9cc60e_gold")
    assert card is not None and (card["status"], card["closed_by"]) == ("CLOSED", "76ad9cc60e")
    refused(db, "close_credit_card_account_7834", "not found", credit_card_account_id="cc_no", user_id="u")


def test_statement_credit_adds_a_negative_transaction_when_applied(snapshot: BankingSnapshot) -> None:
    db = _db(snapshot)
    args = {
        "user_id": "lj82d4f1a9",
        "credit_card_account_id": "cc_lj82d4f1a9_silver",
        "reason": "goodwill_adjustment",
    }
    result = call(db, "apply_statement_credit_8472", amount=25, **args)
    assert result["transaction_id"] == card_transaction_id(
        "lj82d4f1a9", "STATEMENT_CREDIT", "goodwill_adjustment", 25, "Statement Credit"
    )
    row = db.credit_card_transaction_history.get(result["transaction_id"])
    assert row is not None and row["transaction_amount"] == "-$25.00"
    refused(db, "apply_statement_credit_8472", "already applied", amount=25.0, **args)
    refused(db, "apply_statement_credit_8472", "positive", amount=0, **args)
    refused(db, "apply_statement_credit_8472", "reason", amount=5, **{**args, "reason": "because"})
    with pytest.raises(ValidationError):  # a number must be a JSON number
        call(db, "apply_statement_credit_8472", amount="5", **args)


def test_account_flag_is_active_until_expiry_when_applied(snapshot: BankingSnapshot) -> None:
    db = _db(snapshot)
    args = {
        "credit_card_account_id": "cc_lj82d4f1a9_silver",
        "user_id": "lj82d4f1a9",
        "flag_type": "annual_fee_waived",
        "expiration_date": "11/14/2026",
        "reason": "retention_offer",
    }
    result = call(db, "apply_credit_card_account_flag_6147", **args)
    row = db.credit_card_account_flags.get(result["flag_id"])
    assert row is not None and (row["effective_date"], row["status"]) == (TODAY_MDY, "ACTIVE")
    refused(db, "apply_credit_card_account_flag_6147", "already", **args)
    refused(db, "apply_credit_card_account_flag_6147", "flag_type", **{**args, "flag_type": "vip"})
    refused(db, "apply_credit_card_account_flag_6147", "reason", **{**args, "reason": "vip"})


# --- payments and credit limits ------------------------------------------------------------------


def test_card_payment_moves_money_when_funds_and_balance_allow(
    snapshot: BankingSnapshot, banking_root: Path
) -> None:
    db = _db(snapshot, banking_root, "task_051")
    pay = {**BRONZE, "checking_account_id": "chk_5e4c1a83b0"}
    refused(db, "pay_credit_card_from_checking_9182", "exceeds the card balance", amount=4000, **pay)
    refused(db, "pay_credit_card_from_checking_9182", "insufficient funds", amount=9000, **pay)
    refused(db, "pay_credit_card_from_checking_9182", "positive", amount=-1, **pay)
    refused(db, "pay_credit_card_from_checking_9182", "does not belong", amount=1, **{**pay, "user_id": "x"})
    call(db, "pay_credit_card_from_checking_9182", amount="1000", **pay)  # upstream converts text itself
    call(db, "pay_credit_card_from_checking_9182", amount=500.5, **pay)
    assert _row(db, "accounts", "chk_5e4c1a83b0")["current_holdings"] == "3499.50"
    assert _row(db, "credit_card_accounts", "cc_5e4c1a83b0_bronze")["current_balance"] == "$1499.50"


def test_limit_request_is_refused_when_repeated_for_the_same_amount(
    snapshot: BankingSnapshot, banking_root: Path
) -> None:
    db = _db(snapshot, banking_root, "task_051")
    result = call(db, "submit_credit_limit_increase_request_7392", requested_increase_amount=1000, **BRONZE)
    assert result["request_id"] == limit_request_id(BRONZE["credit_card_account_id"], BRONZE["user_id"], 1000)
    refused(
        db,
        "submit_credit_limit_increase_request_7392",
        "already exists",
        requested_increase_amount=1000,
        **BRONZE,
    )
    refused(
        db, "submit_credit_limit_increase_request_7392", "positive", requested_increase_amount=0, **BRONZE
    )
    refused(
        db,
        "submit_credit_limit_increase_request_7392",
        "does not belong",
        requested_increase_amount=5,
        credit_card_account_id=BRONZE["credit_card_account_id"],
        user_id="someone",
    )
    history = call(
        db, "get_credit_limit_increase_history_4829", credit_card_account_id="cc_5e4c1a83b0_bronze"
    )
    assert [r["status"] for r in history["requests"]] == ["PENDING"]


def test_limit_request_amount_spelling_matters_only_when_grading_is_pinned(
    snapshot: BankingSnapshot, banking_root: Path
) -> None:
    def run(amount: float, version: str) -> BankingDB:
        db = _db(snapshot, banking_root, "task_051")
        db.grading = BankingGrading(version)
        call(db, "submit_credit_limit_increase_request_7392", requested_increase_amount=amount, **BRONZE)
        return db

    assert run(1000, "8ebb749").hash() != run(1000.0, "8ebb749").hash()
    later = run(1000.0, "1.0.1")
    assert later.hash() == run(1000, "1.0.1").hash()
    stored = next(iter(later.credit_limit_increase_requests.values()))["requested_increase_amount"]
    assert stored == 1000 and isinstance(stored, int)
    db = _db(snapshot, banking_root, "task_051")
    db.grading = BankingGrading("1.0.1")
    refused(
        db,
        "submit_credit_limit_increase_request_7392",
        "whole number",
        requested_increase_amount=1000.5,
        **BRONZE,
    )


def test_payment_history_counts_on_time_payments_when_newest_first(
    snapshot: BankingSnapshot, banking_root: Path
) -> None:
    db = _db(snapshot, banking_root, "task_051")
    result = call(db, "get_payment_history_6183", credit_card_account_id="cc_5e4c1a83b0_bronze", months=3)
    assert result["consecutive_on_time_payments"] == 3
    assert [p["payment_date"] for p in result["payments"]] == ["10/15/2025", "09/15/2025", "08/15/2025"]
    assert (
        call(db, "get_payment_history_6183", credit_card_account_id="cc_5e4c1a83b0_bronze", months="6")[
            "months"
        ]
        == 6
    )
    assert "No payment history" in call(
        db, "get_payment_history_6183", credit_card_account_id="cc_no", months=2
    )
    refused(
        db, "get_payment_history_6183", "positive", credit_card_account_id="cc_5e4c1a83b0_bronze", months=0
    )


def test_limit_approval_raises_the_limit_when_account_is_eligible(
    snapshot: BankingSnapshot, banking_root: Path
) -> None:
    db = _db(snapshot, banking_root, "task_051")
    result = call(db, "approve_credit_limit_increase_5847", new_credit_limit=6000, **BRONZE)
    assert (result["previous_limit"], result["new_limit"]) == ("$4000.00", "$6000.00")
    assert _row(db, "credit_card_accounts", "cc_5e4c1a83b0_bronze")["credit_limit"] == "$6000.00"
    row = db.credit_limit_increase_requests.get(limit_request_id("cc_5e4c1a83b0_bronze", "5e4c1a83b0", 2000))
    assert row is not None and (row["status"], row["increase_amount"]) == ("APPROVED", "$2000.00")
    refused(
        db,
        "approve_credit_limit_increase_5847",
        "does not belong",
        new_credit_limit=7000,
        credit_card_account_id="cc_5e4c1a83b0_bronze",
        user_id="someone",
    )


def test_limit_approval_is_refused_when_a_dispute_or_a_shipped_card_is_open(
    snapshot: BankingSnapshot, banking_root: Path
) -> None:
    db = _db(snapshot, banking_root, "task_054")
    call(db, "file_credit_card_transaction_dispute_4829", **{**CREDIT_DISPUTE, "user_id": "584f9c5d00"})
    refused(
        db,
        "approve_credit_limit_increase_5847",
        "cannot be approved",
        new_credit_limit=6000,
        credit_card_account_id="cc_584f9c5d00_gold",
        user_id="584f9c5d00",
    )
    # db.json ships a SHIPPED replacement for this card
    refused(
        _db(snapshot),
        "approve_credit_limit_increase_5847",
        "cannot be approved",
        new_credit_limit=6000,
        credit_card_account_id="cc_e3f4a5b6c7_eco",
        user_id="e3f4a5b6c7",
    )


def test_limit_denial_is_recorded_once_when_denied(snapshot: BankingSnapshot, banking_root: Path) -> None:
    db = _db(snapshot, banking_root, "task_051")
    call(db, "deny_credit_limit_increase_5848", denial_reason="high_utilization", **BRONZE)
    after_first = db.hash()
    call(db, "deny_credit_limit_increase_5848", denial_reason="other", **BRONZE)
    assert db.hash() == after_first
    refused(db, "deny_credit_limit_increase_5848", "denial_reason", denial_reason="no", **BRONZE)
    refused(
        db,
        "deny_credit_limit_increase_5848",
        "not found",
        denial_reason="other",
        credit_card_account_id="cc_no",
        user_id="u",
    )


# --- gold trajectories ----------------------------------------------------------------------------


def _our_gold_calls(task: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """List the task's gold ``call_discoverable_agent_tool`` actions that name one of our tools."""
    calls = []
    for action in (task.get("evaluation_criteria") or {}).get("actions") or []:
        arguments = action["arguments"]
        if action["name"] == "call_discoverable_agent_tool" and arguments["agent_tool_name"] in CARD_TOOLS:
            calls.append((arguments["agent_tool_name"], json.loads(arguments.get("arguments", "{}"))))
    return calls


def _play(snapshot: BankingSnapshot, task: dict[str, Any]) -> tuple[BankingDB, list[tuple[str, object]]]:
    """Play our gold calls on a fresh, patched DB; each outcome is a result or the exception type."""
    db = BankingDB(snapshot)
    db.apply_patch(_patch(task))
    outcomes: list[tuple[str, object]] = []
    for name, arguments in _our_gold_calls(task):
        try:
            outcomes.append((name, call(db, name, **arguments)))
        except (ToolError, ValidationError) as err:
            outcomes.append((name, type(err)))
    return db, outcomes


GOLD_TASKS = [
    "task_026",
    "task_028",
    "task_031",
    "task_032",
    "task_033",
    "task_035",
    "task_036",
    "task_037",
    "task_038",
    "task_039",
    "task_040",
    "task_041",
    "task_043",
    "task_044",
    "task_045",
    "task_046",
    "task_047",
    "task_048",
    "task_049",
    "task_050",
    "task_051",
    "task_052",
    "task_053",
    "task_054",
    "task_077",
    "task_080",
    "task_081",
    "task_082",
    "task_083",
    "task_084",
    "task_085",
    "task_086",
    "task_087",
    "task_088",
    "task_091",
]
"""The 35 tasks whose gold calls a credit-card tool (184 calls in all)."""


def test_gold_tasks_are_exactly_those_that_call_card_tools(banking_root: Path) -> None:
    found = [
        p.stem
        for p in sorted((banking_root / "tasks").glob("task_*.json"))
        if _our_gold_calls(json.loads(p.read_text()))
    ]
    assert found == GOLD_TASKS
    assert sum(len(_our_gold_calls(_task(banking_root, t))) for t in GOLD_TASKS) == 184


@pytest.mark.parametrize("task_id", GOLD_TASKS)
def test_gold_calls_succeed_and_repeat_when_played_twice(
    snapshot: BankingSnapshot, banking_root: Path, task_id: str
) -> None:
    task = _task(banking_root, task_id)
    first, outcomes = _play(snapshot, task)
    failures = [(name, o) for name, o in outcomes if isinstance(o, type)]
    assert failures == BY_DESIGN_FAILURES.get(task_id, [])
    second, again = _play(snapshot, task)
    assert second.hash() == first.hash()
    assert again == outcomes
    kinds = {name: _kind(name) for name, o in outcomes if not isinstance(o, type)}
    wrote = "write" in kinds.values()
    untouched = BankingDB(snapshot)
    untouched.apply_patch(_patch(task))
    assert (first.hash() != untouched.hash()) == wrote


def test_gold_task_051_ends_with_the_card_paid_and_the_limit_raised(
    snapshot: BankingSnapshot, banking_root: Path
) -> None:
    db, _ = _play(snapshot, _task(banking_root, "task_051"))
    card = db.credit_card_accounts.get("cc_5e4c1a83b0_bronze")
    assert card is not None and (card["current_balance"], card["credit_limit"]) == ("$0.00", "$5000.00")
    assert _row(db, "accounts", "chk_5e4c1a83b0")["current_holdings"] == "2000.00"
    # the approval's increase (1000) gives the request's own id, so only the request and the denial remain
    assert sorted(r["status"] for r in db.credit_limit_increase_requests.values()) == ["DENIED", "PENDING"]
