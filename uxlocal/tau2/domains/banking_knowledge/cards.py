"""banking_knowledge's discoverable agent tools, credit-card group (spec tau2-telecom-banking.md §B.2).

24 tools the agent unlocks after reading their names in the knowledge base: credit- and debit-card
disputes, replacement cards, closures, statement credits and account flags, paying a card from
checking, credit-limit-increase requests and decisions, and three transfer-protocol steps.

Behaviour follows upstream's pinned tools (8ebb749) where it decides the DB hash: which rows are
written, with which fields, ids and dates, and which calls are refused. Written here in our words:
- Refusals raise ``ToolError``. Upstream answers them with an "Error: …" string *and still logs the
  call* in ``agent_discoverable_tools``; only a call whose arguments do not bind (missing or unknown
  argument, wrong JSON type) is not logged. Our argument validation plays that second part, so
  numbers and booleans are strict (``"50"`` is not a number) and enumerations are plain strings
  checked in the body, where a bad value is a logged refusal as upstream.
- Numbers keep their JSON spelling (``Number``): at 8ebb749 ``1000`` and ``1000.0`` are different
  DB states. At 1.0.1 (``db.grading.later``) the environment turns every number into a float and
  ``submit_credit_limit_increase_request_7392`` stores a whole-dollar int, refusing fractions.
- Some upstream writes are silent no-ops when their id exists (closure reasons, limit decisions);
  so are ours. An approval whose increase equals an earlier request's amount gets that request's id
  and so adds no row, while the limit still changes (task_051's gold relies on nothing else).
- Credit card accounts are looked up by key; in ``db.json`` and every task patch the key equals
  the row's ``account_id``, which is what upstream matches in some of these tools.
- ``get_atm_deposit_images_8473``: upstream has canned scans for three transaction ids that are in
  neither ``db.json`` nor any task, so every real ATM deposit gets "images not available" there;
  that is the only answer here.

Results are plain dicts, lists or short strings (the environment renders them as JSON).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import StrictBool, StrictFloat, StrictInt, StrictStr, WithJsonSchema

from .discoverable import agent_tool
from .db import (
    TODAY_MDY,
    BankingDB,
    BankingTable,
    account_balance,
    card_transaction_id,
    dispute_id,
    parse_money,
    seed_of,
    seeded_id,
)
from ...toolkit import ToolError, arg

Number = Annotated[StrictInt | StrictFloat, WithJsonSchema({"type": "number"})]
"""A JSON number as sent: an int stays an int (the pinned grading hashes 50 and 50.0 apart)."""
NumberOrText = Annotated[StrictInt | StrictFloat | StrictStr, WithJsonSchema({"type": "number"})]
"""Where upstream converts the value itself (``float(x)``/``int(x)``), a numeric string works too;
the schema still asks for a number."""

UserId = Annotated[str, arg("The customer's user id.")]
CardAccountId = Annotated[str, arg("The credit card account id, e.g. 'cc_<user id>_gold'.")]
DebitCardId = Annotated[str, arg("The debit card id, e.g. 'dbc_<user id>_blue'.")]

CREDIT_DISPUTE_REASONS = (
    "unauthorized_fraudulent_charge", "duplicate_charge", "incorrect_amount",
    "goods_services_not_received", "goods_services_not_as_described",
    "canceled_subscription_still_charging", "refund_never_processed",
)
CREDIT_CARD_ACTIONS = ("keep_active", "cancel_and_reissue")
RESOLUTIONS = ("full_refund", "partial_refund")
DEBIT_DISPUTE_CATEGORIES = (
    "unauthorized_transaction", "atm_cash_discrepancy", "atm_deposit_not_credited", "duplicate_charge",
    "incorrect_amount", "goods_services_not_received", "recurring_charge_after_cancellation",
    "card_present_fraud", "card_not_present_fraud",
)
DEBIT_FRAUD_CATEGORIES = ("unauthorized_transaction", "card_present_fraud", "card_not_present_fraud")
DEBIT_TRANSACTION_TYPES = (
    "pin_purchase", "signature_purchase", "online_purchase", "atm_withdrawal", "atm_deposit",
    "recurring_payment", "person_to_person",
)
PIN_EXPOSURES = ("yes_shared", "yes_observed", "no", "unknown")
DEBIT_CARD_ACTIONS = ("keep_active", "freeze_pending_investigation", "close_and_reissue")
REPLACEMENT_REASONS = ("fraud_suspected", "lost", "stolen", "damaged", "expired", "other")
CLOSURE_REASONS = (
    "annual_fee", "not_using_card", "found_better_card", "unhappy_with_rewards",
    "simplifying_finances", "negative_experience", "other",
)
STATEMENT_CREDIT_REASONS = (
    "goodwill_adjustment", "promotional_credit", "annual_fee_reversal", "late_fee_reversal",
    "interest_charge_reversal", "dispute_resolution", "price_match", "retention_offer",
    "error_correction", "other",
)
FLAG_TYPES = ("annual_fee_waived", "promotional_apr", "rewards_bonus", "other")
FLAG_REASONS = ("retention_offer", "loyalty_benefit", "promotional", "error_correction", "other")
DENIAL_REASONS = (
    "insufficient_account_age", "cooldown_period_active", "pending_disputes", "pending_replacement_card",
    "past_due_balance", "high_utilization", "insufficient_payment_history",
    "requested_amount_exceeds_limit", "other",
)
OPEN_DISPUTE_STATES = ("SUBMITTED", "UNDER_REVIEW", "PENDING")
"""A credit dispute in one of these states blocks a limit increase for the whole customer."""
OPEN_ORDER_STATES = ("PENDING", "PROCESSING", "SHIPPED")
"""A replacement order in one of these states blocks a limit increase (our new orders say ORDERED)."""
BAD_STANDING = ("PAST_DUE", "DELINQUENT", "COLLECTIONS", "CLOSED")


# --- record ids (sha256 seeds; the same inputs always give the same id) ------------------------


def card_order_id(card_account_id: str, user_id: str, reason: str) -> str:
    """Id of a replacement card order: one per card, customer and reason."""
    return "ccord_" + seeded_id(seed_of("credit_card_order", card_account_id, user_id, reason), 12)


def closure_reason_id(card_account_id: str, user_id: str) -> str:
    """Id of a closure-reason record: one per card and customer, whatever the reason."""
    return "clsr_" + seeded_id(seed_of("closure_reason", card_account_id, user_id), 12)


def account_flag_id(card_account_id: str, flag_type: str, expiration_date: str) -> str:
    """Id of an account flag: one per card, flag type and expiry."""
    return "ccflag_" + seeded_id(seed_of("account_flag", card_account_id, flag_type, expiration_date), 12)


def limit_request_id(card_account_id: str, user_id: str, increase: float) -> str:
    """Id of a credit-limit request or decision, keyed by the increase in dollars (two decimals)."""
    return "cli_" + seeded_id(seed_of("cli_request", card_account_id, user_id, f"{increase:.2f}"), 12)


# --- shared checks --------------------------------------------------------------------------


def _require(**values: object) -> None:
    """Refuse empty strings and nulls, as upstream does before anything else."""
    missing = [name for name, value in values.items() if value is None or value == ""]
    if missing:
        raise ToolError(f"missing required parameters: {', '.join(missing)}")


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ToolError(f"invalid {name} {value!r}; must be one of: {', '.join(allowed)}")


def _as_float(name: str, value: int | float | str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ToolError(f"invalid {name} {value!r}: must be a number") from None


def _credit_account(db: BankingDB, account_id: str) -> dict[str, Any]:
    row = db.credit_card_accounts.get(account_id)
    if row is None:
        raise ToolError(f"credit card account {account_id!r} not found")
    return row


def _owned_credit_account(db: BankingDB, account_id: str, user_id: str) -> dict[str, Any]:
    row = _credit_account(db, account_id)
    if row.get("user_id") != user_id:
        raise ToolError(f"credit card account {account_id!r} does not belong to user {user_id!r}")
    return row


def _add_new(table: BankingTable, key: str, row: dict[str, Any]) -> bool:
    """Insert unless the id exists; whether that is a refusal is the caller's decision."""
    if key in table:
        return False
    table.put(key, row)
    return True


def _rows(table: BankingTable, **equal: Any) -> list[dict[str, Any]]:
    """Copy the matching rows, in table order, so the caller may hand them out."""
    return [dict(row) for _, row in table.find(**equal)]


def _arguments(scope: Mapping[str, Any]) -> dict[str, Any]:
    """Take a tool's own arguments from its ``locals()`` (all but the DB); rows store them verbatim."""
    return {name: value for name, value in scope.items() if name != "db"}


# --- placeholder, rewards, transfer protocols ---------------------------------------------------


@agent_tool("write")
def example_agent_tool_0000(db: BankingDB) -> str:
    """Do nothing: a placeholder that only shows how discoverable tools work."""
    return "The example tool ran; nothing was changed."


@agent_tool("write")
def update_transaction_rewards_3847(
    db: BankingDB,
    *,
    transaction_id: Annotated[str, arg("The credit card transaction's id, e.g. 'txn_…'.")],
    new_rewards_earned: Annotated[str, arg("Corrected rewards, written like the record: '6300 points'.")],
) -> dict[str, Any]:
    """Correct the rewards earned on one credit card transaction (the value is stored as given)."""
    _require(transaction_id=transaction_id, new_rewards_earned=new_rewards_earned)
    if transaction_id not in db.credit_card_transaction_history:
        raise ToolError(f"transaction {transaction_id!r} not found")
    db.credit_card_transaction_history.edit(transaction_id)["rewards_earned"] = new_rewards_earned
    return {"transaction_id": transaction_id, "rewards_earned": new_rewards_earned, "updated": True}


@agent_tool("generic")
def initial_transfer_to_human_agent_0218(db: BankingDB) -> str:
    """First step of a special human-transfer protocol; its answer says what to tell the customer."""
    return "Transfer request started. Tell the customer that all lines are busy right now."


@agent_tool("generic")
def initial_transfer_to_human_agent_1822(db: BankingDB) -> str:
    """First step of a special human-transfer protocol; its answer says how to continue."""
    return (
        "This conversation is not yet at a stage where a human can take over. Do not say so to the "
        "customer; keep helping by asking about the common situations that could resolve their issue."
    )


@agent_tool("generic")
def emergency_credit_bureau_incident_transfer_1114(db: BankingDB) -> str:
    """Escalate a case from the 11/14 credit bureau reporting incident for priority handling."""
    return (
        "Emergency escalation recorded: the credit bureau correction team will handle this case first. "
        "Now complete the handover with transfer_to_human_agents."
    )


# --- credit card disputes -------------------------------------------------------------------


@agent_tool("write")
def file_credit_card_transaction_dispute_4829(
    db: BankingDB,
    *,
    transaction_id: Annotated[str, arg("The disputed credit card transaction's id.")],
    card_action: Annotated[str, arg(
        "The card's fate, recorded only (orders nothing): 'keep_active' or 'cancel_and_reissue'.")],
    card_last_4_digits: Annotated[str, arg("Last 4 digits of the credit card.")],
    full_name: Annotated[str, arg("The cardholder's full legal name.")],
    user_id: UserId,
    phone: Annotated[str, arg("Contact phone number.")],
    email: Annotated[str, arg("Contact email address.")],
    address: Annotated[str, arg("Contact mailing address.")],
    contacted_merchant: Annotated[StrictBool, arg("Whether the customer first tried the merchant.")],
    purchase_date: Annotated[str, arg("Purchase date, MM/DD/YYYY.")],
    issue_noticed_date: Annotated[str, arg("When the customer noticed the problem, MM/DD/YYYY.")],
    dispute_reason: Annotated[str, arg("One of: " + ", ".join(CREDIT_DISPUTE_REASONS) + ".")],
    resolution_requested: Annotated[str, arg("'full_refund' or 'partial_refund'.")],
    eligible_for_provisional_credit: Annotated[StrictBool, arg("Whether provisional credit is due.")],
    partial_refund_amount: Annotated[Number | None, arg("Dollars asked back (for 'partial_refund').")] = None,
) -> dict[str, Any]:
    """File a formal dispute of a credit card transaction (one per customer and transaction).

    The case is reviewed within 10 business days; provisional credit is recorded as given when the
    customer is eligible. Card replacement is a separate tool.
    """
    fields = _arguments(locals())
    _require(transaction_id=transaction_id, user_id=user_id)
    _one_of("card_action", card_action, CREDIT_CARD_ACTIONS)
    _one_of("dispute_reason", dispute_reason, CREDIT_DISPUTE_REASONS)
    _one_of("resolution_requested", resolution_requested, RESOLUTIONS)
    if resolution_requested == "partial_refund" and partial_refund_amount is None:
        raise ToolError("partial_refund_amount is required when resolution_requested is 'partial_refund'")
    key = dispute_id(user_id, transaction_id)
    row = {"dispute_id": key, **fields, "provisional_credit_given": eligible_for_provisional_credit,
           "submitted_at": TODAY_MDY, "status": "SUBMITTED"}
    if not _add_new(db.transaction_disputes, key, row):
        raise ToolError(f"a dispute for transaction {transaction_id!r} was already filed ({key})")
    return {"dispute_id": key, "status": "SUBMITTED", "review": "within 10 business days",
            "provisional_credit": "applied within 2 business days" if eligible_for_provisional_credit
            else "not eligible"}


@agent_tool("read")
def get_user_dispute_history_7291(db: BankingDB, *, user_id: UserId) -> dict[str, Any]:
    """List every credit card transaction dispute the customer has filed, with its status."""
    _require(user_id=user_id)
    return {"user_id": user_id, "disputes": _rows(db.transaction_disputes, user_id=user_id)}


# --- debit card disputes and settings ---------------------------------------------------------


def _check_debit_dispute(fields: Mapping[str, Any]) -> None:
    """Upstream's checks, in its order: presence, the four enumerations, a positive amount."""
    required = ("transaction_id", "account_id", "card_id", "user_id", "dispute_category", "transaction_date",
                "discovery_date", "transaction_type", "pin_compromised", "card_action")
    _require(**{name: fields[name] for name in required})
    _one_of("dispute_category", fields["dispute_category"], DEBIT_DISPUTE_CATEGORIES)
    _one_of("transaction_type", fields["transaction_type"], DEBIT_TRANSACTION_TYPES)
    _one_of("pin_compromised", fields["pin_compromised"], PIN_EXPOSURES)
    _one_of("card_action", fields["card_action"], DEBIT_CARD_ACTIONS)
    if fields["disputed_amount"] <= 0:
        raise ToolError("disputed_amount must be a positive number")


@agent_tool("write")
def file_debit_card_transaction_dispute_6281(
    db: BankingDB,
    *,
    transaction_id: Annotated[str, arg("The disputed bank account transaction's id, e.g. 'btxn_…'.")],
    account_id: Annotated[str, arg("The checking account the debit card draws on.")],
    card_id: DebitCardId,
    user_id: UserId,
    dispute_category: Annotated[str, arg("One of: " + ", ".join(DEBIT_DISPUTE_CATEGORIES) + ".")],
    transaction_date: Annotated[str, arg("When the transaction happened, MM/DD/YYYY.")],
    discovery_date: Annotated[str, arg("When the customer first noticed the problem, MM/DD/YYYY.")],
    disputed_amount: Annotated[Number, arg("Dollars disputed (positive).")],
    transaction_type: Annotated[str, arg("One of: " + ", ".join(DEBIT_TRANSACTION_TYPES) + ".")],
    card_in_possession: Annotated[StrictBool, arg("Whether the customer still has the physical card.")],
    pin_compromised: Annotated[str, arg("Could others know the PIN? " + ", ".join(PIN_EXPOSURES) + ".")],
    contacted_merchant: Annotated[StrictBool, arg("Whether the customer first tried the merchant.")],
    police_report_filed: Annotated[StrictBool, arg("Whether a police report was filed (advised over $500).")],
    written_statement_provided: Annotated[StrictBool, arg(
        "Whether the customer gave a written statement (needed for Regulation E provisional credit).")],
    provisional_credit_eligible: Annotated[StrictBool, arg(
        "Whether provisional credit is due under the debit card provisional credit guidelines.")],
    customer_max_liability_amount: Annotated[Number, arg(
        "The most the customer can be liable for under Regulation E timing rules; -1 for unlimited.")],
    card_action: Annotated[str, arg("One of: " + ", ".join(DEBIT_CARD_ACTIONS) + ".")],
) -> dict[str, Any]:
    """File a Regulation E dispute of a debit card transaction (one per customer and transaction).

    Debit disputes concern the customer's own funds; liability depends on how fast they reported.
    When provisional credit is due, the full disputed amount is recorded as issued.
    """
    fields = _arguments(locals())
    _check_debit_dispute(fields)
    key = dispute_id(user_id, transaction_id)
    fraud = dispute_category in DEBIT_FRAUD_CATEGORIES
    row = {"dispute_id": key, **fields, "provisional_credit_issued": provisional_credit_eligible,
           "provisional_credit_amount": disputed_amount if provisional_credit_eligible else None,
           "is_fraud_category": fraud, "pin_shared_voluntarily": pin_compromised == "yes_shared",
           "submitted_at": TODAY_MDY, "status": "OPEN"}
    if not _add_new(db.debit_card_disputes, key, row):
        raise ToolError(f"a dispute for transaction {transaction_id!r} was already filed ({key})")
    notes = []
    if pin_compromised == "yes_shared":
        notes.append("The customer shared the PIN voluntarily; this may affect liability.")
    if fraud and not police_report_filed and disputed_amount > 500:
        notes.append("Fraud over $500: a police report is recommended.")
    return {"dispute_id": key, "status": "OPEN", "provisional_credit_issued": provisional_credit_eligible,
            "provisional_credit_amount": row["provisional_credit_amount"], "notes": notes}


@agent_tool("read")
def get_debit_dispute_status_7483(db: BankingDB, *, user_id: UserId) -> dict[str, Any]:
    """List every debit card dispute the customer has filed: category, amount, status, provisional credit."""
    _require(user_id=user_id)
    return {"user_id": user_id, "debit_disputes": _rows(db.debit_card_disputes, user_id=user_id)}


@agent_tool("write")
def set_debit_card_recurring_block_7382(
    db: BankingDB,
    *,
    card_id: DebitCardId,
    block_recurring: Annotated[StrictBool, arg("true blocks all recurring charges; false allows them.")],
) -> dict[str, Any]:
    """Block or allow all recurring (subscription) charges on an active debit card.

    One-time purchases are unaffected; the change takes effect within 24 hours.
    """
    _require(card_id=card_id)
    card = db.debit_cards.get(card_id)
    if not card:
        raise ToolError(f"debit card {card_id!r} not found")
    status = str(card.get("status", "")).upper()
    if status != "ACTIVE":
        raise ToolError(f"debit card {card_id!r} is {status or 'without status'}; it must be ACTIVE")
    db.debit_cards.edit(card_id)["recurring_blocked"] = block_recurring
    return {"card_id": card_id, "recurring_blocked": block_recurring, "effective": "within 24 hours"}


@agent_tool("read")
def get_atm_deposit_images_8473(
    db: BankingDB, *, transaction_id: Annotated[str, arg("The ATM deposit's transaction id ('btxn_…').")]
) -> dict[str, Any]:
    """Look up the envelope and check images of a deposit made at a Rho-Bank ATM.

    Third-party ATM deposits have no images here; those disputes go to the ATM network.
    """
    _require(transaction_id=transaction_id)
    txn = db.bank_account_transaction_history.get(transaction_id)
    if txn is None:
        raise ToolError(f"transaction {transaction_id!r} not found")
    if txn.get("type") != "atm_deposit":
        raise ToolError(f"transaction {transaction_id!r} is not an ATM deposit")
    description = str(txn.get("description", ""))
    if "RHO-BANK" not in description.upper() and "RHOBANK" not in description.upper():
        raise ToolError(f"transaction {transaction_id!r} was made at a third-party ATM: no deposit images; "
                        "a chargeback request to the ATM network is needed")
    return {
        "transaction_id": transaction_id, "atm": description, "deposit_date": txn.get("date", "Unknown"),
        "amount_recorded": f"${abs(parse_money(txn.get('amount', 0))):.2f}", "images": "not available",
        "why": "images older than 90 days expire, and some deposits were never captured",
        "next": "the dispute proceeds on the customer's statement and the ATM journal; it may take longer",
    }


# --- replacement, closure, credits, flags ------------------------------------------------------


@agent_tool("write")
def order_replacement_credit_card_7291(
    db: BankingDB,
    *,
    credit_card_account_id: CardAccountId,
    user_id: UserId,
    shipping_address: Annotated[str, arg("Full address the new card goes to.")],
    reason: Annotated[str, arg("One of: " + ", ".join(REPLACEMENT_REASONS) + ".")],
    expedited_shipping: Annotated[StrictBool, arg("Ship in 2-3 business days instead of 7-10.")] = False,
) -> dict[str, Any]:
    """Order a replacement credit card; the current card is cancelled at once for security.

    The new card keeps the account number and gets a new card number and CVV.
    """
    _require(credit_card_account_id=credit_card_account_id, user_id=user_id,
             shipping_address=shipping_address, reason=reason)
    _one_of("reason", reason, REPLACEMENT_REASONS)
    _credit_account(db, credit_card_account_id)
    key = card_order_id(credit_card_account_id, user_id, reason)
    row = {"order_id": key, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
           "shipping_address": shipping_address, "reason": reason, "expedited_shipping": expedited_shipping,
           "order_date": TODAY_MDY, "status": "ORDERED", "old_card_cancelled": True}
    if not _add_new(db.credit_card_orders, key, row):
        raise ToolError(f"this replacement was already ordered ({key})")
    account = db.credit_card_accounts.edit(credit_card_account_id)
    account.update(status="CLOSED", closed_date=TODAY_MDY)
    return {"order_id": key, "status": "ORDERED", "old_card": "cancelled",
            "delivery": "2-3 business days" if expedited_shipping else "7-10 business days"}


@agent_tool("read")
def get_pending_replacement_orders_5765(
    db: BankingDB, *, credit_card_account_id: CardAccountId
) -> dict[str, Any]:
    """List the replacement card orders of a credit card account, whatever their status."""
    _require(credit_card_account_id=credit_card_account_id)
    orders = _rows(db.credit_card_orders, credit_card_account_id=credit_card_account_id)
    return {"credit_card_account_id": credit_card_account_id, "orders": orders}


@agent_tool("write")
def log_credit_card_closure_reason_4521(
    db: BankingDB,
    *,
    credit_card_account_id: CardAccountId,
    user_id: UserId,
    closure_reason: Annotated[str, arg("One of: " + ", ".join(CLOSURE_REASONS) + ".")],
) -> dict[str, Any]:
    """Record why the customer wants to close a credit card (closing it is a separate tool).

    One record per card and customer: a second call keeps the first reason.
    """
    _require(credit_card_account_id=credit_card_account_id, user_id=user_id, closure_reason=closure_reason)
    _one_of("closure_reason", closure_reason, CLOSURE_REASONS)
    key = closure_reason_id(credit_card_account_id, user_id)
    _add_new(db.credit_card_closure_reasons, key, {
        "record_id": key, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
        "closure_reason": closure_reason, "logged_at": TODAY_MDY, "status": "LOGGED"})
    return {"record_id": key, "credit_card_account_id": credit_card_account_id,
            "closure_reason": closure_reason, "logged": True}


@agent_tool("read")
def get_closure_reason_history_8293(
    db: BankingDB, *, credit_card_account_id: CardAccountId
) -> dict[str, Any]:
    """List earlier closure reasons logged for a credit card account (earlier attempts to close it)."""
    _require(credit_card_account_id=credit_card_account_id)
    records = _rows(db.credit_card_closure_reasons, credit_card_account_id=credit_card_account_id)
    return {"credit_card_account_id": credit_card_account_id, "closure_reasons": records}


@agent_tool("write")
def close_credit_card_account_7834(
    db: BankingDB, *, credit_card_account_id: CardAccountId, user_id: UserId
) -> dict[str, Any]:
    """Close a credit card account for good."""
    _require(credit_card_account_id=credit_card_account_id, user_id=user_id)
    _credit_account(db, credit_card_account_id)
    db.credit_card_accounts.edit(credit_card_account_id).update(
        status="CLOSED", closed_date=TODAY_MDY, closed_by=user_id)
    return {"credit_card_account_id": credit_card_account_id, "status": "CLOSED", "closed_date": TODAY_MDY}


@agent_tool("write")
def apply_statement_credit_8472(
    db: BankingDB,
    *,
    user_id: UserId,
    credit_card_account_id: CardAccountId,
    amount: Annotated[Number, arg("Credit in dollars, e.g. 25.00.")],
    reason: Annotated[str, arg("One of: " + ", ".join(STATEMENT_CREDIT_REASONS) + ".")],
) -> dict[str, Any]:
    """Credit a credit card account's statement; it appears as a negative transaction dated today.

    One credit per customer, reason and amount.
    """
    _require(user_id=user_id, credit_card_account_id=credit_card_account_id, reason=reason)
    if amount <= 0:
        raise ToolError("the credit amount must be positive")
    _one_of("reason", reason, STATEMENT_CREDIT_REASONS)
    _credit_account(db, credit_card_account_id)
    key = card_transaction_id(user_id, "STATEMENT_CREDIT", reason, amount, "Statement Credit")
    row = {"transaction_id": key, "user_id": user_id, "credit_card_account_id": credit_card_account_id,
           "credit_card_type": "N/A", "merchant_name": "Rho-Bank Statement Credit",
           "transaction_amount": f"-${amount:.2f}", "transaction_date": TODAY_MDY,
           "category": "Statement Credit", "status": "COMPLETED", "rewards_earned": "0 points",
           "credit_reason": reason}
    if not _add_new(db.credit_card_transaction_history, key, row):
        raise ToolError(f"this statement credit was already applied ({key})")
    return {"transaction_id": key, "credit_card_account_id": credit_card_account_id,
            "credit": f"${amount:.2f}", "reason": reason, "date": TODAY_MDY}


@agent_tool("write")
def apply_credit_card_account_flag_6147(
    db: BankingDB,
    *,
    credit_card_account_id: CardAccountId,
    user_id: UserId,
    flag_type: Annotated[str, arg("One of: " + ", ".join(FLAG_TYPES) + ".")],
    expiration_date: Annotated[str, arg("When the flag ends, MM/DD/YYYY.")],
    reason: Annotated[str, arg("One of: " + ", ".join(FLAG_REASONS) + ".")],
) -> dict[str, Any]:
    """Put an account-level flag on a credit card (fee waiver, promotional APR, rewards bonus …).

    The flag is effective today until its expiration date; one per card, type and expiry.
    """
    _require(credit_card_account_id=credit_card_account_id, user_id=user_id, flag_type=flag_type,
             expiration_date=expiration_date, reason=reason)
    _one_of("flag_type", flag_type, FLAG_TYPES)
    _one_of("reason", reason, FLAG_REASONS)
    _credit_account(db, credit_card_account_id)
    key = account_flag_id(credit_card_account_id, flag_type, expiration_date)
    row = {"flag_id": key, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
           "flag_type": flag_type, "effective_date": TODAY_MDY, "expiration_date": expiration_date,
           "reason": reason, "applied_at": TODAY_MDY, "status": "ACTIVE"}
    if not _add_new(db.credit_card_account_flags, key, row):
        raise ToolError(f"this flag is already on the account ({key})")
    return {"flag_id": key, "flag_type": flag_type, "effective_date": TODAY_MDY,
            "expiration_date": expiration_date, "status": "ACTIVE"}


# --- paying a card from checking ------------------------------------------------------------------


def _checking_balance(db: BankingDB, account_id: str, user_id: str) -> float:
    account = db.accounts.get(account_id)
    if account is None:
        raise ToolError(f"checking account {account_id!r} not found")
    if account.get("user_id") != user_id:
        raise ToolError(f"account {account_id!r} does not belong to user {user_id!r}")
    if account.get("class") != "checking":
        raise ToolError(f"account {account_id!r} is not a checking account")
    return account_balance(account)


@agent_tool("write")
def pay_credit_card_from_checking_9182(
    db: BankingDB,
    *,
    user_id: UserId,
    checking_account_id: Annotated[str, arg("The customer's Rho-Bank checking account to pay from.")],
    credit_card_account_id: CardAccountId,
    amount: Annotated[NumberOrText, arg("Dollars to pay: positive, at most the card balance and the funds.")],
) -> dict[str, Any]:
    """Pay down a credit card balance from the customer's own checking account, immediately."""
    _require(user_id=user_id, checking_account_id=checking_account_id,
             credit_card_account_id=credit_card_account_id, amount=amount)
    dollars = _as_float("amount", amount)
    if dollars <= 0:
        raise ToolError("the payment amount must be positive")
    funds = _checking_balance(db, checking_account_id, user_id)
    if dollars > funds:
        raise ToolError(f"insufficient funds: available ${funds:.2f}, payment ${dollars:.2f}")
    card = _owned_credit_account(db, credit_card_account_id, user_id)
    card_balance = parse_money(card.get("current_balance", "$0.00"))
    if dollars > card_balance:
        raise ToolError(f"the payment ${dollars:.2f} exceeds the card balance ${card_balance:.2f}")
    # checking balances are stored without '$', card balances with it (as in db.json)
    db.accounts.edit(checking_account_id)["current_holdings"] = f"{funds - dollars:.2f}"
    db.credit_card_accounts.edit(credit_card_account_id)["current_balance"] = f"${card_balance - dollars:.2f}"
    return {"paid": f"${dollars:.2f}", "checking_account_id": checking_account_id,
            "new_checking_balance": f"${funds - dollars:.2f}",
            "credit_card_account_id": credit_card_account_id,
            "new_card_balance": f"${card_balance - dollars:.2f}"}


# --- credit limit increases --------------------------------------------------------------------


def _whole_dollars(value: int | float) -> int | float:
    """At 1.0.1 the amount is stored as an int and a fraction is refused; at 8ebb749 it stays as sent."""
    if isinstance(value, float) and not value.is_integer():
        raise ToolError(f"requested_increase_amount must be a whole number of dollars, not {value}")
    return int(value)


@agent_tool("write")
def submit_credit_limit_increase_request_7392(
    db: BankingDB,
    *,
    credit_card_account_id: CardAccountId,
    user_id: UserId,
    requested_increase_amount: Annotated[Number, arg("Dollars to add to the limit, e.g. 2500.")],
) -> dict[str, Any]:
    """Record a customer's request to raise a credit limit (status PENDING; deciding is separate).

    One request per card, customer and amount: asking again for the same amount is refused.
    """
    _require(credit_card_account_id=credit_card_account_id, user_id=user_id)
    amount = _whole_dollars(requested_increase_amount) if db.grading.later else requested_increase_amount
    if amount <= 0:
        raise ToolError("the requested increase must be positive")
    _owned_credit_account(db, credit_card_account_id, user_id)
    key = limit_request_id(credit_card_account_id, user_id, amount)
    row = {"request_id": key, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
           "requested_increase_amount": amount, "submitted_at": TODAY_MDY, "status": "PENDING"}
    if not _add_new(db.credit_limit_increase_requests, key, row):
        raise ToolError(f"the same request already exists ({key})")
    return {"request_id": key, "requested_increase": f"${amount:,}", "status": "PENDING"}


@agent_tool("read")
def get_credit_limit_increase_history_4829(
    db: BankingDB, *, credit_card_account_id: CardAccountId
) -> dict[str, Any]:
    """List a credit card account's earlier limit-increase requests and decisions with dates and amounts."""
    _require(credit_card_account_id=credit_card_account_id)
    records = _rows(db.credit_limit_increase_requests, credit_card_account_id=credit_card_account_id)
    return {"credit_card_account_id": credit_card_account_id, "requests": records}


@agent_tool("read")
def get_payment_history_6183(
    db: BankingDB,
    *,
    credit_card_account_id: CardAccountId,
    months: Annotated[NumberOrText, arg("How many months back (a positive whole number).")],
) -> dict[str, Any] | str:
    """Show a credit card's recent payments, newest first, and how many in a row were on time."""
    _require(credit_card_account_id=credit_card_account_id, months=months)
    try:
        count = int(months)
    except ValueError:
        raise ToolError(f"months must be a positive whole number, not {months!r}") from None
    if count <= 0:
        raise ToolError("months must be a positive whole number")
    payments = _rows(db.payment_history, credit_card_account_id=credit_card_account_id)
    if not payments:
        return f"No payment history found for credit card account {credit_card_account_id!r}."
    # upstream orders by the raw date string (stable, descending); dates mix MM/DD/YYYY and ISO
    payments.sort(key=lambda p: p.get("payment_date") or "", reverse=True)
    recent = payments[:count]
    on_time = next((i for i, p in enumerate(recent) if p.get("status") != "ON_TIME"), len(recent))
    return {"credit_card_account_id": credit_card_account_id, "months": count,
            "consecutive_on_time_payments": on_time,
            "payments": [{k: p.get(k) for k in ("payment_date", "amount", "status")} for p in recent]}


def _limit_increase_blocked(db: BankingDB, account: Mapping[str, Any], account_id: str, user_id: str) -> bool:
    """Open credit disputes of the customer, an open replacement order of the card, or bad standing."""
    if any(d.get("user_id") == user_id and d.get("status") in OPEN_DISPUTE_STATES
           for d in db.transaction_disputes.values()):
        return True
    if any(o.get("credit_card_account_id") == account_id and o.get("status") in OPEN_ORDER_STATES
           for o in db.credit_card_orders.values()):
        return True
    return str(account.get("account_status", "")).upper() in BAD_STANDING


@agent_tool("write")
def approve_credit_limit_increase_5847(
    db: BankingDB,
    *,
    credit_card_account_id: CardAccountId,
    user_id: UserId,
    new_credit_limit: Annotated[NumberOrText, arg("The new total limit in dollars, e.g. 7500.")],
) -> dict[str, Any]:
    """Raise a credit card's limit to a new total, if the account is eligible right now.

    Ineligible (open disputes, a replacement card on its way, an account not in good standing)
    gives one generic refusal; the customer is emailed on approval.
    """
    _require(credit_card_account_id=credit_card_account_id, user_id=user_id,
             new_credit_limit=new_credit_limit)
    account = _owned_credit_account(db, credit_card_account_id, user_id)
    if _limit_increase_blocked(db, account, credit_card_account_id, user_id):
        raise ToolError("the credit limit increase cannot be approved at this time")
    new_limit = _as_float("new_credit_limit", new_credit_limit)
    previous = parse_money(account.get("credit_limit", "$0.00"))
    db.credit_card_accounts.edit(credit_card_account_id)["credit_limit"] = f"${new_limit:.2f}"
    key = limit_request_id(credit_card_account_id, user_id, new_limit - previous)
    _add_new(db.credit_limit_increase_requests, key, {
        "request_id": key, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
        "previous_limit": f"${previous:.2f}", "new_limit": f"${new_limit:.2f}",
        "increase_amount": f"${new_limit - previous:.2f}", "decision_date": TODAY_MDY, "status": "APPROVED"})
    return {"credit_card_account_id": credit_card_account_id, "status": "APPROVED",
            "previous_limit": f"${previous:.2f}", "new_limit": f"${new_limit:.2f}",
            "effective_date": TODAY_MDY}


@agent_tool("write")
def deny_credit_limit_increase_5848(
    db: BankingDB,
    *,
    credit_card_account_id: CardAccountId,
    user_id: UserId,
    denial_reason: Annotated[str, arg("One of: " + ", ".join(DENIAL_REASONS) + ".")],
) -> dict[str, Any]:
    """Record the denial of a credit limit increase; the customer is notified with the reason."""
    _require(credit_card_account_id=credit_card_account_id, user_id=user_id, denial_reason=denial_reason)
    _one_of("denial_reason", denial_reason, DENIAL_REASONS)
    _credit_account(db, credit_card_account_id)
    key = limit_request_id(credit_card_account_id, user_id, 0.0)
    _add_new(db.credit_limit_increase_requests, key, {
        "request_id": key, "credit_card_account_id": credit_card_account_id, "user_id": user_id,
        "denial_reason": denial_reason, "decision_date": TODAY_MDY, "status": "DENIED"})
    return {"credit_card_account_id": credit_card_account_id, "status": "DENIED",
            "denial_reason": denial_reason, "date": TODAY_MDY}


CARD_TOOLS: tuple[str, ...] = (
    "example_agent_tool_0000", "update_transaction_rewards_3847", "initial_transfer_to_human_agent_0218",
    "initial_transfer_to_human_agent_1822", "emergency_credit_bureau_incident_transfer_1114",
    "file_credit_card_transaction_dispute_4829", "file_debit_card_transaction_dispute_6281",
    "set_debit_card_recurring_block_7382", "get_debit_dispute_status_7483", "get_atm_deposit_images_8473",
    "order_replacement_credit_card_7291", "get_user_dispute_history_7291",
    "get_pending_replacement_orders_5765", "log_credit_card_closure_reason_4521",
    "get_closure_reason_history_8293", "apply_statement_credit_8472", "apply_credit_card_account_flag_6147",
    "close_credit_card_account_7834", "pay_credit_card_from_checking_9182",
    "submit_credit_limit_increase_request_7392", "get_credit_limit_increase_history_4829",
    "get_payment_history_6183", "approve_credit_limit_increase_5847", "deny_credit_limit_increase_5848",
)
"""The names this module registers (upstream's 8ebb749 names); the placeholder is one of them."""
