"""banking_knowledge discoverable agent tools, part 1: bank accounts and debit cards (spec §B.2).

Twenty tools the agent only learns about from the knowledge base: opening, closing and funding
bank accounts, account credits, the interest-discrepancy report, transaction history, and the
debit-card life cycle (order, three activation variants, freeze, close, PINs, alerts, limits).

They reproduce what upstream's tools (8ebb749) *write*, because the reward compares DB hashes and
trajectories recorded there must replay the same here: the same fields, id seeds and date strings,
and the same refusals. Upstream's quirks are kept on purpose, each noted where it happens:

- balances are strings; a transfer and a checking credit write ``"$1234.50"``, a savings credit
  and a debit-card fee write ``"1234.50"`` (no sign), and ``db.json`` holds bare numbers;
- ``order_debit_card_5739`` reads the balance without dropping a ``$``, so an account whose
  balance was written as ``"$…"`` counts as $0 there and cannot order a card;
- the early-closure fee of ``close_bank_account_7392`` looks at class ``checking``/``savings`` only
  (``db.json`` spells savings ``saving``) and is checked, never deducted;
- an interest-discrepancy report is not stored: upstream writes it to a table its DB does not
  have, so only the call itself (the ``agent_discoverable_tools`` row, written by the caller) counts;
- an activation checks the last four digits, not the CVV or the expiry date.

Numbers keep the type the caller sent at 8ebb749 (``14`` and ``14.0`` give different ids and rows);
``db.grading.later`` (1.0.1) turns credit amounts into floats, rejects fractional card limits, and
lists transactions newest first. Refusals raise ``ToolError``; results are plain dicts and lists.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import date
from typing import Annotated, Any

from .discoverable import agent_tool
from .db import TODAY, TODAY_MDY, BankingDB, account_balance, dollars, seed_of, seeded_id
from ...toolkit import ToolError, arg

Row = dict[str, Any]
Number = int | float
"""A JSON number as sent: ``int`` stays ``int`` (upstream hashes ``str(amount)`` raw at 8ebb749)."""

OPEN_STATES = ("OPEN", "ACTIVE")
CHECKING_TYPES = ("checking", "personal_checking")
ACCOUNT_TYPES = ("checking", "savings", "business_checking", "business_savings")

AccountId = Annotated[str, arg("The bank account's id, e.g. 'chk_lj82d4f1a9'.")]
CardId = Annotated[str, arg("The debit card's id, e.g. 'dbc_lj82d4f1a9_bluest'.")]
UserId = Annotated[str, arg("The customer's user id.")]
LastFour = Annotated[str, arg("The last 4 digits printed on the card, as a string, e.g. '4821'.")]
Pin = Annotated[str, arg("The customer's new 4-digit PIN, as a string; not sequential, not 4 equal digits.")]


# --- shared lookups and money --------------------------------------------------------------


def _account(db: BankingDB, account_id: str, role: str = "Account") -> Row:
    if not account_id:
        raise ToolError("missing required parameter: account_id")
    account = db.accounts.get(account_id)
    if account is None:
        raise ToolError(f"{role} '{account_id}' not found.")
    return account


def _card(db: BankingDB, card_id: str) -> Row:
    if not card_id:
        raise ToolError("missing required parameter: card_id")
    card = db.debit_cards.get(card_id)
    if card is None:
        raise ToolError(f"Debit card '{card_id}' not found.")
    return card


def _age_days(date_mdy: object) -> int | None:
    """Whole days from an ``MM/DD/YYYY`` date to today; ``None`` when the date does not parse."""
    try:
        opened = date(*time.strptime(str(date_mdy), "%m/%d/%Y")[:3])
    except ValueError:
        return None
    return (TODAY - opened).days


def _require(**values: object) -> None:
    """Refuse empty required arguments, as upstream does before anything else."""
    missing = [name for name, value in values.items() if value is None or value == ""]
    if missing:
        raise ToolError(f"missing required parameters: {', '.join(missing)}")


# --- bank accounts --------------------------------------------------------------------------


def _account_type(account: Row) -> object:
    return account.get("account_type", account.get("class", ""))


def _has_open(accounts: Iterable[Row], types: tuple[str, ...], min_age_days: int = 0) -> bool:
    """Whether one of ``accounts`` is open, of one of ``types``, and old enough (unparsed date: 0 days)."""
    return any(
        _account_type(a) in types and a.get("status", "") in OPEN_STATES
        and (_age_days(a.get("date_opened", "")) or 0) >= min_age_days
        for a in accounts
    )


def _check_eligibility(accounts: list[Row], account_type: str) -> None:
    """Apply the KB's opening rules: savings after 14 days of checking; business after a clean record."""
    if account_type == "savings":
        eligible = _has_open(accounts, CHECKING_TYPES, 14)
    elif account_type == "business_checking":
        eligible = (not any(a.get("status") == "CLOSED" for a in accounts)
                    and _has_open(accounts, CHECKING_TYPES))
    elif account_type == "business_savings":
        eligible = (all(account_balance(a) >= 0 for a in accounts)
                    and _has_open(accounts, ("business_checking",), 30))
    else:
        eligible = True
    if not eligible:
        raise ToolError("Account eligibility requirements not met.")


@agent_tool("write")
def open_bank_account_4821(
    db: BankingDB,
    *,
    user_id: UserId,
    account_type: Annotated[str, arg("'checking', 'savings', 'business_checking' or 'business_savings'.")],
    account_class: Annotated[str, arg("The account product's full official name, e.g. 'Blue Account'.")],
) -> Row:
    """Open a new bank account for a customer, starting at a $0.00 balance.

    Eligibility is checked against the customer's existing accounts: personal savings needs a
    personal checking account open at least 14 days; business checking needs an open personal
    checking account and no closed account; business savings needs a business checking account
    open at least 30 days and no account with a negative balance. Returns the new account.
    """
    _require(user_id=user_id, account_type=account_type, account_class=account_class)
    if account_type not in ACCOUNT_TYPES:
        raise ToolError(f"Invalid account_type. Must be one of: {', '.join(ACCOUNT_TYPES)}")
    _check_eligibility([a for _, a in db.accounts.find(user_id=user_id)], account_type)
    account_id = seeded_id(seed_of("account", user_id, account_type, account_class))
    if account_id in db.accounts:
        raise ToolError(f"Failed to open account: account '{account_id}' already exists.")
    row = {"account_id": account_id, "user_id": user_id, "account_type": account_type,
           "account_class": account_class, "current_holdings": "0.00", "status": "OPEN",
           "date_opened": TODAY_MDY}
    db.accounts.add(account_id, row)
    return {"result": "Bank account opened", "account": dict(row)}


EARLY_CLOSURE: dict[str, dict[str, tuple[int, int]]] = {
    "checking": {
        "Light Blue Account": (15, 30), "Light Green Account": (15, 30), "Green Fee-Free Account": (15, 30),
        "Blue Account": (25, 60), "Green Account": (25, 60), "Evergreen Account": (50, 90),
        "Bluest Account": (100, 180),
    },
    "savings": {
        "Bronze Account": (20, 60), "Silver Account": (35, 90), "Silver Plus Account": (35, 90),
        "Gold Account": (75, 180), "Gold Plus Account": (75, 180), "Gold Years Account": (75, 180),
        "Platinum Account": (150, 270), "Platinum Plus Account": (150, 270),
        "Diamond Elite Account": (150, 270),
    },
}
"""(fee in dollars, window in days) by account class and level. Keyed by ``savings``, as upstream,
although ``db.json`` spells the class ``saving``: savings accounts never owe the fee there."""


def _early_closure_fee(account: Row, balance: float) -> float:
    """Return the fee due for closing inside the level's window; refuse if the balance cannot cover it."""
    rule = EARLY_CLOSURE.get(str(account.get("class", "")), {}).get(str(account.get("level", "")))
    age = _age_days(account.get("date_opened", "")) if rule and account.get("date_opened") else None
    if rule is None or age is None or age >= rule[1]:
        return 0.0
    if balance < rule[0]:
        raise ToolError("Account unable to be closed.")
    return float(rule[0])


DEFAULT_CLOSURE_REASON = "Customer requested closure"


@agent_tool("write")
def close_bank_account_7392(
    db: BankingDB,
    *,
    account_id: AccountId,
    reason: Annotated[str, arg("Why the account is closed (kept verbatim).")] = DEFAULT_CLOSURE_REASON,
    waive_early_closure_fee: Annotated[bool, arg("Waive the early-closure fee, if policy allows.")] = False,
) -> Row:
    """Close a customer's checking or savings account.

    The balance must be exactly zero, except that a personal account closed inside its level's
    early-closure window may hold exactly the early-closure fee (unless the fee is waived);
    an account that cannot cover the fee cannot be closed. Returns the closed account.
    """
    account = _account(db, account_id)
    if account.get("status") == "CLOSED":
        raise ToolError(f"Account '{account_id}' is already closed.")
    balance = account_balance(account)
    fee = 0.0 if waive_early_closure_fee else _early_closure_fee(account, balance)
    if balance - fee != 0:
        raise ToolError(f"Account balance must be $0.00 before closing. Current balance: {dollars(balance)}")
    row = db.accounts.edit(account_id)
    row.update(status="CLOSED", date_closed=TODAY_MDY, closure_reason=reason,
               early_closure_fee_waived=waive_early_closure_fee)
    return {"result": "Bank account closed", "account": dict(row)}


@agent_tool("read")
def get_all_user_accounts_by_user_id_3847(db: BankingDB, *, user_id: UserId) -> Row:
    """List every account a customer holds, bank accounts and credit cards.

    Bank accounts (checking, savings, business) and credit card accounts come with their ids,
    classes or types, status and balances.
    """
    _require(user_id=user_id)
    return {
        "user_id": user_id,
        "bank_accounts": [dict(r) for _, r in db.accounts.find(user_id=user_id)],
        "credit_card_accounts": [dict(r) for _, r in db.credit_card_accounts.find(user_id=user_id)],
    }


def _open_account(db: BankingDB, account_id: str, role: str) -> Row:
    account = _account(db, account_id, role)
    if account.get("status") not in OPEN_STATES:
        raise ToolError(f"{role} '{account_id}' is not active.")
    return account


@agent_tool("write")
def transfer_funds_between_bank_accounts_7291(
    db: BankingDB,
    *,
    source_account_id: Annotated[str, arg("The bank account the money leaves.")],
    destination_account_id: Annotated[str, arg("The bank account the money goes to.")],
    amount: Annotated[float, arg("The amount in US dollars, greater than 0.")],
) -> Row:
    """Move money between two of the bank's open accounts.

    The source must hold at least the amount. Returns both new balances.
    """
    _require(source_account_id=source_account_id, destination_account_id=destination_account_id)
    if amount <= 0:
        raise ToolError("Transfer amount must be positive.")
    if source_account_id == destination_account_id:
        raise ToolError("Source and destination accounts cannot be the same.")
    _account(db, source_account_id, "Source account")
    _account(db, destination_account_id, "Destination account")
    source = _open_account(db, source_account_id, "Source account")
    destination = _open_account(db, destination_account_id, "Destination account")
    source_balance, destination_balance = account_balance(source), account_balance(destination)
    if source_balance < amount:
        raise ToolError(f"Insufficient funds. Source account balance is {dollars(source_balance)}, "
                        f"but transfer amount is {dollars(amount)}.")
    new_source, new_destination = source_balance - amount, destination_balance + amount
    db.accounts.edit(source_account_id)["current_holdings"] = dollars(new_source)
    db.accounts.edit(destination_account_id)["current_holdings"] = dollars(new_destination)
    return {"result": "Transfer completed", "amount": dollars(amount),
            "source": {"account_id": source_account_id, "new_balance": dollars(new_source)},
            "destination": {"account_id": destination_account_id, "new_balance": dollars(new_destination)}}


# --- credits and interest -------------------------------------------------------------------

CHECKING_CREDITS = {"rebate_credit": "REBATE CREDIT - CUSTOMER SERVICE",
                    "fee_refund": "FEE REFUND - CUSTOMER SERVICE"}
SAVINGS_CREDITS = {"interest_correction": "INTEREST CORRECTION - CUSTOMER SERVICE",
                   "fee_refund": "FEE REFUND - CUSTOMER SERVICE",
                   "goodwill_credit": "GOODWILL CREDIT - CUSTOMER SERVICE"}


def _credit_account(
    db: BankingDB, account_id: str, amount: Number, credit_type: str, kind: str
) -> Row:
    """Shared body of the two credit tools: add ``amount`` and post a transaction row.

    The transaction id hashes ``str(amount)`` and the row keeps ``amount`` as sent (at 8ebb749).
    """
    _require(account_id=account_id, credit_type=credit_type)
    if db.grading.later:
        amount = float(amount)
    descriptions, classes = (CHECKING_CREDITS, ("checking",)) if kind == "checking" else (
        SAVINGS_CREDITS, ("saving", "savings"))
    if amount <= 0:
        raise ToolError("Credit amount must be positive.")
    if credit_type not in descriptions:
        raise ToolError(f"Invalid credit_type. Must be one of: {', '.join(descriptions)}")
    account = _account(db, account_id)
    if str(account.get("class", "")).lower() not in classes:
        raise ToolError(f"Account '{account_id}' is not a {kind} account; "
                        f"this credit only applies to {kind} accounts.")
    if account.get("status") not in OPEN_STATES:
        raise ToolError(f"Account '{account_id}' is not active.")
    previous = account_balance(account)
    new = previous + amount
    # upstream writes the checking balance with a "$" and the savings balance without one
    db.accounts.edit(account_id)["current_holdings"] = dollars(new) if kind == "checking" else f"{new:.2f}"
    txn_id = "txn_" + seeded_id(seed_of(f"{kind}_credit", account_id, credit_type, amount, TODAY_MDY))
    db.bank_account_transaction_history.put(txn_id, {
        "transaction_id": txn_id, "account_id": account_id, "date": TODAY_MDY,
        "description": descriptions[credit_type], "amount": amount, "type": credit_type, "status": "posted"})
    return {"result": "Credit applied", "transaction_id": txn_id, "account_id": account_id,
            "credit_type": credit_type, "amount": dollars(amount),
            "previous_balance": dollars(previous), "new_balance": dollars(new)}


@agent_tool("write")
def apply_checking_account_credit_5829(
    db: BankingDB,
    *,
    account_id: Annotated[str, arg("The checking account to credit.")],
    amount: Annotated[Number, arg("Dollars to credit, greater than 0.")],
    credit_type: Annotated[str, arg("'rebate_credit' (a missing rebate) or 'fee_refund' (a wrong fee).")],
) -> Row:
    """Credit an open checking account for a missing rebate or a fee charged in error.

    The credit is posted to the account's transaction history. Returns the transaction id and
    the new balance.
    """
    return _credit_account(db, account_id, amount, credit_type, "checking")


@agent_tool("write")
def apply_savings_account_credit_6831(
    db: BankingDB,
    *,
    account_id: Annotated[str, arg("The savings account to credit.")],
    amount: Annotated[Number, arg("Dollars to credit, greater than 0.")],
    credit_type: Annotated[str, arg(
        "'interest_correction' (interest paid at the wrong APY), 'fee_refund' (a fee charged in error) "
        "or 'goodwill_credit' (a service gesture).")],
) -> Row:
    """Credit an open savings account: an interest correction, a fee refund or goodwill.

    The credit is posted to the account's transaction history. Returns the transaction id and
    the new balance.
    """
    return _credit_account(db, account_id, amount, credit_type, "savings")


@agent_tool("write")
def submit_interest_discrepancy_report_7294(
    db: BankingDB,
    *,
    account_id: Annotated[str, arg("The savings account whose interest was wrong.")],
    user_id: UserId,
    expected_apy: Annotated[float, arg("The APY the customer should have had, in percent: 2.775 is 2.775%.")],
    actual_apy: Annotated[float, arg("The APY actually applied, in percent.")],
    amount_difference: Annotated[float, arg("Dollars of interest missing (expected minus credited).")],
) -> Row:
    """Report interest paid at the wrong APY to the backend team for investigation.

    Use it when the interest credited to an account does not match the APY the customer should
    earn, so future calculations get fixed; it goes alongside (not instead of) crediting the
    missing interest. Returns the report.
    """
    _require(account_id=account_id, user_id=user_id)
    account = _account(db, account_id)
    user = db.users.get(user_id)
    if user is None:
        raise ToolError(f"User '{user_id}' not found.")
    seed = seed_of("interest_report", account_id, user_id, expected_apy, actual_apy, TODAY_MDY)
    report_id = "IDR_" + seeded_id(seed)
    # not stored: upstream writes it to a table its DB lacks (see the module docstring)
    return {"result": "Interest discrepancy report submitted; the backend team will investigate",
            "report_id": report_id, "account_id": account_id, "user_id": user_id,
            "customer": user.get("name", "Unknown"), "account_level": account.get("level", "Unknown"),
            "expected_apy": expected_apy, "actual_apy": actual_apy,
            "apy_difference": round(expected_apy - actual_apy, 4),
            "amount_difference": dollars(amount_difference), "submitted_date": TODAY_MDY,
            "status": "PENDING_REVIEW"}


def _transaction_time(row: Row) -> tuple[int, ...]:
    """When a transaction happened, as (Y, M, D, h, m, s); dates come with and without a time.

    An unreadable date sorts as the oldest (the empty tuple).
    """
    text = str(row.get("date", ""))
    for layout in ("%m/%d/%Y %H:%M:%S", "%m/%d/%Y"):
        try:
            return tuple(time.strptime(text, layout)[:6])
        except ValueError:
            continue
    return ()


@agent_tool("read")
def get_bank_account_transactions_9173(db: BankingDB, *, account_id: AccountId) -> Row:
    """List a bank account's transactions: deposits, withdrawals, fees and credits.

    Each comes with its transaction id, date, description, signed amount (negative for money
    leaving the account), type and status.
    """
    _account(db, account_id)
    rows = [dict(r) for _, r in db.bank_account_transaction_history.find(account_id=account_id)]
    if db.grading.later:  # 1.0.1: newest first; a stable sort keeps same-date rows in stored order
        rows.sort(key=_transaction_time, reverse=True)
    return {"account_id": account_id, "transactions": rows}


# --- debit cards: ordering --------------------------------------------------------------------

DELIVERY_TIMES = {
    "STANDARD": "7-10 business days", "EXPEDITED": "3-5 business days", "RUSH": "1-2 business days",
}
CARD_DESIGNS = ("CLASSIC", "PREMIUM", "CUSTOM")
MIN_BALANCE_FOR_CARD = 25.0


def _balance_as_order_reads_it(account: Row) -> float:
    """Upstream's card order drops commas but not ``$``: ``"$900.00"`` reads as 0 there."""
    try:
        return float(str(account.get("current_holdings", "0")).replace(",", ""))
    except ValueError:
        return 0.0


def _check_card_order(db: BankingDB, account_id: str, user_id: str, total_fee: float) -> float:
    """Refuse an order the account cannot take; return the balance the fees come out of."""
    account = _account(db, account_id)
    if account.get("class") != "checking":
        raise ToolError(f"Debit cards can only be ordered for checking accounts. "
                        f"Account '{account_id}' is a {account.get('class')} account.")
    if account.get("status") != "OPEN":
        raise ToolError(f"Account must be OPEN. Account '{account_id}' has status: {account.get('status')}")
    if account.get("user_id") != user_id:
        raise ToolError(f"Account '{account_id}' does not belong to user '{user_id}'.")
    balance = _balance_as_order_reads_it(account)
    if balance < MIN_BALANCE_FOR_CARD:
        raise ToolError(f"Account must have a minimum balance of $25. Current balance: {dollars(balance)}")
    if db.debit_card_orders.find(account_id=account_id, status="PENDING"):
        raise ToolError(f"There is already a pending debit card order for account '{account_id}'.")
    if db.debit_cards.find(account_id=account_id, status="ACTIVE"):
        raise ToolError(f"Account '{account_id}' already has an active debit card. "
                        "Maximum 1 active card per checking account.")
    if total_fee > 0 and balance < total_fee:
        raise ToolError(f"Insufficient funds for fees. Total fees: {dollars(total_fee)}. "
                        f"Current balance: {dollars(balance)}")
    return balance


def _fee_description(delivery_fee: float, design_fee: float, excess_fee: float) -> str:
    # upstream prints the two fees as floats ("$15.0") and the excess fee without cents
    parts = [f"Delivery ${delivery_fee}"] if delivery_fee > 0 else []
    parts += [f"Design ${design_fee}"] if design_fee > 0 else []
    parts += [f"Excess Replacement ${excess_fee:.0f}"] if excess_fee > 0 else []
    return "DEBIT CARD ORDER FEE - " + ", ".join(parts)


def _expiration(issued_mdy: str) -> str:
    """Last day (30/31; February 28) of the issue month, four years on."""
    month, _, year = issued_mdy.split("/")
    day = "31" if month in ("01", "03", "05", "07", "08", "10", "12") else "28" if month == "02" else "30"
    return f"{month}/{day}/{int(year) + 4}"


def _issue_reason(db: BankingDB, account_id: str) -> str:
    """Why the new card is issued, from the account's earlier cards (it picks the activation tool)."""
    cards = [c for _, c in db.debit_cards.find(account_id=account_id)]
    closed = next((c for c in cards if c.get("status") == "CLOSED"), None)
    if closed is not None:
        reason = closed.get("closure_reason", "first_card")
        if reason == "fraud_suspected":
            return "fraud"
        return reason if reason in ("lost", "stolen", "fraud") else "first_card"
    return "first_card" if cards else "new_account"


def _digits(seed: str, hex_length: int, count: int) -> str:
    return "".join(c for c in seeded_id(seed, hex_length) if c.isdigit())[:count].zfill(count)


def _new_card(db: BankingDB, account_id: str, user_id: str, card_design: str) -> Row:
    """Build the PENDING card row an order creates: number, CVV and id all from deterministic seeds."""
    card_id = "dbc_" + seeded_id(seed_of("debit_card", account_id, user_id, TODAY_MDY), 12)
    user = db.users.get(user_id)
    return {"card_id": card_id, "account_id": account_id, "user_id": user_id,
            "cardholder_name": str(user.get("name", "CARDHOLDER")).upper() if user else "CARDHOLDER",
            "last_4_digits": _digits(f"card_details:{card_id}:last4", 8, 4),
            "cvv": _digits(f"card_details:{card_id}:cvv", 6, 3),
            "status": "PENDING", "issue_date": TODAY_MDY, "expiration_date": _expiration(TODAY_MDY),
            "card_design": card_design, "issue_reason": _issue_reason(db, account_id)}


def _charge_fee(
    db: BankingDB, account_id: str, order_id: str, balance: float, fees: tuple[float, float, float]
) -> None:
    """Take the order's fees from the account and post them as one transaction."""
    total = sum(fees)
    db.accounts.edit(account_id)["current_holdings"] = f"{balance - total:.2f}"
    txn_id = f"btxn_dcfee_{order_id[-8:]}"
    if txn_id not in db.bank_account_transaction_history:
        db.bank_account_transaction_history.add(txn_id, {
            "transaction_id": txn_id, "account_id": account_id, "date": TODAY_MDY,
            "description": _fee_description(*fees), "amount": -total, "type": "debit_card_fee",
            "status": "posted"})


@agent_tool("write")
def order_debit_card_5739(
    db: BankingDB,
    *,
    account_id: Annotated[str, arg("The checking account the card will draw on.")],
    user_id: UserId,
    delivery_option: Annotated[str, arg("Shipping speed: 'STANDARD', 'EXPEDITED' or 'RUSH'.")],
    delivery_fee: Annotated[float, arg("Delivery fee to charge, in dollars (0 when waived).")],
    card_design: Annotated[str, arg("Card design: 'CLASSIC', 'PREMIUM' or 'CUSTOM'.")],
    design_fee: Annotated[float, arg("Design fee to charge, in dollars (0 when free).")],
    shipping_address: Annotated[str, arg("The full address to ship the card to.")],
    excess_replacement_fee: Annotated[float | None, arg("Fee for exceeding the replacement limit.")] = None,
) -> Row:
    """Order a debit card for a customer's open checking account.

    The card is created PENDING and must be activated once the customer receives it (which
    activation tool depends on its issue_reason). The account needs at least $25, no pending
    card order and no active card; the fees you pass are charged to the account. Returns the
    order and the new card's id.
    """
    _require(account_id=account_id, user_id=user_id, delivery_option=delivery_option,
             card_design=card_design, shipping_address=shipping_address)
    delivery, design = delivery_option.upper(), card_design.upper()
    if delivery not in DELIVERY_TIMES:
        raise ToolError(f"Invalid delivery_option. Must be one of: {', '.join(DELIVERY_TIMES)}")
    if design not in CARD_DESIGNS:
        raise ToolError(f"Invalid card_design. Must be one of: {', '.join(CARD_DESIGNS)}")
    fees = (float(delivery_fee), float(design_fee), float(excess_replacement_fee or 0))
    balance = _check_card_order(db, account_id, user_id, sum(fees))
    order_id = "dcord_" + seeded_id(seed_of("debit_card_order", account_id, user_id, delivery), 12)
    if order_id in db.debit_card_orders:
        raise ToolError("Failed to create debit card order: it may already exist.")
    db.debit_card_orders.add(order_id, {
        "order_id": order_id, "account_id": account_id, "user_id": user_id, "delivery_option": delivery,
        "card_design": design, "shipping_address": shipping_address, "delivery_fee": fees[0],
        "design_fee": fees[1], "excess_replacement_fee": fees[2], "total_fee": sum(fees),
        "order_date": TODAY_MDY, "expected_delivery": DELIVERY_TIMES[delivery], "status": "PENDING"})
    if sum(fees) > 0:
        _charge_fee(db, account_id, order_id, balance, fees)
    card = _new_card(db, account_id, user_id, design)
    if card["card_id"] not in db.debit_cards:
        db.debit_cards.add(card["card_id"], card)
    return {"result": "Debit card ordered; the card arrives PENDING and must be activated",
            "order_id": order_id, "card_id": card["card_id"], "account_id": account_id,
            "delivery_option": delivery, "expected_delivery": DELIVERY_TIMES[delivery], "card_design": design,
            "shipping_address": shipping_address, "total_fee": dollars(sum(fees)),
            "new_balance": dollars(balance - sum(fees))}


# --- debit cards: activation --------------------------------------------------------------------

SEQUENTIAL_PINS = frozenset({"0123", "1234", "2345", "3456", "4567", "5678", "6789",
                             "9876", "8765", "7654", "6543", "5432", "4321", "3210"})
ACTIVATION_TOOL = {
    "new_account": "activate_debit_card_8291", "first_card": "activate_debit_card_8291",
    "lost": "activate_debit_card_8292", "stolen": "activate_debit_card_8292",
    "fraud": "activate_debit_card_8292",
    "expired": "activate_debit_card_8293", "damaged": "activate_debit_card_8293",
    "upgrade": "activate_debit_card_8293", "bank_reissue": "activate_debit_card_8293",
}
"""Which activation variant serves a card, by its ``issue_reason``."""


def _check_pin(pin: str) -> None:
    if not (pin.isdigit() and len(pin) == 4):
        raise ToolError("PIN must be exactly 4 digits.")
    if pin in SEQUENTIAL_PINS:
        raise ToolError("PIN cannot be sequential (e.g., 1234). Please choose a more secure PIN.")
    if len(set(pin)) == 1:
        raise ToolError("PIN cannot be all the same digit (e.g., 1111). Please choose a more secure PIN.")


def _check_last_four(last_4_digits: str) -> None:
    if not (last_4_digits.isdigit() and len(last_4_digits) == 4):
        raise ToolError("Last 4 digits must be exactly 4 digits.")


def _check_linked_account_open(db: BankingDB, card: Row, action: str) -> None:
    account_id = card.get("account_id")
    account = db.accounts.get(account_id) if account_id else None
    if account is not None and account.get("status") != "OPEN":
        raise ToolError(f"The linked checking account '{account_id}' is no longer open. "
                        f"Card cannot be {action}.")


def _activatable(db: BankingDB, tool: str, card_id: str, last_4_digits: str, cvv: str, pin: str,
                 expiration_date: str) -> Row:
    """Run the checks all three activation variants share; return the PENDING card."""
    _require(card_id=card_id, last_4_digits=last_4_digits, expiration_date=expiration_date, cvv=cvv, pin=pin)
    _check_pin(pin)
    if not (cvv.isdigit() and len(cvv) == 3):
        raise ToolError("CVV must be exactly 3 digits.")
    _check_last_four(last_4_digits)
    card = _card(db, card_id)
    reason = card.get("issue_reason", "new_account")
    if ACTIVATION_TOOL.get(reason) != tool:
        raise ToolError(f"Wrong activation tool. This card has issue_reason='{reason}'. "
                        f"Please use {ACTIVATION_TOOL.get(reason, 'unknown')} instead of {tool}.")
    if card.get("status") == "ACTIVE":
        raise ToolError(f"Debit card '{card_id}' is already active.")
    if card.get("status") != "PENDING":
        raise ToolError(f"Debit card '{card_id}' cannot be activated. Current status: {card.get('status')}. "
                        "Only PENDING cards can be activated.")
    if card.get("last_4_digits") != last_4_digits:
        raise ToolError("Card verification failed. The last 4 digits do not match our records.")
    _check_linked_account_open(db, card, "activated")
    return card


def _activate(db: BankingDB, card_id: str, retire: dict[str, str]) -> Row:
    """Activate the card and apply ``retire`` to the account's other ACTIVE cards; report both."""
    card = db.debit_cards.edit(card_id)
    card.update(status="ACTIVE", activated_date=TODAY_MDY)
    active = db.debit_cards.find(account_id=card.get("account_id"), status="ACTIVE")
    others = [k for k, _ in active if k != card_id]
    for other in others:
        db.debit_cards.edit(other).update(retire)
    return {"card_id": card_id, "status": "ACTIVE", "activation_date": TODAY_MDY,
            "issue_reason": card.get("issue_reason"), "previous_cards": {k: retire["status"] for k in others}}


@agent_tool("write")
def activate_debit_card_8291(
    db: BankingDB,
    *,
    card_id: CardId,
    last_4_digits: LastFour,
    expiration_date: Annotated[str, arg("The expiry date printed on the card, MM/YY.")],
    cvv: Annotated[str, arg("The 3-digit security code on the back of the card.")],
    pin: Pin,
) -> Row:
    """Activate a customer's FIRST debit card on a checking account, with the PIN they chose.

    Only for issue_reason 'new_account' or 'first_card'. Replacement cards (lost, stolen, fraud)
    use activate_debit_card_8292; reissued cards (expired, damaged, upgrade, bank reissue) use
    activate_debit_card_8293. Any other active card on the account is deactivated.
    """
    _activatable(db, "activate_debit_card_8291", card_id, last_4_digits, cvv, pin, expiration_date)
    return _activate(db, card_id, {"status": "DEACTIVATED", "deactivated_date": TODAY_MDY,
                                   "deactivation_reason": "New card activated"})


@agent_tool("write")
def activate_debit_card_8292(
    db: BankingDB,
    *,
    card_id: CardId,
    last_4_digits: LastFour,
    expiration_date: Annotated[str, arg("The expiry date printed on the card, MM/YY.")],
    cvv: Annotated[str, arg("The 3-digit security code on the back of the card.")],
    pin: Pin,
) -> Row:
    """Activate a REPLACEMENT debit card, with the PIN the customer chose.

    Only for cards replacing one that was lost, stolen or used fraudulently (issue_reason
    'lost', 'stolen' or 'fraud'). The account's other active cards are deactivated at once,
    for security.
    """
    card = _activatable(db, "activate_debit_card_8292", card_id, last_4_digits, cvv, pin, expiration_date)
    reason = card.get("issue_reason", "lost")
    return _activate(db, card_id, {"status": "DEACTIVATED", "deactivated_date": TODAY_MDY,
                                   "deactivation_reason": f"Replacement card activated ({reason})"})


@agent_tool("write")
def activate_debit_card_8293(
    db: BankingDB,
    *,
    card_id: CardId,
    last_4_digits: LastFour,
    expiration_date: Annotated[str, arg("The expiry date printed on the card, MM/YY.")],
    cvv: Annotated[str, arg("The 3-digit security code on the back of the card.")],
    pin: Pin,
) -> Row:
    """Activate a REISSUED debit card, with the PIN the customer chose.

    Only for cards sent because the old one expired, was damaged, was upgraded to a new design
    or was replaced by the bank (issue_reason 'expired', 'damaged', 'upgrade' or
    'bank_reissue'). The old card keeps working for a 24-hour grace period.
    """
    card = _activatable(db, "activate_debit_card_8293", card_id, last_4_digits, cvv, pin, expiration_date)
    reason = card.get("issue_reason", "expired")
    return _activate(db, card_id, {"status": "GRACE_PERIOD", "grace_period_ends": TODAY_MDY,
                                   "deactivation_reason": f"Reissued card activated ({reason})"})


# --- debit cards: status, PINs, alerts, limits --------------------------------------------------

CARD_CLOSURE_REASONS = ("lost", "stolen", "fraud_suspected", "damaged", "no_longer_needed", "account_closing")


def _card_result(db: BankingDB, card_id: str, result: str) -> Row:
    return {"result": result, "card": dict(db.debit_cards.get(card_id) or {})}


@agent_tool("write")
def close_debit_card_4721(
    db: BankingDB,
    *,
    card_id: CardId,
    reason: Annotated[str, arg(
        "One of 'lost', 'stolen', 'fraud_suspected', 'damaged', 'no_longer_needed', 'account_closing'.")],
) -> Row:
    """Close an ACTIVE or PENDING debit card for good; it can never be reactivated.

    The reason is recorded and decides how a card ordered later is activated: after a card
    closed as lost, stolen or fraud_suspected, the new card is a replacement card.
    """
    _require(card_id=card_id, reason=reason)
    if reason.lower() not in CARD_CLOSURE_REASONS:
        raise ToolError(f"Invalid reason. Must be one of: {', '.join(CARD_CLOSURE_REASONS)}")
    card = _card(db, card_id)
    if card.get("status") not in ("ACTIVE", "PENDING"):
        raise ToolError(f"Debit card '{card_id}' cannot be closed. Current status: {card.get('status')}. "
                        "Only ACTIVE or PENDING cards can be closed.")
    db.debit_cards.edit(card_id).update(status="CLOSED", closed_date=TODAY_MDY, closure_reason=reason.lower())
    return _card_result(db, card_id, "Debit card closed")


@agent_tool("write")
def freeze_debit_card_3892(db: BankingDB, *, card_id: CardId) -> Row:
    """Freeze an ACTIVE debit card until it is unfrozen.

    New purchases and recurring payments are declined meanwhile. For a card known to be lost or
    stolen, close it instead.
    """
    card = _card(db, card_id)
    if card.get("status") == "FROZEN":
        raise ToolError(f"Debit card '{card_id}' is already frozen.")
    if card.get("status") != "ACTIVE":
        raise ToolError(f"Debit card '{card_id}' cannot be frozen. Current status: {card.get('status')}. "
                        "Only ACTIVE cards can be frozen.")
    db.debit_cards.edit(card_id).update(status="FROZEN", frozen_date=TODAY_MDY)
    return _card_result(db, card_id, "Debit card frozen")


@agent_tool("write")
def unfreeze_debit_card_3893(db: BankingDB, *, card_id: CardId) -> Row:
    """Unfreeze a FROZEN debit card so it works again at once; its checking account must be open."""
    card = _card(db, card_id)
    if card.get("status") == "ACTIVE":
        raise ToolError(f"Debit card '{card_id}' is already active.")
    if card.get("status") != "FROZEN":
        raise ToolError(f"Debit card '{card_id}' cannot be unfrozen. Current status: {card.get('status')}. "
                        "Only FROZEN cards can be unfrozen.")
    _check_linked_account_open(db, card, "unfrozen")
    db.debit_cards.edit(card_id).update(status="ACTIVE", unfrozen_date=TODAY_MDY)
    return _card_result(db, card_id, "Debit card unfrozen")


@agent_tool("write")
def clear_debit_card_fraud_alert_4892(
    db: BankingDB,
    *,
    card_id: CardId,
    reason: Annotated[str, arg(
        "'customer_verified' to clear a fraud alert once the customer confirmed the activity, or "
        "'velocity_clear' to lift a velocity block once their identity is verified.")],
) -> Row:
    """Clear a fraud alert or a velocity block on a debit card.

    Alerts raised by the bank's own fraud system cannot be cleared here: those customers go to
    the security team through transfer_to_human_agents.
    """
    _require(card_id=card_id, reason=reason)
    if reason not in ("customer_verified", "velocity_clear"):
        raise ToolError(f"Invalid reason '{reason}'. Must be one of: customer_verified, velocity_clear")
    card = _card(db, card_id)
    if reason == "velocity_clear":
        if not card.get("velocity_blocked", False):
            raise ToolError(f"Debit card '{card_id}' does not have an active velocity block.")
        db.debit_cards.edit(card_id).update(velocity_blocked=False, velocity_cleared_date=TODAY_MDY)
        return _card_result(db, card_id, "Velocity block cleared")
    if not card.get("fraud_alert_active", False):
        raise ToolError(f"Debit card '{card_id}' does not have an active fraud alert.")
    if card.get("alert_source") == "bank_initiated":
        raise ToolError("BANK_INITIATED_ALERT - this fraud alert was raised by the bank's fraud detection "
                        "system and cannot be cleared by customer service. Transfer the customer to the "
                        "security team using transfer_to_human_agents.")
    db.debit_cards.edit(card_id).update(fraud_alert_active=False, alert_source=None,
                                        fraud_alert_cleared_date=TODAY_MDY)
    return _card_result(db, card_id, "Fraud alert cleared")


def _active_card(db: BankingDB, card_id: str, action: str) -> Row:
    card = _card(db, card_id)
    if card.get("status") != "ACTIVE":
        raise ToolError(f"Cannot {action} PIN. Card status is {card.get('status')}. "
                        f"Only ACTIVE cards can have their PIN {action}.")
    return card


@agent_tool("write")
def reset_debit_card_pin_6284(
    db: BankingDB, *, card_id: CardId, last_4_digits: LastFour, new_pin: Pin
) -> Row:
    """Set a new PIN on an ACTIVE debit card when the customer has FORGOTTEN the old one.

    The card number's last 4 digits verify the card. This also unlocks a card locked by wrong
    PIN attempts.
    """
    _require(card_id=card_id, last_4_digits=last_4_digits, new_pin=new_pin)
    _check_last_four(last_4_digits)
    _check_pin(new_pin)
    card = _card(db, card_id)
    if card.get("last_4_digits") != last_4_digits:
        raise ToolError("Card verification failed. The last 4 digits do not match our records.")
    _active_card(db, card_id, "reset")
    db.debit_cards.edit(card_id).update(
        pin_last_changed=TODAY_MDY, pin_locked=False, pin_attempts_remaining=3)
    return _card_result(db, card_id, "PIN reset; the card is unlocked")


@agent_tool("write")
def change_debit_card_pin_6285(
    db: BankingDB,
    *,
    card_id: CardId,
    current_pin: Annotated[str, arg("The customer's current 4-digit PIN, as a string.")],
    new_pin: Pin,
) -> Row:
    """Change the PIN of an ACTIVE debit card when the customer KNOWS the current one.

    A forgotten PIN is reset with reset_debit_card_pin_6284 instead. The new PIN must differ.
    """
    _require(card_id=card_id, current_pin=current_pin, new_pin=new_pin)
    if not (current_pin.isdigit() and len(current_pin) == 4):
        raise ToolError("Current PIN must be exactly 4 digits.")
    _check_pin(new_pin)
    if current_pin == new_pin:
        raise ToolError("New PIN must be different from current PIN.")
    _active_card(db, card_id, "change")
    db.debit_cards.edit(card_id)["pin_last_changed"] = TODAY_MDY
    return _card_result(db, card_id, "PIN changed")


def _card_view(card_id: str, card: Row) -> Row:
    """Show a card as the lookup does: id first, number and issue date under their display names."""
    view = {"card_id": card_id, **card}
    if "last_4_digits" in view and "card_number_last_4" not in view:
        view["card_number_last_4"] = view.pop("last_4_digits")
    if "date_issued" not in view:
        for old in ("issue_date", "created_date"):
            if old in view:
                view["date_issued"] = view.pop(old)
                break
    return view


@agent_tool("read")
def get_debit_cards_by_account_id_7823(db: BankingDB, *, account_id: AccountId) -> list[Row] | str:
    """List the debit cards of a checking account, most recently issued first.

    Each card comes with its status, issue_reason (which decides the activation tool), expiry
    date, limits and alerts.
    """
    account = _account(db, account_id)
    if str(account.get("class", "")).lower() not in ("checking", "business_checking"):
        raise ToolError(f"Account '{account_id}' is not a checking account. "
                        "Debit cards are only available for checking accounts.")
    cards = [_card_view(k, c) for k, c in db.debit_cards.find(account_id=account_id)]
    if not cards:
        return f"No debit cards found for account '{account_id}'."
    # upstream compares the MM/DD/YYYY strings as text; kept so the order matches its output
    cards.sort(key=lambda c: c.get("date_issued") or "", reverse=True)
    return cards


DEFAULT_ATM_LIMITS = {
    "blue account": 500, "green account": 600, "light blue account": 400, "green fee-free account": 500,
    "evergreen account": 750, "bluest account": 1500, "dark green account": 300, "gold years account": 600,
    "purple account": 1000,
}
"""Daily ATM limit in dollars by checking level, for cards without their own ``daily_atm_limit``."""


def _current_limit(card: Row, account: Row, limit_type: str) -> Number:
    """Return the card's daily ``limit_type`` limit; ATM limits fall back to the level's default."""
    if limit_type == "purchase":
        limit = card.get("daily_purchase_limit")
    else:
        limit = card.get("daily_atm_limit")
        level = str(account.get("level", "")).lower()
        if limit is None and "light green" in level:
            raise ToolError("Light Green Account (teen checking) cards have a fixed $150 daily ATM limit "
                            "set by account policy; it cannot be raised. A parent or guardian may "
                            "withdraw cash instead.")
        if limit is None:
            limit = DEFAULT_ATM_LIMITS.get(level)
            if limit is None:
                raise ToolError(f"Could not determine the default ATM limit for account type "
                                f"'{account.get('level')}'. Please verify the account type.")
    if limit is None:
        raise ToolError(f"The card has no daily {limit_type} limit configured; it may be set by account "
                        "policy and cannot be changed.")
    return limit  # type: ignore[no-any-return]


def _whole_dollars(db: BankingDB, new_limit: Number) -> int:
    """8ebb749 truncates a fractional limit; 1.0.1 refuses it."""
    if db.grading.later and not float(new_limit).is_integer():
        raise ToolError(f"new_limit must be an integer, got '{float(new_limit)}'.")
    return int(new_limit)


def _limit_card(db: BankingDB, card_id: str) -> tuple[Row, Row]:
    """Return an ACTIVE card whose open account is at least 60 days old, and that account."""
    card = _card(db, card_id)
    if card.get("status") != "ACTIVE":
        raise ToolError(f"Debit card '{card_id}' is not active. Current status: {card.get('status')}. "
                        "Only ACTIVE cards can have limit increases.")
    account_id = card.get("account_id")
    account = db.accounts.get(account_id) if account_id else None
    if account is None:
        raise ToolError(f"Could not find linked account for debit card '{card_id}'.")
    if account.get("status") != "OPEN":
        raise ToolError(f"The linked account '{account_id}' is not in good standing. "
                        f"Account status: {account.get('status')}.")
    age = _age_days(account.get("date_opened")) if account.get("date_opened") else None
    if age is not None and age < 60:
        raise ToolError("Account must be at least 60 days old for a temporary limit increase. "
                        f"Account age: {age} days.")
    return card, account


@agent_tool("write")
def request_temporary_debit_card_limit_increase_8374(
    db: BankingDB,
    *,
    card_id: CardId,
    limit_type: Annotated[str, arg("'atm' (daily ATM withdrawals) or 'purchase' (daily purchases).")],
    new_limit: Annotated[Number, arg("The temporary daily limit wanted, in whole dollars.")],
) -> Row:
    """Raise an ACTIVE debit card's daily ATM or purchase limit for 24 hours.

    The account must be open and at least 60 days old; the new limit must be above the current
    one and at most 150% of it. Teen (Light Green) ATM limits are fixed by policy. Third-party
    ATMs may still apply their own limits.
    """
    _require(card_id=card_id, limit_type=limit_type)
    if limit_type not in ("atm", "purchase"):
        raise ToolError(f"Invalid limit_type '{limit_type}'. Must be 'atm' or 'purchase'.")
    wanted = _whole_dollars(db, new_limit)
    if wanted <= 0:
        raise ToolError("new_limit must be a positive amount.")
    card, account = _limit_card(db, card_id)
    current = _current_limit(card, account, limit_type)
    ceiling = int(current * 1.5)
    if wanted > ceiling:
        raise ToolError(f"Requested limit ${wanted} exceeds the maximum temporary limit of ${ceiling} "
                        f"(150% of the current ${current}).")
    if wanted <= current:
        raise ToolError(f"Requested limit ${wanted} is not higher than the current limit of ${current}.")
    db.debit_cards.edit(card_id).update({
        f"daily_{limit_type}_limit": wanted, f"temporary_{limit_type}_limit_increase": True,
        f"original_{limit_type}_limit": current, f"temporary_{limit_type}_limit_expires": TODAY_MDY})
    return {"result": "Temporary limit increase granted for 24 hours", "card_id": card_id,
            "limit_type": limit_type, "previous_limit": current, "new_temporary_limit": wanted,
            "expires": "in 24 hours"}
