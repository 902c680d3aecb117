"""banking_knowledge's discoverable agent tools for debit cards (spec tau2-telecom-banking.md §B.2).

Ordering, activating (three variants by why the card was issued), freezing, closing, PINs, fraud
alerts, recurring-payment blocks, temporary limit increases, Regulation E disputes, and the
look-ups that go with them.

Behaviour and answers follow upstream's pinned tools (8ebb749), in our words (see
``credit_cards.py``). ``get_atm_deposit_images_8473``: upstream has canned scans for three
transaction ids that are in neither ``db.json`` nor any task, so every real ATM deposit gets
"images not available" there; that is the only answer here.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any

from ...toolkit import arg
from .credit_cards import history
from .db import NOW, TODAY_MDY, BankingDB, dispute_id, seeded_id
from .discoverable import agent_tool
from .records import add_row, titled

UserId = Annotated[str, arg("The customer's user id.")]
AccountId = Annotated[str, arg("The checking account id.")]
CardId = Annotated[str, arg("The debit card id, e.g. 'dbc_<user id>_blue'.")]
Text = Annotated[str, arg("A text value; see the knowledge base for the allowed codes.")]
Digits = Annotated[str, arg("Digits as text, e.g. '1234'.")]
Flag = Annotated[bool, arg("Yes or no.")]
Dollars = Annotated[float, arg("An amount in dollars.")]

DISPUTE_CATEGORIES = [
    "unauthorized_transaction",
    "atm_cash_discrepancy",
    "atm_deposit_not_credited",
    "duplicate_charge",
    "incorrect_amount",
    "goods_services_not_received",
    "recurring_charge_after_cancellation",
    "card_present_fraud",
    "card_not_present_fraud",
]
FRAUD_CATEGORIES = ("unauthorized_transaction", "card_present_fraud", "card_not_present_fraud")
TRANSACTION_TYPES = [
    "pin_purchase",
    "signature_purchase",
    "online_purchase",
    "atm_withdrawal",
    "atm_deposit",
    "recurring_payment",
    "person_to_person",
]
PIN_EXPOSURES = ["yes_shared", "yes_observed", "no", "unknown"]
CARD_ACTIONS = ["keep_active", "freeze_pending_investigation", "close_and_reissue"]
CLOSE_REASONS = ["lost", "stolen", "fraud_suspected", "damaged", "no_longer_needed", "account_closing"]
DELIVERY_DAYS = {
    "STANDARD": "7-10 business days",
    "EXPEDITED": "3-5 business days",
    "RUSH": "1-2 business days",
}
DESIGNS = ["CLASSIC", "PREMIUM", "CUSTOM"]
SEQUENTIAL_PINS = (
    "0123",
    "1234",
    "2345",
    "3456",
    "4567",
    "5678",
    "6789",
    "9876",
    "8765",
    "7654",
    "6543",
    "5432",
    "4321",
    "3210",
)
ACTIVATION_TOOL_BY_REASON = {
    "new_account": "activate_debit_card_8291",
    "first_card": "activate_debit_card_8291",
    "lost": "activate_debit_card_8292",
    "stolen": "activate_debit_card_8292",
    "fraud": "activate_debit_card_8292",
    "expired": "activate_debit_card_8293",
    "damaged": "activate_debit_card_8293",
    "upgrade": "activate_debit_card_8293",
    "bank_reissue": "activate_debit_card_8293",
}
"""Which activation tool a card's ``issue_reason`` calls for."""
DEFAULT_ATM_LIMITS = {
    "blue account": 500,
    "green account": 600,
    "light blue account": 400,
    "green fee-free account": 500,
    "evergreen account": 750,
    "bluest account": 1500,
    "dark green account": 300,
    "gold years account": 600,
    "purple account": 1000,
}
"""Daily ATM limit by checking tier, where the card does not set one."""


def _pin_problem(pin: Any) -> str | None:
    if not pin or not pin.isdigit() or len(pin) != 4:
        return "PIN must be exactly 4 digits."
    if pin in SEQUENTIAL_PINS:
        return "PIN cannot be sequential (e.g., 1234). Please choose a more secure PIN."
    if len(set(pin)) == 1:
        return "PIN cannot be all the same digit (e.g., 1111). Please choose a more secure PIN."
    return None


def _card(db: BankingDB, card_id: Any) -> dict[str, Any] | None:
    return db.debit_cards.get(card_id) if db.has_row("debit_cards", card_id) else None


def _not_found(card_id: Any) -> str:
    return f"Error: Debit card '{card_id}' not found."


# --- disputes and look-ups -----------------------------------------------------------------------


def _dispute_refusal(values: dict[str, Any]) -> str | None:
    """Find the first refusal of a debit dispute's arguments, in upstream's order."""
    if not all(
        values[k]
        for k in (
            "transaction_id",
            "account_id",
            "card_id",
            "user_id",
            "dispute_category",
            "transaction_date",
            "discovery_date",
            "disputed_amount",
            "transaction_type",
            "pin_compromised",
            "card_action",
        )
    ):
        return "Error: Missing required parameters."
    if values["customer_max_liability_amount"] is None:
        return "Error: customer_max_liability_amount is required."
    if any(
        values[k] is None
        for k in (
            "card_in_possession",
            "contacted_merchant",
            "police_report_filed",
            "written_statement_provided",
        )
    ):
        return (
            "Error: card_in_possession, contacted_merchant, police_report_filed, and "
            "written_statement_provided are required boolean fields."
        )
    for name, allowed in (
        ("dispute_category", DISPUTE_CATEGORIES),
        ("transaction_type", TRANSACTION_TYPES),
        ("pin_compromised", PIN_EXPOSURES),
        ("card_action", CARD_ACTIONS),
    ):
        if values[name] not in allowed:
            return f"Error: Invalid {name}. Must be one of: {allowed}"
    if values["disputed_amount"] <= 0:
        return "Error: disputed_amount must be a positive number."
    return None


@agent_tool("write")
def file_debit_card_transaction_dispute_6281(
    db: BankingDB,
    transaction_id: Text,
    account_id: AccountId,
    card_id: CardId,
    user_id: UserId,
    dispute_category: Text,
    transaction_date: Text,
    discovery_date: Text,
    disputed_amount: Dollars,
    transaction_type: Text,
    card_in_possession: Flag,
    pin_compromised: Text,
    contacted_merchant: Flag,
    police_report_filed: Flag,
    written_statement_provided: Flag,
    provisional_credit_eligible: Flag,
    customer_max_liability_amount: Annotated[
        float, arg("The customer's liability cap in dollars; -1: unlimited.")
    ],
    card_action: Text,
) -> str:
    """File a Regulation E dispute for a debit card transaction."""
    values = dict(locals())
    refusal = _dispute_refusal(values)
    if refusal:
        return refusal
    key = dispute_id(user_id, transaction_id)
    fraud = dispute_category in FRAUD_CATEGORIES
    shared = pin_compromised == "yes_shared"
    row = {
        name: values[name]
        for name in (
            "transaction_id",
            "account_id",
            "card_id",
            "user_id",
            "dispute_category",
            "transaction_date",
            "discovery_date",
            "disputed_amount",
            "transaction_type",
            "card_in_possession",
            "pin_compromised",
            "contacted_merchant",
            "police_report_filed",
            "written_statement_provided",
            "provisional_credit_eligible",
        )
    }
    row = {
        "dispute_id": key,
        **row,
        "provisional_credit_issued": provisional_credit_eligible,
        "provisional_credit_amount": disputed_amount if provisional_credit_eligible else None,
        "customer_max_liability_amount": customer_max_liability_amount,
        "card_action": card_action,
        "is_fraud_category": fraud,
        "pin_shared_voluntarily": shared,
        "submitted_at": TODAY_MDY,
        "status": "OPEN",
    }
    if not add_row(db, "debit_card_disputes", key, row):
        return "Error: Dispute may have already been filed for this transaction."
    parts = [
        f"Dispute ID: {key}",
        f"Transaction: {transaction_id}",
        f"Account: {account_id}",
        f"Category: {titled(dispute_category)}",
        f"Disputed Amount: ${disputed_amount:.2f}",
        f"Card Action: {titled(card_action)}",
        f"Provisional Credit: ISSUED - ${disputed_amount:.2f} credited within 10 business days "
        "per Regulation E."
        if provisional_credit_eligible
        else "Provisional Credit: Not eligible - see Debit Card Provisional Credit Guidelines for details.",
    ]
    if shared:
        parts.append(
            "WARNING: Customer indicated PIN was shared voluntarily. This may affect liability determination."
        )
    if fraud and not police_report_filed and disputed_amount > 500:
        parts.append("RECOMMENDATION: For fraud disputes over $500, filing a police report is recommended.")
    return "\n".join(parts)


@agent_tool("read")
def get_debit_dispute_status_7483(db: BankingDB, user_id: UserId) -> str:
    """Retrieve a customer's debit card disputes."""
    if not user_id:
        return "Error: Missing required parameter: user_id"
    return history(
        db,
        (
            "Debit card dispute history retrieved successfully.",
            "get_debit_dispute_status_7483",
            f"Debit card dispute history for user {user_id}:",
        ),
        ("debit_card_disputes", "user_id", user_id),
        "No debit card disputes found for this user.",
    )


@agent_tool("read")
def get_atm_deposit_images_8473(db: BankingDB, transaction_id: Text) -> str:
    """Retrieve the envelope and check images of a Rho-Bank ATM deposit."""
    if not transaction_id:
        return "Error: Missing required parameter: transaction_id"
    if not db.has_row("bank_account_transaction_history", transaction_id):
        return f"Error: Transaction '{transaction_id}' not found."
    txn = db.bank_account_transaction_history.get(transaction_id)
    assert txn is not None
    if txn.get("type") != "atm_deposit":
        return (
            f"Error: Transaction '{transaction_id}' is not an ATM deposit. "
            "This tool only works for ATM deposit transactions."
        )
    where = txn.get("description", "")
    if "RHO-BANK" not in where.upper() and "RHOBANK" not in where.upper():
        return (
            f"Error: Transaction '{transaction_id}' is from a third-party ATM. "
            "Deposit images are only available "
            "for Rho-Bank ATM deposits. For third-party ATM disputes, a chargeback request must be submitted "
            "to the ATM network."
        )
    return (
        "ATM Deposit Image Retrieval Results\n=====================================\n"
        f"Transaction ID: {transaction_id}\nATM: {where}\nDeposit Date: {txn.get('date', 'Unknown')}\n"
        f"Amount Recorded: ${abs(txn.get('amount', 0)):.2f}\n\n--- IMAGE STATUS ---\n"
        "Status: IMAGES NOT AVAILABLE\nReason: Deposit images for this transaction have either expired "
        "(older than 90 days) or were not captured by the ATM system.\n\nFor deposits without available "
        "images, the dispute will proceed based on customer statement and ATM journal records only. "
        "Investigation timeline may be extended.\n"
    )


@agent_tool("read")
def get_debit_cards_by_account_id_7823(db: BankingDB, account_id: AccountId) -> str:
    """Retrieve the debit cards of a checking account, newest first."""
    if not account_id:
        return "Error: Missing required parameter 'account_id'."
    if not db.has_row("accounts", account_id):
        return f"Error: Account '{account_id}' not found."
    if db.row("accounts", account_id).get("class", "").lower() not in ("checking", "business_checking"):
        return (
            f"Error: Account '{account_id}' is not a checking account. "
            "Debit cards are only available for checking accounts."
        )
    cards = [
        _card_view(key, card) for key, card in db.debit_cards.items() if card.get("account_id") == account_id
    ]
    if not cards:
        return f"No debit cards found for account '{account_id}'."
    cards.sort(key=lambda c: c.get("date_issued") or "", reverse=True)
    return json.dumps(cards, indent=2)


def _card_view(key: str, card: dict[str, Any]) -> dict[str, Any]:
    """Show a card as the look-up does: id first; last-4 and issue date renamed (and moved last)."""
    view = {"card_id": key, **card}
    if "last_4_digits" in view and "card_number_last_4" not in view:
        view["card_number_last_4"] = view.pop("last_4_digits")
    if "issue_date" in view and "date_issued" not in view:
        view["date_issued"] = view.pop("issue_date")
    elif "created_date" in view and "date_issued" not in view:
        view["date_issued"] = view.pop("created_date")
    return view


# --- ordering and activating -------------------------------------------------------------------------


def _order_refusal(db: BankingDB, account_id: Any, user_id: Any) -> str | None:
    """Refusals about the account a card is ordered for, in upstream's order (balance checks apart)."""
    if not db.has_row("accounts", account_id):
        return f"Error: Account '{account_id}' not found."
    account = db.accounts.get(account_id)
    assert account is not None
    if account.get("class") != "checking":
        return (
            f"Error: Debit cards can only be ordered for checking accounts. Account '{account_id}' is a "
            f"{account.get('class')} account."
        )
    if account.get("status") != "OPEN":
        return f"Error: Account must be OPEN. Account '{account_id}' has status: {account.get('status')}"
    if account.get("user_id") != user_id:
        return f"Error: Account '{account_id}' does not belong to user '{user_id}'."
    return None


def _issue_reason(db: BankingDB, account_id: Any) -> str:
    """Why a new card is issued: a closed lost/stolen/fraud card's reason, else first or new account."""
    existing = [c for c in db.debit_cards.values() if c.get("account_id") == account_id]
    closed = next((c for c in existing if c.get("status") == "CLOSED"), None)
    if closed:
        reason = closed.get("closure_reason", "first_card")
        if reason in ("lost", "stolen", "fraud", "fraud_suspected"):
            return "fraud" if reason == "fraud_suspected" else reason
        return "first_card"
    return "first_card" if existing else "new_account"


def _expiry(order_date: str) -> str:
    """Four years on, on the month's last day (February always the 28th)."""
    month, _, year = order_date.split("/")
    day = "31" if month in ("01", "03", "05", "07", "08", "10", "12") else "28" if month == "02" else "30"
    return f"{month}/{day}/{int(year) + 4}"


def _new_card(db: BankingDB, account_id: Any, user_id: Any, design: str) -> str:
    """Add the PENDING card an order creates and return its id (digits and CVV derive from the id)."""
    key = "dbc_" + seeded_id(f"debit_card:{account_id}:{user_id}:{TODAY_MDY}", 12)
    last4 = "".join(c for c in seeded_id(f"card_details:{key}:last4", 8) if c.isdigit())[:4].zfill(4)
    cvv = "".join(c for c in seeded_id(f"card_details:{key}:cvv", 6) if c.isdigit())[:3].zfill(3)
    user = db.users.get(user_id) if db.has_row("users", user_id) else None
    holder = user.get("name", "CARDHOLDER").upper() if user is not None else "CARDHOLDER"
    add_row(
        db,
        "debit_cards",
        key,
        {
            "card_id": key,
            "account_id": account_id,
            "user_id": user_id,
            "cardholder_name": holder,
            "last_4_digits": last4,
            "cvv": cvv,
            "status": "PENDING",
            "issue_date": TODAY_MDY,
            "expiration_date": _expiry(TODAY_MDY),
            "card_design": design,
            "issue_reason": _issue_reason(db, account_id),
        },
    )
    return key


def _fee_items(delivery: float, design: float, excess: float, sep: str) -> str:
    items = [
        f"Delivery{sep}${delivery}" if delivery > 0 else "",
        f"Design{sep}${design}" if design > 0 else "",
        f"Excess Replacement{sep}${excess:.0f}" if excess > 0 else "",
    ]
    return ", ".join(i for i in items if i)


@agent_tool("write")
def order_debit_card_5739(
    db: BankingDB,
    account_id: AccountId,
    user_id: UserId,
    delivery_option: Text,
    delivery_fee: Dollars,
    card_design: Text,
    design_fee: Dollars,
    shipping_address: Text,
    excess_replacement_fee: Annotated[
        float | None, arg("The fee for replacements over the limit, if any.")
    ] = None,
) -> str:
    """Order a new debit card for a checking account; fees are charged to the account."""
    excess_replacement_fee = excess_replacement_fee or 0
    try:
        delivery_fee = float(delivery_fee) if delivery_fee is not None else None  # type: ignore[assignment]
    except (TypeError, ValueError):
        return "Error: delivery_fee must be a number."
    try:
        design_fee = float(design_fee) if design_fee is not None else None  # type: ignore[assignment]
    except (TypeError, ValueError):
        return "Error: design_fee must be a number."
    try:
        excess = float(excess_replacement_fee)
    except (TypeError, ValueError):
        excess = 0
    if not all(
        [
            account_id,
            user_id,
            delivery_option,
            delivery_fee is not None,
            card_design,
            design_fee is not None,
            shipping_address,
        ]
    ):
        return (
            "Error: Missing required parameters. Required: account_id, user_id, delivery_option, "
            "delivery_fee, "
            "card_design, design_fee, shipping_address."
        )
    if delivery_option.upper() not in DELIVERY_DAYS:
        return f"Error: Invalid delivery_option. Must be one of: {list(DELIVERY_DAYS)}"
    if card_design.upper() not in DESIGNS:
        return f"Error: Invalid card_design. Must be one of: {DESIGNS}"
    delivery_option, card_design = delivery_option.upper(), card_design.upper()
    refusal = _order_refusal(db, account_id, user_id)
    if refusal:
        return refusal
    try:
        holdings = float(str(db.row("accounts", account_id).get("current_holdings", "0")).replace(",", ""))
    except ValueError:
        holdings = 0.0
    if holdings < 25.0:
        return f"Error: Account must have a minimum balance of $25. Current balance: ${holdings:.2f}"
    if any(
        o.get("account_id") == account_id and o.get("status") == "PENDING"
        for o in db.debit_card_orders.values()
    ):
        return f"Error: There is already a pending debit card order for account '{account_id}'."
    if any(
        c.get("account_id") == account_id and c.get("status") == "ACTIVE" for c in db.debit_cards.values()
    ):
        return (
            f"Error: Account '{account_id}' already has an active debit card. "
            "Maximum 1 active card per checking account."
        )
    total = delivery_fee + design_fee + excess
    if total > 0 and holdings < total:
        return (
            f"Error: Insufficient funds for fees. Total fees: ${total:.2f}. Current balance: ${holdings:.2f}"
        )
    order = "dcord_" + seeded_id(f"debit_card_order:{account_id}:{user_id}:{delivery_option}", 12)
    if not add_row(
        db,
        "debit_card_orders",
        order,
        {
            "order_id": order,
            "account_id": account_id,
            "user_id": user_id,
            "delivery_option": delivery_option,
            "card_design": card_design,
            "shipping_address": shipping_address,
            "delivery_fee": delivery_fee,
            "design_fee": design_fee,
            "excess_replacement_fee": excess,
            "total_fee": total,
            "order_date": TODAY_MDY,
            "expected_delivery": DELIVERY_DAYS[delivery_option],
            "status": "PENDING",
        },
    ):
        return "Error: Failed to create debit card order. Order may already exist."
    if total > 0:
        db.accounts.edit(account_id)["current_holdings"] = f"{holdings - total:.2f}"
        fee_key = f"btxn_dcfee_{order[-8:]}"
        add_row(
            db,
            "bank_account_transaction_history",
            fee_key,
            {
                "transaction_id": fee_key,
                "account_id": account_id,
                "date": TODAY_MDY,
                "description": f"DEBIT CARD ORDER FEE - {_fee_items(delivery_fee, design_fee, excess, ' ')}",
                "amount": -total,
                "type": "debit_card_fee",
                "status": "posted",
            },
        )
    card = _new_card(db, account_id, user_id, card_design)
    parts = [
        "Debit Card Order Confirmed",
        f"Order ID: {order}",
        f"Card ID: {card}",
        f"Linked Account: {account_id}",
        f"Delivery Option: {delivery_option}",
        f"Card Design: {card_design}",
        f"Shipping Address: {shipping_address}",
        f"Expected Delivery: {DELIVERY_DAYS[delivery_option]}",
        "",
        "Note: Card will arrive with status PENDING. "
        "Customer must call to activate after receiving the card.",
    ]
    if total > 0:
        parts += [
            f"Total Fees: ${total:.2f} ({_fee_items(delivery_fee, design_fee, excess, ': ')}) - CHARGED to "
            f"account {account_id}",
            f"New Account Balance: ${holdings - total:.2f}",
        ]
    else:
        parts.append("Total Fees: $0 (No additional charges)")
    return "\n".join(parts)


def _activation_refusal(
    db: BankingDB, values: tuple[Any, ...], reasons: tuple[str, ...], tool: str
) -> str | None:
    """Upstream's common activation checks, in order; ``None`` when the card may be activated."""
    card_id, last_4_digits, expiration_date, cvv, pin = values
    if not all(values):
        return (
            "Error: Missing required parameters. Required: card_id, last_4_digits, expiration_date, cvv, pin."
        )
    problem = _pin_problem(pin)
    if problem:
        return f"Error: {problem}"
    if not cvv.isdigit() or len(cvv) != 3:
        return "Error: CVV must be exactly 3 digits."
    if not last_4_digits.isdigit() or len(last_4_digits) != 4:
        return "Error: Last 4 digits must be exactly 4 digits."
    card = _card(db, card_id)
    if card is None:
        return _not_found(card_id)
    reason = card.get("issue_reason", "new_account")
    if reason not in reasons:
        return (
            f"Error: Wrong activation tool. This card has issue_reason='{reason}'. Please use "
            f"{ACTIVATION_TOOL_BY_REASON.get(reason, 'unknown')} instead of {tool}."
        )
    if card.get("status") == "ACTIVE":
        return f"Error: Debit card '{card_id}' is already active."
    if card.get("status") != "PENDING":
        return (
            f"Error: Debit card '{card_id}' cannot be activated. Current status: {card.get('status')}. "
            "Only PENDING cards can be activated."
        )
    if card.get("last_4_digits") != last_4_digits:
        return "Error: Card verification failed. The last 4 digits do not match our records."
    linked = card.get("account_id")
    if linked and db.has_row("accounts", linked) and db.row("accounts", linked).get("status") != "OPEN":
        return f"Error: The linked checking account '{linked}' is no longer open. Card cannot be activated."
    return None


def _activate(db: BankingDB, card_id: str, retire: dict[str, str]) -> tuple[str, list[str]]:
    """Activate the card; every other ACTIVE card of its account gets ``retire``'s fields."""
    card = db.debit_cards.edit(card_id)
    card.update(status="ACTIVE", activated_date=TODAY_MDY)
    account_id, reason = card.get("account_id"), card.get("issue_reason", "")
    retired = [
        key
        for key, other in db.debit_cards.items()
        if key != card_id and other.get("account_id") == account_id and other.get("status") == "ACTIVE"
    ]
    for key in retired:
        db.debit_cards.edit(key).update({k: v.format(reason=reason) for k, v in retire.items()})
    return reason, retired


@agent_tool("write")
def activate_debit_card_8291(
    db: BankingDB, card_id: CardId, last_4_digits: Digits, expiration_date: Text, cvv: Digits, pin: Digits
) -> str:
    """Activate a NEW debit card (issue_reason new_account or first_card)."""
    values = (card_id, last_4_digits, expiration_date, cvv, pin)
    refusal = _activation_refusal(db, values, ("new_account", "first_card"), "activate_debit_card_8291")
    if refusal:
        return refusal
    _, retired = _activate(
        db,
        card_id,
        {"status": "DEACTIVATED", "deactivated_date": TODAY_MDY, "deactivation_reason": "New card activated"},
    )
    parts = [
        "New Debit Card Activation Successful",
        f"Card ID: {card_id}",
        "Status: ACTIVE",
        f"Activation Date: {TODAY_MDY}",
        "",
        "Your card is now ready to use at any ATM or point of sale terminal.",
        "For security, please sign the back of your card.",
    ]
    if retired:
        parts.append(f"\nNote: Previous card(s) have been deactivated: {', '.join(retired)}")
    return "\n".join(parts)


@agent_tool("write")
def activate_debit_card_8292(
    db: BankingDB, card_id: CardId, last_4_digits: Digits, expiration_date: Text, cvv: Digits, pin: Digits
) -> str:
    """Activate a REPLACEMENT debit card (issue_reason lost, stolen or fraud)."""
    values = (card_id, last_4_digits, expiration_date, cvv, pin)
    refusal = _activation_refusal(db, values, ("lost", "stolen", "fraud"), "activate_debit_card_8292")
    if refusal:
        return refusal
    reason, retired = _activate(
        db,
        card_id,
        {
            "status": "DEACTIVATED",
            "deactivated_date": TODAY_MDY,
            "deactivation_reason": "Replacement card activated ({reason})",
        },
    )
    parts = [
        "Replacement Debit Card Activation Successful",
        f"Card ID: {card_id}",
        f"Replacement Reason: {titled(reason)}",
        "Status: ACTIVE",
        f"Activation Date: {TODAY_MDY}",
        "",
        "Your replacement card is now ready to use.",
        "",
        "IMPORTANT SECURITY REMINDERS:",
        "- Please review your recent transactions for any unauthorized charges",
        "- Report any suspicious activity immediately",
    ]
    if reason == "fraud":
        parts.append("- Since fraud was suspected, we recommend changing your online banking password")
    if retired:
        parts.append(f"\nPrevious card(s) have been deactivated for security: {', '.join(retired)}")
    return "\n".join(parts)


@agent_tool("write")
def activate_debit_card_8293(
    db: BankingDB, card_id: CardId, last_4_digits: Digits, expiration_date: Text, cvv: Digits, pin: Digits
) -> str:
    """Activate a REISSUED debit card (issue_reason expired, damaged, upgrade or bank_reissue)."""
    values = (card_id, last_4_digits, expiration_date, cvv, pin)
    refusal = _activation_refusal(
        db, values, ("expired", "damaged", "upgrade", "bank_reissue"), "activate_debit_card_8293"
    )
    if refusal:
        return refusal
    reason, kept = _activate(
        db,
        card_id,
        {
            "status": "GRACE_PERIOD",
            "grace_period_ends": TODAY_MDY,
            "deactivation_reason": "Reissued card activated ({reason})",
        },
    )
    parts = [
        "Reissued Debit Card Activation Successful",
        f"Card ID: {card_id}",
        f"Reissue Reason: {titled(reason)}",
        "Status: ACTIVE",
        f"Activation Date: {TODAY_MDY}",
        "",
        "Your reissued card is now ready to use.",
    ]
    if kept:
        parts += [
            f"\nNote: Your previous card(s) ({', '.join(kept)}) will remain active for 24 hours "
            "as a grace period.",
            "After 24 hours, the old card(s) will be automatically deactivated.",
        ]
    if reason in ("expired", "bank_reissue"):
        parts.append(
            "\nReminder: If your card number changed, please update any recurring payments with your new "
            "card details."
        )
    return "\n".join(parts)


# --- card status ---------------------------------------------------------------------------------------


@agent_tool("write")
def close_debit_card_4721(db: BankingDB, card_id: CardId, reason: Text) -> str:
    """Close or cancel a debit card permanently."""
    if not card_id or not reason:
        return "Error: Missing required parameters. Required: card_id, reason."
    if reason.lower() not in CLOSE_REASONS:
        return f"Error: Invalid reason. Must be one of: {CLOSE_REASONS}"
    reason = reason.lower()
    card = _card(db, card_id)
    if card is None:
        return _not_found(card_id)
    before = card.get("status")
    if before not in ("ACTIVE", "PENDING"):
        return (
            f"Error: Debit card '{card_id}' cannot be closed. Current status: {before}. "
            "Only ACTIVE or PENDING cards can be closed."
        )
    db.debit_cards.edit(card_id).update(status="CLOSED", closed_date=TODAY_MDY, closure_reason=reason)
    parts = [
        "Debit Card Closed Successfully",
        f"Card ID: {card_id}",
        f"Previous Status: {before}",
        "New Status: CLOSED",
        f"Closure Reason: {titled(reason)}",
        f"Closure Date: {TODAY_MDY}",
        "",
    ]
    if reason in ("lost", "stolen", "fraud_suspected"):
        parts += [
            "IMPORTANT: This card has been immediately deactivated for security.",
            "Any pending transactions may still be processed.",
        ]
        if reason == "fraud_suspected":
            parts += [
                "Please advise the customer to review recent transactions and file disputes for any "
                "unauthorized charges.",
                "Also recommend changing their online banking password.",
            ]
    parts += [
        "",
        "Note: This card cannot be reactivated. If the customer needs a new card, they can order one "
        "through the standard ordering process.",
        "Any recurring payments linked to this card will need to be updated with new payment information.",
    ]
    return "\n".join(parts)


@agent_tool("write")
def freeze_debit_card_3892(db: BankingDB, card_id: CardId) -> str:
    """Freeze a debit card for now; it can be unfrozen later."""
    if not card_id:
        return "Error: Missing required parameter: card_id."
    card = _card(db, card_id)
    if card is None:
        return _not_found(card_id)
    if card.get("status") == "FROZEN":
        return f"Error: Debit card '{card_id}' is already frozen."
    if card.get("status") != "ACTIVE":
        return (
            f"Error: Debit card '{card_id}' cannot be frozen. Current status: {card.get('status')}. "
            "Only ACTIVE cards can be frozen."
        )
    db.debit_cards.edit(card_id).update(status="FROZEN", frozen_date=TODAY_MDY)
    return "\n".join(
        [
            "Debit Card Frozen Successfully",
            f"Card ID: {card_id}",
            "Status: FROZEN",
            f"Frozen Date: {TODAY_MDY}",
            "",
            "While frozen:",
            "- All new purchase transactions will be declined",
            "- Recurring payments and subscriptions will be declined",
            "- Pending transactions already authorized may still process",
            "",
            "To unfreeze, the customer can call customer service or use the mobile app.",
            "If the card is confirmed lost or stolen, recommend closing the card permanently instead.",
        ]
    )


@agent_tool("write")
def unfreeze_debit_card_3893(db: BankingDB, card_id: CardId) -> str:
    """Unfreeze a frozen debit card."""
    if not card_id:
        return "Error: Missing required parameter: card_id."
    card = _card(db, card_id)
    if card is None:
        return _not_found(card_id)
    if card.get("status") == "ACTIVE":
        return f"Error: Debit card '{card_id}' is already active."
    if card.get("status") != "FROZEN":
        return (
            f"Error: Debit card '{card_id}' cannot be unfrozen. Current status: {card.get('status')}. "
            "Only FROZEN cards can be unfrozen."
        )
    linked = card.get("account_id")
    if linked and db.has_row("accounts", linked) and db.row("accounts", linked).get("status") != "OPEN":
        return f"Error: The linked checking account '{linked}' is no longer open. Card cannot be unfrozen."
    db.debit_cards.edit(card_id).update(status="ACTIVE", unfrozen_date=TODAY_MDY)
    return "\n".join(
        [
            "Debit Card Unfrozen Successfully",
            f"Card ID: {card_id}",
            "Status: ACTIVE",
            f"Unfrozen Date: {TODAY_MDY}",
            "",
            "The card is now active and ready to use immediately.",
            "All transactions will process normally.",
        ]
    )


@agent_tool("write")
def set_debit_card_recurring_block_7382(
    db: BankingDB,
    card_id: CardId,
    block_recurring: Annotated[bool, arg("True blocks recurring payments, False allows them again.")],
) -> str:
    """Block or unblock all recurring payments on a debit card."""
    if not card_id:
        return "Error: Missing required parameter: card_id"
    card = db.debit_cards.get(card_id) if db.has_row("debit_cards", card_id) else None
    if not card:
        return _not_found(card_id)
    status = card.get("status", "").upper()
    if status != "ACTIVE":
        return (
            f"Error: Cannot update recurring block settings for a card with status '{status}'. "
            "Card must be ACTIVE."
        )
    db.debit_cards.edit(card_id)["recurring_blocked"] = block_recurring
    if block_recurring:
        return (
            f"Recurring payments BLOCKED for debit card {card_id}.\n"
            "All recurring/subscription charges will be "
            "declined.\nOne-time purchases are not affected.\nThis change takes effect within 24 hours."
        )
    return (
        f"Recurring payments UNBLOCKED for debit card {card_id}.\nRecurring/subscription charges will now be "
        "allowed.\nThis change takes effect within 24 hours."
    )


@agent_tool("write")
def clear_debit_card_fraud_alert_4892(db: BankingDB, card_id: CardId, reason: Text) -> str:
    """Clear a fraud alert (customer_verified) or a velocity block (velocity_clear) on a debit card."""
    if not card_id:
        return "Error: Missing required parameter: card_id."
    if not reason:
        return "Error: Missing required parameter: reason."
    if reason not in ("customer_verified", "velocity_clear"):
        return f"Error: Invalid reason '{reason}'. Must be one of: customer_verified, velocity_clear"
    card = _card(db, card_id)
    if card is None:
        return _not_found(card_id)
    if reason == "velocity_clear":
        if not card.get("velocity_blocked", False):
            return f"Error: Debit card '{card_id}' does not have an active velocity block."
        db.debit_cards.edit(card_id).update(velocity_blocked=False, velocity_cleared_date=TODAY_MDY)
        return "\n".join(
            [
                "Velocity Block Cleared Successfully",
                f"Card ID: {card_id}",
                f"Cleared Date: {TODAY_MDY}",
                "",
                "The card is now unblocked and ready for normal use.",
                "The velocity monitoring will continue - if the same unusual patterns recur,",
                "the card may be blocked again automatically.",
            ]
        )
    if not card.get("fraud_alert_active", False):
        return f"Error: Debit card '{card_id}' does not have an active fraud alert."
    if card.get("alert_source") == "bank_initiated":
        return (
            "Error: BANK_INITIATED_ALERT - This fraud alert was initiated by the bank's "
            "fraud detection system "
            "and cannot be cleared by customer service agents. Please transfer the customer to the security "
            "team using transfer_to_human_agents."
        )
    db.debit_cards.edit(card_id).update(
        fraud_alert_active=False, alert_source=None, fraud_alert_cleared_date=TODAY_MDY
    )
    return "\n".join(
        [
            "Fraud Alert Cleared Successfully",
            f"Card ID: {card_id}",
            f"Cleared Date: {TODAY_MDY}",
            "",
            "The fraud alert has been removed from the card.",
            "All transactions will process normally.",
            "",
            "Remind the customer to review recent transactions and report any unauthorized charges.",
        ]
    )


# --- PINs and limits -------------------------------------------------------------------------------------

PIN_FOOTER = ["", "The new PIN is effective immediately."]
PIN_USE = [
    "Customer can use the new PIN for ATM withdrawals and point-of-sale transactions.",
    "",
    "Security reminder: Never share your PIN with anyone.",
]


@agent_tool("write")
def reset_debit_card_pin_6284(db: BankingDB, card_id: CardId, last_4_digits: Digits, new_pin: Digits) -> str:
    """Reset a forgotten debit card PIN (and unlock the card)."""
    if not all([card_id, last_4_digits, new_pin]):
        return "Error: Missing required parameters. Required: card_id, last_4_digits, new_pin."
    if not last_4_digits.isdigit() or len(last_4_digits) != 4:
        return "Error: Last 4 digits must be exactly 4 digits."
    problem = _pin_problem(new_pin)
    if problem:
        return f"Error: {problem}"
    card = _card(db, card_id)
    if card is None:
        return _not_found(card_id)
    if card.get("last_4_digits") != last_4_digits:
        return "Error: Card verification failed. The last 4 digits do not match our records."
    if card.get("status") != "ACTIVE":
        return (
            f"Error: Cannot reset PIN. Card status is {card.get('status')}. "
            "Only ACTIVE cards can have their PIN reset."
        )
    db.debit_cards.edit(card_id).update(
        pin_last_changed=TODAY_MDY, pin_locked=False, pin_attempts_remaining=3
    )
    return "\n".join(
        [
            "Debit Card PIN Reset Successfully",
            f"Card ID: {card_id}",
            f"PIN Changed: {TODAY_MDY}",
            *PIN_FOOTER,
            "Your card has been unlocked and is ready to use.",
            *PIN_USE,
        ]
    )


@agent_tool("write")
def change_debit_card_pin_6285(db: BankingDB, card_id: CardId, current_pin: Digits, new_pin: Digits) -> str:
    """Change a debit card PIN the customer knows."""
    if not all([card_id, current_pin, new_pin]):
        return "Error: Missing required parameters. Required: card_id, current_pin, new_pin."
    if not current_pin.isdigit() or len(current_pin) != 4:
        return "Error: Current PIN must be exactly 4 digits."
    problem = _pin_problem(new_pin)
    if problem:
        return f"Error: {problem}"
    if current_pin == new_pin:
        return "Error: New PIN must be different from current PIN."
    card = _card(db, card_id)
    if card is None:
        return _not_found(card_id)
    if card.get("status") != "ACTIVE":
        return (
            f"Error: Cannot change PIN. Card status is {card.get('status')}. "
            "Only ACTIVE cards can have their PIN changed."
        )
    db.debit_cards.edit(card_id)["pin_last_changed"] = TODAY_MDY
    return "\n".join(
        [
            "Debit Card PIN Changed Successfully",
            f"Card ID: {card_id}",
            f"PIN Changed: {TODAY_MDY}",
            *PIN_FOOTER,
            *PIN_USE,
        ]
    )


def _limit_refusal(db: BankingDB, card_id: Any) -> str | None:
    """Refusals about the card and its account, in upstream's order."""
    card = _card(db, card_id)
    if card is None:
        return _not_found(card_id)
    if card.get("status") != "ACTIVE":
        return (
            f"Error: Debit card '{card_id}' is not active. Current status: {card.get('status')}. "
            "Only ACTIVE cards can have limit increases."
        )
    linked = card.get("account_id")
    if not linked or not db.has_row("accounts", linked):
        return f"Error: Could not find linked account for debit card '{card_id}'."
    account = db.accounts.get(linked)
    assert account is not None
    if account.get("status") != "OPEN":
        return (
            f"Error: The linked account '{linked}' is not in good standing. "
            f"Account status: {account.get('status')}."
        )
    opened = account.get("date_opened")
    if opened:
        try:
            days = (NOW.replace(hour=0, minute=0) - datetime.strptime(opened, "%m/%d/%Y")).days  # noqa: DTZ007 - zone-less dates, naive NOW
        except ValueError:
            return None
        if days < 60:
            return (
                "Error: Account must be at least 60 days old for a temporary limit increase. "
                f"Account age: {days} days."
            )
    return None


def _current_limit(card: dict[str, Any], account: dict[str, Any], limit_type: str) -> tuple[Any, str | None]:
    """Find the card's current daily limit of this type, or the refusal when there is none to raise."""
    if limit_type != "atm":
        return card.get("daily_purchase_limit"), None
    current = card.get("daily_atm_limit")
    if current is not None:
        return current, None
    level = account.get("level", "").lower()
    if "light green" in level:
        return None, (
            "Error: Light Green Account (teen checking) cards have policy-based limits that cannot be "
            "modified. The daily ATM withdrawal limit of $150 is fixed by account policy for safety "
            "reasons. The customer may request the parent/guardian to withdraw cash from their own "
            "account if needed."
        )
    current = DEFAULT_ATM_LIMITS.get(level)
    if current is None:
        return None, (
            f"Error: Could not determine the default ATM limit for account type '{account.get('level')}'. "
            "Please verify the account type."
        )
    return current, None


@agent_tool("write")
def request_temporary_debit_card_limit_increase_8374(
    db: BankingDB,
    card_id: CardId,
    limit_type: Text,
    new_limit: Annotated[int, arg("The new temporary daily limit in whole dollars.")],
) -> str:
    """Raise a debit card's daily ATM or purchase limit for 24 hours (at most 150% of the current one)."""
    if not card_id:
        return "Error: Missing required parameter: card_id."
    if not limit_type:
        return "Error: Missing required parameter: limit_type."
    if limit_type not in ("atm", "purchase"):
        return f"Error: Invalid limit_type '{limit_type}'. Must be 'atm' or 'purchase'."
    if new_limit is None:
        return "Error: Missing required parameter: new_limit."
    try:
        new_limit = int(new_limit)
    except (TypeError, ValueError):
        return f"Error: new_limit must be an integer, got '{new_limit}'."
    if new_limit <= 0:
        return "Error: new_limit must be a positive amount."
    refusal = _limit_refusal(db, card_id)
    if refusal:
        return refusal
    card = db.row("debit_cards", card_id)
    account = db.row("accounts", card["account_id"])
    name = "Daily ATM Withdrawal Limit" if limit_type == "atm" else "Daily Purchase Limit"
    current, refusal = _current_limit(card, account, limit_type)
    if refusal:
        return refusal
    if current is None:
        return (
            f"Error: The card does not have a {name.lower()} configured. "
            "This may be a restricted account type "
            "where limits are set by account policy and cannot be modified."
        )
    most = int(current * 1.5)
    if new_limit > most:
        return (
            f"Error: Requested limit ${new_limit} exceeds the maximum allowed temporary increase. Maximum "
            f"temporary limit is ${most} (150% of current ${current} limit)."
        )
    if new_limit <= current:
        return f"Error: Requested limit ${new_limit} is not higher than the current limit of ${current}."
    field = "daily_atm_limit" if limit_type == "atm" else "daily_purchase_limit"
    db.debit_cards.edit(card_id).update(
        {
            field: new_limit,
            f"temporary_{limit_type}_limit_increase": True,
            f"original_{limit_type}_limit": current,
            f"temporary_{limit_type}_limit_expires": TODAY_MDY,
        }
    )
    return "\n".join(
        [
            f"Temporary {name} Increase Granted Successfully",
            f"Card ID: {card_id}",
            f"Previous Limit: ${current}",
            f"New Temporary Limit: ${new_limit}",
            f"Increase Amount: ${new_limit - current}",
            "",
            "Important Information:",
            "- This temporary increase expires in 24 hours",
            f"- After expiration, the limit will revert to ${current}",
            "- Only one temporary increase is allowed per 24-hour period",
            "",
            "Note: If the customer is at a third-party (non-Rho-Bank) ATM, that ATM may have its own",
            "per-transaction or daily limits that Rho-Bank cannot override. The customer may need to",
            "use a Rho-Bank ATM or make multiple smaller withdrawals at third-party ATMs.",
        ]
    )
