"""banking_knowledge user tools (spec tau2-telecom-banking.md §B.3): 6 listed, 4 discoverable.

The user acts on the same DB as the agent. Their writes are part of the DB check: an application
(its id is seeded with ``str(annual_income)``, so ``100000`` and ``100000.0`` differ at the pinned
grading; 1.0.1 reads the income as a float), a referral, a transaction, and one
``transfer_request_N`` row per request for a human, so the number of requests is hashed.

Discoverable user tools check themselves that the agent gave them (the ``GIVEN`` row) and log each
call in ``user_discoverable_tool_calls``, keyed by the tool name and the sorted JSON of the
arguments, so a direct call by name behaves as one through ``call_discoverable_user_tool``. As
upstream, refusals are ordinary answers and arguments are taken as sent.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from typing import Annotated, Any

from ...toolkit import Toolkit, arg
from .db import TODAY_MDY, BankingDB, account_balance, card_transaction_id, dispute_id, seeded_id
from .discoverable import DISCOVERABLE_USER, user_tool
from .doors import ArgumentsJson, parse_arguments
from .records import add_row, arguments_block, found_any, query_text, rows_where

USER = Toolkit("banking_knowledge user", "KnowledgeUserTools", raw=True)

CARD_REWARD_RATES: dict[str, dict[str, float]] = {
    "Bronze Rewards Card": {"default": 1.0},
    "Silver Rewards Card": {"Travel": 4.0, "Software": 4.0, "default": 1.0},
    "Gold Rewards Card": {"default": 2.5},
    "Platinum Rewards Card": {"default": 10.0},
    "Business Bronze Rewards Card": {"default": 1.0},
    "Business Silver Rewards Card": {"Travel": 10.0, "Software": 10.0, "default": 1.0},
    "Green Rewards Card": {"Sustainable": 3.0, "default": 1.0},
    "Business Gold Rewards Card": {"Operations": 2.5, "default": 1.0},
    "Business Platinum Rewards Card": {"Travel": 4.0, "Software": 4.0, "Media": 4.0, "default": 1.5},
    "Silver Zoom Card": {"Transportation": 3.0, "default": 1.0},
    "Diamond Elite Card": {"default": 5.0},
    "EcoCard": {"Green": 5.0, "default": 1.0},
    "Crypto-Cash Back": {"default": 2.0},
}
"""Reward percent by card and purchase category (``default`` for the rest), as the bank's card
profiles state them; one point per cent of cash back."""
CARD_TYPES: list[str] = sorted(CARD_REWARD_RATES)
"""The 13 card types one can apply for, in the order the refusal lists them."""

UserId = Annotated[str, arg("Your user id.")]


# --- listed tools ------------------------------------------------------------------------------


@USER.tool("write", "Apply for a Rho-Bank credit card in your name.")
def apply_for_credit_card(
    db: BankingDB,
    card_type: Annotated[str, arg("The card's exact name, e.g. 'Gold Rewards Card'.")],
    customer_name: Annotated[str, arg("Your full legal name.")],
    annual_income: Annotated[float, arg("Your annual income in USD, e.g. 85000.")],
    rho_bank_subscription: Annotated[bool, arg("Whether you have a Rho-Bank+ subscription.")] = False,
) -> str:
    """Keep the income's JSON spelling in the id and the row (8ebb749 hashes 100000 and 100000.0 apart)."""
    if card_type not in CARD_TYPES:
        return f"Error: Invalid card_type '{card_type}'. Must be one of: {CARD_TYPES}"
    income = float(annual_income) if db.grading.later else annual_income
    key = seeded_id(f"credit_card:{card_type}:{customer_name}:{income}:{rho_bank_subscription}")
    row = {
        "application_id": key,
        "card_type": card_type,
        "customer_name": customer_name,
        "annual_income": income,
        "rho_bank_subscription": rho_bank_subscription,
        "status": "PENDING",
        "date": TODAY_MDY,
    }
    if not add_row(db, "credit_card_applications", key, row):
        return f"Failed to submit application: Record ID '{key}' may already exist."
    return (
        "Credit card application submitted:\nYour application has been successfully submitted. "
        "You will receive a decision within 5-7 business days via email."
    )


@USER.tool("write", "Refer someone to open a Rho-Bank account or card.")
def submit_referral(
    db: BankingDB,
    user_id: UserId,
    account_type: Annotated[str, arg("The account or card you refer them to, e.g. 'Gold Rewards Card'.")],
) -> str:
    """Seed the referral id by referrer and account type, so there is one referral per pair."""
    key = seeded_id(":".join(["referral", user_id, account_type]))
    row = {
        "referral_id": key,
        "referrer_id": user_id,
        "referred_account_type": account_type,
        "referral_status": "NO_PROGRESS",
        "date": TODAY_MDY,
    }
    if not add_row(db, "referrals", key, row):
        return f"Failed to submit referral: Record ID '{key}' may already exist."
    return (
        f"Referral request submitted successfully!\n  - Referral ID: {key}\n  - Referrer ID: {user_id}\n"
        f"  - Account Type: {account_type}\n  - Status: NO_PROGRESS\n  - Date: {TODAY_MDY}\n\n"
        "Share your referral ID with the person you're referring. "
        "They will need to use this when applying for their account."
    )


@USER.tool("write", "Use a tool the agent gave you (see list_discoverable_user_tools).")
def call_discoverable_user_tool(
    db: BankingDB,
    discoverable_tool_name: Annotated[str, arg("The tool's name, as the agent gave it.")],
    arguments: ArgumentsJson = "{}",
) -> object:
    """Check the arguments against the tool's parameters, then run it (it checks it was given)."""
    spec = DISCOVERABLE_USER.spec(discoverable_tool_name)
    if spec is None:
        return f"Error: Unknown discoverable tool '{discoverable_tool_name}'."
    try:
        given = parse_arguments(db, arguments)
    except json.JSONDecodeError as err:
        return f"Error: Invalid JSON in arguments: {err}"
    params = list(inspect.signature(spec.func).parameters.values())[1:]
    for param in params:
        if param.default is inspect.Parameter.empty and param.name not in given:
            return f"Error: Missing required parameter: {param.name}"
    names = {p.name for p in params}
    for name in given:
        if name not in names:
            return f"Error: Unexpected parameter: {name}"
    try:
        return spec.func(db, **given)
    except TypeError as err:
        return f"Error: Invalid arguments for tool '{discoverable_tool_name}': {err}"


@USER.tool("read", "List the tools the agent has given you.")
def list_discoverable_user_tools(db: BankingDB) -> str:
    """List the ``GIVEN`` rows as a look-up prints them."""
    return f"Tools given to you by the agent:\n{query_text(db, 'user_discoverable_tools')}"


@USER.tool("write", "Ask to be transferred to a human agent. Every request is recorded.")
def request_human_agent_transfer(db: BankingDB) -> str:
    """Row ``transfer_request_N`` for the N-th request: the count is part of the DB check.

    N counts the ``request_id`` fields in the look-up's text, as upstream counts them.
    """
    listing = query_text(db, "human_transfer_requests")
    number = listing.count("request_id") + 1 if found_any(listing) else 1
    key = f"transfer_request_{number}"
    add_row(
        db,
        "human_transfer_requests",
        key,
        {"request_id": key, "request_number": number, "requested_at": TODAY_MDY, "status": "PENDING"},
    )
    return f"Transfer request #{number} submitted.\nThe agent will process your request."


@USER.tool("write", "Record a purchase made with one of your Rho-Bank credit cards.")
def submit_transaction(
    db: BankingDB,
    user_id: UserId,
    credit_card_type: Annotated[str, arg("The card used, e.g. 'Gold Rewards Card'.")],
    merchant_name: Annotated[str, arg("Where you bought.")],
    amount: Annotated[float, arg("The amount in USD, e.g. 127.43.")],
    category: Annotated[str, arg("The purchase category, e.g. 'Travel', 'Groceries', 'Software'.")],
) -> str:
    """Points are whole points: amount x the card's rate for the category (default rate otherwise)."""
    rates = CARD_REWARD_RATES.get(credit_card_type) if isinstance(credit_card_type, str) else None
    if rates is None:
        return (
            f"Error: Unknown credit card type '{credit_card_type}'. "
            f"Available types: {list(CARD_REWARD_RATES)}"
        )
    key = card_transaction_id(user_id, credit_card_type, merchant_name, amount, category)
    rate = rates.get(category, rates["default"])
    points = int(amount * rate)
    row = {
        "transaction_id": key,
        "user_id": user_id,
        "credit_card_type": credit_card_type,
        "merchant_name": merchant_name,
        "transaction_amount": f"${amount:.2f}",
        "transaction_date": TODAY_MDY,
        "category": category,
        "status": "COMPLETED",
        "rewards_earned": f"{points} points",
    }
    if not add_row(db, "credit_card_transaction_history", key, row):
        return f"Failed to submit transaction: Record ID '{key}' may already exist."
    return (
        f"Transaction submitted successfully!\n  - Transaction ID: {key}\n  - User ID: {user_id}\n"
        f"  - Card Type: {credit_card_type}\n  - Merchant: {merchant_name}\n  - Amount: ${amount:.2f}\n"
        f"  - Category: {category}\n  - Date: {TODAY_MDY}\n"
        f"  - Rewards Earned: {points} points ({rate}% cashback rate)\n"
    )


# --- discoverable user tools ----------------------------------------------------------------------


def _not_given(db: BankingDB, name: str) -> str | None:
    """Refuse a tool the agent has not given; ``None`` when it was given."""
    if "No records found" in rows_where(db, "user_discoverable_tools", "tool_name", name):
        return (
            f"Error: Tool '{name}' has not been given to you by the agent. "
            "The agent must first use `give_discoverable_user_tool` to give this tool to you."
        )
    return None


def _log_call(db: BankingDB, name: str, arguments: dict[str, Any]) -> None:
    key = seeded_id(f"user_discoverable_tool_call:{name}:{json.dumps(arguments, sort_keys=True)}")
    add_row(
        db,
        "user_discoverable_tool_calls",
        key,
        {"tool_name": name, "arguments": arguments, "called_at": TODAY_MDY, "status": "CALLED"},
    )


def _executed(summary: str, name: str, arguments: dict[str, Any]) -> str:
    """Write the head of a discoverable user tool's answer: what happened, the tool and its arguments."""
    return f"{summary}\n\nExecuted: {name}\nArguments: {arguments_block(arguments)}\n"


@user_tool("write")
def submit_cash_back_dispute_0589(
    db: BankingDB,
    user_id: Annotated[str, arg("Your user id.")],
    transaction_id: Annotated[str, arg("The transaction whose cash back is wrong.")],
) -> str:
    """Dispute the cash back (rewards) credited for one credit card transaction.

    When the bank auto-resolves disputes (``task_config``) it is approved at once.
    """
    refusal = _not_given(db, "submit_cash_back_dispute_0589")
    if refusal:
        return refusal
    sent = {"user_id": user_id, "transaction_id": transaction_id}
    _log_call(db, "submit_cash_back_dispute_0589", sent)
    key = dispute_id(user_id, transaction_id)
    settings = db.task_config.get("dispute_settings") or {} if len(db.task_config) else {}
    row = {"dispute_id": key, "user_id": user_id, "transaction_id": transaction_id, "submitted_at": TODAY_MDY}
    if settings.get("auto_resolve_disputes", False):
        row |= {"status": "RESOLVED", "resolution": "APPROVED"}
        status = (
            "Status: RESOLVED - The dispute has been reviewed and approved. "
            "The transaction rewards need to be updated."
        )
    else:
        row["status"] = "SUBMITTED"
        status = "Status: SUBMITTED - Your dispute has been queued for review."
    head = _executed(
        "Cash back dispute submitted successfully. Your case has been queued for review.",
        "submit_cash_back_dispute_0589",
        sent,
    )
    if add_row(db, "cash_back_disputes", key, row):
        return f"{head}Dispute ID: {key}\n{status}"
    return f"{head}Note: Dispute may have already been submitted for this transaction."


@user_tool("write")
def get_referral_link(
    db: BankingDB,
    user_id: Annotated[str, arg("Your user id (the referrer).")],
    card_name: Annotated[str, arg("The card you refer someone to, e.g. 'Gold Rewards Card'.")],
) -> str:
    """Create a referral link for a credit card, to share with a friend or relative."""
    refusal = _not_given(db, "get_referral_link")
    if refusal:
        return refusal
    sent = {"user_id": user_id, "card_name": card_name}
    _log_call(db, "get_referral_link", sent)
    key = seeded_id(f"referral_link:{user_id}:{card_name}")
    row = {
        "referral_id": key,
        "referrer_id": user_id,
        "referred_account_type": card_name,
        "referral_status": "NO_PROGRESS",
        "date": TODAY_MDY,
    }
    head = _executed(
        "Referral link generated successfully. Share this link with the person you want to refer.",
        "get_referral_link",
        sent,
    )
    if add_row(db, "referrals", key, row):
        return f"{head}Referral ID: {key}\nReferral link: https://rhobank.com/refer/{key}"
    return f"{head}Note: A referral link for this card may have already been generated."


@user_tool("read")
def get_card_last_4_digits(
    db: BankingDB,
    credit_card_account_id: Annotated[str, arg("The credit card account id, e.g. 'cc_76ad9cc60e_gold'.")],
) -> str:
    """Look up the last four digits of a credit card's number (derived from the account id)."""
    refusal = _not_given(db, "get_card_last_4_digits")
    if refusal:
        return refusal
    sent = {"credit_card_account_id": credit_card_account_id}
    _log_call(db, "get_card_last_4_digits", sent)
    if not found_any(rows_where(db, "credit_card_accounts", "account_id", credit_card_account_id)):
        return f"Error: Credit card account '{credit_card_account_id}' not found."
    digest = hashlib.sha256(f"card_last4:{credit_card_account_id}".encode()).hexdigest()
    digits = "".join(c for c in digest if c.isdigit())[:4].ljust(4, "0")
    return (
        _executed("Card information retrieved successfully.", "get_card_last_4_digits", sent)
        + f"Last 4 digits of card: {digits}"
    )


@user_tool("write")
def deposit_check_3847(
    db: BankingDB,
    account_id: Annotated[str, arg("The checking or savings account to deposit into.")],
    check_amount: Annotated[float, arg("The check's amount in USD.")],
) -> str:
    """Deposit a check into a bank account by photographing it in the mobile app."""
    refusal = _not_given(db, "deposit_check_3847")
    if refusal:
        return refusal
    sent = {"account_id": account_id, "check_amount": check_amount}
    _log_call(db, "deposit_check_3847", sent)
    try:
        amount = float(check_amount)
    except (TypeError, ValueError):
        return f"Error: Invalid check amount '{check_amount}'. Must be a number."
    if amount <= 0:
        return "Error: Check amount must be positive."
    if not db.has_row("accounts", account_id):
        return f"Error: Account '{account_id}' not found."
    if db.row("accounts", account_id).get("status") not in ("ACTIVE", "OPEN"):
        return f"Error: Account '{account_id}' is not active."
    before = account_balance(db.row("accounts", account_id))
    after = before + amount
    db.accounts.edit(account_id)["current_holdings"] = f"${after:.2f}"
    return (
        _executed(
            "Check deposited successfully. Funds will be available according to your account's "
            "deposit policy.",
            "deposit_check_3847",
            sent,
        )
        + f"Check deposit processed!\n  - Account: {account_id}\n  - Check Amount: ${amount:.2f}\n"
        f"  - Previous Balance: ${before:.2f}\n  - New Balance: ${after:.2f}"
    )
