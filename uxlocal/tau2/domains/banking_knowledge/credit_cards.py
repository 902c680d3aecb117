"""banking_knowledge's discoverable agent tools for credit cards (spec tau2-telecom-banking.md §B.2).

Disputes, replacement cards, closures, statement credits and account flags, paying a card from
checking, and credit-limit-increase requests and decisions, with their history look-ups.

Behaviour and answers follow upstream's pinned tools (8ebb749), written here in our words: the
same checks in the same order (so the same refusal wins), the same rows with the same ids, and
the same answer texts. Arguments arrive as sent (``discoverable.py``): a number that is really text
fails where upstream's arithmetic fails. Some upstream writes are silent no-ops when their id
exists (closure reasons, limit decisions, flags on repeat); so are ours.
"""

from __future__ import annotations

from typing import Annotated, Any

from ...toolkit import arg
from .db import TODAY_MDY, BankingDB, account_balance, card_transaction_id, dispute_id, seeded_id
from .discoverable import agent_tool
from .records import add_row, arguments_block, found_any, rows_where, titled

Text = Annotated[str, arg("A text value; see the knowledge base for the allowed codes.")]
UserId = Annotated[str, arg("The customer's user id.")]
CardAccountId = Annotated[str, arg("The credit card account id, e.g. 'cc_<user id>_gold'.")]
Flag = Annotated[bool, arg("Yes or no.")]
Dollars = Annotated[float, arg("An amount in dollars.")]

CREDIT_DISPUTE_REASONS = [
    "unauthorized_fraudulent_charge",
    "duplicate_charge",
    "incorrect_amount",
    "goods_services_not_received",
    "goods_services_not_as_described",
    "canceled_subscription_still_charging",
    "refund_never_processed",
]
REPLACEMENT_REASONS = ["fraud_suspected", "lost", "stolen", "damaged", "expired", "other"]
CLOSURE_REASONS = [
    "annual_fee",
    "not_using_card",
    "found_better_card",
    "unhappy_with_rewards",
    "simplifying_finances",
    "negative_experience",
    "other",
]
STATEMENT_CREDIT_REASONS = [
    "goodwill_adjustment",
    "promotional_credit",
    "annual_fee_reversal",
    "late_fee_reversal",
    "interest_charge_reversal",
    "dispute_resolution",
    "price_match",
    "retention_offer",
    "error_correction",
    "other",
]
FLAG_TYPES = ["annual_fee_waived", "promotional_apr", "rewards_bonus", "other"]
FLAG_REASONS = ["retention_offer", "loyalty_benefit", "promotional", "error_correction", "other"]
DENIAL_REASONS = [
    "insufficient_account_age",
    "cooldown_period_active",
    "pending_disputes",
    "pending_replacement_card",
    "past_due_balance",
    "high_utilization",
    "insufficient_payment_history",
    "requested_amount_exceeds_limit",
    "other",
]
OPEN_DISPUTE_STATES = ("SUBMITTED", "UNDER_REVIEW", "PENDING")
"""A credit dispute in one of these states blocks a limit increase for the whole customer."""
OPEN_ORDER_STATES = ("PENDING", "PROCESSING", "SHIPPED")
"""A replacement order in one of these states blocks a limit increase (new orders say ORDERED)."""
BAD_STANDING = ("PAST_DUE", "DELINQUENT", "COLLECTIONS", "CLOSED")


def limit_request_id(card_account_id: object, user_id: object, increase: float) -> str:
    """Id of a credit-limit request or decision, keyed by the increase in dollars (two decimals)."""
    return "cli_" + seeded_id(f"cli_request:{card_account_id}:{user_id}:{increase:.2f}", 12)


def history(
    db: BankingDB, lines: tuple[str, str, str], where: tuple[str, str, object], none_text: str
) -> str:
    """Write a history look-up's answer: summary, ``Executed:``, heading, then rows or ``none_text``."""
    summary, tool, heading = lines
    found = rows_where(db, *where)
    return "\n".join(
        [summary, "", f"Executed: {tool}", heading, found if found_any(found) else f"\n{none_text}"]
    )


def _card_account_missing(db: BankingDB, card_account_id: object) -> str | None:
    """Upstream's look-up test for a credit card account: the refusal when no row has that account id."""
    if found_any(rows_where(db, "credit_card_accounts", "account_id", card_account_id)):
        return None
    return f"Error: Credit card account '{card_account_id}' not found."


def _money(text: object) -> float:
    """Read a ``$1,234.50`` field as dollars; unreadable is 0 (as upstream's limit and balance reads)."""
    try:
        return float(str(text).replace("$", "").replace(",", ""))
    except (TypeError, ValueError):
        return 0.0


# --- disputes ---------------------------------------------------------------------------------


@agent_tool("write")
def file_credit_card_transaction_dispute_4829(
    db: BankingDB,
    transaction_id: Text,
    card_action: Text,
    card_last_4_digits: Text,
    full_name: Text,
    user_id: UserId,
    phone: Text,
    email: Text,
    address: Text,
    contacted_merchant: Flag,
    purchase_date: Text,
    issue_noticed_date: Text,
    dispute_reason: Text,
    resolution_requested: Text,
    eligible_for_provisional_credit: Flag,
    partial_refund_amount: Annotated[float | None, arg("Only for a partial refund: the amount.")] = None,
) -> str:
    """File a formal dispute for a credit card transaction."""
    if not transaction_id or not user_id:
        return "Error: Missing required parameters."
    for name, value, allowed in (
        ("card_action", card_action, ["keep_active", "cancel_and_reissue"]),
        ("dispute_reason", dispute_reason, CREDIT_DISPUTE_REASONS),
        ("resolution_requested", resolution_requested, ["full_refund", "partial_refund"]),
    ):
        if value not in allowed:
            return f"Error: Invalid {name}. Must be one of: {allowed}"
    if resolution_requested == "partial_refund" and partial_refund_amount is None:
        return "Error: partial_refund_amount is required when resolution_requested is 'partial_refund'."
    key = dispute_id(user_id, transaction_id)
    row = {
        "dispute_id": key,
        "transaction_id": transaction_id,
        "user_id": user_id,
        "card_action": card_action,
        "card_last_4_digits": card_last_4_digits,
        "full_name": full_name,
        "phone": phone,
        "email": email,
        "address": address,
        "contacted_merchant": contacted_merchant,
        "purchase_date": purchase_date,
        "issue_noticed_date": issue_noticed_date,
        "dispute_reason": dispute_reason,
        "resolution_requested": resolution_requested,
        "partial_refund_amount": partial_refund_amount,
        "eligible_for_provisional_credit": eligible_for_provisional_credit,
        "provisional_credit_given": eligible_for_provisional_credit,
        "submitted_at": TODAY_MDY,
        "status": "SUBMITTED",
    }
    if not add_row(db, "transaction_disputes", key, row):
        return "Error: Dispute may have already been filed for this transaction."
    parts = [
        "Credit card transaction dispute filed successfully. A case has been opened and will be "
        "reviewed within 10 business days.",
        "",
        "Executed: file_credit_card_transaction_dispute_4829",
        f"Dispute ID: {key}",
        f"Transaction: {transaction_id}",
        f"Reason: {titled(dispute_reason)}",
        f"Resolution Requested: {titled(resolution_requested)}",
    ]
    if partial_refund_amount:
        parts.append(f"Partial Refund Amount: ${partial_refund_amount:.2f}")
    parts.append(
        "Provisional Credit: ELIGIBLE - Credit will be applied within 2 business days."
        if eligible_for_provisional_credit
        else "Provisional Credit: Not eligible at this time."
    )
    return "\n".join(parts)


@agent_tool("read")
def get_user_dispute_history_7291(db: BankingDB, user_id: UserId) -> str:
    """Retrieve a customer's credit card transaction disputes."""
    if not user_id:
        return "Error: Missing required parameter: user_id"
    return history(
        db,
        (
            "User transaction dispute history retrieved successfully.",
            "get_user_dispute_history_7291",
            f"Transaction dispute history for user {user_id}:",
        ),
        ("transaction_disputes", "user_id", user_id),
        "No transaction disputes found for this user.",
    )


# --- replacement and closure --------------------------------------------------------------------


@agent_tool("write")
def order_replacement_credit_card_7291(
    db: BankingDB,
    credit_card_account_id: CardAccountId,
    user_id: UserId,
    shipping_address: Text,
    reason: Text,
    expedited_shipping: Annotated[bool, arg("Ship in 2-3 business days instead of 7-10.")] = False,
) -> str:
    """Order a replacement credit card; the old card is cancelled at once."""
    if not credit_card_account_id or not user_id or not shipping_address or not reason:
        return (
            "Error: Missing required parameters (credit_card_account_id, user_id, shipping_address, reason)."
        )
    if reason not in REPLACEMENT_REASONS:
        return f"Error: Invalid reason. Must be one of: {REPLACEMENT_REASONS}"
    missing = _card_account_missing(db, credit_card_account_id)
    if missing:
        return missing
    key = "ccord_" + seeded_id(f"credit_card_order:{credit_card_account_id}:{user_id}:{reason}", 12)
    row = {
        "order_id": key,
        "credit_card_account_id": credit_card_account_id,
        "user_id": user_id,
        "shipping_address": shipping_address,
        "reason": reason,
        "expedited_shipping": expedited_shipping,
        "order_date": TODAY_MDY,
        "status": "ORDERED",
        "old_card_cancelled": True,
    }
    if not add_row(db, "credit_card_orders", key, row):
        return "Error: Order may have already been placed for this card replacement."
    if db.has_row("credit_card_accounts", credit_card_account_id):
        db.credit_card_accounts.edit(credit_card_account_id).update(status="CLOSED", closed_date=TODAY_MDY)
    method, days = (
        ("Expedited", "2-3 business days") if expedited_shipping else ("Standard", "7-10 business days")
    )
    return "\n".join(
        [
            f"Order ID: {key}",
            f"Card Account: {credit_card_account_id}",
            f"Reason: {titled(reason)}",
            f"Shipping Address: {shipping_address}",
            f"Shipping Method: {method}",
            f"Expected Delivery: {days}",
            "",
            "The old card has been cancelled for security. The new card will have the same account "
            "number but a new card number and CVV.",
        ]
    )


@agent_tool("read")
def get_pending_replacement_orders_5765(db: BankingDB, credit_card_account_id: CardAccountId) -> str:
    """Check whether a credit card account has replacement card orders."""
    if not credit_card_account_id:
        return "Error: Missing required parameter: credit_card_account_id"
    return history(
        db,
        (
            "Pending replacement orders check completed.",
            "get_pending_replacement_orders_5765",
            f"Replacement orders for credit card account {credit_card_account_id}:",
        ),
        ("credit_card_orders", "credit_card_account_id", credit_card_account_id),
        "No pending replacement orders found for this credit card account.",
    )


@agent_tool("write")
def log_credit_card_closure_reason_4521(
    db: BankingDB, credit_card_account_id: CardAccountId, user_id: UserId, closure_reason: Text
) -> str:
    """Log why a customer wants to close a credit card account (once per card and customer)."""
    if not credit_card_account_id or not user_id or not closure_reason:
        return "Error: Missing required parameters."
    if closure_reason not in CLOSURE_REASONS:
        return f"Error: Invalid closure_reason. Must be one of: {CLOSURE_REASONS}"
    key = "clsr_" + seeded_id(f"closure_reason:{credit_card_account_id}:{user_id}", 12)
    add_row(
        db,
        "credit_card_closure_reasons",
        key,
        {
            "record_id": key,
            "credit_card_account_id": credit_card_account_id,
            "user_id": user_id,
            "closure_reason": closure_reason,
            "logged_at": TODAY_MDY,
            "status": "LOGGED",
        },
    )
    sent = {
        "credit_card_account_id": credit_card_account_id,
        "user_id": user_id,
        "closure_reason": closure_reason,
    }
    return (
        f"Closure reason logged successfully.\n\nExecuted: log_credit_card_closure_reason_4521\n"
        f"Arguments: {arguments_block(sent)}\n"
        f"Closure reason '{closure_reason}' logged for account {credit_card_account_id}."
    )


@agent_tool("read")
def get_closure_reason_history_8293(db: BankingDB, credit_card_account_id: CardAccountId) -> str:
    """Retrieve the closure reasons logged for a credit card account."""
    if not credit_card_account_id:
        return "Error: Missing required parameter: credit_card_account_id"
    return history(
        db,
        (
            "Closure reason history retrieved successfully.",
            "get_closure_reason_history_8293",
            f"Closure reason history for credit card account {credit_card_account_id}:",
        ),
        ("credit_card_closure_reasons", "credit_card_account_id", credit_card_account_id),
        "No closure reason records found for this credit card account.",
    )


@agent_tool("write")
def close_credit_card_account_7834(
    db: BankingDB, credit_card_account_id: CardAccountId, user_id: UserId
) -> str:
    """Close a credit card account permanently."""
    if not credit_card_account_id or not user_id:
        return "Error: Missing required parameters (credit_card_account_id, user_id)."
    missing = _card_account_missing(db, credit_card_account_id)
    if missing:
        return missing
    if not db.has_row("credit_card_accounts", credit_card_account_id):
        return f"Error: Failed to close credit card account '{credit_card_account_id}'."
    db.credit_card_accounts.edit(credit_card_account_id).update(
        status="CLOSED", closed_date=TODAY_MDY, closed_by=user_id
    )
    sent = {"credit_card_account_id": credit_card_account_id, "user_id": user_id}
    return (
        f"Credit card account closed successfully.\n\nExecuted: close_credit_card_account_7834\n"
        f"Arguments: {arguments_block(sent)}\nAccount {credit_card_account_id} has been closed."
    )


# --- credits and flags ----------------------------------------------------------------------------


@agent_tool("write")
def apply_statement_credit_8472(
    db: BankingDB, user_id: UserId, credit_card_account_id: CardAccountId, amount: Dollars, reason: Text
) -> str:
    """Apply a statement credit to a credit card account (a negative transaction)."""
    if not user_id or not credit_card_account_id or amount is None or not reason:
        return "Error: Missing required parameters (user_id, credit_card_account_id, amount, reason)."
    if amount <= 0:
        return "Error: Credit amount must be positive."
    if reason not in STATEMENT_CREDIT_REASONS:
        return f"Error: Invalid reason. Must be one of: {STATEMENT_CREDIT_REASONS}"
    missing = _card_account_missing(db, credit_card_account_id)
    if missing:
        return missing
    key = card_transaction_id(user_id, "STATEMENT_CREDIT", reason, amount, "Statement Credit")
    row = {
        "transaction_id": key,
        "user_id": user_id,
        "credit_card_account_id": credit_card_account_id,
        "credit_card_type": "N/A",
        "merchant_name": "Rho-Bank Statement Credit",
        "transaction_amount": f"-${amount:.2f}",
        "transaction_date": TODAY_MDY,
        "category": "Statement Credit",
        "status": "COMPLETED",
        "rewards_earned": "0 points",
        "credit_reason": reason,
    }
    if not add_row(db, "credit_card_transaction_history", key, row):
        return f"Error: Failed to apply statement credit. Transaction ID '{key}' may already exist."
    return (
        f"Statement credit applied successfully.\n\nExecuted: apply_statement_credit_8472\n"
        f"  - Transaction ID: {key}\n  - User ID: {user_id}\n  - Account: {credit_card_account_id}\n"
        f"  - Credit Amount: ${amount:.2f}\n  - Reason: {titled(reason)}\n  - Date: {TODAY_MDY}"
    )


@agent_tool("write")
def apply_credit_card_account_flag_6147(
    db: BankingDB,
    credit_card_account_id: CardAccountId,
    user_id: UserId,
    flag_type: Text,
    expiration_date: Text,
    reason: Text,
) -> str:
    """Apply a flag (fee waiver, promotional APR, rewards bonus) to a credit card account."""
    if not credit_card_account_id or not user_id or not flag_type or not expiration_date or not reason:
        return (
            "Error: Missing required parameters (credit_card_account_id, user_id, flag_type, "
            "expiration_date, reason)."
        )
    if flag_type not in FLAG_TYPES:
        return f"Error: Invalid flag_type. Must be one of: {FLAG_TYPES}"
    if reason not in FLAG_REASONS:
        return f"Error: Invalid reason. Must be one of: {FLAG_REASONS}"
    missing = _card_account_missing(db, credit_card_account_id)
    if missing:
        return missing
    key = "ccflag_" + seeded_id(f"account_flag:{credit_card_account_id}:{flag_type}:{expiration_date}", 12)
    row = {
        "flag_id": key,
        "credit_card_account_id": credit_card_account_id,
        "user_id": user_id,
        "flag_type": flag_type,
        "effective_date": TODAY_MDY,
        "expiration_date": expiration_date,
        "reason": reason,
        "applied_at": TODAY_MDY,
        "status": "ACTIVE",
    }
    if not add_row(db, "credit_card_account_flags", key, row):
        return f"Error: Failed to apply account flag. Flag ID '{key}' may already exist."
    return (
        f"Account flag applied successfully!\n  - Flag ID: {key}\n  - Account: {credit_card_account_id}\n"
        f"  - User ID: {user_id}\n  - Flag Type: {titled(flag_type)}\n  - Effective Date: {TODAY_MDY}\n"
        f"  - Expiration Date: {expiration_date}\n  - Reason: {titled(reason)}"
    )


# --- payments --------------------------------------------------------------------------------------


def _owned_account(db: BankingDB, table: str, key: object, user_id: object, label: str) -> str | None:
    """Refuse when ``key`` is not a row of ``table`` or belongs to someone else."""
    if not db.has_row(table, key):
        return f"Error: {label} '{key}' not found."
    if db.row(table, key).get("user_id") != user_id:
        return f"Error: {label} '{key}' does not belong to user '{user_id}'."
    return None


@agent_tool("write")
def pay_credit_card_from_checking_9182(
    db: BankingDB,
    user_id: UserId,
    checking_account_id: Text,
    credit_card_account_id: CardAccountId,
    amount: Dollars,
) -> str:
    """Pay a credit card balance from the customer's checking account."""
    if not user_id or not checking_account_id or not credit_card_account_id or amount is None:
        return (
            "Error: Missing required parameters (user_id, checking_account_id, credit_card_account_id, "
            "amount)."
        )
    try:
        amount = float(amount)
    except (TypeError, ValueError):
        return "Error: Invalid payment amount. Must be a positive number."
    if amount <= 0:
        return "Error: Payment amount must be a positive number."
    refusal = _owned_account(db, "accounts", checking_account_id, user_id, "Checking account")
    if refusal:
        return refusal
    checking = db.accounts.get(checking_account_id)
    assert checking is not None
    if checking.get("class") != "checking":
        return f"Error: Account '{checking_account_id}' is not a checking account."
    balance = account_balance(checking)
    if amount > balance:
        return (
            f"Error: Insufficient funds in checking account. Available balance: ${balance:.2f}, "
            f"requested payment: ${amount:.2f}."
        )
    refusal = _owned_account(
        db, "credit_card_accounts", credit_card_account_id, user_id, "Credit card account"
    )
    if refusal:
        return refusal
    owed = _money(db.row("credit_card_accounts", credit_card_account_id).get("current_balance", "$0.00"))
    if amount > owed:
        return (
            f"Error: Payment amount (${amount:.2f}) exceeds credit card balance (${owed:.2f}). "
            "Please specify an amount up to the outstanding balance."
        )
    db.accounts.edit(checking_account_id)["current_holdings"] = f"{balance - amount:.2f}"
    db.credit_card_accounts.edit(credit_card_account_id)["current_balance"] = f"${owed - amount:.2f}"
    return (
        f"Payment processed successfully!\n  - Payment Amount: ${amount:.2f}\n"
        f"  - From Checking Account: {checking_account_id}\n"
        f"  - To Credit Card Account: {credit_card_account_id}\n"
        f"  - New Checking Balance: ${balance - amount:.2f}\n"
        f"  - New Credit Card Balance: ${owed - amount:.2f}\n"
        "The payment has been applied immediately."
    )


@agent_tool("read")
def get_payment_history_6183(
    db: BankingDB,
    credit_card_account_id: CardAccountId,
    months: Annotated[int, arg("How many months of history to show.")],
) -> str:
    """Retrieve a credit card account's payment history, newest first."""
    if not credit_card_account_id or months is None:
        return "Error: Missing required parameters (credit_card_account_id, months)."
    try:
        months = int(months)
    except (TypeError, ValueError):
        return "Error: Invalid months value. Must be a positive integer."
    if months <= 0:
        return "Error: months must be a positive integer."
    payments = [
        p for p in db.payment_history.values() if p.get("credit_card_account_id") == credit_card_account_id
    ]
    if not payments:
        return f"No payment history found for account '{credit_card_account_id}'."
    payments = sorted(payments, key=lambda p: p.get("payment_date") or "", reverse=True)[:months]
    on_time = 0
    for payment in payments:
        if payment.get("status") != "ON_TIME":
            break
        on_time += 1
    parts = [
        f"Payment history for account '{credit_card_account_id}' (last {months} months):",
        f"Consecutive on-time payments: {on_time}",
    ]
    parts += [
        f"\n  - Payment Date: {p.get('payment_date')}\n    Amount: {p.get('amount')}\n"
        f"    Status: {p.get('status')}"
        for p in payments
    ]
    return "\n".join(parts)


# --- credit limits ---------------------------------------------------------------------------------


@agent_tool("write")
def submit_credit_limit_increase_request_7392(
    db: BankingDB,
    credit_card_account_id: CardAccountId,
    user_id: UserId,
    requested_increase_amount: Annotated[int, arg("The increase in whole dollars, e.g. 2500.")],
) -> str:
    """Submit a credit limit increase request for a credit card."""
    if not credit_card_account_id or not user_id or requested_increase_amount is None:
        return "Error: Missing required parameters."
    if requested_increase_amount <= 0:
        return "Error: Requested increase amount must be positive."
    refusal = _owned_account(
        db, "credit_card_accounts", credit_card_account_id, user_id, "Credit card account"
    )
    if refusal:
        return refusal
    key = limit_request_id(credit_card_account_id, user_id, requested_increase_amount)
    row = {
        "request_id": key,
        "credit_card_account_id": credit_card_account_id,
        "user_id": user_id,
        "requested_increase_amount": requested_increase_amount,
        "submitted_at": TODAY_MDY,
        "status": "PENDING",
    }
    if not add_row(db, "credit_limit_increase_requests", key, row):
        return "Error: A similar request may already exist."
    return (
        f"Credit limit increase request submitted successfully.\n\n"
        f"Executed: submit_credit_limit_increase_request_7392\n  - Request ID: {key}\n"
        f"  - Account: {credit_card_account_id}\n  - Requested Increase: ${requested_increase_amount:,}\n"
        "  - Status: PENDING"
    )


@agent_tool("read")
def get_credit_limit_increase_history_4829(db: BankingDB, credit_card_account_id: CardAccountId) -> str:
    """Retrieve a credit card account's credit limit increase requests and decisions."""
    if not credit_card_account_id:
        return "Error: Missing required parameter: credit_card_account_id"
    return history(
        db,
        (
            "Credit limit increase history retrieved.",
            "get_credit_limit_increase_history_4829",
            f"Credit limit increase history for account {credit_card_account_id}:",
        ),
        ("credit_limit_increase_requests", "credit_card_account_id", credit_card_account_id),
        "No credit limit increase requests found for this account.",
    )


def _limit_blocked(db: BankingDB, card: dict[str, Any], card_account_id: object, user_id: object) -> bool:
    """Whether an open dispute, a replacement in flight or a bad standing blocks an approval."""
    if any(
        d.get("user_id") == user_id and d.get("status") in OPEN_DISPUTE_STATES
        for d in db.transaction_disputes.values()
    ):
        return True
    if any(
        o.get("credit_card_account_id") == card_account_id and o.get("status") in OPEN_ORDER_STATES
        for o in db.credit_card_orders.values()
    ):
        return True
    return str(card.get("account_status", "")).upper() in BAD_STANDING


@agent_tool("write")
def approve_credit_limit_increase_5847(
    db: BankingDB,
    credit_card_account_id: CardAccountId,
    user_id: UserId,
    new_credit_limit: Annotated[int, arg("The new total limit in whole dollars, e.g. 7500.")],
) -> str:
    """Approve and apply a credit limit increase (the new total limit)."""
    if not credit_card_account_id or not user_id or new_credit_limit is None:
        return "Error: Missing required parameters."
    refusal = _owned_account(
        db, "credit_card_accounts", credit_card_account_id, user_id, "Credit card account"
    )
    if refusal:
        return refusal
    card = db.credit_card_accounts.get(credit_card_account_id)
    assert card is not None
    if _limit_blocked(db, card, credit_card_account_id, user_id):
        return "Error: Credit limit increase request cannot be approved at this time."
    before, after = _money(card.get("credit_limit", "$0.00")), float(new_credit_limit)
    db.credit_card_accounts.edit(credit_card_account_id)["credit_limit"] = f"${after:.2f}"
    key = limit_request_id(credit_card_account_id, user_id, after - before)
    add_row(
        db,
        "credit_limit_increase_requests",
        key,
        {
            "request_id": key,
            "credit_card_account_id": credit_card_account_id,
            "user_id": user_id,
            "previous_limit": f"${before:.2f}",
            "new_limit": f"${after:.2f}",
            "increase_amount": f"${after - before:.2f}",
            "decision_date": TODAY_MDY,
            "status": "APPROVED",
        },
    )
    return (
        f"Credit limit increase approved!\n  - Account: {credit_card_account_id}\n"
        f"  - Previous Limit: ${before:.2f}\n  - New Limit: ${after:.2f}\n"
        f"  - Increase: ${after - before:.2f}\n"
        f"  - Effective Date: {TODAY_MDY}\nThe customer will receive a confirmation email."
    )


@agent_tool("write")
def deny_credit_limit_increase_5848(
    db: BankingDB, credit_card_account_id: CardAccountId, user_id: UserId, denial_reason: Text
) -> str:
    """Deny a credit limit increase request, with the reason code."""
    if not credit_card_account_id or not user_id or not denial_reason:
        return "Error: Missing required parameters."
    if denial_reason not in DENIAL_REASONS:
        return f"Error: Invalid denial_reason. Must be one of: {', '.join(DENIAL_REASONS)}"
    if not db.has_row("credit_card_accounts", credit_card_account_id):
        return f"Error: Credit card account '{credit_card_account_id}' not found."
    key = limit_request_id(credit_card_account_id, user_id, 0.0)
    add_row(
        db,
        "credit_limit_increase_requests",
        key,
        {
            "request_id": key,
            "credit_card_account_id": credit_card_account_id,
            "user_id": user_id,
            "denial_reason": denial_reason,
            "decision_date": TODAY_MDY,
            "status": "DENIED",
        },
    )
    return (
        f"Credit limit increase request denied.\n  - Account: {credit_card_account_id}\n"
        f"  - Denial Reason: {denial_reason}\n  - Date: {TODAY_MDY}\n"
        "The customer will receive a notification explaining the denial."
    )
