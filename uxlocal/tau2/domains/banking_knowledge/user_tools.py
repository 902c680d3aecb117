"""banking_knowledge user tools (spec tau2-telecom-banking.md §B.3): 6 listed, 4 discoverable.

The user acts on the same DB as the agent. Their writes are part of the DB check: an application
(its id is seeded with ``str(annual_income)``, so ``100000`` and ``100000.0`` differ at the pinned
grading; 1.0.1 reads the income as a float), a referral, a transaction, and one
``transfer_request_N`` row per request for a human, so the number of requests is hashed.

Discoverable user tools are called through ``call_discoverable_user_tool`` and only after the agent
gave them (``give_discoverable_user_tool`` writes the ``GIVEN`` row). Every such call that gets past
the argument check and the given check is logged in ``user_discoverable_tool_calls``, keyed by the
tool name and the sorted JSON of the arguments as sent, the read tool included.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

from .discoverable import (
    DISCOVERABLE_USER,
    ArgumentsJson,
    parse_arguments_json,
    user_tool,
    validated_kwargs,
)
from .db import (
    TODAY_MDY,
    BankingDB,
    account_balance,
    card_transaction_id,
    dispute_id,
    dollars,
    seed_of,
    seeded_id,
)
from ...toolkit import ToolError, Toolkit, arg

USER = Toolkit("banking_knowledge user")

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
CARD_TYPES: tuple[str, ...] = tuple(sorted(CARD_REWARD_RATES))
"""The 13 card types one can apply for."""

UserId = Annotated[str, arg("Your user id.")]


# --- listed tools ------------------------------------------------------------------------------


@USER.tool("write", "Apply for a Rho-Bank credit card in your name.")
def apply_for_credit_card(
    db: BankingDB,
    card_type: Annotated[str, arg("The card's exact name, e.g. 'Gold Rewards Card'.")],
    customer_name: Annotated[str, arg("Your full legal name.")],
    annual_income: Annotated[int | float, arg("Your annual income in USD, e.g. 85000.")],
    rho_bank_subscription: Annotated[bool, arg("Whether you have a Rho-Bank+ subscription.")] = False,
) -> str:
    """``int | float`` keeps the number as sent (8ebb749 hashes 100000 and 100000.0 differently)."""
    if card_type not in CARD_TYPES:
        raise ToolError(f"unknown card type {card_type!r}; one of: {', '.join(CARD_TYPES)}")
    income: int | float = float(annual_income) if db.grading.later else annual_income
    key = seeded_id(seed_of("credit_card", card_type, customer_name, income, rho_bank_subscription))
    if key in db.credit_card_applications:
        raise ToolError("this application was already submitted")
    db.credit_card_applications.add(key, {
        "application_id": key, "card_type": card_type, "customer_name": customer_name,
        "annual_income": income, "rho_bank_subscription": rho_bank_subscription,
        "status": "PENDING", "date": TODAY_MDY,
    })
    return (f"Application {key} for a {card_type} received; a decision follows by email within "
            "5-7 business days.")


@USER.tool("write", "Refer someone to open a Rho-Bank account or card.")
def submit_referral(
    db: BankingDB,
    user_id: UserId,
    account_type: Annotated[str, arg("The account or card you refer them to, e.g. 'Gold Rewards Card'.")],
) -> dict[str, Any]:
    """Seed the referral id by referrer and account type, so there is one referral per pair."""
    key = seeded_id(seed_of("referral", user_id, account_type))
    if key in db.referrals:
        raise ToolError(f"you already referred someone to {account_type} (referral {key})")
    row = {"referral_id": key, "referrer_id": user_id, "referred_account_type": account_type,
           "referral_status": "NO_PROGRESS", "date": TODAY_MDY}
    db.referrals.add(key, row)
    return row


@USER.tool("write", "Use a tool the agent gave you (see list_discoverable_user_tools).")
def call_discoverable_user_tool(
    db: BankingDB,
    discoverable_tool_name: Annotated[str, arg("The tool's name, as the agent gave it.")],
    arguments: ArgumentsJson = "{}",
) -> object:
    """Check the arguments, then that the tool was given, then log the call and run it."""
    spec = DISCOVERABLE_USER.spec(discoverable_tool_name)
    if spec is None:
        raise ToolError(f"Unknown discoverable tool '{discoverable_tool_name}'.")
    sent = parse_arguments_json(db, arguments)
    kwargs = validated_kwargs(spec, sent)
    if not db.user_discoverable_tools.find(tool_name=discoverable_tool_name):
        raise ToolError(f"{discoverable_tool_name} has not been given to you; the agent must give it first.")
    _log_user_call(db, discoverable_tool_name, sent)
    return spec.func(db, **kwargs)


def _log_user_call(db: BankingDB, name: str, sent: dict[str, Any]) -> None:
    key = seeded_id(seed_of("user_discoverable_tool_call", name, json.dumps(sent, sort_keys=True)))
    if key not in db.user_discoverable_tool_calls:
        db.user_discoverable_tool_calls.add(key, {"tool_name": name, "arguments": sent,
                                                  "called_at": TODAY_MDY, "status": "CALLED"})


@USER.tool("read", "List the tools the agent has given you.")
def list_discoverable_user_tools(db: BankingDB) -> list[str] | str:
    """Names from the ``GIVEN`` rows."""
    names = [row["tool_name"] for row in db.user_discoverable_tools.values()]
    return names or "The agent has not given you any tools yet."


@USER.tool("write", "Ask to be transferred to a human agent. Every request is recorded.")
def request_human_agent_transfer(db: BankingDB) -> str:
    """Row ``transfer_request_N`` for the N-th request: the count is part of the DB check."""
    number = len(db.human_transfer_requests) + 1
    key = f"transfer_request_{number}"
    db.human_transfer_requests.add(key, {"request_id": key, "request_number": number,
                                         "requested_at": TODAY_MDY, "status": "PENDING"})
    return f"Transfer request #{number} recorded; the agent will handle it."


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
    rates = CARD_REWARD_RATES.get(credit_card_type)
    if rates is None:
        raise ToolError(f"unknown card type {credit_card_type!r}; one of: {', '.join(CARD_TYPES)}")
    key = card_transaction_id(user_id, credit_card_type, merchant_name, amount, category)
    if key in db.credit_card_transaction_history:
        raise ToolError(f"transaction {key} was already recorded")
    rate = rates.get(category, rates["default"])
    points = int(amount * rate)
    db.credit_card_transaction_history.add(key, {
        "transaction_id": key, "user_id": user_id, "credit_card_type": credit_card_type,
        "merchant_name": merchant_name, "transaction_amount": f"${amount:.2f}", "transaction_date": TODAY_MDY,
        "category": category, "status": "COMPLETED", "rewards_earned": f"{points} points",
    })
    return f"Transaction {key} recorded: ${amount:.2f} at {merchant_name}, {points} points ({rate}% back)."


# --- discoverable user tools ----------------------------------------------------------------------


@user_tool("write")
def submit_cash_back_dispute_0589(
    db: BankingDB,
    user_id: Annotated[str, arg("Your user id.")],
    transaction_id: Annotated[str, arg("The transaction whose cash back is wrong.")],
) -> str:
    """Dispute the cash back (rewards) credited for one credit card transaction.

    The dispute is queued for review; when the bank auto-resolves disputes it is approved at once
    and the agent then corrects the transaction's rewards.
    """
    key = dispute_id(user_id, transaction_id)
    settings = db.task_config.get("dispute_settings") or {}
    resolved = bool(settings.get("auto_resolve_disputes", False))
    if key in db.cash_back_disputes:
        return f"A dispute for transaction {transaction_id} was already submitted ({key})."
    row = {"dispute_id": key, "user_id": user_id, "transaction_id": transaction_id,
           "submitted_at": TODAY_MDY, "status": "RESOLVED" if resolved else "SUBMITTED"}
    if resolved:
        row["resolution"] = "APPROVED"
    db.cash_back_disputes.add(key, row)
    outcome = ("resolved and approved; the transaction's rewards must now be corrected" if resolved
               else "submitted and queued for review")
    return f"Cash back dispute {key} {outcome}."


@user_tool("write")
def get_referral_link(
    db: BankingDB,
    user_id: Annotated[str, arg("Your user id (the referrer).")],
    card_name: Annotated[str, arg("The card you refer someone to, e.g. 'Gold Rewards Card'.")],
) -> str:
    """Create a referral link for a credit card, to share with a friend or relative."""
    key = seeded_id(seed_of("referral_link", user_id, card_name))
    if key in db.referrals:
        return f"You already have a referral link for {card_name}: https://rhobank.com/refer/{key}"
    db.referrals.add(key, {"referral_id": key, "referrer_id": user_id, "referred_account_type": card_name,
                           "referral_status": "NO_PROGRESS", "date": TODAY_MDY})
    return f"Referral link for {card_name}: https://rhobank.com/refer/{key}"


@user_tool("read")
def get_card_last_4_digits(
    db: BankingDB,
    credit_card_account_id: Annotated[str, arg("The credit card account id, e.g. 'cc_76ad9cc60e_gold'.")],
) -> str:
    """Look up the last four digits of a credit card's number."""
    if not db.credit_card_accounts.find(account_id=credit_card_account_id):
        raise ToolError(f"credit card account {credit_card_account_id!r} not found")
    digest = hashlib.sha256(f"card_last4:{credit_card_account_id}".encode()).hexdigest()
    digits = "".join(c for c in digest if c.isdigit())[:4].ljust(4, "0")
    return f"The card of account {credit_card_account_id} ends in {digits}."


@user_tool("write")
def deposit_check_3847(
    db: BankingDB,
    account_id: Annotated[str, arg("The checking or savings account to deposit into.")],
    check_amount: Annotated[float, arg("The check's amount in USD.")],
) -> str:
    """Deposit a check into a bank account by photographing it in the mobile app.

    The balance goes up by the check's amount at once.
    """
    if check_amount <= 0:
        raise ToolError("the check amount must be positive")
    account = db.accounts.get(account_id)
    if account is None:
        raise ToolError(f"account {account_id!r} not found")
    if account.get("status") not in ("ACTIVE", "OPEN"):
        raise ToolError(f"account {account_id!r} is not active")
    before = account_balance(account)
    after = before + check_amount
    db.accounts.edit(account_id)["current_holdings"] = dollars(after)
    return (f"Deposited {dollars(check_amount)} into {account_id}: "
            f"balance {dollars(before)} -> {dollars(after)}.")
