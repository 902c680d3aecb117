"""Telecom agent tools (spec tau2-telecom-banking.md §A.1): 13 tools, 6 hidden helpers, the domain.

The carrier's side: look a customer up, read lines and bills, change a line's state, ask for a
payment, sell extra data, hand over. The agent never sees the phone; what it changes reaches the
phone through ``device.sync``, which the environment runs after every call. "Today" is fixed at
2025-02-25 so a replay is the same on any day. Answers and refusals read as upstream's (records as
tau2 serialises them, see ``render``), because a candidate model on uxlocal must meet the tools a
candidate on tau2-bench meets. Refuels draw new bill ids from a counter, never at random.
"""

from __future__ import annotations

import datetime
from typing import Annotated

from ...registry import DomainSpec
from ...toolkit import ToolError, Toolkit, arg
from ...tools_common import register_common
from . import phone_helpers  # noqa: F401 - registers the user side's hidden helpers
from .arg_types import LooseStr, Number, StrictInt
from .db import Bill, Customer, Line, LineItem, Plan, TelecomDB
from .device import customer_by_phone, sync
from .phone_db import TelecomUserDB
from .render import as_text
from .user_tools import USER

AGENT = Toolkit("telecom", qualifier="TelecomTools")

TODAY = datetime.date(2025, 2, 25)
CYCLE_END = datetime.date(2025, 2, 28)
"""Last day of today's month: the end of the billing cycle ``get_data_usage`` reports."""
LAST_MONTH = (datetime.date(2025, 1, 1), datetime.date(2025, 1, 31))
"""The billing period before today's; the overdue bill of the suspension tasks is for it."""
NEXT_MONTH = (datetime.date(2025, 3, 1), datetime.date(2025, 3, 31))
"""Period of a Draft bill a refuel creates; it is issued on its first day, due 14 days later."""
NEW_BILL_PREFIX = "B9"
"""Bills a refuel creates are ``B9001``, ``B9002``…: deterministic, and clear of the file's ids."""

CustomerId = Annotated[LooseStr, arg("ID of the customer.")]
LineId = Annotated[LooseStr, arg("ID of the line.")]


def _customer(db: TelecomDB, customer_id: str) -> Customer:
    customer = db.customers.get(customer_id)
    if customer is None:
        raise ToolError(f"Customer with ID {customer_id} not found")
    return customer


def _record(table: object, kind: str, key: str) -> object:
    record = table.get(key)  # type: ignore[attr-defined]
    if record is None:
        raise ToolError(f"{kind} with ID {key} not found")
    return record


def _line(db: TelecomDB, line_id: str) -> Line:
    return _record(db.lines, "Line", line_id)  # type: ignore[return-value]


def _plan(db: TelecomDB, plan_id: str) -> Plan:
    return _record(db.plans, "Plan", plan_id)  # type: ignore[return-value]


def _bill(db: TelecomDB, bill_id: str) -> Bill:
    return _record(db.bills, "Bill", bill_id)  # type: ignore[return-value]


def _own_line(db: TelecomDB, customer_id: str, line_id: str) -> Line:
    """Return the line, checked to belong to the customer: a tool never acts on someone else's line."""
    if line_id not in _customer(db, customer_id).line_ids:
        raise ToolError(f"Line {line_id} not found for customer {customer_id}")
    return _line(db, line_id)


@AGENT.tool("read", "Find the customer whose own number, or one of whose lines, is this phone number.")
def get_customer_by_phone(db: TelecomDB, phone_number: Annotated[LooseStr, arg("The phone number.")]) -> str:
    """Return customers in file order; each is found by its own number or one of its lines' numbers."""
    customer = customer_by_phone(db, phone_number)
    if customer is None:
        raise ToolError(f"Customer with phone number {phone_number} not found")
    return as_text(customer)


@AGENT.tool("read", "Return a customer's account by id: contact details, lines, bills, payment methods.")
def get_customer_by_id(db: TelecomDB, customer_id: CustomerId) -> str:
    """Plain lookup by id (case matters)."""
    return as_text(_customer(db, customer_id))


@AGENT.tool("read", "Find customers by full name and date of birth.")
def get_customer_by_name(
    db: TelecomDB,
    full_name: Annotated[str, arg("The customer's full name.")],
    dob: Annotated[LooseStr, arg("Date of birth, YYYY-MM-DD.")],
) -> str:
    """Name case-insensitively, birth date exactly; a list, possibly empty."""
    wanted = full_name.lower()
    found = [c for c in db.customers.values() if c.full_name.lower() == wanted and c.date_of_birth == dob]
    return as_text(found)


@AGENT.tool("read", "Show a record by id: a line (L…), device (D…), bill (B…), customer (C…) or plan (P…).")
def get_details_by_id(db: TelecomDB, id: Annotated[str, arg("A record id.")]) -> str:
    """Dispatch on the id's first letter (upper case only), so one tool reads every kind of record.

    ``startswith`` as upstream's: an id that is not text fails on it, with its words.
    """
    tables = {"L": (db.lines, "Line"), "D": (db.devices, "Device"), "B": (db.bills, "Bill"),
              "C": (db.customers, "Customer"), "P": (db.plans, "Plan")}  # fmt: skip
    prefix = next((p for p in tables if id.startswith(p)), None)
    if prefix is None:
        raise ToolError(f"Unknown ID format or type: {id}")
    table, kind = tables[prefix]
    return as_text(_record(table, kind, id))


@AGENT.tool("write", "Suspend an active line; a monthly holding fee applies while it is suspended.")
def suspend_line(
    db: TelecomDB, customer_id: CustomerId, line_id: LineId, reason: Annotated[LooseStr, arg("Why.")]
) -> str:
    """Only an Active line can be suspended; the suspension starts today."""
    if _own_line(db, customer_id, line_id).status != "Active":
        raise ToolError("Line must be active to suspend")
    line = db.lines.edit(line_id)
    line.status = "Suspended"
    line.suspension_start_date = TODAY
    return as_text({"message": "Line suspended successfully. $5/month holding fee will apply.", "line": line})


@AGENT.tool("write", "Resume a suspended (or pending) line so it has service again.")
def resume_line(db: TelecomDB, customer_id: CustomerId, line_id: LineId) -> str:
    """Deliberately checks neither the contract end nor unpaid bills: the policy is the agent's job."""
    if _own_line(db, customer_id, line_id).status not in ("Suspended", "Pending Activation"):
        raise ToolError("Line must be suspended to resume")
    line = db.lines.edit(line_id)
    line.status = "Active"
    line.suspension_start_date = None
    return as_text({"message": "Line resumed successfully", "line": line})


@AGENT.tool("read", "List a customer's bills, newest first.")
def get_bills_for_customer(
    db: TelecomDB, customer_id: CustomerId, limit: Annotated[StrictInt, arg("Most bills to return.")] = 12
) -> str:
    """Newest issue date first (ties keep the account's order); ``limit`` slices as Python does."""
    bills = [_bill(db, bill_id) for bill_id in _customer(db, customer_id).bill_ids]
    bills.sort(key=lambda b: b.issue_date, reverse=True)
    return as_text(bills[:limit])


@AGENT.tool("write", "Ask the customer to pay one of their bills; refused while another bill awaits payment.")
def send_payment_request(
    db: TelecomDB, customer_id: CustomerId, bill_id: Annotated[LooseStr, arg("ID of the bill.")]
) -> str:
    """One request at a time: refused while any of the customer's bills awaits payment."""
    customer = _customer(db, customer_id)
    if _awaiting(db, customer):
        raise ToolError("A bill is already awaiting payment for this customer")
    if bill_id not in customer.bill_ids:
        raise ToolError(f"Bill {bill_id} not found for customer {customer_id}")
    _bill(db, bill_id)
    db.bills.edit(bill_id).status = "Awaiting Payment"
    return f"Payment request sent to the customer for bill {bill_id}"


def _awaiting(db: TelecomDB, customer: Customer) -> list[Bill]:
    return [b for b in (_bill(db, i) for i in customer.bill_ids) if b.status == "Awaiting Payment"]


@AGENT.tool("read", "Show a line's data use this cycle: used, allowance, extra data bought, cycle end.")
def get_data_usage(db: TelecomDB, customer_id: CustomerId, line_id: LineId) -> str:
    """Everything the agent needs to decide whether a refuel fixes a data problem."""
    line = _own_line(db, customer_id, line_id)
    plan = _plan(db, line.plan_id)
    return as_text({
        "line_id": line_id,
        "data_used_gb": line.data_used_gb,
        "data_limit_gb": plan.data_limit_gb,
        "data_refueling_gb": line.data_refueling_gb,
        "cycle_end_date": CYCLE_END,
    })  # fmt: skip


def _set_roaming(db: TelecomDB, customer_id: str, line_id: str, enabled: bool) -> str:
    word = "enabled" if enabled else "disabled"
    if _own_line(db, customer_id, line_id).roaming_enabled == enabled:
        return f"Roaming was already {word}"
    db.lines.edit(line_id).roaming_enabled = enabled
    return f"Roaming {word} successfully"


@AGENT.tool("write", "Allow international roaming on a line.")
def enable_roaming(db: TelecomDB, customer_id: CustomerId, line_id: LineId) -> str:
    """Idempotent: enabling twice succeeds and changes nothing."""
    return _set_roaming(db, customer_id, line_id, True)


@AGENT.tool("write", "Stop international roaming on a line.")
def disable_roaming(db: TelecomDB, customer_id: CustomerId, line_id: LineId) -> str:
    """Idempotent, like ``enable_roaming``."""
    return _set_roaming(db, customer_id, line_id, False)


register_common(AGENT, with_calculate=False)


@AGENT.tool("write", "Add extra data to a line; it is charged on the customer's draft bill.")
def refuel_data(
    db: TelecomDB, customer_id: CustomerId, line_id: LineId, gb_amount: Annotated[Number, arg("Gigabytes.")]
) -> str:
    """Add data to a line, charged at the plan's refuel price on the Draft bill (created when missing)."""
    line = _own_line(db, customer_id, line_id)
    if gb_amount <= 0:
        raise ToolError("Refuel amount must be positive")
    plan = _plan(db, line.plan_id)
    charge = gb_amount * plan.data_refueling_price_per_gb
    edited = db.lines.edit(line_id)
    edited.data_refueling_gb = edited.data_refueling_gb + gb_amount
    bill = _draft_bill(db, customer_id)
    bill.line_items.append(LineItem(
        description=f"Data refueling: {gb_amount} GB at ${plan.data_refueling_price_per_gb}/GB",
        amount=charge, date=TODAY, item_type="Credit" if charge < 0 else "Charge",
    ))  # fmt: skip
    bill.total_due = bill.total_due + charge
    return as_text({
        "message": f"Successfully added {gb_amount} GB of data for line {line_id} for ${charge:.2f}",
        "new_data_refueling_gb": edited.data_refueling_gb,
        "charge": charge,
    })  # fmt: skip


def _draft_bill(db: TelecomDB, customer_id: str) -> Bill:
    """Return the customer's first Draft bill, for editing; else a new one for next month."""
    customer = _customer(db, customer_id)
    for bill_id in customer.bill_ids:
        if _bill(db, bill_id).status == "Draft":
            return db.bills.edit(bill_id)
    number = 1 + sum(1 for key in db.bills if key.startswith(NEW_BILL_PREFIX))
    bill_id = f"{NEW_BILL_PREFIX}{number:03d}"
    start, end = NEXT_MONTH
    new = Bill(
        bill_id=bill_id, customer_id=customer_id, period_start=start, period_end=end,
        issue_date=start, total_due=0, due_date=start + datetime.timedelta(days=14), status="Draft",
    )  # fmt: skip
    db.bills.add(bill_id, new)
    db.customers.edit(customer_id).bill_ids.append(bill_id)
    return db.bills.edit(bill_id)


# --- hidden: task setup and assertions ----------------------------------------------------------


@AGENT.helper("Set how much data a line has used this cycle (setup only).")
def set_data_usage(db: TelecomDB, customer_id: str, line_id: str, data_used_gb: float) -> str:
    """Put a line over (or under) its allowance."""
    _own_line(db, customer_id, line_id)
    db.lines.edit(line_id).data_used_gb = data_used_gb
    return f"Data usage set to {data_used_gb} GB for line {line_id}"


@AGENT.helper("Add an overdue bill for last month and suspend the line for it (setup only).")
def suspend_line_for_overdue_bill(
    db: TelecomDB, customer_id: str, line_id: str, new_bill_id: str, contract_ended: bool
) -> str:
    """Suspend a line for an overdue bill of its monthly plan price; ``contract_ended`` ends the contract."""
    line = _line(db, line_id)
    if line.status != "Active":
        raise ToolError("Line must be active to suspend for unpaid bill")
    amount = _plan(db, line.plan_id).price_per_month
    customer = _customer(db, customer_id)
    if any(_bill(db, i).status == "Overdue" for i in customer.bill_ids):
        raise ToolError("Customer already has an overdue bill")
    start, end = LAST_MONTH
    item = LineItem(description=f"Charge for line {line_id}", amount=amount, date=TODAY, item_type="Charge")
    bill = Bill(
        bill_id=new_bill_id, customer_id=customer_id, period_start=start, period_end=end,
        issue_date=start, total_due=amount, due_date=start + datetime.timedelta(days=14),
        line_items=[item], status="Overdue",
    )  # fmt: skip
    db.bills.add(new_bill_id, bill)
    db.customers.edit(customer_id).bill_ids.append(new_bill_id)
    edited = db.lines.edit(line_id)
    edited.status = "Suspended"
    edited.suspension_start_date = TODAY
    if contract_ended:
        edited.contract_end_date = end
    return f"Line {line_id} suspended for unpaid bill {new_bill_id}. Contract ended: {contract_ended}"


@AGENT.helper("Whether a line's extra data totals the expected amount (to 1e-6 GB).")
def assert_data_refueling_amount(
    db: TelecomDB, customer_id: str, line_id: str, expected_amount: float
) -> bool:
    """Env assertion: refuels must add up to exactly the amount the task allows."""
    return abs(_own_line(db, customer_id, line_id).data_refueling_gb - expected_amount) < 1e-6


@AGENT.helper("Whether a line has the expected status.")
def assert_line_status(db: TelecomDB, customer_id: str, line_id: str, expected_status: str) -> bool:
    """Env assertion on the carrier side."""
    return _own_line(db, customer_id, line_id).status == expected_status


@AGENT.helper("Whether a bill of the customer exists and is overdue.")
def assert_overdue_bill_exists(db: TelecomDB, customer_id: str, overdue_bill_id: str) -> bool:
    """Env assertion: the suspension's bill is still unpaid; a missing or settled one raises."""
    if overdue_bill_id not in _customer(db, customer_id).bill_ids:
        raise ToolError(f"Overdue bill {overdue_bill_id} not found")
    if _bill(db, overdue_bill_id).status != "Overdue":
        raise ToolError(f"Overdue bill {overdue_bill_id} is not overdue")
    return True


@AGENT.helper("Whether a bill is absent or paid.")
def assert_no_overdue_bill(db: TelecomDB, overdue_bill_id: str) -> bool:
    """Env assertion: true when the bill never existed, which is how fixable tasks without one pass."""
    bill = db.bills.get(overdue_bill_id)
    return bill is None or bill.status == "Paid"


def _sync(agent_db: object, user_db: object) -> None:
    assert isinstance(agent_db, TelecomDB) and isinstance(user_db, TelecomUserDB)
    sync(agent_db, user_db)


DOMAIN = DomainSpec(
    name="telecom",
    agent_db=TelecomDB,
    agent_tools=AGENT,
    db_file="db.toml",
    user_db=TelecomUserDB,
    user_tools=USER,
    user_db_file="user_db.toml",
    policy_sections=(("main_policy", "main_policy.md"), ("tech_support_policy", "tech_support_manual.md")),
    sync=_sync,
)
