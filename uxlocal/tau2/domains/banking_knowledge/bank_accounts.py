"""banking_knowledge's discoverable agent tools for bank accounts (spec tau2-telecom-banking.md §B.2).

Opening and closing checking and savings accounts (with upstream's eligibility rules and early
closure fees), listing a customer's accounts and an account's transactions, moving money between
accounts, credits to checking and savings, and interest-discrepancy reports.

Behaviour and answers follow upstream's pinned tools (8ebb749), in our words (see
``credit_cards.py``). Balances are written back the way upstream writes each: ``$1,234.50``-style
text or plain ``1234.50``, depending on the tool, because the DB check compares the text.
Interest-discrepancy reports go to a table the DB does not have, so, as upstream, nothing is stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from ...toolkit import arg
from .credit_cards import history
from .db import NOW, TODAY_MDY, BankingDB, account_balance, seeded_id
from .discoverable import agent_tool
from .records import add_row, found_any, rows_where

UserId = Annotated[str, arg("The customer's user id.")]
AccountId = Annotated[str, arg("The bank account id, e.g. 'chk_<user id>_blue'.")]
Text = Annotated[str, arg("A text value; see the knowledge base for the allowed codes.")]
Dollars = Annotated[float, arg("An amount in dollars.")]

ACCOUNT_TYPES = ["checking", "savings", "business_checking", "business_savings"]
CHECKING_CLOSURE_FEES = {
    "Light Blue Account": (15, 30),
    "Light Green Account": (15, 30),
    "Green Fee-Free Account": (15, 30),
    "Blue Account": (25, 60),
    "Green Account": (25, 60),
    "Evergreen Account": (50, 90),
    "Bluest Account": (100, 180),
}
"""Personal checking tiers: (early closure fee in dollars, days after opening it applies)."""
SAVINGS_CLOSURE_FEES = {
    "Bronze Account": (20, 60),
    "Silver Account": (35, 90),
    "Silver Plus Account": (35, 90),
    "Gold Account": (75, 180),
    "Gold Plus Account": (75, 180),
    "Gold Years Account": (75, 180),
    "Platinum Account": (150, 270),
    "Platinum Plus Account": (150, 270),
    "Diamond Elite Account": (150, 270),
}
"""Personal savings tiers, likewise."""
LIVE = ("ACTIVE", "OPEN")
INELIGIBLE = "Error: Account eligibility requirements not met."


def age_days(date_mdy: object) -> int:
    """Days from an ``MM/DD/YYYY`` date to the frozen now; unreadable dates count as 0 days."""
    try:
        return (NOW - datetime.strptime(str(date_mdy), "%m/%d/%Y")).days  # noqa: DTZ007 - zone-less dates, naive NOW
    except ValueError:
        return 0


def _kind(account: dict[str, Any]) -> Any:
    return account.get("account_type", account.get("class", ""))


def _has_live(accounts: list[dict[str, Any]], kinds: tuple[str, ...], min_days: int) -> bool:
    return any(
        _kind(a) in kinds and a.get("status", "") in LIVE and age_days(a.get("date_opened", "")) >= min_days
        for a in accounts
    )


def _eligible(accounts: list[dict[str, Any]], account_type: str) -> bool:
    """Apply upstream's eligibility rules for a new account.

    Savings needs checking 14+ days old; business checking needs personal checking and no closed
    account; business savings needs business checking 30+ days old and no negative balance.
    """
    personal = ("checking", "personal_checking")
    if account_type == "savings":
        return _has_live(accounts, personal, 14)
    if account_type == "business_checking":
        return not any(a.get("status") == "CLOSED" for a in accounts) and _has_live(accounts, personal, 0)
    if account_type == "business_savings":
        return not any(account_balance(a) < 0 for a in accounts) and _has_live(
            accounts, ("business_checking",), 30
        )
    return True


@agent_tool("write")
def open_bank_account_4821(
    db: BankingDB,
    user_id: UserId,
    account_type: Text,
    account_class: Annotated[str, arg("The account's full product name, e.g. 'Blue Account'.")],
) -> str:
    """Open a new bank account for a customer."""
    if not user_id or not account_type or not account_class:
        return "Error: Missing required parameters."
    if account_type not in ACCOUNT_TYPES:
        return f"Error: Invalid account_type. Must be one of: {ACCOUNT_TYPES}"
    mine = [a for a in db.accounts.values() if a.get("user_id") == user_id]
    if not _eligible(mine, account_type):
        return INELIGIBLE
    key = seeded_id(f"account:{user_id}:{account_type}:{account_class}")
    row = {
        "account_id": key,
        "user_id": user_id,
        "account_type": account_type,
        "account_class": account_class,
        "current_holdings": "0.00",
        "status": "OPEN",
        "date_opened": TODAY_MDY,
    }
    if not add_row(db, "accounts", key, row):
        return f"Failed to open account: Account ID '{key}' may already exist."
    return (
        f"Bank account opened successfully!\n  - Account ID: {key}\n  - User ID: {user_id}\n"
        f"  - Account Type: {account_type}\n  - Account Class: {account_class}\n  - Status: OPEN\n"
        f"  - Initial Balance: $0.00\n  - Date Opened: {TODAY_MDY}"
    )


def _closure_fee(account: dict[str, Any]) -> int | None:
    """Return the early closure fee due now (0 when none applies)."""
    tiers = {"checking": CHECKING_CLOSURE_FEES, "savings": SAVINGS_CLOSURE_FEES}.get(
        account.get("class", ""), {}
    )
    fee = tiers.get(account.get("level", ""))
    opened = account.get("date_opened", "")
    if not fee or not opened:
        return 0
    try:
        days = (NOW - datetime.strptime(opened, "%m/%d/%Y")).days  # noqa: DTZ007 - zone-less dates, naive NOW
    except ValueError:
        return 0
    return fee[0] if days < fee[1] else 0


@agent_tool("write")
def close_bank_account_7392(
    db: BankingDB,
    account_id: AccountId,
    reason: Annotated[str, arg("Why the account is closed.")] = "Customer requested closure",
    waive_early_closure_fee: Annotated[bool, arg("Waive the early closure fee.")] = False,
) -> str:
    """Close a customer's checking or savings account; the balance must be zero after any fee."""
    if not account_id:
        return "Error: Missing required parameter (account_id)."
    if not db.has_row("accounts", account_id):
        return f"Error: Account '{account_id}' not found."
    account = db.accounts.get(account_id)
    assert account is not None
    if account.get("status") == "CLOSED":
        return f"Error: Account '{account_id}' is already closed."
    balance = account_balance(account)
    fee = 0 if waive_early_closure_fee else _closure_fee(account) or 0
    if fee and balance < fee:
        return "Error: Account unable to be closed."
    if balance - fee != 0:
        return f"Error: Account balance must be $0.00 before closing. Current balance: ${balance:.2f}"
    row = db.accounts.edit(account_id)
    row.update(
        status="CLOSED",
        date_closed=TODAY_MDY,
        closure_reason=reason,
        early_closure_fee_waived=waive_early_closure_fee,
    )
    return (
        f"Bank account closed successfully!\n  - Account ID: {account_id}\n"
        f"  - Account Type: {row.get('account_type', 'N/A')}\n"
        f"  - Account Class: {row.get('account_class', 'N/A')}\n"
        f"  - Status: CLOSED\n  - Date Closed: {TODAY_MDY}\n  - Reason: {reason}\n"
        f"  - Early Closure Fee Waived: {'Yes' if waive_early_closure_fee else 'No'}"
    )


@agent_tool("read")
def get_all_user_accounts_by_user_id_3847(db: BankingDB, user_id: UserId) -> str:
    """Retrieve all of a customer's accounts: checking, savings and credit cards."""
    if not user_id:
        return "Error: Missing required parameter: user_id"
    banks = rows_where(db, "accounts", "user_id", user_id)
    cards = rows_where(db, "credit_card_accounts", "user_id", user_id)
    return "\n".join(
        [
            "User accounts retrieved successfully.",
            "",
            "Executed: get_all_user_accounts_by_user_id_3847",
            f"Accounts for user {user_id}:",
            "",
            "Bank Accounts:",
            banks if found_any(banks) else "  No bank accounts found.",
            "\nCredit Card Accounts:",
            cards if found_any(cards) else "  No credit card accounts found.",
        ]
    )


@agent_tool("write")
def transfer_funds_between_bank_accounts_7291(
    db: BankingDB, source_account_id: AccountId, destination_account_id: AccountId, amount: Dollars
) -> str:
    """Move money from one bank account to another."""
    if not source_account_id or not destination_account_id or amount is None:
        return "Error: Missing required parameters (source_account_id, destination_account_id, amount)."
    try:
        amount = float(amount)
    except (TypeError, ValueError):
        return f"Error: Invalid amount '{amount}'. Must be a number."
    if amount <= 0:
        return "Error: Transfer amount must be positive."
    if source_account_id == destination_account_id:
        return "Error: Source and destination accounts cannot be the same."
    for label, key in (("Source", source_account_id), ("Destination", destination_account_id)):
        if not db.has_row("accounts", key):
            return f"Error: {label} account '{key}' not found."
    for label, key in (("Source", source_account_id), ("Destination", destination_account_id)):
        if db.row("accounts", key).get("status") not in LIVE:
            return f"Error: {label} account '{key}' is not active."
    source = account_balance(db.row("accounts", source_account_id))
    if source < amount:
        return (
            f"Error: Insufficient funds. Source account balance is ${source:.2f}, "
            f"but transfer amount is ${amount:.2f}."
        )
    dest = account_balance(db.row("accounts", destination_account_id))
    db.accounts.edit(source_account_id)["current_holdings"] = f"${source - amount:.2f}"
    db.accounts.edit(destination_account_id)["current_holdings"] = f"${dest + amount:.2f}"
    return (
        f"Transfer completed successfully!\n  - Amount: ${amount:.2f}\n"
        f"  - From: {source_account_id} (new balance: ${source - amount:.2f})\n"
        f"  - To: {destination_account_id} (new balance: ${dest + amount:.2f})"
    )


CREDIT_KINDS = {
    "checking": (
        ["rebate_credit", "fee_refund"],
        ("checking",),
        "$",
        "is not a checking account. Credits can only be applied to checking accounts.",
    ),
    "savings": (
        ["interest_correction", "fee_refund", "goodwill_credit"],
        ("saving", "savings"),
        "",
        "is not a savings account. This tool only applies to savings accounts.",
    ),
}
"""Per account kind: allowed credit types, account classes, balance prefix, refusal for another class."""
CREDIT_DESCRIPTIONS = {
    "rebate_credit": "REBATE CREDIT - CUSTOMER SERVICE",
    "interest_correction": "INTEREST CORRECTION - CUSTOMER SERVICE",
    "goodwill_credit": "GOODWILL CREDIT - CUSTOMER SERVICE",
}


def _credit(db: BankingDB, kind: str, account_id: Any, amount: Any, credit_type: Any) -> str:
    """Credit a checking or savings account: balance up, one posted transaction row."""
    allowed, classes, prefix, wrong_class = CREDIT_KINDS[kind]
    if not account_id or amount is None or not credit_type:
        return "Error: Missing required parameters."
    if amount <= 0:
        return "Error: Credit amount must be positive."
    if credit_type not in allowed:
        return f"Error: Invalid credit_type. Must be one of: {allowed}"
    if not db.has_row("accounts", account_id):
        return f"Error: Account '{account_id}' not found."
    account = db.accounts.get(account_id)
    assert account is not None
    if account.get("class", "").lower() not in classes:
        return f"Error: Account '{account_id}' {wrong_class}"
    if account.get("status") not in LIVE:
        return f"Error: Account '{account_id}' is not active."
    before = account_balance(account)
    db.accounts.edit(account_id)["current_holdings"] = f"{prefix}{before + amount:.2f}"
    key = "txn_" + seeded_id(f"{kind}_credit:{account_id}:{credit_type}:{amount}:{TODAY_MDY}")
    db.bank_account_transaction_history.put(
        key,
        {
            "transaction_id": key,
            "account_id": account_id,
            "date": TODAY_MDY,
            "description": CREDIT_DESCRIPTIONS.get(credit_type, "FEE REFUND - CUSTOMER SERVICE"),
            "amount": amount,
            "type": credit_type,
            "status": "posted",
        },
    )
    return (
        f"\nCredit applied successfully!\n  - Transaction ID: {key}\n  - Account: {account_id}\n"
        f"  - Credit Type: {credit_type}\n  - Amount: ${amount:.2f}\n  - Previous Balance: ${before:.2f}\n"
        f"  - New Balance: ${before + amount:.2f}"
    )


@agent_tool("write")
def apply_checking_account_credit_5829(
    db: BankingDB, account_id: AccountId, amount: Dollars, credit_type: Text
) -> str:
    """Apply a credit (missing rebate, fee refund) to a customer's checking account."""
    return _credit(db, "checking", account_id, amount, credit_type)


@agent_tool("write")
def apply_savings_account_credit_6831(
    db: BankingDB, account_id: AccountId, amount: Dollars, credit_type: Text
) -> str:
    """Apply a credit (interest correction, fee refund, goodwill) to a customer's savings account."""
    return _credit(db, "savings", account_id, amount, credit_type)


@agent_tool("write")
def submit_interest_discrepancy_report_7294(
    db: BankingDB,
    account_id: AccountId,
    user_id: UserId,
    expected_apy: Annotated[float, arg("The APY in percent the customer should have had, e.g. 2.775.")],
    actual_apy: Annotated[float, arg("The APY in percent that was applied.")],
    amount_difference: Dollars,
) -> str:
    """Report an interest calculation discrepancy to the backend team."""
    if (
        not account_id
        or not user_id
        or expected_apy is None
        or actual_apy is None
        or amount_difference is None
    ):
        return "Error: Missing required parameters."
    try:
        expected, actual, difference = float(expected_apy), float(actual_apy), float(amount_difference)
    except (TypeError, ValueError):
        return "Error: expected_apy, actual_apy, and amount_difference must be numbers."
    account = db.accounts.get(account_id) if db.has_row("accounts", account_id) else None
    if account is None:
        return f"Error: Account '{account_id}' not found."
    user = db.users.get(user_id) if db.has_row("users", user_id) else None
    if user is None:
        return f"Error: User '{user_id}' not found."
    key = "IDR_" + seeded_id(f"interest_report:{account_id}:{user_id}:{expected}:{actual}:{TODAY_MDY}")
    level = account.get("level", "Unknown")
    return (
        f"\nInterest Discrepancy Report Submitted Successfully!\n  - Report ID: {key}\n"
        f"  - Account: {account_id} ({level})\n  - Customer: {user.get('name', 'Unknown')}\n"
        f"  - Expected APY: {expected}%\n  - Actual APY: {actual}%\n"
        f"  - APY Difference: {round(expected - actual, 4)}%\n  - Amount Difference: ${difference:.2f}\n"
        "  - Status: PENDING_REVIEW\n\nThe backend team will investigate this discrepancy and ensure "
        "correct APY calculations are applied going forward."
    )


@agent_tool("read")
def get_bank_account_transactions_9173(db: BankingDB, account_id: AccountId) -> str:
    """Retrieve a bank account's transaction history."""
    if not account_id:
        return "Error: Missing required parameter: account_id"
    if not db.has_row("accounts", account_id):
        return f"Error: Account '{account_id}' not found."
    return history(
        db,
        (
            "Bank account transactions retrieved successfully.",
            "get_bank_account_transactions_9173",
            f"Transactions for account {account_id}:",
        ),
        ("bank_account_transaction_history", "account_id", account_id),
        "No transactions found for this account.",
    )
